"""Human move matching: top-1 accuracy of a move predictor overall and per rating band of the mover.

The Maia papers' measure: for every position kept by the protocol, does the model's most probable
legal move (given both players' ratings) equal the move the human played? Which positions count
(skipped plies, clocks, speeds) and the bands of the mover's rating are a
:class:`~latentchess.evaluation.human.HumanProtocol` (default: the field's: Maia-3 and Allie);
:func:`rating_band` / :func:`band_accuracy` keep the 200-point bands (``"1400-1599"``, open ends
below 800 and from 2400) that training reports.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from latentchess.evaluation.human import HumanProtocol

__all__ = ["HumanEval", "rating_band", "band_accuracy", "evaluate_human"]

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


@dataclass(frozen=True)
class HumanEval:
    """Result of :func:`evaluate_human`.

    Attributes:
        accuracy: top-1 move-matching accuracy over all positions.
        positions: positions evaluated.
        by_band: per rating band of the mover: accuracy, positions, games, 95% intervals.
        games: games evaluated.
        model: the model directory.
        seconds: wall time.
        extra: other facts (e.g. the held-out selection).
    """

    accuracy: float
    positions: int
    by_band: dict[str, dict[str, Any]]
    games: int
    model: str
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "accuracy": self.accuracy,
            "positions": self.positions,
            "by_band": self.by_band,
            "games": self.games,
            "model": self.model,
            "seconds": self.seconds,
            **self.extra,
        }

    def table(self) -> str:
        """Bands and overall: positions, games, top-1 and its 95% interval (over games)."""
        lines = [f"{'band':>10}  {'positions':>9}  {'games':>5}  {'top-1':>6}  95% interval"]
        rows = [*self.by_band.items(), ("all", {**self.to_dict(), "games": self.games})]
        for band, row in rows:
            accuracy, interval = row.get("accuracy"), row.get("ci95")
            text = "     -" if accuracy is None else f"{accuracy:>6.3f}"
            ci = f"[{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""
            counts = f"{row['positions']:>9}  {row.get('games', ''):>5}"
            lines.append(f"{band:>10}  {counts}  {text}  {ci}")
        return "\n".join(lines)


def evaluate_human(
    pgn: str | Path,
    model_dir: str | Path | None = None,
    *,
    protocol: HumanProtocol | None = None,
    exclude_players_of: Sequence[str | Path] = (),
    max_games: int | None = None,
    skip_games: int = 0,
    heldout: str = "all",
    holdout_fraction: float = 0.05,
    batch_size: int = 512,
    device: str = "cpu",
    progress: bool = True,
) -> HumanEval:
    """Top-1 move matching of a Chessformer on the positions of ``pgn`` that ``protocol`` keeps.

    Args:
        pgn: games with ``WhiteElo``/``BlackElo`` (``.gz``/``.zst`` streamed); ``[%clk]``
            comments and ``TimeControl`` headers are read when the protocol filters on them.
        model_dir: a Chessformer model directory (default: the shipped human model).
        protocol: which plies, clocks, speeds and bands (default: the field's,
            :class:`~latentchess.evaluation.human.HumanProtocol`).
        exclude_players_of: training PGNs; games where either player (or the game's URL) appears
            in them are left out, so the players are held out in the strict sense.
        max_games: read at most this many games.
        skip_games: pass over the file's first games (e.g. the ones trained on).
        heldout: ``"all"`` positions, only those of ``"games"`` held out by the training split's
            game hash, or only those whose mover is a ``"players"`` held-out player (games with a
            held-out player were not trained on).
        holdout_fraction: the split's fraction (as in training).
        batch_size: positions per forward pass.
        device: torch device.
        progress: print progress on stderr.
    """
    import torch

    from latentchess.data.moves import batch_features, read_pgn_moves
    from latentchess.evaluation.human import (
        HumanProtocol,
        band_table,
        protocol_mask,
        read_game_headers,
        training_players,
    )
    from latentchess.models.chessformer_io import ChessformerModel, resolve_chessformer_path
    from latentchess.squares import POLICY_SIZE

    protocol = protocol if protocol is not None else HumanProtocol()
    started = time.monotonic()
    path = resolve_chessformer_path(model_dir)
    model = ChessformerModel.load(path, device=device)
    data = read_pgn_moves(
        pgn,
        holdout_fraction=holdout_fraction,
        max_games=max_games,
        skip_games=skip_games,
        progress=progress,
    )
    seen = training_players(exclude_players_of) if exclude_players_of else None
    keep, counts = protocol_mask(data, protocol, read_game_headers(pgn), seen)
    rows = select_rows(data, heldout, holdout_fraction)
    rows = rows[keep[rows]]
    if protocol.sample_positions is not None and protocol.sample_positions < len(rows):
        rng = np.random.default_rng(protocol.seed)
        rows = np.sort(rng.choice(rows, size=protocol.sample_positions, replace=False))
        counts["positions_sampled"] = len(rows)
    cfg = model.cfg
    correct = np.zeros(len(rows), dtype=bool)
    tick = time.monotonic()
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        features = torch.from_numpy(
            batch_features(data, chunk, history=cfg.history, side=cfg.side_features)
        )
        with torch.no_grad():
            policy, _ = model.network(
                features.to(model.device),
                torch.from_numpy(data.self_elo[chunk].astype(np.float32)).to(model.device),
                torch.from_numpy(data.oppo_elo[chunk].astype(np.float32)).to(model.device),
            )
        legal = torch.from_numpy(data.legal_mask(chunk, POLICY_SIZE)).to(model.device)
        best = policy.float().masked_fill(~legal, float("-inf")).argmax(dim=1).cpu().numpy()
        correct[start : start + len(chunk)] = best == data.move[chunk]
        if progress and (start // batch_size) % 5 == 4:
            done = start + len(chunk)
            rate = done / (time.monotonic() - tick)
            eta = (len(rows) - done) / max(rate, 1e-9)
            print(
                f"eval-human: {done}/{len(rows)} positions, {rate:.0f}/s, ETA {eta:.0f} s",
                file=sys.stderr,
            )
    elos = data.self_elo[rows]
    table = band_table(correct, elos, data.game[rows], protocol)
    by_band = {band: row for band, row in table.items() if band != "all"}
    return HumanEval(
        accuracy=float(correct.mean()) if len(rows) else float("nan"),
        positions=len(rows),
        by_band=by_band,
        games=len(np.unique(data.game[rows])),
        model=_repo_relative(path),
        seconds=time.monotonic() - started,
        extra={
            "ci95": table["all"].get("ci95"),
            "wilson95": table["all"].get("wilson95"),
            "protocol": protocol.to_dict(),
            "filters": counts,
            "exclude_players_of": [str(p) for p in exclude_players_of],
            "training_players": len(seen.names) if seen is not None else None,
            "heldout": heldout,
            "pgn": str(pgn),
            "skip_games": skip_games,
            "max_games": max_games,
            "positions_per_s": len(rows) / max(time.monotonic() - tick, 1e-9),
        },
    )


def _repo_relative(path: str | Path) -> str:
    """A path as results record it: relative to the repository when it lies inside it."""
    from latentchess.provenance import REPO_ROOT

    resolved = Path(path).resolve()
    return str(resolved.relative_to(REPO_ROOT)) if resolved.is_relative_to(REPO_ROOT) else str(path)


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


def write_json(result: HumanEval, path: str | Path) -> None:
    """Write the result's dict as JSON (keys ``accuracy``, ``positions``, ``by_band``, ...) with
    the git commit, atomically."""
    from latentchess.provenance import git_commit

    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({**result.to_dict(), "git_commit": git_commit()}, indent=2) + "\n")
    tmp.replace(path)
