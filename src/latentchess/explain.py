"""Explain a move: which pieces made its change along the advantage axis, by occlusion.

A move changes the axis score (cosine with the advantage axis, White's view) from ``s(before)``
to ``s(after)``. For each piece ``p`` on the board before the move (kings excepted: a position
without a king is not chess), the same change is measured with ``p`` taken off both positions
(the moving piece from its from-square and its to-square; a captured piece exists only before
the move)::

    contribution(p) = [s(after) - s(before)] - [s(after - p) - s(before - p)]

i.e. how much of the move's change needs the piece to be there (occlusion attribution, as for
image classifiers: Zeiler & Fergus, 2014). Every position, the two real ones and two per piece,
is scored in ONE batch. Contributions are reported from the mover's view (positive: the piece's
presence made the move better for the side that played it); they are not additive, since the
model is not linear in the pieces.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import chess

from latentchess.errors import InvalidFenError

if TYPE_CHECKING:
    from latentchess.models.inference import LatentModel

__all__ = [
    "PieceContribution",
    "MoveExplanation",
    "explain_move",
    "parse_position_and_move",
    "format_explanation",
    "plot_explanation",
]


@dataclass(frozen=True, kw_only=True)
class PieceContribution:
    """One piece's share of a move's axis change.

    Attributes:
        square: where the piece stands before the move (python-chess square index).
        piece: its symbol (``"N"`` white knight, ``"p"`` black pawn).
        contribution: change with the piece minus change without it, mover's view.
        role: ``"moved"``, ``"captured"`` or ``"other"``.
    """

    square: int
    piece: str
    contribution: float
    role: str

    @property
    def square_name(self) -> str:
        """The square in algebraic notation (``"e4"``)."""
        return chess.square_name(self.square)


@dataclass(frozen=True, kw_only=True)
class MoveExplanation:
    """What a move did along the advantage axis and which pieces it depended on.

    Attributes:
        fen: the position before the move.
        move: the move (UCI).
        san: the move in SAN.
        score_before: axis score before the move, White's view.
        score_after: axis score after the move, White's view.
        win_prob_before: the model's calibrated White win probability before the move.
        win_prob_after: the same after the move.
        pieces: every non-king piece before the move, largest absolute contribution first.
    """

    fen: str
    move: str
    san: str
    score_before: float
    score_after: float
    win_prob_before: float
    win_prob_after: float
    pieces: list[PieceContribution]

    @property
    def mover(self) -> chess.Color:
        """The side that played the move."""
        return chess.Board(self.fen).turn

    @property
    def change(self) -> float:
        """Axis change from the mover's view (positive: the move helped the mover)."""
        sign = 1.0 if self.mover == chess.WHITE else -1.0
        return sign * (self.score_after - self.score_before)


def parse_position_and_move(fen: str, move: str) -> tuple[chess.Board, chess.Move]:
    """Validate a FEN and a legal move in it (UCI or SAN).

    Raises:
        InvalidFenError: the FEN cannot be parsed or is not a legal chess position.
        ValueError: (python-chess's ``IllegalMoveError``/``InvalidMoveError``) the move is not
            legal there.
    """
    text = fen.strip()
    if text == "startpos":
        text = chess.STARTING_FEN
    try:
        board = chess.Board(text)
    except ValueError as error:
        raise InvalidFenError(fen, str(error)) from None
    if not board.is_valid():
        problems = [
            name.lower().replace("_", " ")
            for name, flag in chess.Status.__members__.items()
            if flag and flag in board.status()
        ]
        raise InvalidFenError(fen, "not a legal position: " + ", ".join(problems))
    move_text = move.strip()
    try:
        parsed = chess.Move.from_uci(move_text)
        if parsed not in board.legal_moves:
            raise chess.IllegalMoveError(f"illegal move {move_text!r} in {board.fen()!r}")
    except chess.InvalidMoveError:
        try:
            parsed = board.parse_san(move_text)
        except ValueError:
            raise chess.IllegalMoveError(
                f"{move_text!r} is not a legal move (UCI or SAN) in {board.fen()!r}"
            ) from None
    return board, parsed


def explain_move(model: LatentModel, board: chess.Board, move: chess.Move) -> MoveExplanation:
    """Occlusion attribution of a move's axis change to the pieces (see the module docstring).

    Args:
        model: the latent model whose axis score is explained.
        board: the position before the move (not modified).
        move: a legal move in ``board``.

    Raises:
        chess.IllegalMoveError: ``move`` is not legal in ``board``.
    """
    if move not in board.legal_moves:
        raise chess.IllegalMoveError(f"illegal move {move.uci()!r} in {board.fen()!r}")
    before = board.copy(stack=False)
    after = board.copy(stack=False)
    after.push(move)
    captured = _captured_square(board, move)
    subjects = [
        (square, piece)
        for square, piece in before.piece_map().items()
        if piece.piece_type != chess.KING
    ]
    batch = [before, after]
    for square, _ in subjects:
        batch.append(_without(before, square))
        # Where the piece stands after the move: the mover at its destination, a captured
        # piece nowhere, a rook castled with the king on its new square.
        batch.append(_without(after, _square_after(board, move, square, captured)))
    scores = model.score(batch)  # (2 + 2P,) one batch
    change = float(scores[1] - scores[0])
    sign = 1.0 if board.turn == chess.WHITE else -1.0
    pieces: list[PieceContribution] = []
    for index, (square, piece) in enumerate(subjects):
        occluded = float(scores[3 + 2 * index] - scores[2 + 2 * index])
        role = "moved" if square == move.from_square else "other"
        if square == captured:
            role = "captured"
        pieces.append(
            PieceContribution(
                square=square,
                piece=piece.symbol(),
                contribution=sign * (change - occluded),
                role=role,
            )
        )
    pieces.sort(key=lambda p: -abs(p.contribution))
    return MoveExplanation(
        fen=board.fen(),
        move=move.uci(),
        san=board.san(move),
        score_before=float(scores[0]),
        score_after=float(scores[1]),
        win_prob_before=float(model.win_probability(float(scores[0]))),
        win_prob_after=float(model.win_probability(float(scores[1]))),
        pieces=pieces,
    )


