"""The 64-square Chessformer encoding: mirroring, colour-flip symmetry, history, move indices."""

from __future__ import annotations

import random
from pathlib import Path

import chess
import numpy as np
import pytest

from chessformer_fixtures import random_game, write_rated_pgn
from latentchess.data.moves import batch_features, read_pgn_moves
from latentchess.squares import (
    POLICY_SIZE,
    board_pieces,
    encode_board,
    feature_size,
    index_move,
    legal_mask,
    legal_move_indices,
    move_index,
    side_features,
)


def _boards(seed: int = 1, games: int = 6) -> list[chess.Board]:
    rng = random.Random(seed)
    out = []
    for _ in range(games):
        board = chess.Board()
        for move in random_game(rng, 120).mainline_moves():
            board.push(move)
            out.append(board.copy())
    return out


def test_move_index_round_trips_every_legal_move_without_collisions() -> None:
    promotions = 0
    for board in _boards():
        moves = list(board.legal_moves)
        indices = legal_move_indices(board)
        assert len(set(indices)) == len(moves)
        assert all(0 <= i < POLICY_SIZE for i in indices)
        for move, index in zip(moves, indices, strict=True):
            assert index_move(index, board.turn) == move
            promotions += move.promotion is not None
        assert legal_mask([board]).sum() == len(moves)
    assert promotions > 0  # the random games reach promotions, so that block is covered


def test_promotions_use_their_own_block_for_both_colours() -> None:
    white = chess.Board("8/P6k/8/8/8/8/7K/8 w - - 0 1")
    black = white.mirror()
    for board in (white, black):
        for offset, piece in enumerate((chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)):
            move = next(m for m in board.legal_moves if m.promotion == piece)
            assert move_index(move, board.turn) == 4096 + offset  # a-file to a-file
    with pytest.raises(ValueError, match="outside"):
        index_move(POLICY_SIZE, chess.WHITE)


def test_black_to_move_is_seen_from_its_own_side() -> None:
    board = chess.Board()
    board.push_uci("e2e4")
    features = encode_board(board, history=0)  # (64, 12)
    assert features.shape == (64, feature_size(0, False))
    # The mover (Black) has its pawns on "rank 2" and its king on e1 of its own frame.
    assert features[8:16, 0].all() and features[:, 0].sum() == 8
    assert features[chess.E1, 5] == 1 and features[:, 5].sum() == 1
    # The opponent's e-pawn now stands on e5 of the mirrored board (e4 seen from Black).
    assert features[chess.E5, 6] == 1


@pytest.mark.parametrize("history", [0, 3])
def test_colour_flip_symmetry_with_history(history: int) -> None:
    """A game and its mirror image (colours swapped, board flipped) encode identically."""
    rng = random.Random(3)
    start = chess.Board("r3k2r/ppp2ppp/2n5/3qp3/3P4/2N5/PPP2PPP/R2QK2R w KQkq - 0 9")
    board, mirrored = start.copy(), start.mirror()
    for _ in range(12):
        move = rng.choice(list(board.legal_moves))
        board.push(move)
        mirrored.push(chess.Move(move.from_square ^ 56, move.to_square ^ 56, move.promotion))
        a = encode_board(board, history=history, side=True)
        b = encode_board(mirrored, history=history, side=True)
        np.testing.assert_array_equal(a, b)


def test_short_games_repeat_the_earliest_board() -> None:
    board = chess.Board()
    board.push_uci("g1f3")
    features = encode_board(board, history=4).reshape(64, 5, 12)
    np.testing.assert_array_equal(features[:, 1], features[:, 2])  # the start, repeated
    np.testing.assert_array_equal(features[:, 1], features[:, 4])
    assert not np.array_equal(features[:, 0], features[:, 1])


def test_side_features() -> None:
    board = chess.Board("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQK2R w Kkq f6 0 4")
    side = side_features(board)
    assert side[chess.F6, 0] == 1 and side[:, 0].sum() == 1  # en passant exf6 is legal
    np.testing.assert_array_equal(side[0, 1:5], [1, 0, 1, 1])  # K for us; k, q for them
    assert side[0, 6] == 0


def test_batch_features_from_data_equal_the_board_encoder(tmp_path: Path) -> None:
    """The training path (stored pieces) and the inference path (boards) agree, side included."""
    pgn = write_rated_pgn(tmp_path / "games.pgn", games=3, plies=40)
    data = read_pgn_moves(pgn, progress=False)
    rows = np.arange(len(data))
    batch = batch_features(data, rows, history=3, side=True)
    games = {}
    import chess.pgn

    with open(pgn) as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            games[len(games)] = list(game.mainline_moves())
    for row in rows:
        board = chess.Board()
        ply = int(data.board_row[row] - data.first_row[row])
        for move in games[int(data.game[row])][:ply]:
            board.push(move)
        np.testing.assert_array_equal(batch[row], encode_board(board, history=3, side=True))
        np.testing.assert_array_equal(data.pieces[data.board_row[row]], board_pieces(board))
        assert index_move(int(data.move[row]), board.turn) == games[int(data.game[row])][ply]


def test_pgn_reader_skips_and_limits_games(tmp_path: Path) -> None:
    pgn = write_rated_pgn(tmp_path / "games.pgn", games=6, plies=12)
    every = read_pgn_moves(pgn, progress=False)
    tail = read_pgn_moves(pgn, skip_games=4, progress=False)
    middle = read_pgn_moves(pgn, skip_games=2, max_games=2, progress=False)
    assert sorted(set(tail.game.tolist())) == [4, 5]
    assert sorted(set(middle.game.tolist())) == [2, 3]
    assert len(tail) == int(np.isin(every.game, [4, 5]).sum())
    np.testing.assert_array_equal(tail.move, every.move[np.isin(every.game, [4, 5])])


def test_missing_or_empty_inputs_are_clear_errors(tmp_path: Path) -> None:
    from latentchess.errors import DataFormatError

    with pytest.raises(DataFormatError, match=r"missing\.pgn.*no such file"):
        read_pgn_moves(tmp_path / "missing.pgn", progress=False)
    (tmp_path / "empty.pgn").write_text("")
    with pytest.raises(DataFormatError, match=r"empty\.pgn.*no rated games"):
        read_pgn_moves(tmp_path / "empty.pgn", progress=False)
