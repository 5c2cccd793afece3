"""Elo against search depth, with intervals, next to the paper's Table 2."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from latentchess.errors import DataFormatError

__all__ = ["DepthElo", "PAPER_TABLE_2", "read_depth_elo", "plot_depth_elo"]

PAPER_TABLE_2: dict[str, dict[int, int]] = {
    "paper Small (8M)": {2: 2067, 3: 2282, 4: 2388, 5: 2487, 6: 2548},
    "paper Base (41M)": {2: 2115, 3: 2318, 4: 2433, 5: 2538, 6: 2593},
}
"""Hamara et al. 2025, Table 2: Elo by search depth, width 3, vs Stockfish 16 at 50 ms/move."""

_COLUMNS = ("series", "depth", "elo", "elo_low", "elo_high")


@dataclass(frozen=True)
class DepthElo:
    """One measured point: ``series`` (e.g. "minimax") at ``depth`` with a 95% interval."""

    series: str
    depth: int
    elo: float
    elo_low: float
    elo_high: float


def read_depth_elo(path: str | Path) -> list[DepthElo]:
    """Read results as CSV with columns series,depth,elo,elo_low,elo_high; JSON
    ``{"results": [{...same keys...}]}`` (what ``benchmarks/depth_ladder.py`` writes); or the JSON
    of one ``latentchess ladder --json`` run (one point: the engine spec's mode and depth)."""
    path = Path(path)
    try:
        if path.suffix == ".json":
            payload = json.loads(path.read_text())
            rows = payload["results"] if "results" in payload else [_ladder_row(payload)]
            line_of = dict.fromkeys(range(len(rows)))
        else:
            with path.open(newline="") as handle:
                rows = list(csv.DictReader(handle))
            line_of = {i: i + 2 for i in range(len(rows))}
    except (OSError, ValueError, KeyError, TypeError, StopIteration) as error:
        raise DataFormatError(f"cannot read depth/Elo results: {error}", path=path) from error
    points = []
    for i, row in enumerate(rows):
        try:
            points.append(DepthElo(str(row["series"]), *_numbers(row)))
        except (KeyError, TypeError, ValueError) as error:
            raise DataFormatError(
                f"row needs {', '.join(_COLUMNS)} with numbers, got {row!r} ({error})",
                path=path,
                line=line_of[i],
            ) from error
    if not points:
        raise DataFormatError("no results", path=path)
    return points


def _ladder_row(payload: dict[str, Any]) -> dict[str, object]:
    """The point of a ``latentchess ladder --json`` result: its engine's mode, depth and Elo."""
    from latentchess.engines.registry import parse_engine_spec
    from latentchess.evaluation.limits import parse_limit
    from latentchess.search import SearchConfig

    spec = parse_engine_spec(payload["engine"])
    params = {k.lower(): v for k, v in spec.params.items()}
    limit = parse_limit(payload["limit"]) if payload.get("limit") else None
    depth = params.get("depth") or (limit.depth if limit is not None else None)
    rating = next(r for r in payload["fit"]["ratings"] if r["name"] == spec.name)
    return {
        "series": params.get("mode", SearchConfig.mode),
        "depth": depth or SearchConfig.depth,
        "elo": rating["elo"],
        "elo_low": rating["lower"],
        "elo_high": rating["upper"],
    }


def _numbers(row: dict[str, object]) -> tuple[int, float, float, float]:
    return (
        int(str(row["depth"])),
        float(str(row["elo"])),
        float(str(row["elo_low"])),
        float(str(row["elo_high"])),
    )


def plot_depth_elo(points: list[DepthElo], out: str | Path, *, paper: bool = True) -> Path:
    """Plot Elo (with 95% intervals) against depth per series; PNG/SVG by suffix."""
    from latentchess.plots.space import _figure, _save

    fig = _figure(1, (7.0, 5.0))
    ax = fig.axes[0]
    for series in sorted({p.series for p in points}):
        rows = sorted((p for p in points if p.series == series), key=lambda p: p.depth)
        depths = [p.depth for p in rows]
        elos = [p.elo for p in rows]
        errors = [[p.elo - p.elo_low for p in rows], [p.elo_high - p.elo for p in rows]]
        ax.errorbar(depths, elos, yerr=errors, marker="o", capsize=4, label=f"ours: {series}")
    if paper:
        for name, table in PAPER_TABLE_2.items():
            label = f"{name}, width 3"
            ax.plot(list(table), list(table.values()), "--", marker="s", alpha=0.6, label=label)
    ax.set_xlabel("search depth (plies)")
    ax.set_ylabel("Elo (Stockfish UCI_Elo scale)")
    ax.set_title("Strength against search depth")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, out)
