"""Engine start-up as tournament managers see it: process start to ``uciok`` and ``readyok``.

Usage: python benchmarks/bench_startup.py --runs 10 --out benchmarks/results/startup

Runs ``latentchess uci`` (the default engine, ``ab`` with the shipped NNUE), ``latentchess uci
--engine latent`` (its model loads before ``readyok``) and Stockfish in turn, each ``--runs``
times, sending ``uci``, ``isready``, ``quit``; reports the median seconds to ``uciok`` and to
``readyok`` and the peak resident memory (GNU time's ``%M``), with Stockfish as the baseline in
the same run. Cutechess and lichess-bot restart engines often, so this is paid per game.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

GNU_TIME = "/usr/bin/time"


def _one(command: list[str]) -> tuple[float, float, int]:
    """(seconds to uciok, seconds to readyok, peak KB) of one start."""
    wrapped = [GNU_TIME, "-f", "%M", *command]
    began = time.monotonic()
    process = subprocess.Popen(
        wrapped, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("uci\n")
    process.stdin.flush()
    uciok = readyok = 0.0
    for line in process.stdout:
        if line.strip() == "uciok":
            uciok = time.monotonic() - began
            process.stdin.write("isready\n")
            process.stdin.flush()
        elif line.strip() == "readyok":
            readyok = time.monotonic() - began
            process.stdin.write("quit\n")
            process.stdin.flush()
            break
    _, err = process.communicate(timeout=60)
    peak_kb = int(err.strip().splitlines()[-1])
    return uciok, readyok, peak_kb


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/startup"))
    args = parser.parse_args()
    latentchess = str(Path(sys.executable).parent / "latentchess")
    stockfish = shutil.which("stockfish") or "/usr/games/stockfish"
    engines = {
        "latentchess uci (ab)": [latentchess, "uci"],
        "latentchess uci --engine latent": [latentchess, "uci", "--engine", "latent"],
        "stockfish 15.1": [stockfish],
    }
    rows = {}
    for name, command in engines.items():
        _one(command)  # warm the page cache
        runs = [_one(command) for _ in range(args.runs)]
        rows[name] = {
            "uciok_s": statistics.median(r[0] for r in runs),
            "readyok_s": statistics.median(r[1] for r in runs),
            "peak_mb": statistics.median(r[2] for r in runs) / 1024,
            "runs": args.runs,
        }
        row = rows[name]
        print(
            f"{name:34} uciok {row['uciok_s']:.3f} s  readyok {row['readyok_s']:.3f} s  "
            f"peak {row['peak_mb']:.0f} MB",
            flush=True,
        )
    baseline = rows["stockfish 15.1"]["readyok_s"]
    for row in rows.values():
        row["readyok_vs_stockfish"] = row["readyok_s"] / baseline
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "startup.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
