"""Labelling throughput of ``latentchess data generate`` against raw Stockfish, and the limit sweep.

Pipeline: the real command (``python -m latentchess data generate``, all workers, process start
included) makes ``--positions`` rows at ``--depth``; its rate is rows kept per wall-clock second.
Raw: the positions the pipeline made, in game order with ``ucinewgame`` per game, analysed
directly by ``SimpleEngine.analyse`` at the same depth and MultiPV, one engine per worker
process, timed from when the engines are ready (so raw is an upper bound). The order is pipeline,
raw, pipeline, raw and each pair is averaged, so load drifting on a shared machine hits both
alike. Goal: the pipeline reaches >= 90% of the raw rate.

``--sweep`` also measures rate vs quality of label limits on positions sampled from the project's
shared CSV: each limit's win probability and best move are compared with a deep reference search
(every search from an empty hash). That table is how the default label depth was chosen.

Run (from the repository root): ``.venv/bin/python benchmarks/bench_labelling.py [--quick]
[--sweep]``; writes benchmarks/results/labelling.json and labelling.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import chess
import chess.engine
import numpy as np

from latentchess.data.stockfish import find_stockfish, label_from_infos
from latentchess.data.store import read_dataset

ROOT = Path(__file__).resolve().parents[1]
SHARED_CSV = Path(__file__).resolve().parents[2] / "shared/data/sf15-d9-eco-selfplay.csv.gz"
MULTIPV = 4  # what `data generate` searches per position
DELTA = 0.05  # SupCon's positive margin (SOLIS section 3): label errors should stay below it


def _machine() -> dict[str, Any]:
    cpu = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        match = re.search(r"model name\s*:\s*(.+)", cpuinfo.read_text())
        cpu = match.group(1) if match else cpu
    binary = find_stockfish()
    with chess.engine.SimpleEngine.popen_uci(str(binary)) as engine:
        version = engine.id.get("name", "?")
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "stockfish": f"{version} ({binary})",
        "load_average_at_start": list(os.getloadavg()),
    }


def _run_pipeline(positions: int, depth: int, workers: int, seed: int, out: Path) -> dict[str, Any]:
    command = [
        sys.executable, "-m", "latentchess", "data", "generate", "--out", str(out),
        "--positions", str(positions), "--seed", str(seed), "--depth", str(depth),
        "--workers", str(workers), "--no-progress",
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    labelled = int(re.search(r"(\d+) positions labelled", done.stdout).group(1))  # type: ignore[union-attr]
    return {
        "rows": positions,
        "labelled": labelled,
        "seconds": seconds,
        "rows_per_s": positions / seconds,
        "labels_per_s": labelled / seconds,
        "stdout": done.stdout.strip(),
    }


def _raw_worker(args: tuple[list[list[str]], int, Any]) -> tuple[int, float]:
    games, depth, barrier = args
    with chess.engine.SimpleEngine.popen_uci(str(find_stockfish())) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        engine.analyse(chess.Board(), chess.engine.Limit(depth=1))  # warm up
        barrier.wait()
        started = time.perf_counter()
        count = 0
        for index, fens in enumerate(games):
            for fen in fens:
                board = chess.Board(fen)
                infos = engine.analyse(
                    board, chess.engine.Limit(depth=depth), multipv=MULTIPV, game=index
                )
                label_from_infos(board, infos)
                count += 1
        return count, time.perf_counter() - started


def _run_raw(games: list[list[str]], depth: int, workers: int) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(workers)
        parts = [(games[i::workers], depth, barrier) for i in range(workers)]
        with ctx.Pool(workers) as pool:
            results = pool.map(_raw_worker, parts)
    count = sum(c for c, _ in results)
    seconds = max(s for _, s in results)
    return {"positions": count, "seconds": seconds, "positions_per_s": count / seconds}


def _games_of(dataset: Path) -> list[list[str]]:
    rows = read_dataset(dataset, columns=["fen", "game", "ply", "depth"]).to_pylist()
    games: dict[int, list[tuple[int, str]]] = {}
    for row in rows:
        if row["depth"]:  # positions labelled by the rules cost Stockfish nothing
            games.setdefault(row["game"], []).append((row["ply"], row["fen"]))
    return [[fen for _, fen in sorted(plies)] for _, plies in sorted(games.items())]


def _sweep_worker(args: tuple[list[str], list[int], int]) -> list[dict[str, Any]]:
    fens, depths, reference_depth = args
    out = []
    with chess.engine.SimpleEngine.popen_uci(str(find_stockfish())) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        for fen in fens:
            board = chess.Board(fen)
            record: dict[str, Any] = {"fen": fen}
            for depth in [reference_depth, *depths]:
                multipv = 1 if depth == reference_depth else MULTIPV
                started = time.perf_counter()
                infos = engine.analyse(
                    board, chess.engine.Limit(depth=depth), multipv=multipv, game=object()
                )
                seconds = time.perf_counter() - started
                label = label_from_infos(board, infos)
                record[str(depth)] = (label.win_prob_white, label.best_move.uci(), seconds)  # type: ignore[union-attr]
            out.append(record)
    return out


def _run_sweep(
    samples: int, depths: list[int], reference_depth: int, workers: int, seed: int
) -> dict[str, Any]:
    with gzip.open(SHARED_CSV, "rt") as handle:
        fens = [line.split(",", 1)[0] for line in handle]
    rng = np.random.default_rng(seed)
    chosen = [fens[int(i)] for i in rng.choice(len(fens), size=samples, replace=False)]
    chosen = [fen for fen in chosen if not chess.Board(fen).is_game_over()]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers) as pool:
        parts = pool.map(
            _sweep_worker, [(chosen[i::workers], depths, reference_depth) for i in range(workers)]
        )
    records = [r for part in parts for r in part]
    ref = str(reference_depth)
    table = []
    for depth in depths:
        key = str(depth)
        error = np.array([abs(r[key][0] - r[ref][0]) for r in records])
        agree = np.mean([r[key][1] == r[ref][1] for r in records])
        seconds = sum(r[key][2] for r in records)
        ref_mates = [r for r in records if r[ref][0] in (0.0, 1.0)]
        found = sum(r[key][0] == r[ref][0] for r in ref_mates)
        false_mates = sum(r[key][0] in (0.0, 1.0) and r[key][0] != r[ref][0] for r in records)
        table.append(
            {
                "depth": depth,
                "positions_per_s_per_core": len(records) / seconds,
                "ms_per_position": 1000 * seconds / len(records),
                "win_prob_mae": float(error.mean()),
                "win_prob_p90_error": float(np.quantile(error, 0.9)),
                "within_delta": float(np.mean(error < DELTA)),
                "best_move_agreement": float(agree),
                "reference_mates_found": f"{found}/{len(ref_mates)}",
                "false_mates": int(false_mates),
            }
        )
    return {
        "positions": len(records),
        "reference_depth": reference_depth,
        "multipv": MULTIPV,
        "source": str(SHARED_CSV),
        "table": table,
    }


def _markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Labelling throughput",
        "",
        f"Command: `{result['command']}`",
        "",
        f"Machine: {result['machine']['cpu']}, {result['machine']['cores']} cores, "
        f"Python {result['machine']['python']}, {result['machine']['stockfish']}. "
        f"Load average at start {result['machine']['load_average_at_start'][0]:.2f}, at end "
        f"{result['machine']['load_average_at_end'][0]:.2f} (other jobs share these cores).",
        "",
    ]
    if "pipeline" in result:
        pipe, raw = result["pipeline"], result["raw"]
        lines += [
            f"Depth {result['depth']}, MultiPV {MULTIPV}, {result['workers']} workers, "
            f"{pipe['rows']} positions.",
            "",
            "| measurement | positions/s |",
            "|---|---|",
            f"| `data generate` run 1, rows kept per wall second (incl. start-up) | "
            f"{pipe['runs'][0]['rows_per_s']:.2f} |",
            f"| raw SimpleEngine.analyse loop 1 | {raw['before']['positions_per_s']:.2f} |",
            f"| `data generate` run 2 | {pipe['runs'][1]['rows_per_s']:.2f} |",
            f"| raw SimpleEngine.analyse loop 2 | {raw['after']['positions_per_s']:.2f} |",
            f"| `data generate` mean | {pipe['rows_per_s']:.2f} |",
            f"| raw mean | {raw['mean_positions_per_s']:.2f} |",
            f"| `data generate`, labels per wall second | {pipe['labels_per_s']:.2f} |",
            "",
            f"**Ratio pipeline / raw: {result['ratio']:.3f}** (goal >= 0.90).",
            "",
        ]
    if "sweep" in result:
        sweep = result["sweep"]
        lines += [
            f"## Label limit sweep ({sweep['positions']} positions from the shared CSV, "
            f"MultiPV {sweep['multipv']}, reference depth {sweep['reference_depth']}, "
            "empty hash per search)",
            "",
            "| depth | ms/position/core | positions/s/core | win-prob MAE | p90 error "
            f"| error < {DELTA} | best move = reference | reference mates found "
            "| mates the reference lacks |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for row in sweep["table"]:
            lines.append(
                f"| {row['depth']} | {row['ms_per_position']:.1f} | "
                f"{row['positions_per_s_per_core']:.1f} | {row['win_prob_mae']:.4f} | "
                f"{row['win_prob_p90_error']:.4f} | {row['within_delta']:.3f} | "
                f"{row['best_move_agreement']:.3f} | {row['reference_mates_found']} | "
                f"{row['false_mates']} |"
            )
        lines += [
            "",
            f"Error: |win prob - reference win prob|; the SupCon margin is {DELTA}. A mate the "
            "reference lacks is not necessarily wrong (the reference searches one line only): "
            "check such positions deeper or with `go mate N` before blaming the shallow label.",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small run (about a minute)")
    parser.add_argument("--positions", type=int, default=None, help="default 2000 (quick: 400)")
    parser.add_argument("--depth", type=int, default=9)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sweep", action="store_true", help="also sweep label depths")
    parser.add_argument("--sweep-only", action="store_true", help="only the sweep")
    parser.add_argument("--sweep-positions", type=int, default=None, help="default 300 (quick 60)")
    parser.add_argument("--reference-depth", type=int, default=16)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    positions = args.positions or (400 if args.quick else 2000)
    result: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", "benchmarks/bench_labelling.py", *sys.argv[1:]]),
        "machine": _machine(),
        "depth": args.depth,
        "workers": args.workers,
    }
    if not args.sweep_only:
        # Interleaved (pipeline, raw, pipeline, raw) so that drifting load hits both alike; the
        # raw loops analyse the very positions the pipeline made.
        with tempfile.TemporaryDirectory() as tmp:
            first = _run_pipeline(positions, args.depth, args.workers, args.seed, Path(tmp) / "a")
            games = _games_of(Path(tmp) / "a")
            before = _run_raw(games, args.depth, args.workers)
            second = _run_pipeline(positions, args.depth, args.workers, args.seed, Path(tmp) / "b")
            after = _run_raw(games, args.depth, args.workers)
        raw_rate = (before["positions_per_s"] + after["positions_per_s"]) / 2
        pipe_rate = (first["rows_per_s"] + second["rows_per_s"]) / 2
        result["pipeline"] = {
            "runs": [first, second],
            "rows": positions,
            "rows_per_s": pipe_rate,
            "labels_per_s": (first["labels_per_s"] + second["labels_per_s"]) / 2,
        }
        result["raw"] = {"before": before, "after": after, "mean_positions_per_s": raw_rate}
        result["ratio"] = pipe_rate / raw_rate
        print(f"pipeline {pipe_rate:.2f} rows/s, raw {raw_rate:.2f} positions/s, "
              f"ratio {result['ratio']:.3f}")  # fmt: skip
    if args.sweep or args.sweep_only:
        samples = args.sweep_positions or (60 if args.quick else 300)
        depths = [5, 6, 7, 8, 9, 10, 11, 12]
        result["sweep"] = _run_sweep(samples, depths, args.reference_depth, args.workers, args.seed)
        for row in result["sweep"]["table"]:
            print(row)
    result["machine"]["load_average_at_end"] = list(os.getloadavg())
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "labelling.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "labelling.md").write_text(_markdown(result))
    print(f"wrote {args.out / 'labelling.json'} and {args.out / 'labelling.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
