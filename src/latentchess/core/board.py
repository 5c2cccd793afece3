"""A python-chess-like board backed by the native core (bitboards, legal moves, perft, tokens).

:class:`Board` answers what the searches ask of a position - legal moves, Zobrist key, check,
game end, the 77 tokens - in C++, and agrees with python-chess on all of it (tests compare them
on thousands of positions). Moves are :class:`chess.Move` objects at this boundary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import chess

if TYPE_CHECKING:  # numpy loads with the arrays the core returns, not with the module
    import numpy as np
    import numpy.typing as npt

from latentchess.core import _native

__all__ = ["Board", "Expansion", "move_from_bits", "move_to_bits", "NORMAL", "MATED", "DRAWN"]

NORMAL, MATED, DRAWN = 0, 1, 2
"""Terminal status of a position by itself (no history), as in the latent search's cache."""

_PROMOTIONS = (None, None, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, None, None)
_MOVES: dict[int, chess.Move] = {}


def move_from_bits(bits: int) -> chess.Move:
    """The :class:`chess.Move` of a native 16-bit move (from | to << 6 | promotion << 12)."""
    move = _MOVES.get(bits)
    if move is None:
        move = chess.Move(bits & 63, (bits >> 6) & 63, _PROMOTIONS[(bits >> 12) & 7])
        _MOVES[bits] = move
    return move


def move_to_bits(move: chess.Move) -> int:
    """The native 16-bit encoding of ``move`` (drops are not chess moves and are refused)."""
    if move.drop is not None:
        raise chess.IllegalMoveError(f"drops are not supported: {move.uci()!r}")
    return move.from_square | (move.to_square << 6) | ((move.promotion or 0) << 12)


@dataclass(frozen=True, kw_only=True)
class Expansion:
    """The children of a position, in the core's move order, for a search's node expansion.

    Attributes:
        moves: the legal moves.
        keys: ``(N,)`` uint64 Polyglot keys of the children (``chess.polyglot.zobrist_hash``).
        status: ``(N,)`` uint8 NORMAL / MATED / DRAWN (stalemate, insufficient material).
        in_check: ``(N,)`` bool, the child's side to move is in check.
        halfmove: ``(N,)`` int32 halfmove clocks of the children.
        repetitions: ``(N,)`` int32 earlier occurrences of each child in this board's history.
        tokens: ``(N, 77)`` uint8, equal to ``encoding.tokenize_batch`` of the children's FENs
            (``(N, 0)`` when not asked for).
    """

    moves: list[chess.Move]
    keys: npt.NDArray[np.uint64]
    status: npt.NDArray[np.uint8]
    in_check: npt.NDArray[np.bool_]
    halfmove: npt.NDArray[np.int32]
    repetitions: npt.NDArray[np.int32]
    tokens: npt.NDArray[np.uint8]


