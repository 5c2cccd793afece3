"""Native-core speed of two source trees, interleaved: perft and ``latentchess bench``.

Each round runs, for each tree in turn (a fresh process with that tree's ``src`` first on the
path, its native core already built), perft of the start position to depth 6 and of Kiwipete to
depth 5, and ``latentchess bench`` for each ``--eval`` (default: the hand-crafted evaluation;
``--eval nnue`` adds the shipped network; each node count is the search's signature, its nodes/s
the speed). Interleaving the trees round by round spreads a shared machine's load over both; the
report gives medians and the ratio B / A.

Run (from the repository root)::

    .venv/bin/python benchmarks/compare_core_speed.py --tree main=../main --tree branch=. \\
        --rounds 6 --out benchmarks/results/chess960

Writes ``core_speed.json`` and ``core_speed.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

_PERFT = """
import time
from latentchess.core import Board
from latentchess.core.suite import PERFT_SUITE
fens = {case.name: case.fen for case in PERFT_SUITE}
for name, depth in (("start", 6), ("kiwipete", 5)):
    board = Board(fens[name])
    began = time.perf_counter()
    nodes = board.perft(depth)
    print(name, nodes, time.perf_counter() - began)
"""


def _run(tree: Path, args: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, check=True
    ).stdout


def _commit(tree: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="LABEL=PATH (two of them)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument(
        "--eval",
        action="append",
        choices=["hce", "nnue"],
        help="evaluations to bench (repeatable; default hce)",
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    trees = [(label, Path(path)) for label, path in (t.split("=", 1) for t in args.tree)]
    evals = args.eval or ["hce"]
    bench_keys = {name: "bench_nps" if name == "hce" else f"bench_{name}_nps" for name in evals}
    if len(trees) != 2:
        parser.error("give exactly two --tree LABEL=PATH")
    samples: dict[str, dict[str, list[float]]] = {
        label: {"start_s": [], "kiwipete_s": [], **{key: [] for key in bench_keys.values()}}
        for label, _ in trees
    }
    nodes: dict[str, dict[str, int]] = {label: {} for label, _ in trees}
    load = [os.getloadavg()[0]]
    began = time.perf_counter()
    for round_number in range(1, args.rounds + 1):
        for label, tree in trees:
            for line in _run(tree, ["-c", _PERFT]).splitlines():
                name, count, seconds = line.split()
                samples[label][f"{name}_s"].append(float(seconds))
                nodes[label][f"perft_{name}"] = int(count)
            for name, key in bench_keys.items():
                bench = _run(tree, ["-m", "latentchess", "bench", "--eval", name])
                nps = re.search(r"Nodes/second\s*:\s*(\d+)", bench)
                searched = re.search(r"Nodes searched\s*:\s*(\d+)", bench)
                assert nps and searched, bench[-500:]
                samples[label][key].append(float(nps.group(1)))
                nodes[label][key.replace("_nps", "")] = int(searched.group(1))
        load.append(os.getloadavg()[0])
        elapsed = time.perf_counter() - began
        print(
            f"round {round_number}/{args.rounds}: {elapsed:.0f} s, "
            f"ETA {elapsed / round_number * (args.rounds - round_number):.0f} s",
            flush=True,
        )
    (a, _), (b, _) = trees
    medians = {
        label: {key: statistics.median(values) for key, values in by_key.items()}
        for label, by_key in samples.items()
    }
    ratios = {key: medians[b][key] / medians[a][key] for key in medians[a]}
    record = {
        "command": " ".join(["python benchmarks/compare_core_speed.py", *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commits": {label: _commit(tree) for label, tree in trees},
        "load_average_1min": load,
        "nodes": nodes,
        "samples": samples,
        "medians": medians,
        "ratio_b_over_a": ratios,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "core_speed.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = [
        f"# Native core speed: {b} against {a}",
        "",
        f"Command: `{record['command']}`",
        "",
        f"Date: {record['date']}; commits {record['commits']}; 1-minute load average "
        f"{min(load):.1f}-{max(load):.1f} during the run (a shared 2-core machine).",
        "",
        f"Same node counts: {nodes[a] == nodes[b]} ({nodes[b]}).",
        "",
        f"| measure (median of {args.rounds}) | {a} | {b} | {b} / {a} |",
        "|---|---|---|---|",
    ]
    for key in ("start_s", "kiwipete_s", *bench_keys.values()):
        lines.append(
            f"| {key} | {medians[a][key]:,.3f} | {medians[b][key]:,.3f} | {ratios[key]:.3f} |"
        )
    (args.out / "core_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if nodes[a] == nodes[b] else 1


if __name__ == "__main__":
    sys.exit(main())
