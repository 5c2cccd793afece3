"""The native core's board agrees with python-chess and the project's tokenizer.

Perft on the standard suite (shallow depths; the deep ones are ``benchmarks/perft_suite.py``),
and, on ~3,000 positions from random games (plus the shared CSV's positions when it is beside the
checkout), the legal-move set, FEN round trip, Polyglot key, check, outcome and tokens.
"""

from __future__ import annotations

import gzip
import random
import re
from pathlib import Path

import chess
import chess.polyglot
import numpy as np
import pytest

from latentchess.batch_keys import tokenize_boards
from latentchess.core import Board, board_tokens, tokenize_fens
from latentchess.core.suite import cases_up_to
from latentchess.encoding import tokenize, tokenize_batch
from latentchess.errors import InvalidFenError

# The shared data lives beside the checkout (<parent>/shared/), or beside a worktree's parent.
_CSV_NAME = "shared/data/sf15-d9-eco-selfplay.csv.gz"
_CANDIDATES = [Path(__file__).resolve().parents[i] / _CSV_NAME for i in (2, 3)]
SHARED_CSV = next((path for path in _CANDIDATES if path.exists()), _CANDIDATES[0])
HEADER = Path(__file__).resolve().parents[1] / "src/latentchess/core/cpp/zobrist_keys.h"

SPECIAL = [
    chess.STARTING_FEN,
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # legal en passant
    "4k3/8/8/8/3pP3/8/8/4K3 b - e3 0 1",  # en passant for Black
    "4k3/8/8/8/4P3/8/8/4K3 b - e3 0 1",  # en-passant square, no capturing pawn
    "8/8/8/KPp4r/8/8/8/7k w - c6 0 2",  # en passant pinned along the rank: illegal
    "8/8/8/8/k2Pp2Q/8/8/3K4 b - d3 0 1",  # the same for Black
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 1000 1200",  # clocks beyond three digits
    "r3k2r/8/8/8/8/8/8/4K2R w KQkq - 0 1",  # castling right without its rook
    "r3k2r/8/8/8/8/8/5r2/R3K2R w KQkq - 0 1",  # castling through an attacked square
    "r3k2r/8/8/8/8/8/8/1r2K2R w KQkq - 0 1",  # queenside: b1 attacked does not matter
    "8/P7/8/8/8/8/8/k1K5 w - - 0 90",
    "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",  # stalemate
    "6rk/5Npp/8/8/8/8/8/6K1 b - - 0 1",  # smothered mate
    "8/8/8/8/8/5k2/8/4KB2 w - - 0 1",  # insufficient material
    "8/8/8/8/8/5k2/8/4K1N1 w - - 120 80",  # insufficient material with a high clock
    "4k3/8/8/8/8/8/4P3/4K3 w - - 149 100",  # 75-move rule next move
    "4k3/8/8/8/8/8/4P3/4K3 w - - 150 100",  # 75-move rule
]


def random_boards(seed: int, games: int) -> list[chess.Board]:
    """Boards (with their move stacks) along random games that favour pawn moves."""
    rng = random.Random(seed)
    boards = []
    for _ in range(games):
        board = chess.Board()
        for _ in range(rng.randint(1, 250)):
            moves = list(board.legal_moves)
            if not moves:
                break
            pawn_moves = [m for m in moves if board.piece_type_at(m.from_square) == chess.PAWN]
            board.push(rng.choice(pawn_moves if pawn_moves and rng.random() < 0.4 else moves))
            boards.append(board.copy())
    return boards


def shared_fens(limit: int) -> list[str]:
    if not SHARED_CSV.exists():
        return []
    fens = []
    with gzip.open(SHARED_CSV, "rt") as lines:
        for index, line in enumerate(lines):
            if index % 7 == 0:
                fens.append(line.split(",", 1)[0])
            if len(fens) >= limit:
                break
    return fens


@pytest.fixture(scope="module")
def boards() -> list[chess.Board]:
    return (
        [chess.Board(fen) for fen in SPECIAL]
        + [chess.Board(fen) for fen in shared_fens(1000)]
        + random_boards(seed=11, games=30)
    )


