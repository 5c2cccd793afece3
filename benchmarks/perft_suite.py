"""The deep perft suite: every published count of the standard suite on the native core.

The tests run the counts up to 1.5 M nodes; this runs all of them (start position depth 6 =
119,060,324; Kiwipete depth 5 = 193,690,690; position 3 depth 7, position 4 depth 6 and its mirror,
positions 5 and 6 depth 5; Martin Sedlak's special cases; six Chess960 positions of the
chessprogramming wiki to depth 5) and fails on any mismatch.

Run (from the repository root): ``.venv/bin/python benchmarks/perft_suite.py [--max-nodes N]``;
writes benchmarks/results/perft_suite.json and perft_suite.md. Same as
``latentchess perft --suite --max-nodes N`` plus the files.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

from latentchess.core.suite import PerftOutcome, cases_up_to, run_suite

RESULTS = Path(__file__).resolve().parent / "results"


def _cpu() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        match = re.search(r"model name\s*:\s*(.+)", cpuinfo.read_text())
        if match:
            return match.group(1)
    return platform.processor() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-nodes", type=int, default=1_000_000_000)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    total = len(cases_up_to(args.max_nodes))
    began = time.perf_counter()

    def show(outcome: PerftOutcome) -> None:
        verdict = "ok" if outcome.ok else f"MISMATCH (published {outcome.expected:,})"
        print(
            f"{outcome.name:<22} depth {outcome.depth}  {outcome.nodes:>13,}  "
            f"{outcome.seconds:7.2f} s  {verdict}  [{time.perf_counter() - began:.0f} s, "
            f"{total} counts]",
            flush=True,
        )

    outcomes = run_suite(args.max_nodes, on_result=show)
    seconds = time.perf_counter() - began
    wrong = [o for o in outcomes if not o.ok]
    nodes = sum(o.nodes for o in outcomes)
    machine = {
        "cpu": _cpu(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    args.out.mkdir(parents=True, exist_ok=True)
    record = {
        "command": " ".join(["python benchmarks/perft_suite.py", *sys.argv[1:]]),
        "date": date,
        "commit": commit,
        "machine": machine,
        "max_nodes": args.max_nodes,
        "counts": len(outcomes),
        "mismatches": len(wrong),
        "nodes": nodes,
        "seconds": seconds,
        "results": [
            {
                "name": o.name,
                "fen": o.fen,
                "depth": o.depth,
                "published": o.expected,
                "nodes": o.nodes,
                "seconds": round(o.seconds, 4),
            }
            for o in outcomes
        ],
    }
    (args.out / "perft_suite.json").write_text(json.dumps(record, indent=2) + "\n")
    deepest: dict[str, PerftOutcome] = {}
    for outcome in outcomes:
        deepest[outcome.name] = outcome
    lines = [
        "# Perft suite (native core)",
        "",
        "Command: `.venv/bin/python benchmarks/perft_suite.py`",
        "",
        f"Date: {date}; commit {commit or 'unknown'}.",
        "",
        f"Machine: {machine['cpu']}, {machine['cores']} cores, Python {machine['python']}; "
        f"one thread; load average {machine['load_average']} at the end (a shared machine: "
        "the speeds are indicative only).",
        "",
        "Positions `chess960-N` are played with Chess960 rules (Shredder-FEN castling).",
        "",
        f"**{len(outcomes) - len(wrong)}/{len(outcomes)} published counts reproduced** "
        f"({nodes:,} nodes in {seconds:.1f} s). Deepest count per position:",
        "",
        "| position | depth | nodes | published | seconds | M nodes/s |",
        "|---|---|---|---|---|---|",
    ]
    for o in deepest.values():
        rate = o.nodes / o.seconds / 1e6 if o.seconds > 0 else 0.0
        lines.append(
            f"| {o.name} | {o.depth} | {o.nodes:,} | {o.expected:,} | {o.seconds:.2f} "
            f"| {rate:.1f} |"
        )
    (args.out / "perft_suite.md").write_text("\n".join(lines) + "\n")
    print(f"{len(outcomes) - len(wrong)}/{len(outcomes)} ok; {nodes:,} nodes in {seconds:.1f} s")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
