"""NNUE feature sets against hand-computed positions (indices worked out in the comments)."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from latentchess.errors import LatentChessError
from latentchess.nnue.features import (
    BLOCK_SIZES,
    block_features,
    king_bucket,
    mirror_all_features,
    parse_feature_set,
    position_features,
)

# White K e1 (file 4, rank 0), R h1 (7, 0); black k e8 (4, 7).
KRK = chess.Board("4k3/8/8/8/8/8/8/4K2R w K - 0 1")


@pytest.mark.parametrize(
    ("block", "white", "black"),
    [
        # ALL: (file*8+rank)*12 + role*2 + c; K=5, R=3. White: K (4*8+0)*12+10, k 39*12+11,
        # R 56*12+6. Black's view flips ranks and colours: k -> (32*12+10), K -> 39*12+11,
        # R -> (7*8+7)*12+7.
        ("ALL", [394, 479, 678], [394, 479, 763]),
        ("H", [58, 59, 90], [58, 59, 91]),  # file*12+role*2+c
        ("V", [6, 10, 95], [10, 91, 95]),  # rank*12+...; black: k rank 0, K/R rank 7
        ("D1", [58, 90, 143], [58, 143, 175]),  # (file+rank)*12+...
        ("D2", [59, 142, 174], [59, 142, 91]),  # (file+7-rank)*12+...
        # PH (pairs along a rank, left -> right): white rank 0: K then R: 5*24+0+3*2+0.
        # Black's view: rank 7 holds K, R (theirs): 7*144 + 5*24 + 12 + 3*2 + 1.
        ("PH", [126], [1147]),
        # PV (pairs along a file, bottom -> top): file e: K below k: 4*144+5*24+0+5*2+1; black's
        # view: k (ours) below K (theirs): the same index.
        ("PV", [707], [707]),
    ],
)
def test_local_and_pairwise_blocks(block: str, white: list[int], black: list[int]) -> None:
    assert block_features(KRK, chess.WHITE, block) == white
    assert block_features(KRK, chess.BLACK, block) == sorted(black)


def test_mobility_bitsets_and_counts() -> None:
    # White: K to d1 d2 e2 f1 f2 and g1 (castling); R to h2..h8, g1, f1. Black (as if to move):
    # k to d8 f8 d7 e7 f7. square = file*8+rank.
    king = [24, 25, 33, 40, 41, 48]
    rook = [57, 58, 59, 60, 61, 62, 63, 48, 40]
    black_king = [31, 47, 30, 38, 46]
    expected = sorted(
        [s * 12 + 10 for s in king] + [s * 12 + 6 for s in rook] + [s * 12 + 11 for s in black_king]
    )
    assert block_features(KRK, chess.WHITE, "MB") == expected
    # MC offsets per role (caps 8, 15, 16, 25, 25, 8): 0, 18, 50, 84, 136, 188; every
    # (role, colour) has one active count, 0 for absent pieces.
    assert block_features(KRK, chess.WHITE, "MC") == [
        0, 9, 18, 34, 50, 67, 84 + 9, 84 + 26, 136, 162, 188 + 6, 188 + 9 + 5,
    ]  # fmt: skip


def test_mobility_pawns_push_and_en_passant() -> None:
    board = chess.Board("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2")
    pawns = [f for f in block_features(board, chess.WHITE, "MB") if f % 12 < 2]
    # White e5: push e6 (file 4, rank 5 -> 37) and e.p. d6 (29); black d5: push d4 (27).
    assert pawns == sorted([37 * 12, 29 * 12, 27 * 12 + 1])
    mc = block_features(board, chess.WHITE, "MC")
    assert mc[:2] == [2, 9 + 1]  # pawn counts: ours 2, theirs 1


def test_king_buckets_copy_all_for_the_perspectives_own_king() -> None:
    # Buckets: (file >= 4) + 2 * (rank >= 1) on the perspective's board.
    assert [king_bucket(f, r) for f, r in ((2, 0), (6, 0), (0, 3), (4, 7))] == [0, 1, 2, 3]
    # KRK: White's king on e1 (bucket 1); Black's on e8, which its flipped board calls e1.
    assert block_features(KRK, chess.WHITE, "KA") == [768 + i for i in (394, 479, 678)]
    assert block_features(KRK, chess.BLACK, "KA") == [768 + i for i in (394, 479, 763)]
    # White's king to d2 (bucket 2): only White's copy moves; Black's king on a8 is bucket 0.
    board = chess.Board("k7/8/8/8/8/8/3K4/7R w - - 0 1")
    for color, bucket in ((chess.WHITE, 2), (chess.BLACK, 0)):
        assert block_features(board, color, "KA") == [
            bucket * 768 + i for i in block_features(board, color, "ALL")
        ]
    fs = parse_feature_set("KA+H")
    assert fs.size == 3072 + 96 and fs.offsets == (0, 3072) and not fs.local


def test_nine_king_buckets_split_the_four() -> None:
    # First rank a-d / e / f-h, then a-d / e-h on the second rank, the third and fourth, beyond.
    squares = ((2, 0), (4, 0), (6, 0), (0, 1), (7, 1), (3, 3), (4, 2), (0, 4), (4, 7))
    assert [king_bucket(f, r, "KA9") for f, r in squares] == list(range(9))
    # Each KA9 bucket lies inside one KA bucket (what lets a KA network start a KA9 one).
    parents: dict[int, set[int]] = {}
    for f in range(8):
        for r in range(8):
            parents.setdefault(king_bucket(f, r, "KA9"), set()).add(king_bucket(f, r))
    assert all(len(p) == 1 for p in parents.values()) and len(parents) == 9
    # KRK: White's king on e1 (bucket 1: at home); Black's on e8 (its own e1); after Kg1 bucket 2.
    assert block_features(KRK, chess.WHITE, "KA9") == [768 + i for i in (394, 479, 678)]
    board = chess.Board("4k3/8/8/8/8/8/8/R5K1 b - - 0 1")
    assert block_features(board, chess.WHITE, "KA9") == [
        2 * 768 + i for i in block_features(board, chess.WHITE, "ALL")
    ]
    assert parse_feature_set("KA9").size == 9 * 768


def test_composition_offsets_and_sizes() -> None:
    fs = parse_feature_set("all + h")
    assert fs.name == "ALL+H" and fs.size == 864 and fs.offsets == (0, 768)
    white, black = position_features(KRK, fs)
    assert white.tolist() == [394, 479, 678, 768 + 58, 768 + 59, 768 + 90]
    assert black.tolist() == [394, 479, 763, 768 + 58, 768 + 59, 768 + 91]
    every = "ALL+H+V+D1+D2+PH+PV+MB+MC+KA+KA9+T"  # one threat block at most: T or TNK
    assert parse_feature_set(every).size == sum(BLOCK_SIZES.values()) - BLOCK_SIZES["TNK"]


def test_perspectives_mirror_each_other() -> None:
    board = chess.Board("r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4")
    fs = parse_feature_set("ALL+H+V+D1+D2+PH+PV+MB+MC+KA+KA9")
    white, black = position_features(board, fs)
    mirrored_white, mirrored_black = position_features(board.mirror(), fs)
    assert np.array_equal(white, mirrored_black) and np.array_equal(black, mirrored_white)
    assert len(white) == len(set(white.tolist()))


def test_mirror_all_features_gives_the_other_perspective_of_padded_rows() -> None:
    """Rows padded with 768 (a feature cache's layout): mirroring White's ALL features gives
    Black's, sorted, padding last, for positions of different piece counts; out-of-range indices
    are refused."""
    fens = [
        "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
        "4k3/8/8/8/8/8/8/4K2R w K - 0 1",
        "8/5pk1/6p1/8/3P4/8/5PPP/6K1 b - - 0 40",
    ]
    fs = parse_feature_set("ALL")
    white_rows = np.full((len(fens), 32), 768, dtype=np.int16)
    black_rows = white_rows.copy()
    for row, fen in enumerate(fens):
        white, black = position_features(chess.Board(fen), fs)
        white_rows[row, : len(white)] = white
        black_rows[row, : len(black)] = black
    assert np.array_equal(mirror_all_features(white_rows), black_rows)
    assert np.array_equal(mirror_all_features(black_rows), white_rows)
    with pytest.raises(LatentChessError, match=r"0\.\.768"):
        mirror_all_features(np.array([[769]]))


@pytest.mark.parametrize("text", ["", "ALL+", "ALL+XYZ", "ALL+ALL"])
def test_bad_feature_sets(text: str) -> None:
    with pytest.raises(LatentChessError, match="feature"):
        parse_feature_set(text)
