"""An on-disk cache of ``precision="auto"`` decisions, so a CPU measures a model only once.

Measuring (:mod:`latentchess.models.autoprecision`) costs seconds at every model load: an int8
ONNX build and timed probes. The decision depends only on the model's content, the CPU, the
library versions, the thread count and the decision rule, so it is stored under a key of exactly
those: the model's 12-hex content hash, the CPU flags that matter to the kernels (AVX2, AVX-512,
VNNI, BF16, AMX), the torch and onnxruntime versions, the threads, and the rule's thresholds.

One JSON file per key under ``$XDG_CACHE_HOME/latentchess/precision/`` (default
``~/.cache/latentchess/precision/``), written atomically (a temporary file, then a rename). A file
that cannot be read, is not valid JSON or holds another key is ignored with a log message and
replaced after the next measurement; a cache that cannot be written is skipped with a log
message. ``LATENTCHESS_PRECISION_CACHE=0`` turns the cache off (the test suite does, and tests of
the cache turn it back on in a temporary directory). ``$LATENTCHESS_PRECISION`` bypasses ``auto``
and hence this cache altogether.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

__all__ = [
    "CACHE_ENV",
    "CachedDecision",
    "cache_dir",
    "cache_enabled",
    "cpu_flags",
    "decision_key",
    "read_decision",
    "write_decision",
]

CACHE_ENV = "LATENTCHESS_PRECISION_CACHE"
"""Environment variable: ``0`` (or ``false``/``off``/``no``) disables the cache."""
CACHE_VERSION = 1
"""Bumped whenever what a decision means changes (stored in the key)."""
PRECISIONS = ("fp32", "int8", "bf16")
"""What ``auto`` may decide on a CPU."""
_RELEVANT_FLAGS = (
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx_vnni",
    "avx512_bf16",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
)
"""CPU flags (``/proc/cpuinfo`` names) that change which precision's kernels are fast."""

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class CachedDecision:
    """One stored decision.

    Attributes:
        precision: ``fp32``, ``int8`` or ``bf16``.
        check: the measurement's explanation (:attr:`LatentModel.precision_check`).
        measured: its numbers (positions per second per precision, fidelity per candidate).
        path: the file it was read from or written to.
    """

    precision: str
    check: str
    measured: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None


def cache_enabled() -> bool:
    """Whether ``$LATENTCHESS_PRECISION_CACHE`` leaves the cache on (the default)."""
    value = os.environ.get(CACHE_ENV, "").strip().lower()
    return value not in ("0", "false", "off", "no")


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/latentchess/precision`` (default ``~/.cache/latentchess/precision``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "latentchess" / "precision"


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str]:
    """The relevant flags of this CPU, sorted; PyTorch's CPU capability where ``cpuinfo`` is
    unreadable (not Linux)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return [f"torch:{torch.backends.cpu.get_cpu_capability()}"]
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() == "flags":
            present = set(value.split())
            return sorted(flag for flag in _RELEVANT_FLAGS if flag in present)
    return [f"torch:{torch.backends.cpu.get_cpu_capability()}"]


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "none"


def decision_key(content_hash: str, threads: int | None) -> dict[str, Any]:
    """What a decision depends on: the model, the CPU, the libraries, threads and the rule."""
    from latentchess.models import autoprecision as ap

    return {
        "cache_version": CACHE_VERSION,
        "model": content_hash,
        "machine": platform.machine(),
        "cpu_flags": cpu_flags(),
        "torch": torch.__version__,
        "onnxruntime": _version("onnxruntime"),
        "threads": threads,
        "rule": {
            "min_cosine": ap.MIN_COSINE,
            "min_top1_agreement": ap.MIN_TOP1_AGREEMENT,
            "min_pair_agreement": ap.MIN_PAIR_AGREEMENT,
            "tie_margin": ap.TIE_MARGIN,
            "min_speedup": ap.MIN_SPEEDUP,
            "probe_parents": ap.PROBE_PARENTS,
            "speed_batch": ap.SPEED_BATCH,
        },
    }


def _path(key: dict[str, Any], directory: Path | None) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return (directory or cache_dir()) / f"{key['model']}-{digest}.json"


def read_decision(key: dict[str, Any], directory: Path | None = None) -> CachedDecision | None:
    """The stored decision for ``key``, or None (missing, unreadable, corrupt or another key)."""
    path = _path(key, directory)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        log.info("precision cache: ignoring unreadable %s (%s)", path, error)
        return None
    try:
        document = json.loads(data.decode("utf-8"))
        if not isinstance(document, dict) or document.get("key") != key:
            raise ValueError("it holds another key")
        precision, check = document["precision"], document["check"]
        measured = document.get("measured", {})
        if precision not in PRECISIONS or not isinstance(check, str):
            raise ValueError(f"precision {precision!r} / check {check!r} is not a decision")
        if not isinstance(measured, dict):
            raise ValueError(f"measured must be an object, got {measured!r}")
    except (ValueError, KeyError, TypeError) as error:  # JSON and UTF-8 errors: ValueError
        log.info("precision cache: ignoring corrupt %s (%s)", path, error)
        return None
    return CachedDecision(precision=precision, check=check, measured=measured, path=path)


def write_decision(
    key: dict[str, Any], decision: CachedDecision, directory: Path | None = None
) -> Path | None:
    """Store ``decision`` atomically; the file, or None when the cache cannot be written."""
    path = _path(key, directory)
    document = {
        "key": key,
        "precision": decision.precision,
        "check": decision.check,
        "measured": decision.measured,
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.replace(tmp, path)
    except OSError as error:
        log.info("precision cache: could not write %s (%s)", path, error)
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        return None
    log.info("precision cache: stored %s in %s", decision.precision, path)
    return path
