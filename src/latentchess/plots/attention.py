"""A head's geometric attention bias (or dot-product attention) for one query square, on a board."""

from __future__ import annotations

from pathlib import Path

import chess
import numpy as np
import torch

from latentchess.evaluation.attribution import MoveAttribution
from latentchess.models.chessformer_io import ChessformerModel

__all__ = ["plot_attention", "plot_attribution"]

_GLYPHS = dict(zip("PNBRQKpnbrqk", "♙♘♗♖♕♔♟♞♝♜♛♚", strict=True))


def plot_attention(
    model: ChessformerModel,
    board: chess.Board,
    square: chess.Square,
    out: str | Path,
    *,
    layer: int = 0,
    elo: float = 1500.0,
    kind: str = "gab",
) -> Path:
    """Draw every head of ``layer``: the bias (``kind="gab"``) or attention (``"dot"``) from the
    query ``square`` (a board square; the model's frame is mirrored back when Black is to move)
    to each key square, with the position's pieces drawn on top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from latentchess.evaluation.attention import attention_maps

    net = model.network
    if not 0 <= layer < len(net.blocks):
        raise ValueError(f"layer {layer!r} outside [0, {len(net.blocks)})")
    features = torch.from_numpy(model.features([board]))
    elos = torch.full((1,), float(elo))
    maps = attention_maps(net, features, elos, elos)
    if kind == "gab" and maps.gab is None:
        raise ValueError("this model has no geometric attention bias; use kind='dot'")
    chosen = (maps.gab if kind == "gab" else maps.dot)[layer, 0]  # (H, 64, 64)
    flip = 0 if board.turn == chess.WHITE else 56  # board square <-> the model's frame
    rows = chosen[:, square ^ flip, :][:, np.arange(64) ^ flip]  # (H, 64) on board squares
    heads = rows.shape[0]
    cols = min(heads, 4)
    fig, axes = plt.subplots(-(-heads // cols), cols, figsize=(3.2 * cols, 3.4 * -(-heads // cols)))
    for head, ax in enumerate(np.atleast_1d(axes).ravel()):
        ax.axis("off")
        if head >= heads:
            continue
        grid = rows[head].reshape(8, 8)[::-1]  # rank 8 at the top
        ax.imshow(grid, cmap="coolwarm" if kind == "gab" else "viridis")
        for sq, piece in board.piece_map().items():
            ax.text(
                chess.square_file(sq),
                7 - chess.square_rank(sq),
                _GLYPHS[piece.symbol()],
                ha="center",
                va="center",
                fontsize=14,
            )
        ax.add_patch(
            plt.Rectangle(
                (chess.square_file(square) - 0.5, 6.5 - chess.square_rank(square)),
                1,
                1,
                fill=False,
                edgecolor="black",
                linewidth=2,
            )
        )
        ax.set_title(f"head {head}", fontsize=9)
    what = "GAB bias" if kind == "gab" else "dot-product attention"
    fig.suptitle(
        f"layer {layer} {what} from {chess.square_name(square)}\n{board.fen()}", fontsize=9
    )
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def plot_attribution(attribution: MoveAttribution, board: chess.Board, out: str | Path) -> Path:
    """The squares' integrated-gradients attribution of a move's logit, on the board (red:
    raises the logit, blue: lowers it), with the move drawn as an arrow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = attribution.squares.reshape(8, 8)[::-1]  # rank 8 at the top
    limit = float(np.abs(grid).max()) or 1.0
    fig, ax = plt.subplots(figsize=(5.2, 5.6))
    image = ax.imshow(grid, cmap="coolwarm", vmin=-limit, vmax=limit)
    for sq, piece in board.piece_map().items():
        ax.text(
            chess.square_file(sq),
            7 - chess.square_rank(sq),
            _GLYPHS[piece.symbol()],
            ha="center",
            va="center",
            fontsize=18,
        )
    move = attribution.move
    x0, y0 = chess.square_file(move.from_square), 7 - chess.square_rank(move.from_square)
    x1, y1 = chess.square_file(move.to_square), 7 - chess.square_rank(move.to_square)
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops={"arrowstyle": "->", "lw": 2})
    ax.set_xticks(range(8), list("abcdefgh"))
    ax.set_yticks(range(8), [str(r) for r in range(8, 0, -1)])
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="attribution (logit units)")
    ax.set_title(
        f"{move.uci()}: logit {attribution.logit:.2f} (baseline {attribution.baseline_logit:.2f}),"
        f" p = {attribution.probability:.3f}\n{board.fen()}",
        fontsize=8,
    )
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
