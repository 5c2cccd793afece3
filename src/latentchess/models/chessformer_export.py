"""ONNX export of a Chessformer, checked against PyTorch on the same inputs.

The graph takes ``features`` (B, 64, F), ``self_elo`` (B,) and ``oppo_elo`` (B,) float32 and
returns ``policy`` (B, 4352, illegal moves not masked) and ``wdl_logits`` (B, 3); the batch axis is
dynamic. Exported with the TorchScript exporter (no extra dependency), fp32; it has no ONNX
form of ``aten::rms_norm`` below opset 23, so the RMSNorms are written out for the export.
"""

from __future__ import annotations

import copy
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from latentchess.models.chessformer import Chessformer

__all__ = ["export_chessformer_onnx", "check_onnx"]

INPUTS = ("features", "self_elo", "oppo_elo")
OUTPUTS = ("policy", "wdl_logits")


class _PlainRMSNorm(nn.Module):
    """``nn.RMSNorm`` spelt out in elementary operations (same eps, same weight)."""

    def __init__(self, norm: nn.RMSNorm) -> None:
        super().__init__()
        self.weight = norm.weight
        self.eps = norm.eps

    def forward(self, x: Tensor) -> Tensor:
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * self.weight


def _exportable(model: Chessformer) -> Chessformer:
    plain = copy.deepcopy(model).eval()
    for block in plain.blocks:
        block.norm_attn = _PlainRMSNorm(block.norm_attn)
        block.norm_ffn = _PlainRMSNorm(block.norm_ffn)
    return plain


def _example(model: Chessformer, batch: int, seed: int) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(seed)
    features = (torch.rand(batch, 64, model.cfg.input_features, generator=generator) < 0.1).float()
    elos = torch.rand(2, batch, generator=generator) * 3000.0
    return features, elos[0], elos[1]


def export_chessformer_onnx(model: Chessformer, path: str | Path, *, opset: int = 18) -> Path:
    """Write ``model`` as an ONNX file at ``path`` (parent directories created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    model = _exportable(model)
    axes = {name: {0: "batch"} for name in (*INPUTS, *OUTPUTS)}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(
            model,
            _example(model, 2, 0),
            str(path),
            input_names=list(INPUTS),
            output_names=list(OUTPUTS),
            dynamic_axes=axes,
            opset_version=opset,
            dynamo=False,
        )
    return path


def check_onnx(model: Chessformer, path: str | Path, *, batch: int = 5, seed: int = 1) -> float:
    """Largest absolute difference between ONNX Runtime and PyTorch outputs on random inputs."""
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs = _example(model.eval(), batch, seed)
    with torch.no_grad():
        expected = [t.numpy() for t in model(*inputs)]
    got = session.run(list(OUTPUTS), {n: t.numpy() for n, t in zip(INPUTS, inputs, strict=True)})
    return max(float(np.max(np.abs(a - b))) for a, b in zip(expected, got, strict=True))
