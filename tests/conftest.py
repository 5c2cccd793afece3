"""Suite-wide settings: every test runs with ``auto`` precision pinned to fp32.

``auto`` resolves per machine (int8 or bf16 when measured faster), so a test that compares numbers
would otherwise give another verdict on an AVX-512-BF16 CPU than on an AVX2-only one. Setting
``$LATENTCHESS_PRECISION`` here reaches every subprocess the tests start (``torchrun``, the UCI
engine, the CLI) as well. Tests of ``auto`` itself remove it with ``monkeypatch.delenv``. The
on-disk cache of ``auto`` decisions is off likewise (its own tests turn it on in a temporary
directory).
"""

from __future__ import annotations

import os

from latentchess.models.inference import PRECISION_ENV
from latentchess.models.precision_cache import CACHE_ENV

os.environ[PRECISION_ENV] = "fp32"
os.environ[CACHE_ENV] = "0"  # tests of ``auto`` never read or write the user's decision cache
