"""What keying the score cache on the clocks costs and changes (issue 10).

The search's score cache used to key on the Polyglot Zobrist hash alone, while the model reads
the halfmove clock and move number too; it now keys on both (``fastboard.cache_keys``). In one
process, with the default model at fp32, this plays the same self-play games twice -- once with
the old keys (the cache key patched back to the plain hash) and once with the new ones -- and
reports positions embedded per move, the cache hit rate, time per move and how often the chosen
move differs. It also measures how much the model's score of a position moves when only its
clocks change (the reason for the fix). Usage::

    .venv/bin/python benchmarks/bench_cache_keys.py --plies 30 --depth 4
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import chess
import chess.engine
import numpy as np
import torch

import latentchess.search.tree as tree
from latentchess.batch_keys import cache_keys, zobrist_hashes
from latentchess.engines.latent import LatentEngine
from latentchess.models.io import load_model
from latentchess.search import SearchConfig

REPO = Path(__file__).resolve().parents[1]


def self_play(engine: LatentEngine, plies: int, depth: int, seed: int) -> list[dict[str, Any]]:
    """One game from a short random opening; per move: move, embedded, hits, seconds."""
    rng = random.Random(seed)
    board = chess.Board()
    for _ in range(6):
        board.push(rng.choice(list(board.legal_moves)))
    engine.new_game()
    moves = []
    for _ in range(plies):
        if board.is_game_over():
            break
        result = engine.search(board, chess.engine.Limit(depth=depth))
        moves.append(
            {
                "move": result.move.uci(),
                "nodes": result.nodes,
                "hits": result.cache_hits,
                "seconds": result.time_s,
            }
        )
        board.push(result.move)
    return moves


def clock_sensitivity(engine: LatentEngine, count: int, seed: int) -> dict[str, float]:
    """|score change| when a position's clocks are redrawn (halfmove 0-60, move 1-80)."""
    rng = random.Random(seed)
    boards, moved = [], []
    while len(boards) < count:
        board = chess.Board()
        for _ in range(rng.randint(8, 60)):
            legal = list(board.legal_moves)
            if not legal:
                break
            board.push(rng.choice(legal))
        if board.is_game_over():
            continue
        other = board.copy(stack=False)
        other.halfmove_clock = rng.randint(0, 60)
        other.fullmove_number = rng.randint(1, 80)
        boards.append(board.copy(stack=False))
        moved.append(other)
    change = np.abs(engine.score_boards(boards) - engine.score_boards(moved))
    return {
        "positions": count,
        "median_abs_change": float(np.median(change)),
        "p90_abs_change": float(np.quantile(change, 0.9)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None, help="default: the shipped model")
    parser.add_argument("--plies", type=int, default=30)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--games", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = load_model(args.model, precision="fp32")
    load_before = os.getloadavg()[0]
    variants: dict[str, list[list[dict[str, Any]]]] = {"zobrist": [], "clocks": []}
    original = tree.cache_keys
    for game in range(args.games):
        for variant in variants:
            tree.cache_keys = _plain_hash if variant == "zobrist" else original
            engine = LatentEngine(model, SearchConfig(depth=args.depth))
            variants[variant].append(self_play(engine, args.plies, args.depth, seed=game))
    tree.cache_keys = original
    summary: dict[str, Any] = {}
    for variant, games in variants.items():
        moves = [m for g in games for m in g]
        nodes = sum(m["nodes"] for m in moves)
        hits = sum(m["hits"] for m in moves)
        summary[variant] = {
            "moves": len(moves),
            "positions_per_move": nodes / len(moves),
            "cache_hit_rate": hits / (hits + nodes),
            "seconds_per_move": float(np.mean([m["seconds"] for m in moves])),
        }
    first_divergence = [
        next(
            (i for i, (a, b) in enumerate(zip(ga, gb, strict=False)) if a["move"] != b["move"]),
            None,
        )
        for ga, gb in zip(variants["zobrist"], variants["clocks"], strict=True)
    ]
    result = {
        "command": f"benchmarks/bench_cache_keys.py --plies {args.plies} --depth {args.depth} "
        f"--games {args.games}",
        "model": _relative(getattr(model, "path", None)),
        "precision": "fp32",
        "threads": 1,
        "load_average": [load_before, os.getloadavg()[0]],
        "variants": summary,
        "positions_per_move_ratio": summary["clocks"]["positions_per_move"]
        / summary["zobrist"]["positions_per_move"],
        "first_different_move_per_game": first_divergence,
        "clock_sensitivity": clock_sensitivity(LatentEngine(model), 400, seed=1),
        "us_per_board": _time_cache_keys(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "cache_keys.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"written to {path}")


def _relative(path: Path | None) -> str | None:
    """A model path relative to the checkout when it lies inside it."""
    if path is None:
        return None
    path = Path(path).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def _plain_hash(boards: object, hashes: np.ndarray | None = None) -> np.ndarray:
    """The old cache key: the Zobrist hash alone (the search always passes the hashes)."""
    assert hashes is not None
    return hashes


def _time_cache_keys() -> dict[str, float]:
    """Microseconds per board: the Zobrist hash, and what the clock keys add to it."""
    boards = []
    board = chess.Board()
    rng = random.Random(0)
    for _ in range(2000):
        legal = list(board.legal_moves)
        if not legal:
            board = chess.Board()
            continue
        board.push(rng.choice(legal))
        boards.append(board.copy(stack=False))
    timings = {}
    hashes = zobrist_hashes(boards)
    for name, call in (
        ("zobrist_hashes", lambda: zobrist_hashes(boards)),
        ("clock_keys_added", lambda: cache_keys(boards, hashes)),
    ):
        began = time.perf_counter()
        for _ in range(5):
            call()
        timings[name] = (time.perf_counter() - began) / (5 * len(boards)) * 1e6
    return timings


if __name__ == "__main__":
    main()
