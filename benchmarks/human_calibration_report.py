"""Elo of ``ab:limit_strength=true,elo=R`` on the Stockfish 15.1 ``UCI_Elo`` scale (BayesElo, 95%
intervals) from the games of ``benchmarks/human_calibration.sh`` (DIR: its output folder,
default ``benchmarks/results/human_play/calibration``).

    .venv/bin/python benchmarks/human_calibration_report.py [DIR]

Every ``stockfish:elo=N`` that played is anchored at N; the other players (our engines at each R,
the Skill-0 rung) are fitted. Writes ``elo.json`` and ``elo.md`` beside the games.
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

ANCHOR = re.compile(r"^stockfish:elo=(\d+)$")


def main(argv: list[str] | None = None) -> int:
    """Fit and tabulate."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "root",
        type=Path,
        nargs="?",
        default=Path(__file__).parent / "results/human_play/calibration",
    )
    args = parser.parse_args(argv)
    pgns = glob_text(args.root, "*.pgn")
    games, skipped = read_pgn_outcomes(pgns)
    names = {g.white for g in games} | {g.black for g in games}
    anchors = {n: float(m[1]) for n in names if (m := ANCHOR.match(n))}
    fit = fit_bayeselo(games, anchors=anchors)
    rows = []
    for rating in fit.ratings:
        score = {"games": rating.games, "points": rating.points, "draws": rating.draws}
        rows.append(
            {
                "name": rating.name,
                "elo": round(rating.elo),
                "lower": round(rating.lower),
                "upper": round(rating.upper),
                "anchored": rating.anchored,
                **score,
            }
        )
    pairs: dict[str, list[float]] = {}
    for game in games:
        key = " vs ".join(sorted((game.white, game.black)))
        points = pairs.setdefault(key, [0.0, 0.0])
        first = sorted((game.white, game.black))[0]
        points[0] += game.score if game.white == first else 1 - game.score
        points[1] += 1
    report = {
        "ratings": rows,
        "pairs": {k: {"first_player_points": v[0], "games": int(v[1])} for k, v in pairs.items()},
        "anchors": anchors,
        "games": len(games),
        "skipped_unfinished": skipped,
        "pgns": [p.name for p in pgns],
        "commit": git_commit(),
    }
    (args.root / "elo.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        "# ab:limit_strength=true,elo=R on the Stockfish 15.1 UCI_Elo scale",
        "",
        "BayesElo, 95% intervals; every `stockfish:elo=N` anchored at N. Games from the initial "
        "position, Stockfish at 50 ms per move; `benchmarks/human_calibration.sh`.",
        "",
        "| player | Elo | 95% interval | games | points | draws |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for row in rows:
        interval = "anchor" if row["anchored"] else f"[{row['lower']}, {row['upper']}]"
        lines.append(
            f"| `{row['name']}` | {row['elo']} | {interval} | {row['games']} | "
            f"{row['points']:g} | {row['draws']} |"
        )
    lines += ["", "| pairing (first named: points) | games |", "|---|---:|"]
    for key, value in sorted(report["pairs"].items()):
        lines.append(f"| {key}: {value['first_player_points']:g} | {value['games']} |")
    (args.root / "elo.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
