"""Win/draw/loss chances from an engine's score: the model behind UCI ``info ... wdl W D L``.

The form is Stockfish's (``uci.cpp``, ``win_rate_model``, as of Stockfish 16): for a score ``v``
in centipawns from the side to move's view and the material ``m`` on the board,

    W = 1 / (1 + exp((a(m) - v) / b(m)))
    L = 1 / (1 + exp((a(m) + v) / b(m)))
    D = 1 - W - L

with ``a`` and ``b`` polynomials in ``x = clamp(m, 17, 78) / 58``, where ``m`` counts pawns 1,
knights and bishops 3, rooks 5 and queens 9 for both sides. ``a`` is the score at which a win is
as likely as not; ``b`` how sharply the chances change around it. Stockfish fits its constants to
its own games; an engine's scale is its own, so each engine needs its own fit:
:func:`fit_wdl_model` does that by maximum likelihood on positions with the engine's scores and
the results of the games they came from (``benchmarks/fit_wdl.py`` on the engine's self-play).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chess
import chess.engine

if TYPE_CHECKING:  # NumPy loads when probabilities are computed, not with the model (`uci`)
    import numpy as np
    import numpy.typing as npt

__all__ = ["WDL_FILE", "WdlModel", "material_count", "fit_wdl_model"]

WDL_FILE = "wdl.json"
"""The file in a model directory (an NNUE's) that holds the WDL model of its scores."""

_MATERIAL_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
_MATERIAL_RANGE = (17, 78)
_MATERIAL_NORM = 58.0


def material_count(board: chess.Board) -> int:
    """Stockfish's material measure for the WDL model: P=1, N=B=3, R=5, Q=9, both sides."""
    return sum(
        value
        * chess.popcount(
            board.pieces_mask(piece, chess.WHITE) | board.pieces_mask(piece, chess.BLACK)
        )
        for piece, value in _MATERIAL_VALUES.items()
    )


def _material_x(material: npt.ArrayLike) -> npt.NDArray[np.float64]:
    import numpy as np

    return np.clip(np.asarray(material, dtype=np.float64), *_MATERIAL_RANGE) / _MATERIAL_NORM


@dataclass(frozen=True)
class WdlModel:
    """``a(x) = sum a[i] x^i`` and ``b(x) = sum b[i] x^i`` (centipawns), ``x = material / 58``.

    ``source`` says where the constants come from (data, command), for ``provenance`` output.
    """

    a: tuple[float, ...]
    b: tuple[float, ...]
    source: str = ""
    metrics: dict[str, Any] = field(default_factory=dict, compare=False)
    """What the fit measured (positions, games, log loss), saved beside the constants."""

    @classmethod
    def load(cls, model_dir: str | Path) -> WdlModel | None:
        """The model in ``model_dir/wdl.json``; None when the directory has none.

        Raises:
            ValueError: the file exists but is not a WDL model (names the file).
        """
        path = Path(model_dir) / WDL_FILE
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text())
            return cls(
                a=tuple(float(c) for c in data["a"]),
                b=tuple(float(c) for c in data["b"]),
                source=str(data.get("source", "")),
                metrics=dict(data.get("metrics", {})),
            )
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(
                f"{path}: not a WDL model ({type(error).__name__}: {error})"
            ) from error

    def save(self, model_dir: str | Path) -> Path:
        """Write ``model_dir/wdl.json`` atomically; returns its path."""
        path = Path(model_dir) / WDL_FILE
        data = {
            "form": "stockfish-16 win_rate_model, a(x), b(x) in x = clamp(material, 17, 78) / 58",
            "a": list(self.a),
            "b": list(self.b),
            "source": self.source,
            "metrics": self.metrics,
        }
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(json.dumps(data, indent=2) + "\n")
        os.replace(temporary, path)
        return path

    def parameters(
        self, material: npt.ArrayLike
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """``a`` and ``b`` at the given material counts (element-wise)."""
        import numpy as np

        x = _material_x(material)
        a = sum(c * x**i for i, c in enumerate(self.a))
        b = sum(c * x**i for i, c in enumerate(self.b))
        return np.asarray(a, dtype=np.float64), np.maximum(np.asarray(b, dtype=np.float64), 1e-3)

    def probabilities(
        self, cp: npt.ArrayLike, material: npt.ArrayLike
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Win, draw and loss probabilities (side to move), element-wise."""
        import numpy as np

        v = np.asarray(cp, dtype=np.float64)
        a, b = self.parameters(material)
        win = 1.0 / (1.0 + np.exp(np.clip((a - v) / b, -700, 700)))
        loss = 1.0 / (1.0 + np.exp(np.clip((a + v) / b, -700, 700)))
        draw = np.clip(1.0 - win - loss, 0.0, 1.0)
        return win, draw, loss

    def wdl(self, score: chess.engine.Score, board: chess.Board) -> chess.engine.Wdl:
        """Per mille, summing to 1000, from the side to move's view; a mate is certain."""
        mate = score.mate()
        if mate is not None:
            return chess.engine.Wdl(1000, 0, 0) if mate > 0 else chess.engine.Wdl(0, 0, 1000)
        cp = score.score()
        assert cp is not None
        win, _, loss = (float(p) for p in self.probabilities(cp, material_count(board)))
        wins, losses = round(1000 * win), round(1000 * loss)
        return chess.engine.Wdl(wins, 1000 - wins - losses, losses)


def fit_wdl_model(
    cp: Sequence[float] | npt.ArrayLike,
    material: Sequence[int] | npt.ArrayLike,
    outcome: Sequence[int] | npt.ArrayLike,
    *,
    degree: int = 2,
    source: str = "",
) -> WdlModel:
    """Maximum-likelihood :class:`WdlModel` for positions with scores and their games' results.

    Args:
        cp: the engine's score of each position, side to move's view (mates left out).
        material: :func:`material_count` of each position.
        outcome: the game's result from the side to move's view: 1 win, 0 draw, -1 loss.
        degree: of the polynomials ``a`` and ``b`` in material (Stockfish uses 3).

    Raises:
        ValueError: the inputs differ in length, hold an outcome other than -1/0/1, or do not
            contain all three outcomes (the model cannot be fitted).
    """
    import numpy as np
    from scipy.optimize import minimize

    v = np.asarray(cp, dtype=np.float64)
    x = _material_x(material)
    result = np.asarray(outcome, dtype=np.int64)
    if not len(v) == len(x) == len(result):
        raise ValueError(
            f"cp, material and outcome differ in length: {len(v)}, {len(x)}, {len(result)}"
        )
    if not np.isin(result, (-1, 0, 1)).all():
        raise ValueError("outcome must be 1 (win), 0 (draw) or -1 (loss) for the side to move")
    if len(np.unique(result)) < 3:
        raise ValueError("a WDL model needs wins, draws and losses among the positions")
    powers = np.stack([x**i for i in range(degree + 1)], axis=1)

    def negative_log_likelihood(theta: npt.NDArray[np.float64]) -> float:
        a = powers @ theta[: degree + 1]
        b = np.maximum(powers @ theta[degree + 1 :], 1.0)
        log_win = -np.logaddexp(0.0, (a - v) / b)
        log_loss = -np.logaddexp(0.0, (a + v) / b)
        draw = np.clip(1.0 - np.exp(log_win) - np.exp(log_loss), 1e-12, 1.0)
        chosen = np.where(result == 1, log_win, np.where(result == -1, log_loss, np.log(draw)))
        return float(-chosen.mean())

    start = np.zeros(2 * (degree + 1))
    start[0], start[degree + 1] = 150.0, 80.0  # a win-as-likely-as-not score and spread, in cp
    fit = minimize(negative_log_likelihood, start, method="L-BFGS-B", options={"maxiter": 5_000})
    theta = fit.x
    if not math.isfinite(float(fit.fun)):
        raise ValueError("the WDL fit did not converge")
    return WdlModel(
        a=tuple(float(c) for c in theta[: degree + 1]),
        b=tuple(float(c) for c in theta[degree + 1 :]),
        source=source,
    )
