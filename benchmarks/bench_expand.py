"""Cost per child of expanding a search node: python-chess (as the latent search does) vs the core.

The latent search's ``Run.generate`` builds each child as a python-chess board (``copy`` +
``push``), hashes the children (``fastboard.zobrist_hashes``), checks each for mate/stalemate/
insufficient material, and the scorer tokenizes the ones it embeds (``fastboard.tokenize_boards``).
``latentchess.core.Board.expand`` returns the same moves, keys, status and tokens in one call.
Both run on the same positions (every 5th position of random games), in the same process,
alternating, best of three rounds; the results are checked equal.

Run (from the repository root): ``.venv/bin/python benchmarks/bench_expand.py``; writes
benchmarks/results/expand.json and expand.md.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

import chess
import numpy as np

from latentchess.batch_keys import tokenize_boards, zobrist_hashes
from latentchess.core import Board

RESULTS = Path(__file__).resolve().parent / "results"


def positions(count: int, seed: int = 7) -> list[chess.Board]:
    rng = random.Random(seed)
    boards: list[chess.Board] = []
    while len(boards) < count:
        board = chess.Board()
        for ply in range(rng.randint(10, 120)):
            moves = list(board.legal_moves)
            if not moves or board.is_game_over():
                break
            board.push(rng.choice(moves))
            if ply % 5 == 0 and any(board.generate_legal_moves()):
                boards.append(board.copy(stack=False))
    return boards[:count]


def status(board: chess.Board) -> int:
    """As the latent search's ``_status``: 1 mated, 2 drawn, 0 otherwise."""
    if not any(board.generate_legal_moves()):
        return 1 if board.is_check() else 2
    if not (board.pawns | board.rooks | board.queens) and board.is_insufficient_material():
        return 2
    return 0


def python_chess_expand(
    board: chess.Board,
) -> tuple[list[chess.Move], list[int], list[int], np.ndarray]:
    children = []
    moves = list(board.legal_moves)
    for move in moves:
        child = board.copy(stack=False)
        child.push(move)
        children.append(child)
    keys = zobrist_hashes(children).tolist()
    statuses = [status(child) for child in children]
    tokens = tokenize_boards(children)
    return moves, keys, statuses, tokens


def main() -> int:
    boards = positions(400)
    natives = [Board(b.fen()) for b in boards]
    children = sum(b.legal_moves.count() for b in boards)
    best = {"python-chess": float("inf"), "core": float("inf")}
    for _ in range(3):
        began = time.perf_counter()
        reference = [python_chess_expand(b) for b in boards]
        best["python-chess"] = min(best["python-chess"], time.perf_counter() - began)
        began = time.perf_counter()
        expansions = [n.expand() for n in natives]
        best["core"] = min(best["core"], time.perf_counter() - began)
    for (moves, keys, statuses, tokens), expansion in zip(reference, expansions, strict=True):
        # Same children, possibly in another order.
        order = [moves.index(move) for move in expansion.moves]
        assert sorted(order) == list(range(len(moves)))
        assert expansion.keys.tolist() == [keys[i] for i in order]
        assert expansion.status.tolist() == [statuses[i] for i in order]
        assert np.array_equal(expansion.tokens, tokens[order])
    per_child = {name: seconds / children * 1e6 for name, seconds in best.items()}
    ratio = per_child["python-chess"] / per_child["core"]
    record = {
        "command": "python benchmarks/bench_expand.py",
        "positions": len(boards),
        "children": children,
        "seconds_best_of_3": best,
        "microseconds_per_child": per_child,
        "speedup": ratio,
        "load_average": list(os.getloadavg()),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "expand.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = [
        "# Node expansion: python-chess (the latent search today) vs the native core",
        "",
        "Command: `.venv/bin/python benchmarks/bench_expand.py`",
        "",
        f"{len(boards)} positions from random games, {children:,} children; moves, Polyglot keys, "
        "terminal status and 77 tokens of every child (checked equal), best of 3 rounds; load "
        f"average {os.getloadavg()[0]:.1f} on 2 cores (shared machine).",
        "",
        "| expansion | µs per child |",
        "|---|---|",
        f"| python-chess copy + push, fastboard hashes/tokens, status | "
        f"{per_child['python-chess']:.2f} |",
        f"| `latentchess.core.Board.expand()` | {per_child['core']:.2f} |",
        "",
        f"**{ratio:.0f}x faster per child.**",
    ]
    (RESULTS / "expand.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[4:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
