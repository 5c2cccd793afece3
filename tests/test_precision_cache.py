"""The on-disk cache of ``precision="auto"`` decisions: a hit skips the measurement, a damaged
file is ignored (and replaced), the key follows the model, and ``$LATENTCHESS_PRECISION`` or
``LATENTCHESS_PRECISION_CACHE=0`` bypass it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import torch

from latentchess.models import inference, precision_cache
from latentchess.models.config import EncoderConfig
from latentchess.models.encoder import Encoder
from latentchess.models.inference import PRECISION_ENV, LatentModel
from latentchess.models.io import load_model, save_model

TINY = EncoderConfig(name="tiny", layers=1, hidden=16, heads=2, mlp=32, dim=8)


def _save(directory: Path, seed: int) -> Path:
    torch.manual_seed(seed)
    encoder = Encoder(TINY).eval()
    axis = np.random.default_rng(seed).normal(size=TINY.dim).astype(np.float32)
    return save_model(directory, encoder, axis=axis)


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``auto`` on, the disk cache on in a temporary ``$XDG_CACHE_HOME``, no in-process memory;
    yields the cache directory."""
    monkeypatch.delenv(PRECISION_ENV, raising=False)
    monkeypatch.setenv(precision_cache.CACHE_ENV, "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(inference, "_AUTO_DECISIONS", {})
    return tmp_path / "xdg" / "latentchess" / "precision"


@pytest.fixture()
def measurements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts the real measurements (the model hash of each call of ``_auto_cpu``)."""
    calls: list[str] = []
    original = LatentModel._auto_cpu

    def counted(self: LatentModel) -> dict:
        calls.append(self.content_hash)
        return original(self)

    monkeypatch.setattr(LatentModel, "_auto_cpu", counted)
    return calls


def _forget_process_decisions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inference, "_AUTO_DECISIONS", {})  # as a new process would start


def test_a_cache_hit_skips_the_measurement(
    tmp_path: Path,
    cache: Path,
    measurements: list[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    model_dir = _save(tmp_path / "model", seed=0)
    first = load_model(model_dir)
    assert measurements == [first.content_hash]
    (file,) = cache.glob("*.json")
    stored = json.loads(file.read_text())
    assert stored["precision"] == first.precision and stored["key"]["model"] == first.content_hash
    assert stored["key"]["threads"] == 1 and stored["key"]["torch"] == torch.__version__
    assert stored["measured"]["speed"]["fp32"] > 0  # the measured numbers are kept

    _forget_process_decisions(monkeypatch)
    with caplog.at_level(logging.INFO, logger="latentchess.models"):
        second = load_model(model_dir)
    assert measurements == [first.content_hash]  # not measured again
    assert second.precision == first.precision
    assert second.precision_check is not None and f"cached in {file}" in second.precision_check
    assert any(
        "precision auto" in r.getMessage() and str(file) in r.getMessage() for r in caplog.records
    )
    if second.precision == "int8":  # the session is still built, only the probing is skipped
        assert second._session is not None
    np.testing.assert_allclose(
        second.score(["8/8/8/8/8/8/8/K1k5 w - - 0 1"]),
        first.score(["8/8/8/8/8/8/8/K1k5 w - - 0 1"]),
        atol=1e-6,
    )

    # Another model (other weights): another key, measured afresh.
    _forget_process_decisions(monkeypatch)
    other = load_model(_save(tmp_path / "other", seed=1))
    assert other.content_hash != first.content_hash
    assert measurements == [first.content_hash, other.content_hash]
    assert len(list(cache.glob("*.json"))) == 2
    assert precision_cache.decision_key(first.content_hash, 1) != precision_cache.decision_key(
        other.content_hash, 1
    )
    assert precision_cache.decision_key(first.content_hash, 1) != precision_cache.decision_key(
        first.content_hash, 2
    )


def test_a_damaged_file_is_ignored_and_replaced(
    tmp_path: Path,
    cache: Path,
    measurements: list[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    model_dir = _save(tmp_path / "model", seed=0)
    first = load_model(model_dir)
    (file,) = cache.glob("*.json")
    key = precision_cache.decision_key(first.content_hash, 1)
    assert precision_cache.read_decision(key) is not None
    damages = [b"not json {", b'{"key": "another"}', b"[]", b'{"key": 1, "precision": 2}']
    for damage in [*damages, b"\xff\xfe\x00 not UTF-8"]:
        file.write_bytes(damage)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="latentchess.models"):
            assert precision_cache.read_decision(key) is None, damage
        assert any("ignoring corrupt" in r.getMessage() for r in caplog.records), damage
    # A load over the damaged file: measured again (no crash), and the file is replaced.
    _forget_process_decisions(monkeypatch)
    again = load_model(model_dir)
    assert len(measurements) == 2
    assert json.loads(file.read_text())["precision"] == again.precision


def test_unwritable_cache_and_switches(
    tmp_path: Path, cache: Path, measurements: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    model_dir = _save(tmp_path / "model", seed=0)
    # A file where the cache directory should be: nothing can be written, the load still works.
    cache.parent.mkdir(parents=True)
    cache.write_text("in the way")
    assert load_model(model_dir).precision in ("fp32", "int8", "bf16")
    cache.unlink()
    # LATENTCHESS_PRECISION_CACHE=0: measured, nothing stored.
    _forget_process_decisions(monkeypatch)
    monkeypatch.setenv(precision_cache.CACHE_ENV, "0")
    load_model(model_dir)
    assert len(measurements) == 2 and not cache.exists()
    # $LATENTCHESS_PRECISION=fp32 bypasses auto, the measurement and the cache.
    monkeypatch.setenv(precision_cache.CACHE_ENV, "1")
    monkeypatch.setenv(PRECISION_ENV, "fp32")
    pinned = load_model(model_dir)
    assert pinned.precision == "fp32" and pinned.precision_check is None
    assert len(measurements) == 2 and not cache.exists()


def test_cpu_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 fma avx512f avx512_bf16 amx_tile\n")
    assert precision_cache.cpu_flags(cpuinfo) == [
        "amx_tile",
        "avx2",
        "avx512_bf16",
        "avx512f",
        "fma",
    ]
    missing = precision_cache.cpu_flags(tmp_path / "absent")
    assert len(missing) == 1 and missing[0].startswith("torch:")
