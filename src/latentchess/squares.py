"""Where a position becomes 64 square tokens: the Chessformer input (with history).

A position is 64 tokens, one per square, seen from the side to move: when Black is to move the
board is mirrored (rank r becomes rank 7 - r) and the colours are swapped, so the mover's pawns
always advance "up" the board and the mover's pieces are always planes 0-5. Square index
``s = 8 * rank + file`` in that frame (python-chess numbering: a1 = 0, h8 = 63).

Per square: a one-hot of 12 piece planes (``PNBRQK`` of the mover, then of the opponent) for the
current board and ``history`` previous boards (most recent first; when the game is shorter the
earliest board is repeated), all mirrored by the *current* mover's frame. Optional side features
(:data:`SIDE_FEATURES` per square): the en-passant target square (one-hot), the four castling
rights (mover kingside, mover queenside, opponent kingside, opponent queenside, broadcast), the
rule-50 counter / 100 (broadcast) and whether the position occurred before (broadcast).

The encoder is split in two pure steps so that a native encoder can replace either:
:func:`board_pieces` (a board to 64 absolute piece codes) and :func:`encode_pieces` (stacked codes
of the current and previous boards, plus the mover's colour, to the float features). Moves map to
the 4352-entry policy vocabulary by :func:`move_index` / :func:`index_move`: ``from * 64 + to`` in
the mover's frame, and ``4096 + (from_file * 8 + to_file) * 4 + piece`` for promotions (``piece``
0-3 = queen, rook, bishop, knight) — every promotion, including to a queen, uses the second block.
"""

from __future__ import annotations

from collections.abc import Sequence

import chess
import numpy as np
import numpy.typing as npt

__all__ = [
    "PLANES",
    "SIDE_FEATURES",
    "POLICY_SIZE",
    "PROMOTION_PIECES",
    "feature_size",
    "board_pieces",
    "history_pieces",
    "encode_pieces",
    "encode_board",
    "side_features",
    "move_index",
    "index_move",
    "legal_move_indices",
    "legal_mask",
]

PLANES = 12
"""Piece planes per board: the mover's P N B R Q K, then the opponent's."""
SIDE_FEATURES = 7
"""En-passant square, four castling rights, rule-50 / 100, repetition."""
POLICY_SIZE = 64 * 64 + 8 * 8 * 4
"""4352: from-to pairs plus (from file, to file, piece) promotions."""
PROMOTION_PIECES = (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)

PieceCodes = npt.NDArray[np.int8]
"""(..., 64) absolute piece codes: 0 empty, 1-6 White PNBRQK, 7-12 Black PNBRQK."""

# Mirror in the mover's frame: square s -> s ^ 56; colour swap: code c -> c +- 6.
_MIRROR = np.arange(64) ^ 56
_SWAP = np.array([0, *range(7, 13), *range(1, 7)], dtype=np.int8)
_PROMO = {piece: i for i, piece in enumerate(PROMOTION_PIECES)}


def feature_size(history: int, side: bool) -> int:
    """Features per square for ``history`` previous boards, with or without side features."""
    return PLANES * (history + 1) + (SIDE_FEATURES if side else 0)


def board_pieces(board: chess.BaseBoard) -> PieceCodes:
    """The 64 absolute piece codes of ``board`` (White's frame, a1 = 0)."""
    codes = np.zeros(64, dtype=np.int8)
    for color_offset, color in ((0, chess.WHITE), (6, chess.BLACK)):
        for piece_type in range(1, 7):
            for square in chess.scan_forward(board.pieces_mask(piece_type, color)):
                codes[square] = piece_type + color_offset
    return codes


def history_pieces(board: chess.Board, history: int) -> PieceCodes:
    """(history + 1, 64) codes of the current board and its predecessors, most recent first.

    Uses ``board.move_stack``; when fewer than ``history`` moves were played, the earliest known
    board is repeated.
    """
    out = np.empty((history + 1, 64), dtype=np.int8)
    scratch = board.copy(stack=True)
    out[0] = board_pieces(scratch)
    for i in range(1, history + 1):
        if scratch.move_stack:
            scratch.pop()
            out[i] = board_pieces(scratch)
        else:
            out[i] = out[i - 1]
    return out


