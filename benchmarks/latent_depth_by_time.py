"""How deep the latent planner searches in a given time per move, per shipped latent model.

    .venv/bin/python benchmarks/latent_depth_by_time.py \
        --out benchmarks/results/latent_tc/depth_by_time.json

Issue 28's goal: the latent search reaches depth >= 8 within 1 s per move on this machine. For
each model and each time per move (0.1, 0.3, 1 s by default) the engine analyses the same
positions (plies 10, 20, ..., 60 of the games in ``--pgn``, default: the games the sparse model
played at 10+0.1 in ``benchmarks/results/latent_tc/``) from a fresh cache, and the completed
iteration depth, positions embedded and time used are recorded: median and range per setting.
One thread; the load average is recorded before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import chess
import chess.engine
import chess.pgn

from latentchess.engines.latent import LatentEngine
from latentchess.paths import SHIPPED_WEIGHTS
from latentchess.provenance import git_commit
from latentchess.textfiles import find_text, open_text

ROOT = Path(__file__).parents[1]
PGN = ROOT / "benchmarks/results/latent_tc/sparse-64-w8/vs_sf1350.pgn.xz"
SETTINGS = (  # label, shipped model, engine options (none: what the model declares)
    ("sparse-nnue-64, width 8 (its default)", "sparse-nnue-64", {}),
    ("sparse-64, width 8 (its default)", "sparse-64", {}),
    ("sparse-64, width 3", "sparse-64", {"width": 3}),
    ("gab-micro, width 3 (its default)", "gab-micro", {}),
)


def positions(pgn: Path, plies: range) -> list[chess.Board]:
    """The boards at ``plies`` of every game in ``pgn`` (with their move stacks)."""
    boards = []
    with open_text(find_text(pgn)) as handle:  # .pgn, or .pgn.xz once stored compressed
        while (game := chess.pgn.read_game(handle)) is not None:
            board = game.board()
            for ply, move in enumerate(game.mainline_moves(), start=1):
                board.push(move)
                if ply in plies and not board.is_game_over():
                    boards.append(board.copy())
    return boards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pgn", type=Path, default=PGN)
    parser.add_argument("--times", type=float, nargs="+", default=[0.1, 0.3, 1.0])
    parser.add_argument("--max-positions", type=int, default=40)
    parser.add_argument(
        "--models",
        nargs="+",
        choices=sorted({name for _, name, _ in SETTINGS}),
        help="only these shipped models' settings (default: all)",
    )
    args = parser.parse_args()
    settings = [s for s in SETTINGS if args.models is None or s[1] in args.models]
    boards = positions(args.pgn, range(10, 61, 10))[: args.max_positions]
    load_before = os.getloadavg()
    rows = []
    for label, name, options in settings:
        for seconds in args.times:
            engine = LatentEngine.from_options(str(SHIPPED_WEIGHTS / name), **options)
            engine.ready()
            depths, nodes, used = [], [], []
            for board in boards:
                engine.new_game()
                started = time.monotonic()
                result = engine.analyse(board, chess.engine.Limit(time=seconds))
                used.append(time.monotonic() - started)
                depths.append(result.depth or 0)
                nodes.append(result.nodes or 0)
            row = {
                "model": label,
                "time_per_move_s": seconds,
                "positions": len(boards),
                "depth_median": statistics.median(depths),
                "depth_min": min(depths),
                "depth_max": max(depths),
                "share_depth_8_or_more": sum(d >= 8 for d in depths) / len(depths),
                "positions_embedded_median": statistics.median(nodes),
                "seconds_used_median": round(statistics.median(used), 3),
            }
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    result = {
        "command": "benchmarks/latent_depth_by_time.py " + " ".join(sys.argv[1:]),
        "commit": git_commit(),
        "pgn": str(args.pgn.resolve().relative_to(ROOT)),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    tmp.replace(args.out)
    lines = [
        "| model | time per move | depth: median [min, max] | share at depth >= 8 "
        "| positions embedded (median) |",
        "|---|---:|---|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['time_per_move_s']} s | {r['depth_median']:g} "
            f"[{r['depth_min']}, {r['depth_max']}] | {r['share_depth_8_or_more']:.0%} "
            f"| {r['positions_embedded_median']:,.0f} |"
        )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
