"""The native board against python-chess on >= 100,000 positions (the full agreement check).

Positions: the first column of the shared CSV (``../shared/data/sf15-d9-eco-selfplay.csv.gz``,
every ``--stride``-th row; Stockfish self-play from ECO openings) and random games from the start
position (favouring pawn moves and captures, so promotions, en passant, castling-right changes,
repetitions and bare-king endings occur), where the native board is given the same moves as the
python-chess board, so history-dependent rules are compared too.

Per position: the legal-move set; captures ∪ quiets = legal moves; the FEN (and ``Board(fen)``
round trip); the Polyglot key; check; ``outcome()`` (and ``outcome(claim_draw=True)`` with the
game history in the random games); the 77 tokens; and for every ``--expand-every``-th position the
children's moves, keys and tokens from ``expand``.

Run (from the repository root): ``.venv/bin/python benchmarks/movegen_check.py``; writes
benchmarks/results/movegen_check.json and movegen_check.md; exit status 1 on any disagreement.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import chess
import chess.polyglot
import numpy as np

from latentchess.core import Board
from latentchess.encoding import tokenize, tokenize_batch

RESULTS = Path(__file__).resolve().parent / "results"
# The shared data lives beside the checkout (<parent>/shared/), or beside a worktree's parent.
_CSV_NAME = "shared/data/sf15-d9-eco-selfplay.csv.gz"
_CANDIDATES = [Path(__file__).resolve().parents[i] / _CSV_NAME for i in (2, 3)]
SHARED_CSV = next((path for path in _CANDIDATES if path.exists()), _CANDIDATES[0])


class Checker:
    """Compares one native board with its python-chess twin and tallies disagreements."""

    def __init__(self, expand_every: int) -> None:
        self.expand_every = expand_every
        self.positions = 0
        self.expanded = 0
        self.children = 0
        self.failures: Counter[str] = Counter()
        self.examples: list[dict[str, str]] = []
        self.terminations: Counter[str] = Counter()

    def fail(self, what: str, fen: str) -> None:
        self.failures[what] += 1
        if len(self.examples) < 20:
            self.examples.append({"check": what, "fen": fen})

    def check(self, native: Board, reference: chess.Board, *, with_history: bool) -> None:
        self.positions += 1
        fen = reference.fen()
        if native.fen() != fen:
            self.fail("fen", fen)
        if Board(fen).fen() != fen:
            self.fail("fen round trip", fen)
        legal = set(reference.legal_moves)
        if set(native.legal_moves()) != legal:
            self.fail("legal moves", fen)
        captures, quiets = native.legal_captures(), native.legal_quiets()
        if len(captures) + len(quiets) != len(legal) or set(captures) | set(quiets) != legal:
            self.fail("captures + quiets", fen)
        if native.zobrist_key() != chess.polyglot.zobrist_hash(reference):
            self.fail("zobrist", fen)
        if native.is_check() != reference.is_check():
            self.fail("is_check", fen)
        outcome = reference.outcome()
        if native.outcome() != outcome:
            self.fail("outcome", fen)
        if with_history:
            claimed = reference.outcome(claim_draw=True)
            if native.outcome(claim_draw=True) != claimed:
                self.fail("outcome(claim_draw=True)", fen)
            if claimed is not None:
                self.terminations[claimed.termination.name + " (claim)"] += 1
        if outcome is not None:
            self.terminations[outcome.termination.name] += 1
        if not np.array_equal(native.tokens(), tokenize(fen)):
            self.fail("tokens", fen)
        if self.positions % self.expand_every == 0:
            self.check_expand(native, reference)

    def check_expand(self, native: Board, reference: chess.Board) -> None:
        self.expanded += 1
        expansion = native.expand()
        fens, keys = [], []
        for move in expansion.moves:
            reference.push(move)
            fens.append(reference.fen())
            keys.append(chess.polyglot.zobrist_hash(reference))
            reference.pop()
        self.children += len(fens)
        if set(expansion.moves) != set(reference.legal_moves):
            self.fail("expand moves", reference.fen())
        if expansion.keys.tolist() != keys:
            self.fail("expand keys", reference.fen())
        if fens and not np.array_equal(expansion.tokens, tokenize_batch(fens)):
            self.fail("expand tokens", reference.fen())


def shared_positions(path: Path, stride: int, limit: int) -> list[str]:
    fens = []
    with gzip.open(path, "rt") as lines:
        for index, line in enumerate(lines):
            if index % stride == 0:
                fens.append(line.split(",", 1)[0])
                if len(fens) >= limit:
                    break
    return fens


def random_game_moves(rng: random.Random, board: chess.Board) -> chess.Move | None:
    moves = list(board.legal_moves)
    if not moves:
        return None
    roll = rng.random()
    if roll < 0.3:
        pawn = [m for m in moves if board.piece_type_at(m.from_square) == chess.PAWN]
        if pawn:
            return rng.choice(pawn)
    elif roll < 0.5:
        captures = [m for m in moves if board.is_capture(m)]
        if captures:
            return rng.choice(captures)
    return rng.choice(moves)


class Progress:
    def __init__(self, total: int) -> None:
        self.total = total
        self.began = time.perf_counter()
        self.last = 0.0

    def show(self, done: int, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self.last < 5:
            return
        self.last = now
        rate = done / max(now - self.began, 1e-9)
        eta = (self.total - done) / rate if rate > 0 else float("inf")
        print(f"  {done:,}/{self.total:,} positions, {rate:,.0f}/s, ETA {eta:.0f} s", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=SHARED_CSV, help="labelled CSV (FEN first)")
    parser.add_argument("--csv-positions", type=int, default=60_000)
    parser.add_argument("--stride", type=int, default=5, help="take every N-th CSV row")
    parser.add_argument("--game-positions", type=int, default=50_000)
    parser.add_argument("--expand-every", type=int, default=20)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    checker = Checker(args.expand_every)
    began = time.perf_counter()

    fens = shared_positions(args.csv, args.stride, args.csv_positions) if args.csv.exists() else []
    print(f"shared CSV: {len(fens):,} positions ({args.csv})", flush=True)
    progress = Progress(len(fens))
    for index, fen in enumerate(fens):
        checker.check(Board(fen), chess.Board(fen), with_history=False)
        progress.show(index + 1)
    csv_seconds = time.perf_counter() - began

    print(f"random games: {args.game_positions:,} positions", flush=True)
    rng = random.Random(args.seed)
    progress = Progress(args.game_positions)
    games = 0
    game_positions = 0
    while game_positions < args.game_positions:
        games += 1
        reference, native = chess.Board(), Board()
        for _ in range(rng.randint(20, 600)):
            move = random_game_moves(rng, reference)
            if move is None or game_positions >= args.game_positions:
                break
            reference.push(move)
            native.push(move)
            checker.check(native, reference, with_history=True)
            game_positions += 1
            progress.show(game_positions)
            if reference.is_game_over():
                break  # checked the end; play on and bare kings would fill the sample
    seconds = time.perf_counter() - began

    failures = sum(checker.failures.values())
    record: dict[str, Any] = {
        "command": " ".join(["python benchmarks/movegen_check.py", *sys.argv[1:]]),
        "positions": checker.positions,
        "csv_positions": len(fens),
        "game_positions": game_positions,
        "games": games,
        "expanded_positions": checker.expanded,
        "expanded_children": checker.children,
        "disagreements": dict(checker.failures),
        "examples": checker.examples,
        "terminations_seen": dict(checker.terminations),
        "seconds": round(seconds, 1),
        "csv_seconds": round(csv_seconds, 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "movegen_check.json").write_text(json.dumps(record, indent=2) + "\n")
    verdict = "**no disagreement**" if not failures else f"**{failures} disagreements**"
    lines = [
        "# Native board vs python-chess",
        "",
        "Command: `.venv/bin/python benchmarks/movegen_check.py`",
        "",
        f"{checker.positions:,} positions ({len(fens):,} from the shared CSV, {game_positions:,} "
        f"along {games} random games with their history): {verdict} in the legal-move set, "
        "captures + quiets, FEN and FEN round trip, Polyglot key, check, outcome (with "
        "claim_draw=True in the games) and tokens; `expand` checked on "
        f"{checker.expanded:,} positions ({checker.children:,} children: moves, keys, tokens). "
        f"{seconds:.0f} s.",
        "",
        "Game ends seen (python-chess's terminations): "
        + ", ".join(f"{name} {count}" for name, count in sorted(checker.terminations.items()))
        + ".",
    ]
    if failures:
        lines += ["", "| check | disagreements |", "|---|---|"]
        lines += [f"| {name} | {count} |" for name, count in checker.failures.items()]
    (args.out / "movegen_check.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[4:]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
