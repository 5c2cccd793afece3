"""Human move matching by rating band, with 95% intervals, next to published figures."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["plot_human_bands", "plot_calibration"]


def plot_human_bands(
    results: dict[str, Any] | Sequence[dict[str, Any]],
    out: str | Path,
    *,
    labels: Sequence[str] | None = None,
    references: Sequence[dict[str, Any]] | None = None,
) -> Path:
    """Top-1 accuracy per band of the mover's rating and overall (``eval-human --json`` results,
    one series each), with bootstrap 95% intervals, and published figures (default:
    :data:`~latentchess.evaluation.human.PUBLISHED`) as hollow markers at their band; PNG/SVG by
    suffix."""
    from latentchess.evaluation.human import PUBLISHED
    from latentchess.plots.space import _figure, _save

    runs = [results] if isinstance(results, dict) else list(results)
    if not runs:
        raise ValueError("no results to plot")
    names = list(labels) if labels is not None else [_describe(r) for r in runs]
    bands = [*runs[0]["by_band"], "all"]
    fig = _figure(1, (8.0, 6.4))
    ax = fig.axes[0]
    width = 0.18
    for k, (run, name) in enumerate(zip(runs, names, strict=True)):
        shift = (k - (len(runs) - 1) / 2) * width
        points = []
        for i, band in enumerate(bands):
            row = run if band == "all" else run["by_band"].get(band, {})
            if row.get("accuracy") is None:
                continue
            accuracy = row["accuracy"]
            ci = row.get("ci95") or [accuracy, accuracy]
            points.append((i + shift, accuracy, accuracy - ci[0], ci[1] - accuracy))
        banded = [p for p in points if p[0] < len(bands) - 1 - width]  # the line joins bands only
        line = ax.errorbar(
            [p[0] for p in banded],
            [p[1] for p in banded],
            yerr=[[p[2] for p in banded], [p[3] for p in banded]],
            marker="o",
            capsize=4,
            label=name,
        )
        rest = [p for p in points if p not in banded]
        ax.errorbar(
            [p[0] for p in rest],
            [p[1] for p in rest],
            yerr=[[p[2] for p in rest], [p[3] for p in rest]],
            marker="o",
            capsize=4,
            linestyle="none",
            color=line[0].get_color(),
        )
    markers = iter("sD^v<>p*")
    for ref in references if references is not None else PUBLISHED:
        if ref["band"] not in bands:
            continue
        ax.plot(
            [bands.index(ref["band"]) + 0.3],
            [ref["top1"]],
            linestyle="none",
            marker=next(markers, "x"),
            markerfacecolor="none",
            label=f"{ref['model']}: {ref['test_set']}",
        )
    ax.set_xticks(range(len(bands)), [f"{b}\n({_count(runs[0], b)})" for b in bands])
    ax.set_xlabel("mover's rating (positions of the first series)")
    ax.set_ylabel("top-1 move matching")
    ax.set_title("Human move matching by rating band (95% intervals over games)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1)
    return _save(fig, out)


def plot_calibration(
    series: dict[str, Sequence[tuple[float, float, float, float]]],
    out: str | Path,
    *,
    tolerance: float = 150.0,
) -> Path:
    """Measured Elo against the chosen ``UCI_Elo``: one series per label of (target, Elo, lower,
    upper) points, the diagonal (the target) and a +-``tolerance`` band; PNG/SVG by suffix."""
    from latentchess.plots.space import _figure, _save

    if not series or not any(series.values()):
        raise ValueError("no points to plot")
    fig = _figure(1, (7.0, 6.4))
    ax = fig.axes[0]
    targets = [p[0] for points in series.values() for p in points]
    low, high = min(targets) - 150, max(targets) + 150
    ax.plot([low, high], [low, high], color="black", linewidth=1, label="target (diagonal)")
    ax.fill_between(
        [low, high],
        [low - tolerance, high - tolerance],
        [low + tolerance, high + tolerance],
        color="grey",
        alpha=0.2,
        label=f"target +-{tolerance:g}",
    )
    for k, (label, points) in enumerate(series.items()):
        shift = (k - (len(series) - 1) / 2) * 12.0
        ax.errorbar(
            [p[0] + shift for p in points],
            [p[1] for p in points],
            yerr=[[p[1] - p[2] for p in points], [p[3] - p[1] for p in points]],
            marker="o",
            capsize=4,
            label=label,
        )
    ax.set_xlabel("UCI_Elo asked for")
    ax.set_ylabel("measured Elo (Stockfish 15.1 UCI_Elo scale, 95% interval)")
    ax.set_title("Human-like play: measured strength against the chosen UCI_Elo")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return _save(fig, out)


def _count(run: dict[str, Any], band: str) -> int:
    return int(run["positions"] if band == "all" else run["by_band"][band]["positions"])


def _describe(run: dict[str, Any]) -> str:
    protocol = run.get("protocol", {})
    speeds = protocol.get("speeds", "any")
    speeds = speeds if isinstance(speeds, str) else "+".join(speeds)
    return (
        f"ours: {Path(run['model']).name}, {speeds}, skip {protocol.get('skip_plies')} plies, "
        f"clock >= {protocol.get('min_clock')} s"
    )
