"""What a threat block costs the search: the shipped network against itself plus a zero one.

Usage::

    python benchmarks/bench_threats.py --nodes 150000 --positions 20 \\
        --out benchmarks/results/threats

Networks (written under ``runs/threats-bench``, never committed): the shipped network (v5,
``KA9``), the same as a lean file (quantised tensors only), and v5 plus a ``TNK`` block and plus a
``T`` block whose weights are all zero (:func:`latentchess.nnue.model.add_threat_block`, lean
files). The zero blocks leave every evaluation as v5's, so ``ab`` searches identical trees (checked
here: the nodes and the best move of every position) and every difference in speed is the threat
block's cost: its incremental updates and the wider feature table. ``--network NAME=DIR`` adds
trained networks (e.g. the L1 grid's), measured the same way (their trees differ from v5's).

Measured in one run, one thread:

* nodes/s of a fixed-node ``ab`` search from each position (process CPU time, so the machine's
  load weighs less; positions taken network by network in turn, each search after ``new_game``);
* incremental update plus evaluation per move (``nnue_speed``: do, evaluate, ... along random
  games with the search's own evaluator, the position's own move included; thread CPU time, the
  fastest of ``--repeats`` rounds);
* the network file's size and the time to load it into a search engine (median of 5).

Writes ``threats.json`` in ``--out`` (the README there is written from it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import chess

from latentchess.core.nnue import default_nnue_path, load_network, native_module
from latentchess.nnue.io import load_nnue, save_nnue
from latentchess.nnue.model import add_threat_block
from latentchess.provenance import git_commit

ROOT = Path(__file__).resolve().parents[1]


def _positions(count: int, seed: int) -> list[chess.Board]:
    """Positions after 8 to 30 random plies from the start (no finished games)."""
    rng, out = random.Random(seed), []
    while len(out) < count:
        board = chess.Board()
        for _ in range(rng.randrange(8, 31)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        if not board.is_game_over():
            out.append(board)
    return out


def _named_network(text: str) -> tuple[str, Path]:
    name, sep, path = text.partition("=")
    if not sep or not name or not (Path(path) / "model.safetensors").is_file():
        raise argparse.ArgumentTypeError(
            f"--network wants NAME=DIR with DIR/model.safetensors, got {text!r}"
        )
    return name, Path(path)


def _networks(work: Path, extra: list[tuple[str, Path]]) -> dict[str, Path]:
    shipped = default_nnue_path()
    model = load_nnue(shipped)
    out = {"v5": shipped}
    out["v5 lean"] = save_nnue(work / "v5-lean", model.network, {"note": "v5, lean"}, lean=True)
    for block in ("TNK", "T"):
        grown = add_threat_block(model.network, block)
        note = {"note": f"v5 plus a zero {block} block (speed baseline)"}
        out[f"v5+{block}"] = save_nnue(work / f"v5-{block}", grown, note, lean=True)
    for name, path in extra:
        if name in out:
            raise SystemExit(f"--network {name}: that name is taken by a baseline network")
        out[name] = path
    return out


def _search_speed(
    nets: dict[str, Path], boards: list[chess.Board], nodes: int
) -> dict[str, dict[str, Any]]:
    native = native_module()
    engines = {
        name: native.SearchEngine(f"nnue:{path.resolve()}", 16, 1) for name, path in nets.items()
    }
    totals = {name: {"nodes": 0, "cpu_s": 0.0, "wall_s": 0.0, "trees": []} for name in nets}
    for board in boards:
        for name, engine in engines.items():
            engine.new_game()
            limits = native.SearchLimits()
            limits.nodes = nodes
            position = native.Position(board.fen())
            cpu, wall = time.process_time(), time.perf_counter()
            result = engine.search(position, limits)
            totals[name]["cpu_s"] += time.process_time() - cpu
            totals[name]["wall_s"] += time.perf_counter() - wall
            totals[name]["nodes"] += int(result["total_nodes"])
            totals[name]["trees"].append((int(result["total_nodes"]), str(result["bestmove"])))
    out = {}
    for name, t in totals.items():
        out[name] = {
            "nodes": t["nodes"],
            "cpu_s": round(t["cpu_s"], 3),
            "nodes_per_cpu_s": round(t["nodes"] / t["cpu_s"]),
            "nodes_per_wall_s": round(t["nodes"] / t["wall_s"]),
            "same_trees_as_v5": t["trees"] == totals["v5"]["trees"],
        }
    return out


def _update_cost(nets: dict[str, Path], games: int, plies: int, repeats: int) -> dict[str, float]:
    native = native_module()
    rng, fens, moves = random.Random(5), [], []
    for _ in range(games):
        board, line = chess.Board(), []
        for _ in range(plies):
            legal = list(board.legal_moves)
            if not legal:
                break
            move = rng.choice(legal)
            line.append(move.from_square | move.to_square << 6 | (move.promotion or 0) << 12)
            board.push(move)
        fens.append(chess.STARTING_FEN)
        moves.append(line)
    best: dict[str, float] = {}
    for _ in range(repeats):  # networks in turn; the fastest round of each (least disturbed)
        for name, path in nets.items():
            speed = native.nnue_speed(load_network(path), fens, moves, 1)
            assert speed["same_results"]
            best[name] = max(best.get(name, 0.0), speed["incremental_per_cpu_s"])
    return {name: round(1e6 / rate, 3) for name, rate in best.items()}  # microseconds per move


def _startup(nets: dict[str, Path], runs: int) -> dict[str, float]:
    native, out = native_module(), {}
    for name, path in nets.items():
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            native.SearchEngine(f"nnue:{path.resolve()}", 16, 1)
            times.append(time.perf_counter() - began)
        out[name] = round(statistics.median(times), 3)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=150_000)
    parser.add_argument("--positions", type=int, default=20)
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "threats-bench")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "threats")
    parser.add_argument(
        "--network", type=_named_network, action="append", default=[], metavar="NAME=DIR"
    )
    args = parser.parse_args()
    nets = _networks(args.work, args.network)
    began = time.perf_counter()
    search = _search_speed(nets, _positions(args.positions, seed=3), args.nodes)
    update = _update_cost(nets, args.games, 80, args.repeats)
    startup = _startup(nets, 5)
    base = search["v5"]["nodes_per_cpu_s"]
    record: dict[str, Any] = {
        "networks": {
            name: {
                "feature_set": load_network(path).feature_set,
                "file_mb": round((path / "model.safetensors").stat().st_size / 1e6, 2),
                "load_s": startup[name],
                "update_and_eval_us_per_move": update[name],
                **search[name],
                "nodes_per_s_over_v5": round(search[name]["nodes_per_cpu_s"] / base, 3),
            }
            for name, path in nets.items()
        },
        "nodes_per_search": args.nodes,
        "positions": args.positions,
        "seconds": round(time.perf_counter() - began),
        "command": "python benchmarks/bench_threats.py " + " ".join(sys.argv[1:]),
        "git_commit": git_commit(),
        "cpu": platform.processor() or platform.machine(),
        "load_average_1min": os.getloadavg()[0],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "threats.json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
