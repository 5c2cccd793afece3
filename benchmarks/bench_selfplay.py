"""Self-play data speed: records, searches and games per second of one process (one core) at
several node counts.

Usage: python benchmarks/bench_selfplay.py --nodes 1000,5000,20000 --games 6 \
           --out benchmarks/results/selfplay
       python benchmarks/bench_selfplay.py --import-file RUN.bin --out benchmarks/results/selfplay

Plays the same games (indices 0..games-1 of a run with the default settings of
``latentchess data selfplay``: eco.pgn lines plus 4 random plies, resign 600 cp for 8 plies, draw
adjudication, quiet records) at each node count, interleaved game by game so that a change in the
machine's load hits every node count alike, in this one process with one engine per node count
(``ab``, NNUE, one thread, 16 MB). Rates are given per wall second and per CPU second of this
process: on a shared machine the CPU-second rate is what one free core would do, the wall rate
what this core got. The load average (``uptime``) before and after is recorded with them.

``--import-file`` instead measures the way to training on a self-play file: decoding its records
(:func:`~latentchess.data.packed_sfen.read_records`) and building the NNUE feature cache from it
(``train nnue``'s first step), records per CPU second, stored as ``import.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from latentchess.core.alphabeta import AlphaBeta
from latentchess.data.generate import choose_opening, load_openings
from latentchess.data.selfplay import SelfPlayConfig, play_game
from latentchess.provenance import git_commit


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def _import(path: Path, out: Path | None) -> int:
    import tempfile

    from latentchess.data.packed_sfen import read_records
    from latentchess.nnue.dataset import build_cache, parse_source
    from latentchess.nnue.features import parse_feature_set

    uptime_before, started = _uptime(), datetime.now(UTC)
    cpu = time.process_time()
    records = sum(1 for _ in read_records(path))
    decode_s = time.process_time() - cpu
    with tempfile.TemporaryDirectory() as cache_dir:
        cpu = time.process_time()
        cache = build_cache(
            [parse_source(str(path))], Path(cache_dir), parse_feature_set("ALL"), progress=False
        )
        cache_s = time.process_time() - cpu
        verdicts = cache.meta["verdicts"]
    result = {
        "command": f"python benchmarks/bench_selfplay.py --import-file {path.name}",
        "date_utc": started.strftime("%Y-%m-%d %H:%M"),
        "git_commit": git_commit(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores ({platform.node()})",
        "uptime_before": uptime_before,
        "uptime_after": _uptime(),
        "records": records,
        "decode_records_per_cpu_s": round(records / decode_s),
        "feature_cache_records_per_cpu_s": round(records / cache_s),
        "feature_set": "ALL",
        "cache_verdicts": verdicts,
    }
    print(json.dumps(result, indent=2))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "import.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1000,5000,20000", help="comma-separated node counts")
    parser.add_argument("--games", type=int, default=6, help="games per node count")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="directory for selfplay.json")
    parser.add_argument("--import-file", type=Path, default=None, help="measure reading this")
    args = parser.parse_args()
    if args.import_file is not None:
        return _import(args.import_file, args.out)
    counts = [int(text) for text in args.nodes.split(",")]
    configs = {n: SelfPlayConfig(games=args.games, nodes=n, seed=args.seed) for n in counts}
    engines = {n: AlphaBeta("nnue", hash_mb=16) for n in counts}
    assert configs[counts[0]].openings is not None
    openings = load_openings(configs[counts[0]].openings)
    keys = ("games", "records", "searched", "nodes", "plies", "wall_s", "cpu_s")
    totals: dict[int, dict[str, Any]] = {
        n: {**dict.fromkeys(keys, 0), "terminations": {}} for n in counts
    }
    uptime_before, started = _uptime(), datetime.now(UTC)
    for game in range(args.games):
        line = choose_opening(openings, args.seed, game)
        for n in counts:
            wall, cpu = time.perf_counter(), time.process_time()
            record = play_game(engines[n], configs[n], game, line)
            total = totals[n]
            total["wall_s"] += time.perf_counter() - wall
            total["cpu_s"] += time.process_time() - cpu
            total["games"] += 1
            total["records"] += len(record.records)
            total["searched"] += record.searched
            total["nodes"] += record.nodes
            total["plies"] += record.plies
            terms = total["terminations"]
            terms[record.termination] = terms.get(record.termination, 0) + 1
    uptime_after = _uptime()
    rows = []
    for n in counts:
        t = totals[n]
        rows.append(
            {
                "nodes_per_move": n,
                **{k: t[k] for k in ("games", "records", "searched", "nodes", "plies")},
                "wall_s": round(t["wall_s"], 2),
                "cpu_s": round(t["cpu_s"], 2),
                "records_per_wall_s": round(t["records"] / t["wall_s"], 1),
                "records_per_cpu_s": round(t["records"] / t["cpu_s"], 1),
                "searches_per_cpu_s": round(t["searched"] / t["cpu_s"], 1),
                "games_per_cpu_s": round(t["games"] / t["cpu_s"], 3),
                "nodes_per_cpu_s": int(t["nodes"] / t["cpu_s"]),
                "records_per_game": round(t["records"] / t["games"], 1),
                "terminations": t["terminations"],
            }
        )
    print(f"{'nodes':>6} {'games':>5} {'records':>7} {'rec/s wall':>10} {'rec/s cpu':>9} "
          f"{'search/s cpu':>12} {'games/s cpu':>11} {'nps cpu':>9}")  # fmt: skip
    for r in rows:
        print(
            f"{r['nodes_per_move']:>6} {r['games']:>5} {r['records']:>7} "
            f"{r['records_per_wall_s']:>10} {r['records_per_cpu_s']:>9} "
            f"{r['searches_per_cpu_s']:>12} {r['games_per_cpu_s']:>11} {r['nodes_per_cpu_s']:>9}"
        )
    print(f"uptime before: {uptime_before}\nuptime after:  {uptime_after}")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        result = {
            "command": "python benchmarks/bench_selfplay.py "
            f"--nodes {args.nodes} --games {args.games} --seed {args.seed}",
            "date_utc": started.strftime("%Y-%m-%d %H:%M"),
            "git_commit": git_commit(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores ({platform.node()})",
            "uptime_before": uptime_before,
            "uptime_after": uptime_after,
            "settings": {k: v for k, v in configs[counts[0]].identity().items() if k != "nodes"},
            "rows": rows,
        }
        (args.out / "selfplay.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