def test_zobrist_header_equals_python_chess_keys() -> None:
    numbers = [int(h, 16) for h in re.findall(r"0x([0-9A-F]{16})ULL", HEADER.read_text())]
    assert numbers == list(chess.polyglot.POLYGLOT_RANDOM_ARRAY)


@pytest.mark.parametrize(
    ("name", "fen", "chess960", "depth", "nodes"),
    [
        (case.name, case.fen, case.chess960, depth, nodes)
        for case, depth, nodes in cases_up_to(1_500_000)
    ],
)
def test_perft_equals_published_counts(
    name: str, fen: str, chess960: bool, depth: int, nodes: int
) -> None:
    assert Board(fen, chess960=chess960).perft(depth) == nodes, name


def test_perft_divide_equals_python_chess() -> None:
    fen = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
    divide = Board(fen).perft_divide(2)
    reference = chess.Board(fen)
    expected = {}
    for move in reference.legal_moves:
        reference.push(move)
        expected[move.uci()] = reference.legal_moves.count()
        reference.pop()
    assert divide == expected
    assert sum(divide.values()) == 2039


def test_board_agrees_with_python_chess(boards: list[chess.Board]) -> None:
    assert len(boards) >= 2000
    for reference in boards:
        board = Board.from_chess(reference)
        fen = reference.fen()
        assert board.fen() == fen
        assert Board(fen).fen() == fen
        assert {m.uci() for m in board.legal_moves()} == {m.uci() for m in reference.legal_moves}
        captures, quiets = board.legal_captures(), board.legal_quiets()
        assert len(captures) + len(quiets) == reference.legal_moves.count()
        assert set(captures) | set(quiets) == set(reference.legal_moves), fen
        assert board.zobrist_key() == chess.polyglot.zobrist_hash(reference), fen
        assert board.is_check() == reference.is_check()
        assert board.outcome() == reference.outcome(), fen
        assert board.is_insufficient_material() == reference.is_insufficient_material()
        assert np.array_equal(board.tokens(), tokenize(fen)), fen


def test_claimable_draws_and_repetition_follow_the_history(boards: list[chess.Board]) -> None:
    # Shuffling knights makes repetitions; random boards give the other cases.
    game = chess.Board()
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8"] * 2 + ["g1f3"]:
        game.push_uci(uci)
    for reference in [*boards[::7], game]:
        board = Board.from_chess(reference)
        assert board.outcome(claim_draw=True) == reference.outcome(claim_draw=True)
        for count in (2, 3):
            assert board.is_repetition(count) == reference.is_repetition(count)
    assert Board.from_chess(game).can_claim_threefold_repetition()


def test_push_pop_restores_everything() -> None:
    reference = random_boards(seed=5, games=1)[-1]
    board = Board()
    seen = [(board.fen(), board.zobrist_key())]
    for move in reference.move_stack:
        board.push(move)
        seen.append((board.fen(), board.zobrist_key()))
    for expected in reversed(seen[:-1]):
        board.pop()
        assert (board.fen(), board.zobrist_key()) == expected
    with pytest.raises(IndexError):
        board.pop()


def test_expand_gives_what_python_chess_gives(boards: list[chess.Board]) -> None:
    for reference in boards[::25]:
        board = Board.from_chess(reference)
        expansion = board.expand()
        children = []
        for move in expansion.moves:
            child = reference.copy()
            child.push(move)
            children.append(child)
        assert set(expansion.moves) == set(reference.legal_moves)
        keys = [chess.polyglot.zobrist_hash(child) for child in children]
        assert expansion.keys.tolist() == keys
        assert expansion.in_check.tolist() == [child.is_check() for child in children]
        assert expansion.halfmove.tolist() == [child.halfmove_clock for child in children]
        assert np.array_equal(expansion.tokens, tokenize_batch([c.fen() for c in children]))
        assert np.array_equal(
            expansion.tokens, tokenize_boards([c.copy(stack=False) for c in children])
        )
        for child, status in zip(children, expansion.status.tolist(), strict=True):
            over = not any(child.generate_legal_moves())
            expected = 1 if over and child.is_check() else 2 if over else 0
            if not over and child.is_insufficient_material():
                expected = 2
            assert status == expected


