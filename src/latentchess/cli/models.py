"""Subcommands of the models area: ``models``, ``model-info`` and ``export-onnx``.

Only the standard library is imported at top level; torch and friends load inside handlers.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this area's subcommands to the ``latentchess`` parser."""
    p = subparsers.add_parser(
        "models",
        help="list the named encoder configurations with their parameter counts",
        description="List the named encoder configurations (L layers, H hidden, N heads, "
        "M MLP width, D embedding dim) with their trainable parameter counts.",
    )
    p.set_defaults(func=_models)

    p = subparsers.add_parser(
        "model-info",
        help="describe a model directory (config, parameters, axis, metrics)",
        description="Print a model directory's encoder config, parameter count, advantage axis "
        "counts, calibration and metrics.",
    )
    p.add_argument(
        "model",
        nargs="?",
        type=Path,
        help="model directory (default: $LATENTCHESS_MODEL or the shipped model)",
    )
    p.add_argument("--json", action="store_true", help="print the whole config.json document")
    p.set_defaults(func=_model_info)

    p = subparsers.add_parser(
        "export-onnx",
        help="export a model's encoder to ONNX and verify it with ONNX Runtime",
        description="Export the encoder to ONNX (input 'tokens' (batch, 77) uint8, output "
        "'embedding' (batch, D) float32 unit vectors, dynamic batch axis), then run it with "
        "ONNX Runtime on random tokens and print the largest difference from PyTorch.",
    )
    p.add_argument("--model", type=Path, help="model directory (default: the default model)")
    p.add_argument("--out", type=Path, required=True, help="ONNX file to write")
    p.add_argument("--int8", action="store_true", help="dynamic int8 quantisation of weights")
    p.add_argument("--opset", type=int, default=None, help="ONNX opset version (default 17)")
    p.set_defaults(func=_export_onnx)


def _models(args: argparse.Namespace) -> int:
    import torch

    from latentchess.models.config import (
        GAB_ENCODER_CONFIGS,
        MODEL_CONFIGS,
        SPARSE_ENCODER_CONFIGS,
    )
    from latentchess.models.gab_encoder import build_encoder

    rows = [("name", "L", "H", "N", "M", "D", "params")]
    for name, config in {**MODEL_CONFIGS, **GAB_ENCODER_CONFIGS}.items():
        with torch.device("meta"):  # shapes only, no memory for the weights
            params = build_encoder(config).num_parameters()
        # A GAB encoder's width is its square-token width d, its MLP the FFN's 2d.
        hidden = getattr(config, "hidden", getattr(config, "d_model", 0))
        mlp = getattr(config, "mlp", 2 * hidden)
        rows.append(
            (
                name,
                *(str(v) for v in (config.layers, hidden, config.heads, mlp)),
                str(config.dim),
                f"{params:,}",
            )
        )
    # A sparse (NNUE-feature) encoder: no layers or heads; H is its accumulator width L1 and M
    # its dense hidden width.
    for name, sparse in SPARSE_ENCODER_CONFIGS.items():
        with torch.device("meta"):
            params = build_encoder(sparse).num_parameters()
        cells = ("-", str(sparse.l1), "-", str(sparse.hidden), str(sparse.dim), f"{params:,}")
        rows.append((name, *cells))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        print("  ".join(cells))
    return 0


def _model_info(args: argparse.Namespace) -> int:
    import numpy as np
    import torch

    from latentchess.models.config import (
        EncoderConfig,
        SparseEncoderConfig,
        encoder_config_from_dict,
    )
    from latentchess.models.gab_encoder import build_encoder
    from latentchess.models.io import WEIGHTS_FILE, default_model_path, read_model_config

    path = args.model if args.model is not None else default_model_path()
    document = read_model_config(path)
    if args.json:
        print(json.dumps(document, indent=2))
        return 0
    config = encoder_config_from_dict(document["encoder"])
    with torch.device("meta"):
        params = build_encoder(config).num_parameters()
    weights = path / WEIGHTS_FILE
    size = f"{weights.stat().st_size / 1e6:.1f} MB" if weights.is_file() else "MISSING"
    axis = np.asarray(document["axis"], dtype=np.float64)
    print(f"model       {path}")
    if isinstance(config, EncoderConfig):
        print(
            f"config      {config.name}: L={config.layers} H={config.hidden} N={config.heads} "
            f"M={config.mlp} D={config.dim} dropout={config.dropout}"
        )
    elif isinstance(config, SparseEncoderConfig):
        print(
            f"config      {config.name}: sparse features={config.feature_set} L1={config.l1} "
            f"hidden={config.hidden} D={config.dim}"
        )
        if config.ft_from is not None:
            print(
                f"transformer {config.ft_from}'s, frozen and not stored here "
                f"({config.features.size:,} x {config.l1} rows; fingerprint {config.ft_hash})"
            )
    else:  # a contrastive Chessformer (GAB) encoder
        print(
            f"config      {config.name}: GAB trunk d={config.d_model} L={config.layers} "
            f"heads={config.heads} bias={config.position} D={config.dim}"
        )
    print(f"parameters  {params:,}  ({WEIGHTS_FILE}: {size})")
    print(f"tokenizer   {document['tokenizer']}  (format_version {document['format_version']})")
    print(f"axis        norm {np.linalg.norm(axis):.4f}; {_inline(document.get('axis_counts'))}")
    print(f"calibration {_inline(document.get('calibration'))}")
    if "git_commit" in document:
        print(f"git commit  {document['git_commit']}")
    for key in ("metrics", "training"):
        value = document.get(key)
        print(f"{key}:" if isinstance(value, dict) and value else f"{key:<11} {_inline(value)}")
        if isinstance(value, dict):
            for name, item in value.items():
                print(f"  {name}: {_inline(item)}")
    return 0


def _inline(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_inline(v)}" for k, v in value.items())
    return json.dumps(value) if not isinstance(value, str) else value


def _export_onnx(args: argparse.Namespace) -> int:
    from latentchess.errors import LatentChessError
    from latentchess.models.export import DEFAULT_OPSET, check_onnx, export_onnx
    from latentchess.models.io import load_model, read_model_config

    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as error:
        raise LatentChessError(
            f"export-onnx needs the onnx extras ({error}); pip install 'latentchess[onnx]'"
        ) from error
    model = load_model(args.model, precision="fp32")
    assert model.path is not None
    document = read_model_config(model.path)
    opset = DEFAULT_OPSET if args.opset is None else args.opset
    out = export_onnx(model.encoder, args.out, opset=opset, int8=args.int8, metadata=document)
    check = check_onnx(out, model.encoder)
    kind = "int8" if args.int8 else "fp32"
    print(f"wrote {out} ({kind}, opset {opset}, {out.stat().st_size / 1e6:.1f} MB)")
    print(
        f"onnxruntime vs torch fp32 on {check.positions} positions: "
        f"max abs diff {check.max_abs_diff:.3g}, cosine min {check.min_cosine:.6f} "
        f"mean {check.mean_cosine:.6f}"
    )
    return 0
