"""Inference with a trained encoder: positions -> unit embeddings -> alignment with the axis.

:class:`LatentModel` bundles an :class:`~latentchess.models.encoder.Encoder`, the advantage axis
(paper section 3.3: mean embedding of White-mates minus mean embedding of Black-mates) and the
model's metadata. It runs in eval mode under ``torch.inference_mode``, batches internally, and
always returns float32 numpy arrays; embeddings are re-normalised in float32 after reduced-precision
matrix work.

Precision (see ``benchmarks/results/inference.md`` for the measurements behind the choice):

* ``"fp32"``: plain float32.
* ``"bf16"``: matrix work in bfloat16 (weights cast to bfloat16 on CPU, autocast on CUDA). Worth it
  only on CPUs with native bfloat16 matrix units (AMX / AVX512-BF16); elsewhere it is emulated and
  5-10x *slower* than float32 (measured on an AVX2 EPYC).
* ``"fp16"``: CUDA only, autocast to float16 (for GPUs without bfloat16).
* ``"int8"``: CPU only: the encoder is exported to ONNX with dynamically quantised per-channel
  int8 weights and run by ONNX Runtime. Building it costs 1.5-4 s per load (export +
  quantisation), and int8 kernels differ between CPUs (not bit-reproducible across machines).
* ``"auto"``: ``$LATENTCHESS_PRECISION`` when set (e.g. ``fp32`` for runs that must give the same
  numbers on every machine); else CUDA -> ``"bf16"`` (``"fp16"`` where bfloat16 is unsupported);
  CPU, for a model loaded from disk -> the fastest of ``"fp32"``, ``"int8"`` and (on CPUs with
  native bfloat16 only) ``"bf16"`` that passes the move-ranking fidelity check of
  :mod:`latentchess.models.autoprecision` (measured at the first load of a model on a machine,
  reused by later loads in the process and, through :mod:`latentchess.models.precision_cache`, by
  later processes; reported in :attr:`LatentModel.precision_check`); CPU, for an in-memory model ->
  ``"fp32"``.

The resolved precision and the model's content hash (:attr:`LatentModel.content_hash`) are written
into every PGN header and JSON result, because ``"auto"`` may resolve differently per machine.

Threads and mode are set once per model, never per call (measured in
``benchmarks/results/batch_throughput.md``). PyTorch's intra-op thread count is process-wide, so
toggling it per call raced with engines running in parallel, and switching from one thread (small
calls) to all cores (calls above 64 positions) made throughput fall off a cliff above 64 positions
on a busy machine. Now a CPU model sets it once, when it is built: ``threads=n``, or one thread for
``threads=None`` (on a 2-core machine with any other busy process, two threads were 4-40x slower
than one for the search-sized batches of 1-64 positions; pass ``threads`` for bulk embedding on an
idle machine). The ``"int8"`` session's thread count is the same number, fixed when it is built. The
encoder a model runs is in eval mode for good; a float32 encoder shared with a training loop is run
through a structural copy that shares its parameters, so the trainer's module keeps its own
train/eval mode.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import math
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import chess
import numpy as np
import numpy.typing as npt
import torch

from latentchess.encoding import SEQUENCE_LENGTH, VOCAB_SIZE, tokenize_batch
from latentchess.errors import ModelFileError
from latentchess.models.config import EncoderConfig
from latentchess.models.encoder import Encoder

__all__ = [
    "LatentModel",
    "PRECISIONS",
    "PRECISION_ENV",
    "resolve_device",
    "resolve_precision",
    "cpu_has_fast_bf16",
]

PRECISIONS = ("auto", "fp32", "bf16", "fp16", "int8")
"""Accepted values of the ``precision`` argument; ``"auto"`` resolves to one of the others."""
PRECISION_ENV = "LATENTCHESS_PRECISION"
"""Environment variable that, when set, is what ``"auto"`` means (training and inference)."""

FloatArray = npt.NDArray[np.float32]
Position = str | chess.Board


def cpu_has_fast_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 matrices natively (AMX-BF16 or AVX512-BF16).

    Without either, PyTorch emulates bfloat16 and it is far slower than float32 (a 512 x 512
    bfloat16 GEMM ran at ~1 GFLOP/s against ~60 GFLOP/s in float32 on an AVX2 EPYC).
    """
    get_capabilities = getattr(torch.cpu, "get_capabilities", None)
    if get_capabilities is not None:
        capabilities = get_capabilities()
        return bool(capabilities.get("amx_bf16") or capabilities.get("avx512_bf16"))
    return "AMX" in torch.backends.cpu.get_cpu_capability().upper()  # older PyTorch


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``None`` means CPU: library code never moves to a GPU on its own."""
    return torch.device("cpu") if device is None else torch.device(device)


def resolve_precision(precision: str, device: torch.device) -> str:
    """Map a requested precision to a concrete one (anything but ``"auto"``) for ``device``.

    Raises:
        ValueError: ``precision`` is not one of :data:`PRECISIONS`, ``"fp16"`` off CUDA or
            ``"int8"`` off CPU.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose from {list(PRECISIONS)}")
    if precision == "fp16" and device.type != "cuda":
        raise ValueError(f"precision 'fp16' needs a CUDA device, got {str(device)!r}")
    if precision == "int8" and device.type != "cpu":
        raise ValueError(f"precision 'int8' runs on the CPU only, got device {str(device)!r}")
    if precision == "auto":
        precision = auto_override() or "auto"
        if precision != "auto":
            return resolve_precision(precision, device)
    if precision != "auto":
        return precision
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "fp32"  # CPU: LatentModel may then measure int8 / bf16 (see the module docstring)