def _captured_square(board: chess.Board, move: chess.Move) -> int | None:
    if board.is_en_passant(move):
        return move.to_square + (-8 if board.turn == chess.WHITE else 8)
    if board.is_capture(move):
        return move.to_square
    return None


def _square_after(
    board: chess.Board, move: chess.Move, square: int, captured: int | None
) -> int | None:
    """Where the piece on ``square`` before ``move`` stands after it (None: captured)."""
    if square == move.from_square:
        return move.to_square
    if square == captured:
        return None
    if board.is_castling(move):
        rank = chess.square_rank(move.from_square)
        kingside = board.is_kingside_castling(move)
        if square == chess.square(7 if kingside else 0, rank):
            return chess.square(5 if kingside else 3, rank)
    return square


def _without(board: chess.Board, square: int | None) -> chess.Board:
    """A copy of ``board`` with the piece on ``square`` removed (castling rights cleaned)."""
    copy = board.copy(stack=False)
    if square is not None:
        copy.remove_piece_at(square)
    return copy


def format_explanation(explanation: MoveExplanation, *, top: int = 12) -> str:
    """A plain-text report: the axis change, then the pieces by contribution."""
    mover = "White" if explanation.mover == chess.WHITE else "Black"
    lines = [
        f"move {explanation.san} ({explanation.move}) by {mover} in {explanation.fen}",
        f"axis score (White's view): {explanation.score_before:+.4f} -> "
        f"{explanation.score_after:+.4f}   change for {mover}: {explanation.change:+.4f}",
        f"P(White wins) (model): {explanation.win_prob_before:.3f} -> "
        f"{explanation.win_prob_after:.3f}",
        f"occlusion (each piece removed from both positions, {mover}'s view; "
        "positive: the move needed it):",
        "  square  piece  role      contribution",
    ]
    for piece in explanation.pieces[:top]:
        lines.append(
            f"  {piece.square_name:<6}  {piece.piece:<5}  {piece.role:<8}  "
            f"{piece.contribution:+.4f}"
        )
    rest = len(explanation.pieces) - top
    if rest > 0:
        lines.append(f"  ... {rest} more (smaller) contributions")
    return "\n".join(lines)


_GLYPHS = dict(zip("KQRBNPkqrbnp", "♔♕♖♗♘♙♚♛♜♝♞♟", strict=True))


def plot_explanation(explanation: MoveExplanation, out: str | Path) -> Path:
    """Draw the board before the move with each piece's contribution as a heat map (PNG).

    Green squares helped the mover's change, pink ones worked against it; the arrow is the move.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm

    board = chess.Board(explanation.fen)
    grid = np.full((8, 8), np.nan)
    for piece in explanation.pieces:
        grid[chess.square_rank(piece.square), chess.square_file(piece.square)] = piece.contribution
    limit = max(1e-6, float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 1e-6)
    fig, ax = plt.subplots(figsize=(6.4, 7.0))
    for rank in range(8):
        for file in range(8):
            light = (rank + file) % 2 == 1
            ax.add_patch(
                plt.Rectangle((file, rank), 1, 1, color="#f0d9b5" if light else "#b58863", lw=0)
            )
    heat = np.ma.masked_invalid(grid)
    image = ax.imshow(
        heat,
        origin="lower",
        extent=(0, 8, 0, 8),
        cmap="PiYG",
        norm=TwoSlopeNorm(vcenter=0.0, vmin=-limit, vmax=limit),
        alpha=0.85,
        zorder=2,
    )
    for square, piece in board.piece_map().items():
        ax.text(
            chess.square_file(square) + 0.5,
            chess.square_rank(square) + 0.47,
            _GLYPHS[piece.symbol()],
            ha="center",
            va="center",
            fontsize=30,
            zorder=3,
            family="DejaVu Sans",
        )
    move = chess.Move.from_uci(explanation.move)
    start = (chess.square_file(move.from_square) + 0.5, chess.square_rank(move.from_square) + 0.5)
    end = (chess.square_file(move.to_square) + 0.5, chess.square_rank(move.to_square) + 0.5)
    ax.annotate(
        "",
        xy=end,
        xytext=start,
        arrowprops={"arrowstyle": "-|>", "color": "#1f5fbf", "lw": 3, "alpha": 0.8},
        zorder=4,
    )
    ax.set_xticks([i + 0.5 for i in range(8)], list("abcdefgh"))
    ax.set_yticks([i + 0.5 for i in range(8)], [str(i + 1) for i in range(8)])
    ax.set_xlim(0, 8)
    ax.set_ylim(0, 8)
    ax.set_aspect("equal")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="contribution (mover's view)")
    ax.set_title(
        f"{explanation.san}: axis {explanation.score_before:+.3f} -> "
        f"{explanation.score_after:+.3f} (change for mover {explanation.change:+.3f})",
        fontsize=10,
    )
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return out
