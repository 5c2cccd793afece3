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
  5-10x *slower* than float32 (measured on an AVX2 EPYC). Cosine to the float32 embedding stays
  above 0.9999.
* ``"fp16"``: CUDA only, autocast to float16 (for GPUs without bfloat16).
* ``"int8"``: CPU only: the encoder is exported to ONNX with dynamically quantised per-channel
  int8 weights and run by ONNX Runtime. On an AVX2 EPYC it was the fastest path, 1.3-1.9x
  ``"fp32"`` (one thread, batches 1-512; 1.2-1.45x for the shipped micro model, whose minimum
  cosine to float32 was 0.9995). Building it costs 1.5-4 s per load (export + quantisation), and
  int8 kernels differ between CPUs (not bit-reproducible across machines).
* ``"auto"``: CUDA -> ``"bf16"`` (``"fp16"`` where bfloat16 is unsupported); CPU -> ``"bf16"`` when
  the CPU has native bfloat16 support; otherwise, for a model loaded from disk, ``"int8"`` when it
  passes a load-time fidelity check (min cosine >= 0.999 to float32 on 256 fixed positions,
  reported in :attr:`LatentModel.precision_check`), else ``"fp32"``.

Threads: PyTorch's intra-op pool is process-wide. On a 2-core machine with any other busy process
(Stockfish, a test run), two threads were 4-40x slower than one for batches of 1-32 positions,
because every parallel region waits for a descheduled thread, and small batches are where extra
threads help least anyway. So by default (``threads=None``) a call of at most
:data:`SINGLE_THREAD_MAX_BATCH` positions runs on one thread and larger calls use the process-wide
setting (the size of one forward pass counts: ``min(N, batch_size)``); an explicit
``threads=n`` applies to every call. The previous setting is restored after
each call. The ``"int8"`` session's thread count is fixed when it is built: ``threads`` or 1.
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import chess
import numpy as np
import numpy.typing as npt
import torch

from latentchess.encoding import SEQUENCE_LENGTH, VOCAB_SIZE, tokenize_batch
from latentchess.models.config import EncoderConfig
from latentchess.models.encoder import Encoder

__all__ = [
    "LatentModel",
    "PRECISIONS",
    "SINGLE_THREAD_MAX_BATCH",
    "resolve_device",
    "resolve_precision",
    "cpu_has_fast_bf16",
]

