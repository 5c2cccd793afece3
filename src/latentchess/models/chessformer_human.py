"""Rating bands of human move matching as training reports them, and its held-out selections.

:func:`rating_band` / :func:`band_accuracy` keep the 200-point bands (``"1400-1599"``, open ends
below 800 and from 2400); :func:`select_rows` picks the positions of a split. The evaluation the
field reports (protocol, held-out players, four bands, intervals) is
:func:`latentchess.evaluation.human.evaluate_human`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["rating_band", "band_accuracy", "select_rows"]

_LOW, _HIGH, _WIDTH = 800, 2400, 200


def rating_band(elo: int) -> str:
    """The 200-point band of a rating: ``"<800"``, ``"800-999"``, ..., ``">=2400"``."""
    if elo < _LOW:
        return f"<{_LOW}"
    if elo >= _HIGH:
        return f">={_HIGH}"
    low = _LOW + (elo - _LOW) // _WIDTH * _WIDTH
    return f"{low}-{low + _WIDTH - 1}"


def _band_key(band: str) -> int:
    return (
        -1 if band.startswith("<") else 10**6 if band.startswith(">") else int(band.split("-")[0])
    )


def band_accuracy(correct: npt.ArrayLike, elos: npt.ArrayLike) -> dict[str, dict[str, float | int]]:
    """``{band: {"accuracy": a, "positions": n}}`` in rating order."""
    hits = np.asarray(correct, dtype=bool)
    ratings = np.asarray(elos)
    bands = np.array([rating_band(int(e)) for e in ratings])
    out: dict[str, dict[str, float | int]] = {}
    for band in sorted(set(bands.tolist()), key=_band_key):
        chosen = bands == band
        out[band] = {"accuracy": float(hits[chosen].mean()), "positions": int(chosen.sum())}
    return out


def select_rows(data: Any, heldout: str, fraction: float) -> npt.NDArray[np.int64]:
    """Positions of ``data`` in the ``"all"``, ``"games"`` or ``"players"`` evaluation set."""
    every = np.arange(len(data), dtype=np.int64)
    if heldout == "all":
        return every
    player = data.player_heldout(fraction)
    with_player = np.isin(data.game, np.unique(data.game[player]))
    if heldout == "games":
        return every[data.game_heldout & ~with_player]
    if heldout == "players":
        return every[player]
    raise ValueError(f"unknown held-out selection {heldout!r}; choose all, games or players")
