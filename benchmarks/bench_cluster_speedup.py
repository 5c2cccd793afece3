"""The same match locally and on a 2-worker Dask cluster: wall time and speed-up.

Usage: python benchmarks/bench_cluster_speedup.py --games 20 --repeats 2 --name speedup-fast

Plays one match (``ab`` at a fixed node count against Stockfish at a fixed node count, fixed
openings, so every configuration plays the same games' worth of work) through the CLI, as a user
would, in three ways: the plain local run with one game at a time (``--workers 1``), the plain
local run with the default two threads (``--workers 2``), and ``--cluster local:2`` (a Dask
``LocalCluster`` of two worker processes started by the command). The configurations alternate
(A B C A B C ...) so that a change of machine load hits them alike; each run's wall time counts
the whole command (interpreter start, cluster start and stop included) and the match alone
(``wall_seconds`` of the command's JSON, which includes the cluster's start). ``uptime`` is
recorded before and after: on a shared machine the ratios, not the seconds, are the result.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CONFIGS = {
    "local --workers 1": ["--workers", "1"],
    "local --workers 2": ["--workers", "2"],
    "--cluster local:2": ["--cluster", "local:2"],
}


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--limit1", default="nodes=2000", help="ab's limit")
    parser.add_argument("--limit2", default="nodes=300", help="Stockfish's limit")
    parser.add_argument("--max-plies", type=int, default=120)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/cluster"))
    parser.add_argument("--name", default="speedup", help="results file: OUT/NAME.json")
    parser.add_argument("--scratch", type=Path, default=Path("runs/bench_cluster_speedup"))
    args = parser.parse_args()
    args.scratch.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in CONFIGS}
    load = {"before": _uptime()}
    for repeat in range(args.repeats):
        for index, (name, flags) in enumerate(CONFIGS.items()):
            pgn = args.scratch / f"r{repeat}-{index}.pgn"
            report = args.scratch / f"r{repeat}-{index}.json"
            for stale in (pgn, report):
                stale.unlink(missing_ok=True)
            command = [
                sys.executable, "-m", "latentchess", "match", "ab", "stockfish",
                "--limit1", args.limit1, "--limit2", args.limit2, "--games", str(args.games),
                "--max-plies", str(args.max_plies), "--pgn", str(pgn), "--json", str(report),
                "--no-progress", *flags,
            ]  # fmt: skip
            began = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True, env=os.environ.copy())
            wall = time.perf_counter() - began
            played = json.loads(report.read_text(encoding="utf-8"))
            runs[name].append(
                {
                    "wall_s": round(wall, 2),
                    "match_s": played["wall_seconds"],
                    "games": played["game_count"],
                    "plies": played["plies"],
                    "uptime": _uptime(),
                }
            )
            print(name, runs[name][-1], file=sys.stderr)
    load["after"] = _uptime()
    baseline = statistics.median(r["wall_s"] for r in runs["local --workers 1"])
    default = statistics.median(r["wall_s"] for r in runs["local --workers 2"])
    summary = {
        name: {
            "median_wall_s": statistics.median(r["wall_s"] for r in rows),
            "median_match_s": statistics.median(r["match_s"] for r in rows),
            "speedup_vs_workers_1": round(
                baseline / statistics.median(r["wall_s"] for r in rows), 2
            ),
            "speedup_vs_workers_2": round(
                default / statistics.median(r["wall_s"] for r in rows), 2
            ),
        }
        for name, rows in runs.items()
    }
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    result = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": commit,
        "cpus": os.cpu_count(),
        "command": " ".join(["python", "benchmarks/bench_cluster_speedup.py", *sys.argv[1:]]),
        "match": {
            "engines": ["ab", "stockfish"],
            "limit1": args.limit1,
            "limit2": args.limit2,
            "games": args.games,
            "max_plies": args.max_plies,
        },
        "load": load,
        "summary": summary,
        "runs": runs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
