"""The latent search at depth 6, node expansion on python-chess (before) vs the core (after).

Same default model, same positions, cold cache per search (one fixed-depth search, no iterative
deepening, as section 1 of bench_search.py), width 3, minimax with the project's defaults. The two
expansions alternate position by position; each result's move, value, principal variation and
positions embedded are checked equal. Reported: seconds per move, the share spent in the model,
and the search's own time (the rest).

Run (from the repository root): ``.venv/bin/python benchmarks/bench_expand_search.py``; writes
benchmarks/results/expand_search.json and expand_search.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

import chess
import torch

from latentchess.batch_keys import tokenize_boards
from latentchess.models.io import default_model_path, load_model
from latentchess.search import SearchConfig, Searcher, tree

RESULTS = Path(__file__).resolve().parent / "results"
_CSV_NAME = "shared/data/sf15-d9-eco-selfplay.csv.gz"
_CANDIDATES = [Path(__file__).resolve().parents[i] / _CSV_NAME for i in (2, 3)]
SHARED_CSV = next((path for path in _CANDIDATES if path.exists()), _CANDIDATES[0])


def middlegames(count: int) -> list[chess.Board]:
    """Positions from the shared CSV at move 12-30 (or fixed ones without it)."""
    boards: list[chess.Board] = []
    if SHARED_CSV.exists():
        with gzip.open(SHARED_CSV, "rt") as lines:
            for index, line in enumerate(lines):
                board = chess.Board(line.split(",", 1)[0])
                if index % 401 == 0 and 12 <= board.fullmove_number <= 30:
                    boards.append(board)
                    if len(boards) == count:
                        break
    if not boards:
        boards = [
            chess.Board("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
        ]
    return boards


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=6)
    parser.add_argument("--depth", type=int, default=6)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = load_model(default_model_path())

    def scorer(boards):  # type: ignore[no-untyped-def]
        return model.score_tokens(tokenize_boards(boards))

    boards = middlegames(args.positions)
    config = SearchConfig(depth=args.depth)
    load_start = os.getloadavg()
    totals = {
        name: {"seconds": 0.0, "scorer_seconds": 0.0, "nodes": 0} for name in ("python", "core")
    }
    rows = []
    for board in boards:
        results = {}
        for name, native in (("python", False), ("core", True)):
            tree.NATIVE_EXPANSION = native
            began = time.perf_counter()
            result = Searcher(scorer, config).search(board, iterate=False)
            seconds = time.perf_counter() - began
            results[name] = result
            totals[name]["seconds"] += seconds
            totals[name]["scorer_seconds"] += result.scorer_time_s
            totals[name]["nodes"] += result.nodes
        tree.NATIVE_EXPANSION = True
        python, core = results["python"], results["core"]
        same = (python.move, python.value, python.pv, python.nodes) == (
            core.move,
            core.value,
            core.pv,
            core.nodes,
        )
        rows.append(
            {"fen": board.fen(), "move": core.move.uci(), "nodes": core.nodes, "same": same}
        )
        print(f"{board.fen()}: {core.move} nodes {core.nodes} same={same}", flush=True)
    n = len(boards)
    per_move = {name: t["seconds"] / n for name, t in totals.items()}
    search_only = {name: (t["seconds"] - t["scorer_seconds"]) / n for name, t in totals.items()}
    model_share = {name: t["scorer_seconds"] / t["seconds"] for name, t in totals.items()}
    record = {
        "command": "python benchmarks/bench_expand_search.py",
        "depth": args.depth,
        "positions": n,
        "rows": rows,
        "totals": totals,
        "seconds_per_move": per_move,
        "search_seconds_per_move_outside_model": search_only,
        "model_share": model_share,
        "all_same": all(r["same"] for r in rows),
        "load_average_start": list(load_start),
        "load_average_end": list(os.getloadavg()),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "expand_search.json").write_text(json.dumps(record, indent=2) + "\n")
    same_text = "identical" if record["all_same"] else "**NOT identical**"
    lines = [
        "# Latent search at depth 6: node expansion on python-chess vs on the native core",
        "",
        "Command: `.venv/bin/python benchmarks/bench_expand_search.py`",
        "",
        f"Default model, {n} middlegame positions from the shared CSV, cold cache, one fixed-depth "
        f"search each, width 3, torch 1 thread; load average {load_start[0]:.1f} at start and "
        f"{os.getloadavg()[0]:.1f} at end on 2 shared cores. Moves, values, PVs and positions "
        f"embedded: {same_text}.",
        "",
        "| expansion | s/move | outside the model, s/move | model share |",
        "|---|---|---|---|",
    ]
    for name, label in (("python", "python-chess (before)"), ("core", "native core (after)")):
        lines.append(
            f"| {label} | {per_move[name]:.2f} | {search_only[name]:.3f} | "
            f"{model_share[name]:.0%} |"
        )
    speedup = per_move["python"] / per_move["core"]
    outside = search_only["python"] / max(search_only["core"], 1e-9)
    lines += ["", f"**{speedup:.2f}x per move; {outside:.1f}x on the search's own time.**"]
    (RESULTS / "expand_search.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[4:]))
    return 0 if record["all_same"] else 1


if __name__ == "__main__":
    sys.exit(main())