class Board:
    """A chess position with its move history, on the native core.

    Args:
        fen: the position. Validated as :func:`latentchess.encoding.tokenize` validates, plus
            what a board needs to be playable: one king each, at most 16 pieces and 8 pawns a
            side, no more promoted pieces than missing pawns, no pawn on the first or last rank.
        chess960: Chess960 rules, as ``chess.Board(fen, chess960=True)``: the castling field may
            be X-FEN (``KQkq`` for the outermost rooks, a file letter otherwise) or Shredder-FEN
            (``HAha``), the king castles from any square between its rooks, and castling moves
            are king-takes-own-rook (``e1h1``), as python-chess writes them in this mode.

    Raises:
        InvalidFenError: ``fen`` is refused; the message quotes it and names the problem.
    """

    __slots__ = ("_position",)

    def __init__(self, fen: str = chess.STARTING_FEN, *, chess960: bool = False) -> None:
        if not isinstance(fen, str):
            raise TypeError(f"expected a FEN string, got {type(fen).__name__}")
        self._position = _native.Position(fen, chess960)

    @classmethod
    def from_chess(cls, board: chess.Board) -> Board:
        """The same position and history as ``board`` (its root FEN, then its move stack), in
        the same mode (standard or Chess960)."""
        # en_passant="fen": the square as stored, so that the Polyglot key keeps its file even
        # when the capture is illegal (as chess.polyglot.zobrist_hash does). Shredder-FEN in
        # Chess960 names every castling rook by its file, whatever other rooks stand beside it.
        root = board.root() if board.move_stack else board
        native = cls(root.fen(en_passant="fen", shredder=board.chess960), chess960=board.chess960)
        for move in board.move_stack:
            native.push(move)
        return native

    def copy(self) -> Board:
        """An independent copy, history included."""
        clone = Board.__new__(Board)
        clone._position = self._position.copy()
        return clone

    # -- position ----------------------------------------------------------------------------

    def fen(self, *, shredder: bool = False) -> str:
        """The FEN, as ``chess.Board.fen()`` writes it (en passant only when legal; castling as
        X-FEN, or Shredder-FEN file letters with ``shredder``)."""
        return self._position.fen(shredder)

    @property
    def chess960(self) -> bool:
        """Whether this board plays by Chess960 rules (castling moves are king-takes-rook)."""
        return bool(self._position.chess960())

    @property
    def turn(self) -> chess.Color:
        """``chess.WHITE`` or ``chess.BLACK``."""
        return self._position.side_to_move() == 0

    @property
    def halfmove_clock(self) -> int:
        """Plies since the last capture or pawn move."""
        return self._position.halfmove_clock()

    @property
    def fullmove_number(self) -> int:
        """The move number, incremented after Black moves."""
        return self._position.fullmove_number()

    @property
    def ply(self) -> int:
        """Moves pushed since this board was built from its FEN."""
        return self._position.ply_count()

    def piece_type_at(self, square: chess.Square) -> chess.PieceType | None:
        """The type of the piece on ``square``, or ``None``."""
        return self._position.piece_type_on(square) or None

    def zobrist_key(self) -> int:
        """The Polyglot key, equal to ``chess.polyglot.zobrist_hash``."""
        return self._position.key()

    def tokens(self) -> npt.NDArray[np.uint8]:
        """``(77,)`` uint8 tokens, equal to ``encoding.tokenize(self.fen())``."""
        return self._position.tokens()

    # -- moves -------------------------------------------------------------------------------

    def legal_moves(self) -> list[chess.Move]:
        """The legal moves (as a set, equal to python-chess's)."""
        return [move_from_bits(bits) for bits in self._position.legal_moves()]

    def legal_captures(self) -> list[chess.Move]:
        """Legal captures, en passant and every promotion."""
        return [move_from_bits(bits) for bits in self._position.legal_captures()]

    def legal_quiets(self) -> list[chess.Move]:
        """The other legal moves (castling included)."""
        return [move_from_bits(bits) for bits in self._position.legal_quiets()]

    def is_legal(self, move: chess.Move) -> bool:
        """Whether ``move`` is legal here."""
        return move.drop is None and self._position.is_legal(move_to_bits(move))

    def push(self, move: chess.Move) -> None:
        """Play ``move``.

        Raises:
            chess.IllegalMoveError: ``move`` is not legal here.
        """
        self._position.push(move_to_bits(move))

    def push_uci(self, uci: str) -> chess.Move:
        """Play the move written in UCI and return it.

        Raises:
            chess.IllegalMoveError: ``uci`` is not a legal move here.
        """
        bits = self._position.parse_uci(uci)
        self._position.push(bits)
        return move_from_bits(bits)

    def pop(self) -> chess.Move:
        """Undo the last move and return it.

        Raises:
            IndexError: no move was pushed.
        """
        return move_from_bits(self._position.pop())

    # -- game state --------------------------------------------------------------------------

    def is_check(self) -> bool:
        """Whether the side to move is in check."""
        return self._position.in_check()

    def is_checkmate(self) -> bool:
        """In check with no legal move."""
        return self._position.in_check() and not self._position.has_legal_move()

    def is_stalemate(self) -> bool:
        """Not in check and no legal move."""
        return not self._position.in_check() and not self._position.has_legal_move()

    def is_insufficient_material(self) -> bool:
        """As ``chess.Board.is_insufficient_material``."""
        return self._position.is_insufficient_material()

    def is_repetition(self, count: int = 3) -> bool:
        """The current position occurred ``count`` times in all (this time included)."""
        return count <= 1 or self._position.is_repetition(count - 1)

    def can_claim_fifty_moves(self) -> bool:
        """As ``chess.Board.can_claim_fifty_moves``."""
        position = self._position
        if position.is_fifty_move_draw():
            return True
        if position.halfmove_clock() < 99:
            return False
        for bits in position.legal_moves():
            position.push(bits)
            try:
                if position.halfmove_clock() >= 100 and position.is_fifty_move_draw():
                    return True
            finally:
                position.pop()
        return False

    def can_claim_threefold_repetition(self) -> bool:
        """As ``chess.Board.can_claim_threefold_repetition``."""
        position = self._position
        if position.is_repetition(2):
            return True
        for bits in position.legal_moves():
            position.push(bits)
            try:
                if position.is_repetition(2):
                    return True
            finally:
                position.pop()
        return False

    def status(self) -> int:
        """NORMAL, MATED or DRAWN (stalemate, insufficient material), ignoring the history."""
        return self._position.status()

    def outcome(self, *, claim_draw: bool = False) -> chess.Outcome | None:
        """The game's end, as ``chess.Board.outcome`` (same termination order)."""
        position = self._position
        has_move = position.has_legal_move()
        if not has_move and position.in_check():
            return chess.Outcome(chess.Termination.CHECKMATE, not self.turn)
        if position.is_insufficient_material():
            return chess.Outcome(chess.Termination.INSUFFICIENT_MATERIAL, None)
        if not has_move:
            return chess.Outcome(chess.Termination.STALEMATE, None)
        if position.halfmove_clock() >= 150:
            return chess.Outcome(chess.Termination.SEVENTYFIVE_MOVES, None)
        if position.is_repetition(4):
            return chess.Outcome(chess.Termination.FIVEFOLD_REPETITION, None)
        if claim_draw:
            if self.can_claim_fifty_moves():
                return chess.Outcome(chess.Termination.FIFTY_MOVES, None)
            if self.can_claim_threefold_repetition():
                return chess.Outcome(chess.Termination.THREEFOLD_REPETITION, None)
        return None

    def is_game_over(self, *, claim_draw: bool = False) -> bool:
        """Whether :meth:`outcome` is not ``None``."""
        return self.outcome(claim_draw=claim_draw) is not None

    # -- counting and expansion --------------------------------------------------------------

    def perft(self, depth: int) -> int:
        """Leaf count of the legal move tree to ``depth`` (bulk counted; releases the GIL)."""
        if depth < 0:
            raise ValueError(f"perft depth must be >= 0, got {depth!r}")
        return self._position.perft(depth)

    def perft_divide(self, depth: int) -> dict[str, int]:
        """Leaf counts per legal move (UCI), as Stockfish's ``go perft``."""
        if depth < 1:
            raise ValueError(f"perft divide depth must be >= 1, got {depth!r}")
        return dict(self._position.perft_divide(depth))

    def expand(self, *, with_tokens: bool = True) -> Expansion:
        """Every child at once: moves, keys, status, clocks, repetitions and tokens."""
        moves, keys, status, in_check, halfmove, repetitions, tokens = self._position.expand(
            with_tokens
        )
        return Expansion(
            moves=[move_from_bits(bits) for bits in moves.tolist()],
            keys=keys,
            status=status,
            in_check=in_check.astype(bool),
            halfmove=halfmove,
            repetitions=repetitions,
            tokens=tokens,
        )

    def __repr__(self) -> str:
        mode = ", chess960=True" if self.chess960 else ""
        return f"latentchess.core.Board({self.fen()!r}{mode})"