def test_illegal_moves_are_refused() -> None:
    board = Board()
    with pytest.raises(chess.IllegalMoveError, match="e2e5"):
        board.push(chess.Move.from_uci("e2e5"))
    with pytest.raises(chess.IllegalMoveError, match="xyz"):
        board.push_uci("xyz")
    assert not board.is_legal(chess.Move.from_uci("e1g1"))
    assert board.push_uci("e2e4") == chess.Move.from_uci("e2e4")


BAD_FENS = [
    "",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1",
    "rnbqkbnr/pppppppp/44/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "rnbqkbnr/ppppxppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "rnbqkbnr/ppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w QKkq - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KKkq - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e4 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - -1 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 0",
]


@pytest.mark.parametrize("fen", BAD_FENS)
def test_fen_refusals_match_the_tokenizer(fen: str) -> None:
    with pytest.raises(InvalidFenError) as expected:
        tokenize(fen)
    with pytest.raises(InvalidFenError) as native:
        Board(fen)
    assert str(native.value) == str(expected.value)
    with pytest.raises(InvalidFenError) as batch:
        tokenize_fens([chess.STARTING_FEN, fen])
    assert str(batch.value) == str(expected.value)


@pytest.mark.parametrize(
    ("fen", "problem"),
    [
        ("8/8/8/8/8/8/8/K7 w - - 0 1", "one black king"),
        ("kk6/8/8/8/8/8/8/K7 w - - 0 1", "one black king, found 2"),
        ("k7/8/8/8/8/8/8/K6P w - - 0 1", "first or eighth rank"),
        ("k7/PPPPPPPP/P7/8/8/8/8/K7 w - - 0 1", "more than 8 white pawns"),
        ("k7/QQ6/8/8/8/8/PPPPPPPP/K7 w - - 0 1", "promotions"),
    ],
)
def test_unplayable_positions_are_refused(fen: str, problem: str) -> None:
    tokenize(fen)  # the tokenizer takes them; a board cannot play them
    with pytest.raises(InvalidFenError, match=problem):
        Board(fen)


def test_batched_tokens_equal_the_tokenizers(boards: list[chess.Board]) -> None:
    fens = [b.fen() for b in boards[:500]] + [
        "r3k2r/8/8/8/8/8/8/4K2R w KQkq - 0 1",  # uncleaned castling: tokens keep it as written
        "4k3/8/8/8/4P3/8/8/4K3 b - e3 0 1",  # ep square as written
        "7k/8/8/8/8/8/8/K7 w - - 00012 0007",
    ]
    assert np.array_equal(tokenize_fens(fens), tokenize_batch(fens))
    as_boards = [chess.Board(fen) for fen in fens]
    assert np.array_equal(board_tokens(fens), tokenize_boards(as_boards))


def test_any_16_bit_move_is_judged_safely() -> None:
    # A search's hash table can hand back garbage moves: every 16-bit value must be answered.
    for fen in [
        chess.STARTING_FEN,
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
        "8/8/8/KPp4r/8/8/8/7k w - c6 0 2",
        "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    ]:
        position = Board(fen)._position
        legal = set(position.legal_moves())
        judged = {bits for bits in range(1 << 16) if position.is_legal(bits)}
        assert judged == legal, fen
        assert all(position.is_pseudo_legal(bits) for bits in legal)


def test_null_move_matches_python_chess() -> None:
    reference = chess.Board("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3")
    board = Board.from_chess(reference)
    before = (board.fen(), board.zobrist_key())
    board._position.push_null()
    reference.push(chess.Move.null())
    assert board.fen() == reference.fen()
    assert board.zobrist_key() == chess.polyglot.zobrist_hash(reference)
    assert board._position.pop() == 0
    assert (board.fen(), board.zobrist_key()) == before