def side_features(board: chess.Board) -> npt.NDArray[np.float32]:
    """(64, 7) side features of ``board`` in the mover's frame (see the module docstring)."""
    us, them = board.turn, not board.turn
    out = np.zeros((64, SIDE_FEATURES), dtype=np.float32)
    if board.ep_square is not None and board.has_legal_en_passant():
        ep = board.ep_square if us == chess.WHITE else board.ep_square ^ 56
        out[ep, 0] = 1.0
    out[:, 1] = float(board.has_kingside_castling_rights(us))
    out[:, 2] = float(board.has_queenside_castling_rights(us))
    out[:, 3] = float(board.has_kingside_castling_rights(them))
    out[:, 4] = float(board.has_queenside_castling_rights(them))
    out[:, 5] = min(board.halfmove_clock, 100) / 100.0
    out[:, 6] = float(board.is_repetition(2))
    return out


def encode_pieces(pieces: npt.ArrayLike, white_to_move: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """One-hot square features from stacked piece codes, in the mover's frame.

    Args:
        pieces: (B, T, 64) absolute codes of the current board and T - 1 previous ones.
        white_to_move: (B,) booleans: the side to move of each current board.

    Returns:
        (B, 64, 12 * T) float32 features: for each square, board t's 12 planes at ``12 * t``.
    """
    codes = np.asarray(pieces, dtype=np.int8)
    white = np.asarray(white_to_move, dtype=bool)
    if codes.ndim != 3 or codes.shape[2] != 64 or white.shape != codes.shape[:1]:
        raise ValueError(
            f"expected (B, T, 64) codes and (B,) sides, got {codes.shape}, {white.shape}"
        )
    codes = codes.copy()
    black = ~white
    codes[black] = _SWAP[codes[black]][:, :, _MIRROR]  # (b, T, 64) mirrored, colours swapped
    batch, boards, _ = codes.shape
    onehot = np.zeros((batch, 64, boards, PLANES + 1), dtype=np.float32)  # plane 0: empty
    b_idx, t_idx, s_idx = np.indices(codes.shape, sparse=True)
    onehot[b_idx, s_idx, t_idx, codes] = 1.0
    return onehot[..., 1:].reshape(batch, 64, boards * PLANES)


def encode_board(
    board: chess.Board, history: int = 7, side: bool = False
) -> npt.NDArray[np.float32]:
    """(64, feature_size(history, side)) features of one board (history from its move stack)."""
    features = encode_pieces(history_pieces(board, history)[None], np.array([board.turn]))[0]
    if side:
        features = np.concatenate([features, side_features(board)], axis=1)
    return features


def move_index(move: chess.Move, turn: chess.Color) -> int:
    """The policy index of ``move`` played by ``turn`` (see the module docstring)."""
    from_sq, to_sq = move.from_square, move.to_square
    if turn == chess.BLACK:
        from_sq, to_sq = from_sq ^ 56, to_sq ^ 56
    if move.promotion is not None:
        if move.promotion not in _PROMO:
            raise ValueError(f"cannot promote to {chess.piece_name(move.promotion)!r}: {move}")
        return (
            4096
            + (chess.square_file(from_sq) * 8 + chess.square_file(to_sq)) * 4
            + _PROMO[move.promotion]
        )
    return from_sq * 64 + to_sq


def index_move(index: int, turn: chess.Color) -> chess.Move:
    """The move of policy ``index`` for the side ``turn`` (inverse of :func:`move_index`)."""
    if not 0 <= index < POLICY_SIZE:
        raise ValueError(f"policy index {index!r} outside [0, {POLICY_SIZE})")
    promotion = None
    if index < 4096:
        from_sq, to_sq = divmod(index, 64)
    else:
        files, piece = divmod(index - 4096, 4)
        from_file, to_file = divmod(files, 8)
        from_sq, to_sq = chess.square(from_file, 6), chess.square(to_file, 7)
        promotion = PROMOTION_PIECES[piece]
    if turn == chess.BLACK:
        from_sq, to_sq = from_sq ^ 56, to_sq ^ 56
    return chess.Move(from_sq, to_sq, promotion)


def legal_move_indices(board: chess.Board) -> list[int]:
    """Policy indices of the legal moves of ``board``, in python-chess's generation order."""
    return [move_index(move, board.turn) for move in board.legal_moves]


def legal_mask(boards: Sequence[chess.Board]) -> npt.NDArray[np.bool_]:
    """(B, 4352) True where a move is legal."""
    mask = np.zeros((len(boards), POLICY_SIZE), dtype=bool)
    for row, board in enumerate(boards):
        mask[row, legal_move_indices(board)] = True
    return mask