PRECISIONS = ("auto", "fp32", "bf16", "fp16", "int8")
"""Accepted values of the ``precision`` argument; ``"auto"`` resolves to one of the others."""
SINGLE_THREAD_MAX_BATCH = 64
"""With ``threads=None``, CPU calls embedding at most this many positions run on one thread."""

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
    if precision != "auto":
        return precision
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if device.type == "cpu" and cpu_has_fast_bf16():
        return "bf16"
    return "fp32"


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
        threads: PyTorch intra-op threads for every call; ``None``: one thread for calls of at
            most :data:`SINGLE_THREAD_MAX_BATCH` positions, the process-wide setting above.
        path: the model directory it was loaded from, or ``None`` when built in memory.
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
        self.threads = threads
        self.path = path
        cast = self.precision == "bf16" and self.device.type != "cuda"
        if cast or _module_device(encoder) != self.device:
            # Never convert the caller's module in place (it may still be training).
            encoder = copy.deepcopy(encoder).to(self.device)
            if cast:
                # CPU: bfloat16 weights spare autocast's per-call weight casts (on AVX2 both
                # were equally slow; unmeasured on AMX, where the benchmark has both paths).
                encoder = encoder.to(torch.bfloat16)
            encoder.eval()
        self.encoder: Encoder = encoder
        self._session: Any = self._int8_session() if self.precision == "int8" else None
        self.precision_check: str | None = None
        """Why ``"auto"`` chose what it chose, when it compared paths (see :meth:`_auto_int8`)."""
        if precision == "auto" and path is not None and self.precision == "fp32":
            self._auto_int8()

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

        A float32 encoder already on ``device`` is shared, not copied, so the model follows its
        weights as training goes on; each inference call runs in eval mode and restores the
        module's train/eval mode afterwards. Other precisions or devices work on a copy.
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
        previous_threads = torch.get_num_threads()
        threads = self.threads
        per_call = min(len(array), batch_size)
        if threads is None and self.device.type == "cpu" and per_call <= SINGLE_THREAD_MAX_BATCH:
            threads = 1
        if threads is not None and threads != previous_threads:
            torch.set_num_threads(threads)
        was_training = self.encoder.training
        self.encoder.eval()
        try:
            with torch.inference_mode():
                for start in range(0, array.shape[0], batch_size):
                    chunk = np.ascontiguousarray(array[start : start + batch_size])
                    out[start : start + len(chunk)] = self._forward(torch.from_numpy(chunk)).numpy()
        finally:
            self.encoder.train(was_training)
            if torch.get_num_threads() != previous_threads:
                torch.set_num_threads(previous_threads)
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

    def _int8_session(self) -> Any:
        """An ONNX Runtime session on the int8-quantised export of :attr:`encoder`."""
        try:
            import onnxruntime  # noqa: F401
        except ImportError as error:
            raise ValueError(
                "precision 'int8' needs onnxruntime and onnx: pip install 'latentchess[onnx]'"
            ) from error
        import logging
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
                    file = export_onnx(self.encoder, Path(tmp) / "encoder.int8.onnx", int8=True)
                    return onnx_session(file, threads=self.threads or 1)
            finally:
                quantization_logger.setLevel(level)

    def _auto_int8(self) -> None:
        """``"auto"`` on a CPU without fast bfloat16: use int8 if it keeps ranking fidelity.

        The int8 session is built and compared with float32 on :data:`INT8_PROBE_POSITIONS`
        fixed positions; it is kept only if every embedding has cosine >= :data:`INT8_MIN_COSINE`
        to its float32 counterpart (the issue's bar), else the model stays in float32. Only for
        models loaded from disk (training evaluations stay float32).
        """
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            self.precision_check = "fp32: onnxruntime not installed, int8 not tried"
            return
        probe = _probe_tokens(INT8_PROBE_POSITIONS)
        reference = self.embed_tokens(probe)
        try:
            session = self._int8_session()
        except Exception as error:  # any export failure means: stay in fp32
            self.precision_check = f"fp32: int8 export failed ({error})"
            return
        self._session = session
        worst = float((reference * self.embed_tokens(probe)).sum(axis=1).min())
        if worst >= INT8_MIN_COSINE:
            self.precision = "int8"
            self.precision_check = (
                f"int8: min cosine {worst:.5f} to fp32 on {len(probe)} probe positions"
            )
        else:
            self._session = None
            self.precision_check = (
                f"fp32: int8 min cosine {worst:.5f} < {INT8_MIN_COSINE} on {len(probe)} positions"
            )

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


_EXPORT_LOCK = threading.Lock()

INT8_MIN_COSINE = 0.999
"""Ranking-fidelity bar for reduced precision: cosine to the float32 embedding."""
INT8_PROBE_POSITIONS = 256


def _probe_tokens(count: int) -> npt.NDArray[np.uint8]:
    """Tokens of ``count`` fixed, varied positions: seeded random games from the start."""
    rng = np.random.default_rng(0)
    board = chess.Board()
    fens: list[str] = []
    while len(fens) < count:
        moves = list(board.legal_moves)
        if not moves or board.ply() > 120:
            board = chess.Board()
            continue
        board.push(moves[int(rng.integers(len(moves)))])
        fens.append(board.fen())
    return tokenize_batch(fens)


def _tokenize(positions: Iterable[Position] | Position) -> npt.NDArray[np.uint8]:
    if isinstance(positions, str | chess.Board):
        positions = [positions]
    return tokenize_batch(positions)
