"""Export an encoder to ONNX (for ONNX Runtime and other non-PyTorch consumers).

The graph takes ``tokens``: ``(batch, 77)`` uint8 (exactly :func:`latentchess.tokenize_batch`'s
output) and returns ``embedding``: ``(batch, D)`` float32 unit vectors; the batch axis is dynamic.
The model's ``config.json`` document (encoder config, tokenizer, axis, calibration...) is stored
in the ONNX file's ``metadata_props`` under the key ``latentchess``, so the file is self-contained.

Needs the optional dependencies ``onnx`` and ``onnxruntime`` (``pip install latentchess[onnx]``).
"""

from __future__ import annotations

import json
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from latentchess.encoding import SEQUENCE_LENGTH, VOCAB_SIZE
from latentchess.errors import ModelFileError
from latentchess.models.encoder import Encoder

__all__ = ["DEFAULT_OPSET", "OnnxCheck", "export_onnx", "check_onnx", "onnx_session"]

DEFAULT_OPSET = 17
"""First opset with a fused LayerNormalization operator."""
INPUT_NAME = "tokens"
OUTPUT_NAME = "embedding"
METADATA_KEY = "latentchess"


@dataclass(frozen=True, kw_only=True)
class OnnxCheck:
    """Agreement of an ONNX Runtime session with the PyTorch float32 encoder.

    Attributes:
        positions: how many token sequences were compared.
        max_abs_diff: largest absolute difference of any embedding component.
        min_cosine: smallest cosine between an ONNX embedding and its PyTorch counterpart.
        mean_cosine: mean of those cosines.
    """

    positions: int
    max_abs_diff: float
    min_cosine: float
    mean_cosine: float


def export_onnx(
    encoder: Encoder,
    out: str | Path,
    *,
    opset: int = DEFAULT_OPSET,
    int8: bool = False,
    metadata: dict[str, Any] | None = None,
) -> Path:
    """Write ``encoder`` as an ONNX graph.

    Args:
        encoder: the network (any dtype/device; a float32 CPU copy is exported, in eval mode).
        out: the ``.onnx`` file to write (parent directories are created).
        opset: ONNX opset version.
        int8: apply ONNX Runtime dynamic quantisation (per-channel int8 weights of the matrix
            products, activations quantised at run time). Check fidelity with :func:`check_onnx`.
        metadata: JSON-serialisable document stored under ``metadata_props["latentchess"]``.

    Returns:
        ``out`` as a path.
    """
    import copy

    import onnx

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    model = copy.deepcopy(encoder).to("cpu", torch.float32).eval()
    exportable = getattr(model, "onnx_exportable", None)  # the GAB encoder: plain RMSNorms
    if exportable is not None:
        model = exportable()
    example = torch.zeros(2, SEQUENCE_LENGTH, dtype=torch.uint8)
    with tempfile.TemporaryDirectory(prefix="latentchess-onnx-") as tmp:
        fp32_file = Path(tmp) / "fp32.onnx"
        with warnings.catch_warnings():
            # The TorchScript exporter is deprecated, but it needs no extra dependency
            # (the torch.export-based one needs onnxscript) and handles this model exactly.
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model,
                (example,),
                str(fp32_file),
                input_names=[INPUT_NAME],
                output_names=[OUTPUT_NAME],
                dynamic_axes={INPUT_NAME: {0: "batch"}, OUTPUT_NAME: {0: "batch"}},
                opset_version=opset,
                dynamo=False,
            )
        source = fp32_file
        if int8:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            source = Path(tmp) / "int8.onnx"
            # Per-channel scales, and 7-bit weight range: x86 int8 kernels (AVX2 VPMADDUBSW) can
            # saturate 16-bit sums with full-range weights; with the default settings the cosine
            # to float32 fell to ~0.95, with these it stays above 0.999 (benchmarks/results).
            quantize_dynamic(
                str(fp32_file),
                str(source),
                weight_type=QuantType.QInt8,
                per_channel=True,
                reduce_range=True,
            )
        graph = onnx.load(str(source))
        if metadata is not None:
            entry = graph.metadata_props.add()
            entry.key, entry.value = METADATA_KEY, json.dumps(metadata)
        graph.producer_name = "latentchess"
        onnx.checker.check_model(graph)
        tmp_out = out.with_name(out.name + ".tmp")
        onnx.save(graph, str(tmp_out))
        tmp_out.replace(out)
    return out


def onnx_session(path: str | Path, *, threads: int | None = None) -> Any:
    """An ONNX Runtime CPU session for an exported file.

    Raises:
        ModelFileError: the file is missing or ONNX Runtime cannot load it.
    """
    import onnxruntime as ort

    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"ONNX file {str(path)!r} does not exist")
    options = ort.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as error:  # onnxruntime raises its own untyped exceptions
        raise ModelFileError(f"ONNX Runtime cannot load {str(path)!r}: {error}") from error


def check_onnx(
    path: str | Path, encoder: Encoder, tokens: npt.NDArray[np.uint8] | None = None
) -> OnnxCheck:
    """Compare an exported file with the float32 PyTorch encoder on ``tokens``.

    Args:
        path: the ``.onnx`` file.
        encoder: the reference network.
        tokens: ``(N, 77)`` uint8 positions; default 64 random token sequences (the graph's
            arithmetic does not care whether they are legal positions), 64 > the export's example
            batch of 2 so that the dynamic batch axis is exercised.
    """
    import copy

    if tokens is None:
        rng = np.random.default_rng(0)
        tokens = rng.integers(0, VOCAB_SIZE, size=(64, SEQUENCE_LENGTH), dtype=np.uint8)
    session = onnx_session(path)
    got = session.run([OUTPUT_NAME], {INPUT_NAME: np.ascontiguousarray(tokens, dtype=np.uint8)})[0]
    model = copy.deepcopy(encoder).to("cpu", torch.float32).eval()
    with torch.inference_mode():
        want = model(torch.from_numpy(tokens).long()).numpy()
    got = np.asarray(got, dtype=np.float32)
    cosine = (got * want).sum(-1) / np.linalg.norm(got, axis=-1)
    return OnnxCheck(
        positions=len(tokens),
        max_abs_diff=float(np.abs(got - want).max()),
        min_cosine=float(cosine.min()),
        mean_cosine=float(cosine.mean()),
    )
