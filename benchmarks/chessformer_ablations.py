"""Chessformer ablations at our scale: the paper's tables' shape, every variant on one budget.

Variants (one switch each against the baseline ``gab``: GAB bias, 8 boards, no side features,
no learned square embedding): attention bias ``relative`` / ``absolute`` (a static learned
64 x 64 bias per head) / ``none``; history 0 / 31 previous boards (1 / 32 boards); side features
(castling, en passant, rule-50, repetition); a learned absolute square embedding. Each is trained
by ``train_chessformer`` on the same rated games, for the same steps and batch, with the same seed
and data order, then measured on:

* held-out human games (by game hash): top-1 move matching and value (WDL) loss;
* Stockfish's best move on positions of ``--sf-csv`` it never trained on (both ratings 2500);
* Lichess puzzles (``--puzzles``, the first ``--puzzle-count``): the policy's argmax must find
  every solver move (``latentchess.evaluation.puzzles``).

Results go to ``OUT/ablations.json`` and ``OUT/ablations.md`` (a table, the budget, wall time per
variant and the 1-minute load average); runs live in ``--runs`` and resume when killed. The
committed table's budget is in its header; the real run is a command in the README::

    .venv/bin/python benchmarks/chessformer_ablations.py --steps 3000 --batch-size 256 \
        --max-games 12000 --model-config cf-micro --sf-positions 20000 --puzzle-count 2000

Usage: ``benchmarks/chessformer_ablations.py [--steps N] [--label TEXT] ...`` (``--help``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from latentchess.textfiles import find_text, read_text

ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the checkout (or beside the worktrees' parent, for a git worktree).
SHARED = next((p / "shared" for p in ROOT.parents if (p / "shared" / "data").is_dir()), ROOT)
VARIANTS: dict[str, dict[str, Any]] = {
    "gab (baseline)": {},
    "relative bias": {"position": "relative"},
    "absolute 64x64 bias": {"position": "absolute"},
    "no bias": {"position": "none"},
    "history 0 (1 board)": {"history": 0},
    "history 31 (32 boards)": {"history": 31},
    "side features": {"side_features": True},
    "learned square embedding": {"absolute_embedding": True},
}


def _top1(model: Any, data: Any, rows: np.ndarray) -> float:
    """Top-1 agreement of the policy with ``data.move`` on ``rows`` (legal-masked argmax)."""
    import torch

    from latentchess.data.moves import batch_features
    from latentchess.squares import POLICY_SIZE

    cfg, hits = model.cfg, 0
    for start in range(0, len(rows), 512):
        chunk = rows[start : start + 512]
        features = torch.from_numpy(
            batch_features(data, chunk, history=cfg.history, side=cfg.side_features)
        )
        with torch.no_grad():
            policy, _ = model.network(
                features,
                torch.from_numpy(data.self_elo[chunk].astype(np.float32)),
                torch.from_numpy(data.oppo_elo[chunk].astype(np.float32)),
            )
        legal = torch.from_numpy(data.legal_mask(chunk, POLICY_SIZE))
        best = policy.float().masked_fill(~legal, float("-inf")).argmax(dim=1).numpy()
        hits += int((best == data.move[chunk]).sum())
    return hits / max(len(rows), 1)


def _puzzles(model_dir: Path, puzzles: list[Any]) -> float:
    import chess.engine

    from latentchess.engines.chessformer import ChessformerEngine
    from latentchess.evaluation.puzzles import solve_puzzle

    engine = ChessformerEngine(str(model_dir), self_elo=2500, oppo_elo=2500)
    limit = chess.engine.Limit(nodes=1)
    return sum(solve_puzzle(engine, p, limit).solved for p in puzzles) / max(len(puzzles), 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=SHARED / "data/lichess-rated-games.pgn.gz")
    parser.add_argument("--max-games", type=int, default=1500, help="games read for training")
    parser.add_argument("--model-config", default="cf-nano")
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--final-positions", type=int, default=4000, help="held-out positions")
    parser.add_argument("--sf-csv", type=Path, default=SHARED / "data/sf15-d9-eco-selfplay.csv.gz")
    parser.add_argument("--sf-positions", type=int, default=2000)
    puzzles = SHARED / "testsuites/lichess_puzzles_dev.csv"
    parser.add_argument("--puzzles", type=Path, default=puzzles)
    parser.add_argument("--puzzle-count", type=int, default=200)
    parser.add_argument("--variants", default=None, help="comma-separated subset of the names")
    parser.add_argument("--runs", type=Path, default=ROOT / "runs/chessformer-ablations")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/chessformer")
    parser.add_argument("--label", default="", help="a note for the table's header")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    import torch

    from latentchess.data.moves import read_csv_moves
    from latentchess.evaluation.puzzles import read_puzzles
    from latentchess.models.chessformer import get_chessformer_config
    from latentchess.models.chessformer_io import ChessformerModel
    from latentchess.training.objectives.chessformer import (
        ChessformerTrainConfig,
        train_chessformer,
    )

    torch.set_num_threads(args.threads)
    names = list(VARIANTS) if args.variants is None else args.variants.split(",")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown!r}; choose from {list(VARIANTS)!r}")
    base = get_chessformer_config(args.model_config)
    sf = read_csv_moves(args.sf_csv, elo=2500, holdout_fraction=0.5, max_rows=args.sf_positions)
    sf_rows = np.arange(len(sf))
    puzzles, _ = read_puzzles(args.puzzles)
    puzzles = puzzles[: args.puzzle_count]
    # The PGN is parsed once; the other variants read the first run's cache.
    data_path = args.data
    results: dict[str, Any] = {}
    json_path = args.out / "ablations.json"
    if json_path.exists():  # a killed run continues; another budget starts a new table
        previous = json.loads(read_text(find_text(json_path)))
        if previous.get("budget") == _budget(args):
            results = previous.get("variants", {})
    for index, name in enumerate(names):
        began = time.monotonic()
        model_cfg = dataclasses.replace(base, **VARIANTS[name])
        slug = "".join(c if c.isalnum() else "-" for c in name).strip("-")
        run = args.runs / slug
        cfg = ChessformerTrainConfig(
            data=data_path,
            out=run,
            model=model_cfg,
            steps=args.steps,
            batch_size=args.batch_size,
            lr=args.lr,
            warmup=max(1, args.steps // 20),
            max_games=args.max_games,
            eval_every=0,
            final_positions=args.final_positions,
            checkpoint_every=max(1, args.steps // 4),
            log_every=max(1, args.steps // 10),
            progress=False,
            threads=args.threads,
            device="cpu",
        )
        outcome = train_chessformer(cfg)
        if data_path.suffix != ".npz" and (run / "data.npz").exists():
            data_path = run / "data.npz"
        model = ChessformerModel.load(run / "model")
        metrics = outcome.metrics
        results[name] = {
            "changes": VARIANTS[name],
            "parameters": sum(p.numel() for p in model.network.parameters()),
            "human_top1": metrics.get("games_top1"),
            "human_value_loss": metrics.get("games_value_loss"),
            "human_positions": metrics.get("games_positions"),
            "stockfish_top1": _top1(model, sf, sf_rows),
            "puzzle_accuracy": _puzzles(run / "model", puzzles),
            "seconds": time.monotonic() - began,
            "load_average_1min": os.getloadavg()[0],
        }
        row = results[name]
        print(
            f"[{index + 1}/{len(names)}] {name}: human {row['human_top1']:.3f}, stockfish "
            f"{row['stockfish_top1']:.3f}, puzzles {row['puzzle_accuracy']:.3f}, "
            f"{row['seconds']:.0f} s",
            file=sys.stderr,
        )
        _write(args, results, len(sf_rows), len(puzzles))
    return 0


def _wilson(rate: float, n: int, z: float = 1.96) -> str:
    """``rate [low, high]``: the Wilson 95% interval of a proportion of ``n``."""
    if not n:
        return "-"
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{rate:.3f} [{centre - half:.3f}, {centre + half:.3f}]"


def _budget(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "model_config": args.model_config,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "lr": args.lr,
        "max_games": args.max_games,
        "threads": args.threads,
    }


def _write(args: argparse.Namespace, results: dict[str, Any], sf: int, puzzles: int) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    document = {
        "label": args.label,
        "budget": _budget(args),
        "stockfish_positions": sf,
        "puzzles": puzzles,
        "variants": results,
    }
    tmp = args.out / "ablations.json.tmp"
    tmp.write_text(json.dumps(document, indent=2) + "\n")
    tmp.replace(args.out / "ablations.json")
    lines = [
        "# Chessformer ablations" + (f" ({args.label})" if args.label else ""),
        "",
        f"`{args.model_config}`, {args.steps} steps x {args.batch_size} positions (lr "
        f"{args.lr}, seed 0, same data order, {args.threads} thread) on the first "
        f"{args.max_games} games of "
        f"`{args.data.name}`; one variant per row, each one switch away from the baseline. "
        f"Human: held-out games (by game hash), top-1 and WDL loss. Stockfish: top-1 on {sf} "
        f"positions of `{args.sf_csv.name}` (never trained on). Puzzles: {puzzles} Lichess "
        "puzzles solved by the policy's argmax. Rates with Wilson 95% intervals. Load = 1-minute "
        "load average at the end of the variant. Command: `python "
        f"benchmarks/chessformer_ablations.py {shlex.join(sys.argv[1:])}`.",
        "",
        "| variant | params | human top-1 | human value loss | Stockfish top-1 | puzzles "
        "| seconds | load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in results.items():
        lines.append(
            f"| {name} | {row['parameters']:,} | "
            f"{_wilson(row['human_top1'], row['human_positions'])} | "
            f"{row['human_value_loss']:.3f} | {_wilson(row['stockfish_top1'], sf)} | "
            f"{_wilson(row['puzzle_accuracy'], puzzles)} | {row['seconds']:.0f} | "
            f"{row['load_average_1min']:.1f} |"
        )
    tmp = args.out / "ablations.md.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(args.out / "ablations.md")


if __name__ == "__main__":
    sys.exit(main())
