"""``latentchess chessformer configs|export-onnx|pack|attention``: Chessformer model tools."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``chessformer`` command group."""
    group = subparsers.add_parser(
        "chessformer", help="Chessformer models: configs, ONNX, attention"
    )
    commands = group.add_subparsers(dest="chessformer_command", metavar="COMMAND", required=True)

    info = commands.add_parser("configs", help="named configurations and parameter counts")
    info.set_defaults(func=_configs)

    onnx = commands.add_parser("export-onnx", help="write model.onnx and check it against torch")
    onnx.add_argument("out", type=Path, help="the .onnx file")
    onnx.add_argument("--model", type=Path, default=None, help="model dir (default: shipped)")
    onnx.set_defaults(func=_export)

    pack = commands.add_parser(
        "pack",
        help="copy a trained model directory for shipping (float16 weights, a default rating)",
        description="Copy SRC to DST with the weights stored in float16 (half the file; loading "
        "rebuilds float32) and, for a model of engine moves, the rating it was trained at as "
        "its default_elo (engines and policy priors then condition on it).",
    )
    pack.add_argument("src", type=Path)
    pack.add_argument("dst", type=Path)
    pack.add_argument("--float32", action="store_true", help="keep float32 weights")
    pack.add_argument("--default-elo", type=float, default=None)
    pack.set_defaults(func=_pack)

    attention = commands.add_parser(
        "attention",
        help="the paper's Table 3: correlations of GAB and dot-product attention",
        description="Average correlation of GAB biases and of dot-product attention maps between "
        "positions and, within a position, across query squares (paper: GAB 0.770 / 0.005, "
        "dot-product 0.230 / 0.816).",
    )
    attention.add_argument("games", type=Path, help="PGN of rated games, or a .npz data cache")
    attention.add_argument("--model", type=Path, default=None, help="model dir (default: shipped)")
    attention.add_argument("--positions", type=int, default=512, help="positions sampled")
    attention.add_argument("--max-games", type=int, default=200, help="games read from a PGN")
    attention.add_argument("--seed", type=int, default=0)
    attention.add_argument("--json", type=Path, default=None)
    attention.set_defaults(func=_attention)


def _configs(args: argparse.Namespace) -> int:
    import torch

    from latentchess.models.chessformer import CHESSFORMER_CONFIGS, Chessformer, parameter_count

    for name, cfg in CHESSFORMER_CONFIGS.items():
        with torch.device("meta"):
            count = parameter_count(Chessformer(cfg))
        print(
            f"{name:10} d={cfg.d_model:<5} L={cfg.layers} H={cfg.heads:<3} "
            f"p={cfg.gab_per_square:<3} i={cfg.gab_hidden:<4} g={cfg.gab_templates:<4} "
            f"{count:>12,} parameters"
        )
    return 0


def _export(args: argparse.Namespace) -> int:
    from latentchess.models.chessformer_export import check_onnx, export_chessformer_onnx
    from latentchess.models.chessformer_io import ChessformerModel

    model = ChessformerModel.load(args.model)
    path = export_chessformer_onnx(model.network, args.out)
    print(f"written: {path}; max |onnxruntime - torch| = {check_onnx(model.network, path):.3g}")
    return 0


def _pack(args: argparse.Namespace) -> int:
    import torch

    from latentchess.models.chessformer_io import load_chessformer, save_chessformer

    network, config = load_chessformer(args.src)
    own = {"format", "format_version", "encoding", "chessformer"}
    metadata = {k: v for k, v in config.items() if k not in own}
    if args.default_elo is not None:
        metadata["default_elo"] = args.default_elo
    dtype = None if args.float32 else torch.float16
    path = save_chessformer(args.dst, network, metadata, dtype=dtype)
    size = (path / "model.safetensors").stat().st_size
    print(f"written: {path} ({size / 1e6:.1f} MB)")
    return 0


def _attention(args: argparse.Namespace) -> int:
    import numpy as np
    import torch

    from latentchess.data.moves import MoveData, batch_features, read_pgn_moves
    from latentchess.evaluation.attention import PAPER_TABLE3, attention_correlations
    from latentchess.models.chessformer_io import ChessformerModel

    model = ChessformerModel.load(args.model)
    if args.games.suffix == ".npz":
        data = MoveData.load(args.games)
    else:
        data = read_pgn_moves(args.games, max_games=args.max_games, progress=False)
    rng = np.random.default_rng(args.seed)
    rows = np.sort(rng.choice(len(data), size=min(args.positions, len(data)), replace=False))
    cfg = model.cfg
    features = torch.from_numpy(
        batch_features(data, rows, history=cfg.history, side=cfg.side_features)
    )
    result = attention_correlations(
        model.network,
        features,
        torch.from_numpy(data.self_elo[rows].astype(np.float32)),
        torch.from_numpy(data.oppo_elo[rows].astype(np.float32)),
        seed=args.seed,
    )
    print(f"{len(rows)} positions; average correlation   between positions   within position")
    for kind, values in result.items():
        paper = PAPER_TABLE3[kind]
        print(
            f"{kind:>12} (ours)                 {values['between_positions']:>8.3f}"
            f"          {values['within_position']:>8.3f}"
        )
        print(
            f"{kind:>12} (paper)                {paper['between_positions']:>8.3f}"
            f"          {paper['within_position']:>8.3f}"
        )
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "positions": len(rows),
                    "model": str(model.config.get("training", {}).get("out", args.model)),
                    "ours": result,
                    "paper": PAPER_TABLE3,
                },
                indent=2,
            )
            + "\n"
        )
    return 0
