"""Elo of the hybrid gauntlet (BayesElo, 95% intervals) per time per move, and a plot.

    .venv/bin/python benchmarks/hybrid_report.py benchmarks/results/hybrid

Reads every ``LIMIT/*.pgn`` under the directory (``hybrid_gauntlet.sh``'s output), fits one
BayesElo model per time control with each ``stockfish:elo=N`` that played anchored at N (the
Stockfish 15.1 ``UCI_Elo`` scale; otherwise ``ab`` is set to 0 and ratings are relative), and
writes ``elo.json``, ``elo.md`` and ``elo.png`` (Elo against time per move) beside them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from latentchess.evaluation.elo import fit_bayeselo, read_pgn_outcomes
from latentchess.provenance import git_commit
from latentchess.textfiles import glob_text

ANCHOR = re.compile(r"stockfish:elo=(\d+)")
"""Stockfish rungs (``UCI_Elo``) that played are anchored at their rating."""


def _seconds(limit: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s)", limit)
    if match is None:
        raise ValueError(f"not a time per move: {limit!r}")
    return float(match[1]) / (1000.0 if match[2] == "ms" else 1.0)


def main(argv: list[str] | None = None) -> int:
    """Fit, tabulate and plot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="benchmarks/results/hybrid")
    args = parser.parse_args(argv)
    fits: dict[str, dict[str, object]] = {}
    lines = ["# Hybrid gauntlet: BayesElo per time per move (95% intervals)", ""]
    for folder in sorted(args.root.iterdir(), key=lambda p: p.name):
        if not re.fullmatch(r"\d+(\.\d+)?(ms|s)", folder.name):
            continue  # earlier designs' games (v1-..., v2-...) are kept apart
        pgns = glob_text(folder, "*.pgn") if folder.is_dir() else []
        if not pgns:
            continue
        outcomes, _ = read_pgn_outcomes(pgns)
        if not outcomes:
            continue
        names = {o.white for o in outcomes} | {o.black for o in outcomes}
        rungs = {n: float(m[1]) for n in names if (m := ANCHOR.fullmatch(n))}
        anchors = rungs or {"ab": 0.0}
        fit = fit_bayeselo(outcomes, anchors=anchors)
        fits[folder.name] = fit.to_dict()
        scale = "Stockfish UCI_Elo scale" if rungs else "relative to ab = 0"
        lines += [f"## {folder.name} per move ({len(outcomes)} games, {scale})", "", "```"]
        lines += [fit.table(), "```", ""]
        pairs: dict[tuple[str, str], list[float]] = {}
        for o in outcomes:
            key = tuple(sorted((o.white, o.black)))
            first_white = o.white == key[0]
            score = o.score if first_white else 1.0 - o.score
            pairs.setdefault(key, []).append(score)  # type: ignore[arg-type]
        lines += ["| pair | games | score of the first |", "|---|---:|---:|"]
        for (one, two), scores in sorted(pairs.items()):
            lines.append(f"| {one} vs {two} | {len(scores)} | {sum(scores):g} |")
        lines.append("")
    result = {"fits": fits, "commit": git_commit(), "command": " ".join(sys.argv)}
    (args.root / "elo.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.root / "elo.md").write_text("\n".join(lines) + "\n")
    _plot(fits, args.root / "elo.png")
    print("\n".join(lines))
    return 0


def _plot(fits: dict[str, dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: dict[str, list[tuple[float, float, float, float]]] = {}
    for limit, fit in fits.items():
        for rating in fit["ratings"]:  # type: ignore[union-attr]
            if rating["anchored"]:
                continue
            series.setdefault(rating["name"], []).append(
                (_seconds(limit), rating["elo"], rating["lower"], rating["upper"])
            )
    figure, axes = plt.subplots(figsize=(8, 5))
    for name, points in sorted(series.items()):
        points.sort()
        x = [p[0] for p in points]
        y = [p[1] for p in points]
        low = [p[1] - p[2] for p in points]
        high = [p[3] - p[1] for p in points]
        axes.errorbar(x, y, yerr=[low, high], marker="o", capsize=3, label=name)
    axes.set_xscale("log")
    axes.set_xlabel("seconds per move")
    axes.set_ylabel("Elo (BayesElo, 95% interval)")
    axes.set_title("Hybrid engines and their parts")
    axes.legend(fontsize=7, loc="best")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
