"""Fit the human model's calibration table from measured games, and report the calibrated engine.

    .venv/bin/python benchmarks/human_calibration_fit.py            # write calibration.json
    .venv/bin/python benchmarks/human_calibration_fit.py --report   # the last round against R

All games of ``benchmarks/results/human_play/calibration/`` (the model alone at R = 1200, 1600,
2000) and ``benchmarks/results/human_play/strength/`` (``benchmarks/human_calibration_strength.sh``:
``grid/`` and the validation rounds ``validate-K/``, each with the ``table.json`` it played) go
into one BayesElo fit with every ``stockfish:elo=N`` anchored at N; the calibrated engine of
round K is its own player (``... [round K]``).

The model of strength. Conditioned on rating R with beta = 0 the model measures E0(R)
(interpolated linearly between the measured R, the end segments extended). The search adds
``H_d * (1 - exp(-k * beta))`` at depth d: a gain that saturates at H_d, what the best of the
model's top moves at that depth is worth. H_6, H_8 and k are fitted by weighted least squares
(weights: the inverse variance of each BayesElo rating) to every setting with beta > 0, the
grid's and the earlier rounds'. For each UCI_Elo T from 1100 to 2100 the model is conditioned on
T itself, and beta is the one that makes the predicted Elo T: depth 6 while that needs at most
90% of H_6, else depth 8 (beta at most 10). The next validation round tests the table out of
sample.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
from scipy import optimize

from latentchess.evaluation.elo import EloFit, GameOutcome, Rating, fit_bayeselo, read_pgn_outcomes
from latentchess.provenance import git_commit
from latentchess.textfiles import glob_text

RESULTS = Path(__file__).parent / "results/human_play"
TABLE = Path(__file__).parents[1] / "src/latentchess/weights/chessformer-human/calibration.json"
ANCHOR = re.compile(r"^stockfish:elo=(\d+)$")
HUMAN = re.compile(r"^ab:limit_strength=true,([^ ]*)(?: \[round (\d+)\])?$")
ROUND = re.compile(r"^validate-(\d+)$")
TARGETS = range(1100, 2101, 100)
MAX_BETA = 10.0
DEPTH6_SHARE = 0.9


def _settings(name: str) -> tuple[dict[str, str], int | None] | None:
    match = HUMAN.match(name)
    if match is None:
        return None
    params = dict(item.split("=", 1) for item in match[1].split(","))
    return params, None if match[2] is None else int(match[2])


def fit_games(root: Path = RESULTS) -> tuple[EloFit, dict[int, dict[str, object]], int]:
    """One BayesElo fit of every game; the tables each validation round played; game count."""
    games: list[GameOutcome] = []
    tables: dict[int, dict[str, object]] = {}
    folders = [root / "calibration", root / "strength/grid"]
    for folder in sorted((root / "strength").glob("validate-*")):
        if (match := ROUND.match(folder.name)) is not None:
            tables[int(match[1])] = json.loads((folder / "table.json").read_text("utf-8"))
            folders.append(folder)
    for folder in folders:
        outcomes, _ = read_pgn_outcomes(glob_text(folder, "*.pgn"))
        match = ROUND.match(folder.name)
        if match is not None:  # the calibrated engine of each round is its own player

            def tag(name: str, k: str = match[1]) -> str:
                return f"{name} [round {k}]" if HUMAN.match(name) else name

            outcomes = [GameOutcome(tag(g.white), tag(g.black), g.score) for g in outcomes]
        games += outcomes
    names = {g.white for g in games} | {g.black for g in games}
    anchors = {n: float(m[1]) for n in names if (m := ANCHOR.match(n))}
    return fit_bayeselo(games, anchors=anchors), tables, len(games)


def _played(rows: list[dict[str, float]], uci_elo: int) -> tuple[float, float, int]:
    """(model rating, beta, depth) a table gave ``uci_elo`` (a row of it: rounds play rows)."""
    for row in rows:
        if int(row["uci_elo"]) == uci_elo:
            return float(row["model_elo"]), float(row["search_weight"]), int(row["search_depth"])
    raise SystemExit(f"a validation round played UCI_Elo {uci_elo}, which its table has no row for")


def table_rows(
    fit: EloFit, tables: dict[int, dict[str, object]]
) -> tuple[list[dict[str, float]], dict[str, object]]:
    """The calibration rows and the fitted curves."""
    base: dict[int, float] = {}  # E0(R): the model alone (beta 0, no verification)
    points = []  # (R, beta, depth, elo, sd) with beta > 0
    for rating in fit.ratings:
        parsed = _settings(rating.name)
        if parsed is None or parsed[0].get("verify") == "true":
            continue
        s, round_ = parsed
        if round_ is not None:
            model_elo, beta, depth = _played(tables[round_]["rows"], int(s["elo"]))  # type: ignore[arg-type]
        elif s.get("calibrated", "false") == "false" or "verify" in s:
            model_elo = float(s["elo"])
            beta, depth = float(s.get("search_weight", 0)), int(s.get("search_depth", 6))
        else:
            continue
        sd = (rating.upper - rating.lower) / (2 * 1.96)
        if beta == 0:
            base[int(model_elo)] = rating.elo
        else:
            points.append((model_elo, beta, depth, rating.elo, sd))
    if len(base) < 2 or not any(p[2] == 6 for p in points):
        raise SystemExit(f"not enough measured settings: base {base}, points {points}")
    ratings = sorted(base)

    def e0(r: float) -> float:
        if r <= ratings[0] or r >= ratings[-1]:
            a, b = (ratings[0], ratings[1]) if r <= ratings[0] else (ratings[-2], ratings[-1])
            return base[a] + (r - a) * (base[b] - base[a]) / (b - a)
        return float(np.interp(r, ratings, [base[k] for k in ratings]))

    has8 = any(p[2] == 8 for p in points)

    def gain(theta: np.ndarray, beta: float, depth: int) -> float:
        h6, h8, k = theta
        return (h8 if depth == 8 else h6) * (1.0 - math.exp(-k * beta))

    def residuals(theta: np.ndarray) -> np.ndarray:
        return np.array([(elo - e0(r) - gain(theta, b, d)) / sd for r, b, d, elo, sd in points])

    solution = optimize.least_squares(
        residuals, x0=[600.0, 800.0, 1.0], bounds=([0, 0, 0.01], [3000, 3000, 20])
    )
    h6, h8, k = (float(v) for v in solution.x)
    if not has8:
        h8 = h6
    rows = []
    for target in TARGETS:
        need = target - e0(target)
        depth, top = (6, h6) if need <= DEPTH6_SHARE * h6 or not has8 else (8, h8)
        share = min(max(need, 0.0) / top, 1.0 - 1e-9)
        beta = min(-math.log(1.0 - share) / k, MAX_BETA)
        rows.append(
            {
                "uci_elo": target,
                "model_elo": min(max(target, 800), 2400),
                "search_weight": round(beta, 2),
                "search_depth": depth,
                "expected_elo": round(e0(target) + gain(solution.x, beta, depth)),
            }
        )
    curves = {
        "model_alone_elo_by_rating": {str(k): round(v) for k, v in sorted(base.items())},
        "gain": "H_d * (1 - exp(-k * beta))",
        "H6": round(h6),
        "H8": round(h8),
        "k": round(k, 3),
        "points": [
            {"model_elo": r, "beta": b, "depth": d, "elo": round(e), "sd": round(sd)}
            for r, b, d, e, sd in points
        ],
        "chi2_per_point": round(float(np.sum(solution.fun**2)) / len(points), 2),
    }
    return rows, curves


def _point(target: float, elo: float, low: float, high: float, r: Rating) -> dict[str, float]:
    return {
        "uci_elo": target,
        "elo": round(elo),
        "lower": round(low),
        "upper": round(high),
        "games": r.games,
        "points": r.points,
    }


def report(fit: EloFit, out: Path) -> None:
    """Measured Elo of each round's calibrated engine at each R (and of the model alone):
    ``calibration.md``/``.json``/``.png`` in ``out``."""
    from latentchess.plots.human import plot_calibration

    rounds: dict[int, list[tuple[float, float, float, float, Rating]]] = {}
    alone = []
    for rating in fit.ratings:
        parsed = _settings(rating.name)
        if parsed is None or parsed[0].get("verify") == "true":
            continue
        s, round_ = parsed
        point = (float(s["elo"]), rating.elo, rating.lower, rating.upper, rating)
        if round_ is not None:
            rounds.setdefault(round_, []).append(point)
        elif set(s) <= {"elo", "verify"}:
            alone.append(point)
    alone.sort()
    lines = [
        "# The calibrated engine: measured Elo against the UCI_Elo asked for",
        "",
        "BayesElo over every game in `calibration/` and `strength/` (grid and validation "
        "rounds), each `stockfish:elo=N` anchored at N; Stockfish 15.1 at 50 ms per move, "
        "every game from the initial position. Round K played the table in "
        "`validate-K/table.json`; a round's table was fitted without that round's games. "
        "Target: within +-150 of the diagonal.",
    ]
    for round_, points in sorted(rounds.items()):
        points.sort()
        within = sum(abs(p[1] - p[0]) <= 150 for p in points)
        lines += [
            "",
            f"## Round {round_}",
            "",
            "| UCI_Elo asked | measured Elo | 95% interval | off by | games | score |",
            "|---:|---:|---|---:|---:|---:|",
        ]
        for target, elo, low, high, r in points:
            lines.append(
                f"| {target:.0f} | {elo:.0f} | [{low:.0f}, {high:.0f}] | {elo - target:+.0f} | "
                f"{r.games} | {100 * r.points / r.games:.0f}% |"
            )
        lines += ["", f"Within +-150: {within} of {len(points)} ratings."]
    (out / "calibration.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    payload = {
        "rounds": {str(k): [_point(*p) for p in sorted(v)] for k, v in sorted(rounds.items())},
        "model_alone": [_point(*p) for p in alone],
        "fit": fit.to_dict(),
        "commit": git_commit(),
    }
    (out / "calibration.json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    series = {f"round {k} (its table)": [p[:4] for p in sorted(v)] for k, v in rounds.items()}
    if alone:
        series["the model alone at rating R (before)"] = [p[:4] for p in alone]
    plot_calibration(series, out / "calibration.png")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    """Fit the table (default) or report the validation rounds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", action="store_true", help="report, do not write the table")
    parser.add_argument("--table", type=Path, default=TABLE, help="the table to write")
    args = parser.parse_args(argv)
    fit, tables, games = fit_games()
    print(fit.table())
    if args.report:
        report(fit, RESULTS / "strength")
        return 0
    rows, curves = table_rows(fit, tables)
    table = {
        "about": "UCI_Elo (Stockfish 15.1 UCI_Elo scale, 50 ms per move for Stockfish) -> the "
        "rating the human model is conditioned on, the strength search's beta and depth. Fitted "
        "by benchmarks/human_calibration_fit.py from the games in benchmarks/results/human_play/"
        "calibration and strength/ (grid, validation rounds); the next round tests it "
        "(strength/calibration.md).",
        "rows": rows,
        "curves": curves,
        "games": games,
        "commit": git_commit(),
    }
    args.table.write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(curves, indent=1)[:1500])
    for row in rows:
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
