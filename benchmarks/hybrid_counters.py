"""How often alpha-beta overrules the latent candidates, per k (verify mode), on STS positions.

    .venv/bin/python benchmarks/hybrid_counters.py ../shared/testsuites/STS1-STS15_LAN_v6.epd \
        --positions 75 --time 0.1 --out benchmarks/results/hybrid/counters

For each k, one :class:`HybridEngine` (verify) plays every position at a fixed time per move and
reports its counters (played move outside the latent top k, admitted by the safety net, alpha-beta
preferring a move outside the top k, the latent choice kept against it) and how often the move is
the suite's best move (``bm``, or the top-scored ``c0`` move); ``ab`` and the latent planner alone
play the same positions at the same time, for scale. Positions are spread over the file. Writes
``counters.json`` and ``counters.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import chess
import chess.engine

from latentchess.engines.registry import create_engine
from latentchess.evaluation.epd import EpdPosition, read_epd
from latentchess.provenance import git_commit


def _best_moves(entry: EpdPosition) -> set[str]:
    """The suite's best moves (UCI): ``bm``, else the top-scored ``c0`` moves."""
    if entry.best_moves:
        return set(entry.best_moves)
    if entry.points:
        top = max(entry.points.values())
        return {move for move, value in entry.points.items() if value == top}
    return set()


def main(argv: list[str] | None = None) -> int:
    """Run every k and the two parts on the same positions."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("epd", type=Path)
    parser.add_argument("--positions", type=int, default=75)
    parser.add_argument("--time", type=float, default=0.1)
    parser.add_argument("--ks", default="1,2,3,5,0", help="k values (0: every move)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    entries, _ = read_epd(args.epd)
    step = max(1, len(entries) // args.positions)
    entries = entries[::step][: args.positions]
    specs = [f"hybrid:mode=verify,k={k}" for k in args.ks.split(",")]
    specs += ["hybrid:mode=order", "hybrid:mode=horizon,depth=2", "ab", "latent:depth=4"]
    rows = []
    for spec in specs:
        engine = create_engine(spec)
        began = time.perf_counter()
        solved = 0
        try:
            for index, entry in enumerate(entries):
                board = chess.Board(entry.fen)
                move = engine.play(board, chess.engine.Limit(time=args.time))
                solved += move.uci() in _best_moves(entry)
                if index % 25 == 24:
                    print(f"{spec}: {index + 1}/{len(entries)}", file=sys.stderr, flush=True)
            counters = getattr(engine, "counters", None)
            row = {
                "engine": spec,
                "positions": len(entries),
                "best_move_found": solved,
                "seconds": round(time.perf_counter() - began, 1),
                "counters": None if counters is None else counters.__dict__.copy(),
            }
        finally:
            engine.close()
        print(json.dumps(row), flush=True)
        rows.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    result = {
        "rows": rows,
        "epd": str(args.epd),
        "time_per_move": args.time,
        "commit": git_commit(),
        "command": " ".join(sys.argv),
    }
    (args.out / "counters.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [
        f"# Latent candidates overruled ({len(entries)} STS positions, {args.time} s per move)",
        "",
        "| engine | best move found | searches | latent first | outside top k | admitted "
        "| ab prefers outside top k | latent kept |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        c = row["counters"] or {}
        cells = [c.get(key, "") for key in ("searches", "latent_first", "outside_top_k")]
        cells += [c.get(key, "") for key in ("admitted", "rest_better", "latent_kept")]
        lines.append(
            f"| {row['engine']} | {row['best_move_found']}/{row['positions']} | "
            + " | ".join(str(cell) for cell in cells)
            + " |"
        )
    lines += ["", f"Command: `{result['command']}`"]
    (args.out / "counters.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