def auto_override() -> str | None:
    """``$LATENTCHESS_PRECISION`` (what ``"auto"`` means when set), or ``None`` when unset.

    Raises:
        ValueError: it names no precision.
    """
    value = os.environ.get(PRECISION_ENV, "").strip()
    if not value or value == "auto":
        return None
    if value not in PRECISIONS:
        raise ValueError(
            f"${PRECISION_ENV}={value!r} is not a precision; choose from {list(PRECISIONS)}"
        )
    return value


class LatentModel:
    """A loaded encoder plus its advantage axis, ready to embed and score positions.

    Attributes:
        encoder: the network on :attr:`device` (bfloat16 weights when :attr:`precision` is
            ``"bf16"`` on CPU); inference always runs it in eval mode.
        config: the encoder's architecture.
        axis: ``(D,)`` float32 advantage axis as stored (not necessarily unit length).
        metadata: everything else from the model's ``config.json`` (``axis_counts``,
            ``calibration``, ``training``, ``metrics``...).
        device: where the encoder runs.
        precision: resolved precision: ``"fp32"``, ``"bf16"``, ``"fp16"`` (CUDA) or ``"int8"``
            (CPU, ONNX Runtime; the session is built from the encoder's weights at construction).
        threads: the PyTorch (process-wide) thread count set once when the model was built (1
            unless given; ``None`` on CUDA).
        path: the model directory it was loaded from, or ``None`` when built in memory.
        precision_check: why ``"auto"`` chose what it chose when it measured the candidates.
    """

    def __init__(
        self,
        encoder: Encoder,
        axis: npt.ArrayLike,
        *,
        metadata: dict[str, Any] | None = None,
        precision: str = "auto",
        device: str | torch.device | None = None,
        threads: int | None = None,
        path: Path | None = None,
        content_hash: str | None = None,
    ) -> None:
        self.config: EncoderConfig = encoder.config
        axis_array = np.asarray(axis, dtype=np.float32).reshape(-1)
        if axis_array.shape != (self.config.dim,):
            raise ValueError(
                f"axis must have {self.config.dim} values (the embedding dim), "
                f"got shape {np.shape(axis)}"
            )
        norm = float(np.linalg.norm(axis_array))
        if not math.isfinite(norm) or norm == 0.0:
            raise ValueError(f"axis must be finite and non-zero, got norm {norm!r}")
        self.axis: FloatArray = axis_array
        self._unit_axis: FloatArray = axis_array / np.float32(norm)
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.device: torch.device = resolve_device(device)
        self.precision: str = resolve_precision(precision, self.device)
        if threads is not None and (not isinstance(threads, int) or threads <= 0):
            raise ValueError(f"threads must be a positive int or None, got {threads!r}")
        if threads is None and self.device.type == "cpu":
            threads = 1
        self.threads = threads
        if threads is not None and torch.get_num_threads() != threads:
            torch.set_num_threads(threads)  # once, here: never toggled per call
        self.path = path
        self._content_hash = content_hash
        self._source = encoder
        self.encoder: Encoder = self._eval_encoder(encoder, self.precision)
        self._session: Any = self._int8_session() if self.precision == "int8" else None
        self.precision_check: str | None = None
        """Why ``"auto"`` chose what it chose, when it measured the candidates."""
        auto_cpu = precision == "auto" and auto_override() is None and self.device.type == "cpu"
        if auto_cpu and path is not None:
            self._auto_cpu_once()

    @classmethod
    def from_encoder(
        cls,
        encoder: Encoder,
        axis: npt.ArrayLike,
        metadata: dict[str, Any] | None = None,
        precision: str = "auto",
        device: str | torch.device | None = None,
        threads: int | None = None,
    ) -> LatentModel:
        """Wrap an in-memory encoder (e.g. during training) without saving it first.

        A float32 encoder already on ``device`` shares its parameters with the model (through a
        structural copy in eval mode), so the model follows its weights as training goes on and
        never changes the module's train/eval mode. Other precisions or devices work on a copy.
        """
        return cls(
            encoder, axis, metadata=metadata, precision=precision, device=device, threads=threads
        )

    def __repr__(self) -> str:
        where = f", path={str(self.path)!r}" if self.path else ""
        return (
            f"LatentModel(config={self.config.name!r}, dim={self.config.dim}, "
            f"device={str(self.device)!r}, precision={self.precision!r}{where})"
        )

    # -- identity ---------------------------------------------------------------------------

    @property
    def content_hash(self) -> str:
        """Short content hash: of ``model.safetensors`` + ``config.json`` for a loaded model
        (:func:`latentchess.models.io.model_content_hash`), else of the weights and the axis."""
        if self._content_hash is None:
            digest = hashlib.sha256()
            for name, tensor in sorted(self._source.state_dict().items()):
                digest.update(name.encode())
                digest.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy())
            digest.update(self.axis.tobytes())
            return digest.hexdigest()[:HASH_LENGTH]
        return self._content_hash

    def provenance(self) -> dict[str, str]:
        """What produced this model's numbers: ``{"model", "model_sha256", "precision"}``."""
        return {
            "model": str(self.path) if self.path is not None else "<in memory>",
            "model_sha256": self.content_hash,
            "precision": self.precision,
        }

    # -- set-up -----------------------------------------------------------------------------

    def _eval_encoder(self, encoder: Encoder, precision: str) -> Encoder:
        """The module inference runs, in eval mode for good (never the caller's module)."""
        cast = precision == "bf16" and self.device.type != "cuda"
        if cast or _module_device(encoder) != self.device:
            # Never convert the caller's module in place (it may still be training).
            copied = copy.deepcopy(encoder).to(self.device)
            if cast:
                # CPU: bfloat16 weights spare autocast's per-call weight casts.
                copied = copied.to(torch.bfloat16)
        else:
            # Same module tree, same parameter and buffer tensors: training updates show through,
            # while this copy's eval mode is independent of the trainer's module.
            shared = {id(t): t for t in (*encoder.parameters(), *encoder.buffers())}
            copied = copy.deepcopy(encoder, memo=shared)
        return copied.eval()

    def _int8_session(self) -> Any:
        """An ONNX Runtime session on the int8-quantised export of the float32 encoder."""
        try:
            import onnxruntime  # noqa: F401
        except ImportError as error:
            raise ValueError(
                "precision 'int8' needs onnxruntime and onnx: pip install 'latentchess[onnx]'"
            ) from error
        import tempfile

        from latentchess.models.export import export_onnx, onnx_session

        quantization_logger = logging.getLogger()  # onnxruntime.quantization advises via root
        # torch.onnx.export is not thread-safe (engines are built in parallel by matches), and
        # the logger level is process state: one export at a time.
        with _EXPORT_LOCK:
            level = quantization_logger.level
            quantization_logger.setLevel(max(level, logging.ERROR))
            try:
                with tempfile.TemporaryDirectory(prefix="latentchess-int8-") as tmp:
                    file = export_onnx(self._source, Path(tmp) / "encoder.int8.onnx", int8=True)
                    return onnx_session(file, threads=self.threads or 1)
            finally:
                quantization_logger.setLevel(level)

    def _auto_cpu_once(self) -> None:
        """:meth:`_auto_cpu`, measured once per model (content hash), CPU and threads.

        Engines of one match are built per worker thread; measuring each would let a busy
        machine give them different precisions, so later loads reuse the first decision: in
        this process, else from the on-disk cache (:meth:`_auto_cpu_cached`).
        """
        key = (self.content_hash, self.threads)
        with _AUTO_LOCK:
            decided = _AUTO_DECISIONS.get(key)
            if decided is None:
                _AUTO_DECISIONS[key] = self._auto_cpu_cached()
                return
        precision, check = decided
        self._apply_auto(precision, f"{check} (measured by an earlier load in this process)")

    def _auto_cpu_cached(self) -> tuple[str, str]:
        """The decision of :mod:`latentchess.models.precision_cache` when it has one (applied),
        else :meth:`_auto_cpu`'s (stored there); ``(precision, check)``."""
        from latentchess.models import precision_cache as cache

        disk_key = cache.decision_key(self.content_hash, self.threads)
        enabled = cache.cache_enabled()
        cached = cache.read_decision(disk_key) if enabled else None
        if cached is not None:
            check = f"{cached.check} (cached in {cached.path})"
            try:
                self._apply_auto(cached.precision, check)
            except Exception as error:  # e.g. an int8 export failing now: measure afresh
                _log.info("precision auto: cached %s failed (%s)", cached.precision, error)
            else:
                _log.info("precision auto: %s from %s", cached.precision, cached.path)
                return cached.precision, check
        measured = self._auto_cpu()
        check = self.precision_check or ""
        if enabled:
            decision = cache.CachedDecision(
                precision=self.precision, check=check, measured=measured
            )
            cache.write_decision(disk_key, decision)
        return self.precision, check

    def _apply_auto(self, precision: str, check: str) -> None:
        """Run as an earlier measurement decided (the int8 session is built here)."""
        if precision == "int8":
            self._session = self._int8_session()
        elif precision == "bf16":
            self.encoder = self._eval_encoder(self._source, "bf16")
        self.precision = precision
        self.precision_check = check

    def _auto_cpu(self) -> dict[str, Any]:
        """``"auto"`` on CPU: measure int8 (then bf16 on native-bf16 CPUs) against float32.

        A candidate must pass :func:`~latentchess.models.autoprecision.ranking_fidelity` and be
        at least :data:`~latentchess.models.autoprecision.MIN_SPEEDUP` times as fast as float32;
        int8 is tried first, and bf16 replaces it only when that much faster again.

        Returns:
            The measured numbers: positions per second (``speed``; 0 for a candidate that
            failed fidelity) and each candidate's fidelity.
        """
        from latentchess.models import autoprecision as ap

        tokens, groups, white = ap.probe_positions()
        fp32_encoder = self.encoder
        reference = self._embed_all(tokens)
        if not np.isfinite(reference).all():
            self.precision_check = "fp32: the model's float32 embeddings are not finite"
            return {}
        speed = {"fp32": ap.throughput(self._embed_all, tokens)}
        fidelities: dict[str, dict[str, float]] = {}
        notes: list[str] = []
        chosen: tuple[str, Any, Encoder] | None = None
        for candidate in ("int8", "bf16"):
            if candidate == "bf16" and not cpu_has_fast_bf16():
                notes.append("bf16 not tried (no native bfloat16 on this CPU)")
                continue
            try:
                if candidate == "int8":
                    import onnxruntime  # noqa: F401

                    self._session = self._int8_session()
                else:
                    self._session, self.encoder = None, self._eval_encoder(self._source, "bf16")
            except ImportError:
                notes.append("int8 not tried (onnxruntime not installed)")
                continue
            except Exception as error:  # an export failure means: not this candidate
                notes.append(f"{candidate} failed to build ({error})")
                self._session, self.encoder = None, fp32_encoder
                continue
            fidelity = ap.ranking_fidelity(
                reference, self._embed_all(tokens), self._unit_axis, groups, white
            )
            speed[candidate] = ap.throughput(self._embed_all, tokens) if fidelity.passed else 0.0
            fidelities[candidate] = dict(vars(fidelity))
            ratio = speed[candidate] / speed["fp32"]
            verdict = "passes" if fidelity.passed else "fails"
            notes.append(f"{candidate} {verdict} fidelity ({fidelity}), {ratio:.2f}x fp32 speed")
            # A later candidate must beat the earlier choice (or fp32) by MIN_SPEEDUP: int8,
            # tried first, wins ties with bf16.
            best = (speed[chosen[0]] if chosen else speed["fp32"]) * ap.MIN_SPEEDUP
            if fidelity.passed and speed[candidate] > best:
                chosen = (candidate, self._session, self.encoder)
            self._session, self.encoder = None, fp32_encoder
        if chosen is not None:
            self.precision, self._session, self.encoder = chosen
        self.precision_check = (
            f"{self.precision}: chosen on {len(groups)} probe positions' {len(tokens)} children; "
            + "; ".join(notes)
        )
        return {"speed": {name: round(value, 1) for name, value in speed.items()}, **fidelities}

    def _embed_all(self, tokens: npt.NDArray[np.uint8]) -> FloatArray:
        """Embed the probe batch in one forward pass (no checks, for timing)."""
        with torch.inference_mode():
            return self._forward(torch.from_numpy(tokens)).numpy()

    # -- embeddings -------------------------------------------------------------------------

    def embed_tokens(self, tokens: npt.ArrayLike, batch_size: int = 1024) -> FloatArray:
        """Embed tokenized positions.

        Args:
            tokens: ``(N, 77)`` integer array (``tokenize_batch`` output); ``N`` may be 0.
            batch_size: positions per forward pass.

        Returns:
            ``(N, D)`` float32 array of unit vectors.

        Raises:
            ValueError: wrong shape or token indices outside the vocabulary.
            ModelFileError: the model produced non-finite embeddings (broken weights).
        """
        array = np.asarray(tokens)
        if array.ndim != 2 or array.shape[1] != SEQUENCE_LENGTH:
            raise ValueError(f"expected tokens of shape (N, {SEQUENCE_LENGTH}), got {array.shape}")
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size!r}")
        out = np.empty((array.shape[0], self.config.dim), dtype=np.float32)
        if array.shape[0] == 0:
            return out
        if array.min() < 0 or array.max() >= VOCAB_SIZE:
            raise ValueError(
                f"token indices must lie in [0, {VOCAB_SIZE}), got range "
                f"[{int(array.min())}, {int(array.max())}]"
            )
        with torch.inference_mode():
            for start in range(0, array.shape[0], batch_size):
                chunk = np.ascontiguousarray(array[start : start + batch_size])
                out[start : start + len(chunk)] = self._forward(torch.from_numpy(chunk)).numpy()
        if not np.isfinite(out).all():
            bad = int((~np.isfinite(out).all(axis=1)).sum())
            where = f"model {str(self.path)!r}" if self.path is not None else "the in-memory model"
            raise ModelFileError(
                f"{where} produced non-finite embeddings for {bad} of {len(out)} positions "
                f"(precision {self.precision!r}): its weights are broken (NaN/inf) or diverged"
            )
        return out

    def _forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """One batch: ``(B, 77)`` tokens -> ``(B, D)`` float32 unit vectors on CPU."""
        if self._session is not None:
            z = torch.from_numpy(
                self._session.run(None, {"tokens": tokens.to(torch.uint8).numpy()})[0]
            )
        elif self.device.type == "cuda" and self.precision != "fp32":
            dtype = torch.bfloat16 if self.precision == "bf16" else torch.float16
            with torch.autocast(device_type="cuda", dtype=dtype):
                z = self.encoder(tokens.to(self.device, torch.long))
        else:
            z = self.encoder(tokens.to(self.device, torch.long))
        # Renormalise in float32: bfloat16 rounding leaves norms ~1e-3 off unity.
        return torch.nn.functional.normalize(z.float(), dim=-1).cpu()

    def embed(self, positions: Iterable[Position] | Position, batch_size: int = 1024) -> FloatArray:
        """Embed positions given as FEN strings or boards.

        Args:
            positions: one position or an iterable of them (may be empty).
            batch_size: positions per forward pass.

        Returns:
            ``(N, D)`` float32 unit vectors; a single position gives ``N = 1``.

        Raises:
            InvalidFenError: a FEN that cannot be tokenized.
        """
        return self.embed_tokens(_tokenize(positions), batch_size=batch_size)

    # -- scores -----------------------------------------------------------------------------

    def score_tokens(self, tokens: npt.ArrayLike, batch_size: int = 1024) -> FloatArray:
        """Cosine between each position's embedding and the axis: ``(N,)`` float32 in [-1, 1].

        Positive means good for White (the axis points from Black-wins to White-wins).
        """
        return self.scores_of(self.embed_tokens(tokens, batch_size=batch_size))

    def score(self, positions: Iterable[Position] | Position, batch_size: int = 1024) -> FloatArray:
        """Like :meth:`score_tokens` for FEN strings or boards; one position gives ``(1,)``."""
        return self.score_tokens(_tokenize(positions), batch_size=batch_size)

    def scores_of(self, embeddings: npt.ArrayLike) -> FloatArray:
        """Cosine with the axis of already computed unit embeddings ``(N, D)`` -> ``(N,)``."""
        emb = np.asarray(embeddings, dtype=np.float32)
        return np.clip(emb @ self._unit_axis, -1.0, 1.0).astype(np.float32)

    def win_probability(self, scores: npt.ArrayLike | float) -> FloatArray | float:
        """White's win probability from axis cosines.

        With ``metadata["calibration"] = {"kind": "logistic", "slope": a, "intercept": b}``:
        ``p = 1 / (1 + exp(-(a * cos + b)))``. Without a calibration the fallback is the linear
        map ``p = (cos + 1) / 2`` (clipped to [0, 1]): monotone, so it keeps the ranking, but its
        values are not calibrated probabilities.

        Returns:
            A float for a scalar input, else a float32 array of the input's shape.

        Raises:
            ValueError: a calibration of unknown kind or with missing fields.
        """
        cos = np.asarray(scores, dtype=np.float64)
        calibration = self.metadata.get("calibration")
        if calibration is None:
            p = np.clip((cos + 1.0) / 2.0, 0.0, 1.0)
        else:
            kind = calibration.get("kind") if isinstance(calibration, dict) else None
            if kind != "logistic" or not {"slope", "intercept"} <= set(calibration):
                raise ValueError(
                    "calibration must be {'kind': 'logistic', 'slope': a, 'intercept': b}, "
                    f"got {calibration!r}"
                )
            logit = float(calibration["slope"]) * cos + float(calibration["intercept"])
            p = 0.5 * (1.0 + np.tanh(0.5 * logit))  # the logistic function, overflow-free
        if np.ndim(scores) == 0:
            return float(p)
        return p.astype(np.float32)


def _module_device(module: torch.nn.Module) -> torch.device:
    return next(module.parameters()).device


_log = logging.getLogger(__name__)
_EXPORT_LOCK = threading.Lock()
_AUTO_LOCK = threading.Lock()
_AUTO_DECISIONS: dict[tuple[str, int | None], tuple[str, str]] = {}
"""``"auto"`` decisions of this process by (model content hash, threads)."""

HASH_LENGTH = 12
"""Hex digits of a model's short content hash."""


def _tokenize(positions: Iterable[Position] | Position) -> npt.NDArray[np.uint8]:
    if isinstance(positions, str | chess.Board):
        positions = [positions]
    return tokenize_batch(positions)
