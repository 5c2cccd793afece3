"""Seeing the latent space: UMAP maps of positions, the advantage axis, and game trajectories.

The 2D map is a UMAP projection (McInnes et al.) of unit embeddings with the cosine metric, as in
paper Fig. 1. The advantage axis lives in D dimensions; on the map it is drawn as an arrow from the
projected centroid of Black-winning positions (p <= 0.01) to that of White-winning ones (p >= 0.99),
which, like the paper's dashed arrow, shows its direction only approximately.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chess
import chess.pgn
import numpy as np
import numpy.typing as npt

from latentchess.errors import DataFormatError
from latentchess.textfiles import open_text
from latentchess.winprob import score_win_probability

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from latentchess.models.inference import LatentModel

__all__ = [
    "SpaceMap",
    "GameTrace",
    "fit_space_map",
    "load_labelled_sample",
    "read_game",
    "plot_umap",
    "plot_trajectory",
]

FloatArray = npt.NDArray[np.float32]
_WIN_CMAP = "RdBu_r"  # diverging: red = White favoured, blue = Black favoured (paper Fig. 1)


@dataclass
class SpaceMap:
    """A fitted 2D projection of a labelled sample.

    Attributes:
        reducer: the fitted ``umap.UMAP`` (its ``transform`` places new positions on the map).
        points: ``(N, 2)`` coordinates of the sample.
        win_prob_white: ``(N,)`` labels of the sample.
        axis_start: projected centroid of Black-winning positions (``p <= 0.01``), or None.
        axis_end: projected centroid of White-winning positions (``p >= 0.99``), or None.
    """

    reducer: Any
    points: FloatArray
    win_prob_white: FloatArray
    axis_start: FloatArray | None
    axis_end: FloatArray | None


@dataclass
class GameTrace:
    """One game's positions with optional Stockfish labels.

    Attributes:
        boards: the position before the first move and after each move.
        win_prob_white: White win probability per position from the PGN's ``[%eval]`` comments
            (Lichess style) or a Stockfish labelling, NaN where unknown.
        headers: the PGN headers.
    """

    boards: list[chess.Board]
    win_prob_white: FloatArray
    headers: dict[str, str]


def load_labelled_sample(
    dataset: str | Path, size: int, *, seed: int = 0
) -> tuple[list[str], FloatArray]:
    """A uniform random sample of ``(fens, win_prob_white)`` from a Parquet dataset directory."""
    from latentchess.data.store import read_dataset

    table = read_dataset(dataset, columns=["fen", "win_prob_white"])
    rng = np.random.default_rng(seed)
    n = table.num_rows
    index = np.sort(rng.choice(n, size=min(size, n), replace=False))
    fens = table.column("fen").take(index).to_pylist()
    probs = table.column("win_prob_white").take(index).to_numpy().astype(np.float32)
    return fens, probs


def fit_space_map(
    model: LatentModel,
    fens: Sequence[str],
    win_prob_white: npt.ArrayLike,
    *,
    seed: int = 0,
    neighbours: int = 15,
    progress: bool = True,
) -> SpaceMap:
    """Embed a labelled sample and fit a 2D UMAP of it (cosine metric)."""
    import umap
    from tqdm import tqdm

    labels = np.asarray(win_prob_white, dtype=np.float32)
    if len(fens) != len(labels):
        raise ValueError(f"got {len(fens)} positions but {len(labels)} labels")
    if len(fens) < neighbours + 2:
        raise ValueError(f"need at least {neighbours + 2} positions for UMAP, got {len(fens)}")
    chunks = []
    step = 2048
    for start in tqdm(
        range(0, len(fens), step), desc="embed", unit="batch", disable=not progress, leave=False
    ):
        chunks.append(model.embed(list(fens[start : start + step])))
    embeddings = np.concatenate(chunks)  # (N, D)
    reducer = umap.UMAP(
        n_neighbors=neighbours, metric="cosine", random_state=seed, verbose=progress, n_jobs=1
    )
    points = reducer.fit_transform(embeddings).astype(np.float32)  # (N, 2)
    white, black = labels >= 0.99, labels <= 0.01
    end = points[white].mean(axis=0) if white.any() else None
    start = points[black].mean(axis=0) if black.any() else None
    return SpaceMap(reducer, points, labels, start, end)


def _draw_map(ax: Axes, space: SpaceMap, *, alpha: float = 0.6) -> Any:
    order = np.argsort(np.abs(space.win_prob_white - 0.5))  # decisive points on top
    scatter = ax.scatter(
        space.points[order, 0],
        space.points[order, 1],
        c=space.win_prob_white[order],
        cmap=_WIN_CMAP,
        vmin=0.0,
        vmax=1.0,
        s=4,
        alpha=alpha,
        linewidths=0,
    )
    if space.axis_start is not None and space.axis_end is not None:
        ax.annotate(
            "",
            xy=tuple(space.axis_end),
            xytext=tuple(space.axis_start),
            arrowprops={"arrowstyle": "-|>", "linestyle": "--", "color": "black", "lw": 1.8},
        )
        ax.plot([], [], "k--", label="advantage axis (Black wins -> White wins)")
        ax.legend(loc="lower right", fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])
    return scatter


def plot_umap(space: SpaceMap, out: str | Path, *, title: str = "Latent space") -> Path:
    """Draw the map coloured by White win probability with the advantage axis; PNG or SVG."""
    fig = _figure(1, (7.0, 6.0))
    ax = fig.axes[0]
    scatter = _draw_map(ax, space)
    fig.colorbar(scatter, ax=ax, label="White win probability (Stockfish)")
    ax.set_title(f"{title} (UMAP, {len(space.points):,} positions)")
    return _save(fig, out)


def read_game(pgn_path: str | Path, index: int = 0) -> GameTrace:
    """Read game ``index`` (0-based) of a PGN file (plain or compressed), with ``[%eval]`` labels
    where present."""
    path = Path(pgn_path)
    with open_text(path) as handle:
        for _ in range(index):
            if chess.pgn.skip_game(handle) is False:
                raise DataFormatError(f"has fewer than {index + 1} games", path=path)
        game = chess.pgn.read_game(handle)
    if game is None:
        raise DataFormatError(f"has no game {index}", path=path)
    if game.errors:
        raise DataFormatError(f"game {index} does not parse: {game.errors[0]}", path=path)
    board = game.board()
    boards = [board.copy(stack=False)]
    probs = [np.nan]
    for node in game.mainline():
        board.push(node.move)
        boards.append(board.copy(stack=False))
        score = node.eval()
        probs.append(np.nan if score is None else score_win_probability(score.white()))
    if board.is_checkmate():  # the final position needs no engine
        probs[-1] = 0.0 if board.turn == chess.WHITE else 1.0
    return GameTrace(boards, np.asarray(probs, dtype=np.float32), dict(game.headers))


def plot_trajectory(model: LatentModel, space: SpaceMap, game: GameTrace, out: str | Path) -> Path:
    """Paper Fig. 3: the game's path over the map, and its axis projection per ply.

    The right panel shows the axis cosine per ply (left scale) next to the White win probability
    from the game's labels (right scale) when any are known.
    """
    fens = [b.fen() for b in game.boards]
    points = space.reducer.transform(model.embed(fens)).astype(np.float32)  # (P, 2)
    scores = model.score(fens)  # (P,)
    fig = _figure(2, (13.0, 5.5))
    left, right = fig.axes
    _draw_map(left, space, alpha=0.25)
    for a, b in itertools.pairwise(points):
        left.annotate(
            "", xy=tuple(b), xytext=tuple(a), arrowprops={"arrowstyle": "->", "color": "red"}
        )
    left.scatter(*points[0], marker="o", s=60, c="green", zorder=5, label="start")
    left.scatter(*points[-1], marker="X", s=80, c="black", zorder=5, label="end")
    left.legend(loc="lower right", fontsize=8)
    white, black = game.headers.get("White", "?"), game.headers.get("Black", "?")
    left.set_title(f"{white} - {black} {game.headers.get('Result', '')}")
    plies = np.arange(len(scores))
    right.plot(plies, scores, color="purple", label="cos(z, advantage axis)")
    right.axhline(0.0, color="grey", lw=0.6)
    right.set_xlabel("ply")
    right.set_ylabel("axis projection (cosine)", color="purple")
    if np.isfinite(game.win_prob_white).any():
        twin = right.twinx()
        known = np.isfinite(game.win_prob_white)
        twin.plot(plies[known], game.win_prob_white[known], color="darkorange", label="Stockfish")
        twin.set_ylim(-0.02, 1.02)
        twin.set_ylabel("White win probability (Stockfish)", color="darkorange")
    right.set_title("Axis projection per ply")
    return _save(fig, out)


def _figure(columns: int, size: tuple[float, float]) -> Figure:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, _ = plt.subplots(1, columns, figsize=size, squeeze=False)
    return fig


def _save(fig: Figure, out: str | Path) -> Path:
    import matplotlib.pyplot as plt

    out = Path(out)
    if not re.search(r"\.(png|svg|pdf)$", out.name):
        raise ValueError(f"output must end in .png, .svg or .pdf, got {str(out)!r}")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    plt.close(fig)
    return out
