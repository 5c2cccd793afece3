"""Engine start-up as tournament managers see it: process start to ``uciok`` and ``readyok``.

Usage::

    python benchmarks/bench_startup.py --runs 15 --out benchmarks/results/startup
    python benchmarks/bench_startup.py --compare OTHER_CHECKOUT/src --compare-label before

Starts ``latentchess uci`` (the default engine, ``ab`` with the shipped NNUE; this checkout's
``src`` first on ``PYTHONPATH``), Stockfish and, with ``--compare``, ``latentchess uci`` from
another checkout, interleaved (round after round, each engine once per round, the order
rotating) so that a change in the machine's load hits them alike. Each start sends ``uci``,
``isready``, ``quit``. Records per engine: the median and minimum wall seconds to ``uciok`` and
``readyok``, the median CPU seconds (user + system, from the child's rusage) and the median
peak resident memory; and the one-minute load average seen during the run. Cutechess and
lichess-bot restart engines often, so this is paid per game. ``--latent`` adds ``latentchess
uci --engine latent`` (its model loads before ``readyok``).

Python's bytecode of each checkout is cached under a temporary directory
(``PYTHONPYCACHEPREFIX``; one warm-up start per engine writes it), as an installed package's
would be, without writing into the checkouts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _one(command: list[str], env: dict[str, str]) -> dict[str, float]:
    """Seconds to ``uciok`` and ``readyok``, CPU seconds and peak MB of one start."""
    began = time.monotonic()
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("uci\n")
    process.stdin.flush()
    uciok = readyok = float("nan")
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
    process.stdin.close()
    process.stdout.close()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if readyok != readyok:  # NaN: no readyok
        raise RuntimeError(f"{command} exited ({process.returncode}) without readyok")
    return {
        "uciok_s": uciok,
        "readyok_s": readyok,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,
    }


def _commit(src: Path) -> str | None:
    try:
        return subprocess.run(
            ["git", "-C", str(src), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _portable(argv: list[str]) -> list[str]:
    """The arguments as recorded: the other checkout (named by its commit) as ``OTHER/src``."""
    return [
        "OTHER/src" if previous == "--compare" else word
        for previous, word in zip(["", *argv], argv, strict=False)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="starts per engine (after a warm-up)")
    parser.add_argument("--out", type=Path, default=None, help="write startup.json here")
    parser.add_argument("--compare", type=Path, default=None, help="another checkout's src/")
    parser.add_argument("--compare-label", default="compare", help="its name in the results")
    parser.add_argument("--stockfish", default=shutil.which("stockfish") or "/usr/games/stockfish")
    parser.add_argument("--latent", action="store_true", help="add --engine latent")
    args = parser.parse_args()

    script = str(Path(sys.executable).parent / "latentchess")
    cache = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def python_env(src: Path, label: str) -> dict[str, str]:
        return {**base_env, "PYTHONPATH": str(src), "PYTHONPYCACHEPREFIX": str(cache / label)}

    engines: dict[str, tuple[list[str], dict[str, str]]] = {
        "latentchess uci": ([script, "uci"], python_env(ROOT / "src", "this"))
    }
    if args.compare is not None:
        engines[f"latentchess uci ({args.compare_label})"] = (
            [script, "uci"],
            python_env(args.compare.resolve(), "compare"),
        )
    if args.latent:
        engines["latentchess uci --engine latent"] = (
            [script, "uci", "--engine", "latent"],
            python_env(ROOT / "src", "this"),
        )
    engines["stockfish"] = ([args.stockfish], base_env)

    try:
        for command, env in engines.values():
            _one(command, env)  # warm-up: the page cache and the bytecode cache
        samples: dict[str, list[dict[str, float]]] = {name: [] for name in engines}
        loads = []
        names = list(engines)
        for round_index in range(args.runs):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(_one(*engines[name]))
            loads.append(os.getloadavg()[0])
    finally:
        shutil.rmtree(cache, ignore_errors=True)

    rows: dict[str, dict[str, Any]] = {}
    for name, runs in samples.items():
        row: dict[str, Any] = {}
        for key in ("uciok_s", "readyok_s", "cpu_s", "peak_mb"):
            row[key] = round(statistics.median(r[key] for r in runs), 4)
        row["readyok_min_s"] = round(min(r["readyok_s"] for r in runs), 4)
        row["runs"] = len(runs)
        rows[name] = row
    for row in rows.values():
        row["readyok_vs_stockfish"] = round(row["readyok_s"] / rows["stockfish"]["readyok_s"], 2)
    result = {
        "command": " ".join(["python benchmarks/bench_startup.py", *_portable(sys.argv[1:])]),
        "checkouts": {
            "latentchess uci": _commit(ROOT),
            **(
                {f"latentchess uci ({args.compare_label})": _commit(args.compare)}
                if args.compare is not None
                else {}
            ),
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_1min": {
                "min": round(min(loads), 2),
                "median": round(statistics.median(loads), 2),
                "max": round(max(loads), 2),
            },
        },
        "engines": rows,
    }
    for name, row in rows.items():
        print(
            f"{name:34} readyok {row['readyok_s']:.3f} s (min {row['readyok_min_s']:.3f})  "
            f"cpu {row['cpu_s']:.3f} s  peak {row['peak_mb']:.0f} MB  "
            f"x{row['readyok_vs_stockfish']} Stockfish",
            flush=True,
        )
    print(f"load average (1 min) {min(loads):.1f}-{max(loads):.1f}")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / "startup.json"
        path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
