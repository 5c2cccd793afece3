"""Lazy SMP speed: nodes per second of the native search at Threads=1, 2, 4 at a fixed move time.

Usage: python benchmarks/bench_smp.py --threads 1,2,4 --time 0.5 --out benchmarks/results/lazy_smp

Searches every ``latentchess bench`` position for ``--time`` seconds from an empty table with each
thread count in turn (interleaved per position, so a change in the machine's load hits every
count alike) and reports total nodes, nodes per second, its ratio to one thread and the mean
depth reached. Nodes/s only measures work: Lazy SMP's helpers search overlapping trees, so the
strength gain is measured by a match at equal time (docs/engines/alphabeta.md). The machine's
load average and core count are recorded with the numbers: a second thread only helps when a
second core is free.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import chess.engine

from latentchess.core.alphabeta import AlphaBeta
from latentchess.core.bench import bench_boards


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2,4", help="comma-separated thread counts")
    parser.add_argument("--time", type=float, default=0.5, help="seconds per position")
    parser.add_argument("--evaluator", default="nnue", help="hce, pesto, nnue or a model dir")
    parser.add_argument("--hash", type=int, default=16, help="transposition table MB")
    parser.add_argument("--out", type=Path, default=None, help="directory for smp_nps.json")
    args = parser.parse_args()
    counts = [int(text) for text in args.threads.split(",")]
    engines = {n: AlphaBeta(args.evaluator, hash_mb=args.hash, threads=n) for n in counts}
    totals = {n: {"nodes": 0, "time_s": 0.0, "depth": 0} for n in counts}
    load_before = os.getloadavg()
    boards = bench_boards()
    for board in boards:
        for n in counts:
            engine = engines[n]
            engine.new_game()
            began = time.perf_counter()
            outcome = engine.search(board, chess.engine.Limit(time=args.time))
            totals[n]["time_s"] += time.perf_counter() - began
            totals[n]["nodes"] += outcome.nodes
            totals[n]["depth"] += outcome.info.depth
    load_after = os.getloadavg()
    rows = []
    base_nps = totals[counts[0]]["nodes"] / totals[counts[0]]["time_s"]
    for n in counts:
        nps = totals[n]["nodes"] / totals[n]["time_s"]
        rows.append(
            {
                "threads": n,
                "nodes": totals[n]["nodes"],
                "time_s": round(totals[n]["time_s"], 3),
                "nps": int(nps),
                "speedup": round(nps / base_nps, 3),
                "mean_depth": round(totals[n]["depth"] / len(boards), 2),
            }
        )
    print(f"{'threads':>7} {'nodes':>12} {'nodes/s':>10} {'x1':>6} {'depth':>6}")
    for row in rows:
        print(
            f"{row['threads']:>7} {row['nodes']:>12} {row['nps']:>10} {row['speedup']:>6.2f}"
            f" {row['mean_depth']:>6.2f}"
        )
    print(f"load average before {load_before}, after {load_after}, cores {os.cpu_count()}")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        result = {
            "evaluator": args.evaluator,
            "hash_mb": args.hash,
            "time_per_position_s": args.time,
            "positions": len(boards),
            "cores": os.cpu_count(),
            "machine": platform.processor() or platform.machine(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in load_after],
            "rows": rows,
        }
        (args.out / "smp_nps.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
