"""Fit the human model's calibration table from measured games, and report the calibrated engine.

    .venv/bin/python benchmarks/human_calibration_fit.py            # write calibration.json
    .venv/bin/python benchmarks/human_calibration_fit.py --report   # measured Elo against R

All games of ``benchmarks/results/human_play/calibration/`` (the model alone at R = 1200, 1600,
2000) and ``benchmarks/results/human_play/strength/{grid,validate}/`` (from
``benchmarks/human_calibration_strength.sh``) go into one BayesElo fit with every
``stockfish:elo=N`` anchored at N.

The table. The model conditioned on R with beta = 0 measures E0(R) (interpolated linearly between
the measured R, the end segments extended); beta adds h(beta), measured at R = 1600, depth 6
(interpolated in log(1 + beta), monotone); depth 8 scales that curve by its measured gain at
beta = 10. For each UCI_Elo T from 1100 to 2100 the model is conditioned on T itself and beta is
the smallest that makes E0(T) + h(beta) = T (depth 8 where depth 6 cannot reach it; beta at most
10). This assumes the gain from the search does not depend on R: the validation games test it.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

import numpy as np

from latentchess.evaluation.elo import EloFit, Rating, fit_bayeselo, read_pgn_outcomes
from latentchess.provenance import git_commit

RESULTS = Path(__file__).parent / "results/human_play"
TABLE = Path(__file__).parents[1] / "src/latentchess/weights/chessformer-human/calibration.json"
ANCHOR = re.compile(r"^stockfish:elo=(\d+)$")
HUMAN = re.compile(r"^ab:limit_strength=true,(.*)$")
TARGETS = range(1100, 2101, 100)
MAX_BETA = 10.0


def _settings(name: str) -> dict[str, str] | None:
    match = HUMAN.match(name)
    if match is None:
        return None
    return dict(item.split("=", 1) for item in match[1].split(","))


def fit_games(roots: list[Path]) -> tuple[EloFit, list[Path]]:
    """One BayesElo fit of every PGN under ``roots``, Stockfish UCI_Elo levels anchored."""
    pgns = sorted(p for root in roots if root.is_dir() for p in root.glob("*.pgn"))
    games, _ = read_pgn_outcomes(pgns)
    names = {g.white for g in games} | {g.black for g in games}
    anchors = {n: float(m[1]) for n in names if (m := ANCHOR.match(n))}
    return fit_bayeselo(games, anchors=anchors), pgns


def table_rows(fit: EloFit) -> tuple[list[dict[str, float]], dict[str, object]]:
    """The calibration rows and the curves they came from."""
    base: dict[int, float] = {}  # E0(R): the model alone (beta 0, no verification)
    gain6: dict[float, float] = {}  # beta -> Elo at R = 1600, depth 6
    gain8: dict[float, float] = {}  # beta -> Elo at R = 2000, depth 8
    for rating in fit.ratings:
        s = _settings(rating.name)
        if s is None or s.get("verify") == "true":
            continue
        beta = float(s.get("search_weight", 0))
        if s.get("calibrated", "false") != "false" and "verify" not in s:
            continue  # the calibrated engine: validation, not the fit
        if beta == 0:
            base[int(s["elo"])] = rating.elo
        elif int(s.get("search_depth", 6)) == 6 and int(s["elo"]) == 1600:
            gain6[beta] = rating.elo
        elif int(s.get("search_depth", 6)) == 8 and int(s["elo"]) == 2000:
            gain8[beta] = rating.elo
    if len(base) < 2 or not gain6 or 1600 not in base:
        raise SystemExit(f"not enough measured settings: base {base}, depth-6 gains {gain6}")
    ratings = sorted(base)

    def e0(r: float) -> float:
        if r <= ratings[0] or r >= ratings[-1]:
            a, b = (ratings[0], ratings[1]) if r <= ratings[0] else (ratings[-2], ratings[-1])
            return base[a] + (r - a) * (base[b] - base[a]) / (b - a)
        return float(np.interp(r, ratings, [base[k] for k in ratings]))

    betas = [0.0, *sorted(gain6)]
    h6 = np.maximum.accumulate([0.0, *(gain6[b] - base[1600] for b in sorted(gain6))])
    x = np.log1p(betas)
    scale = 1.0
    if MAX_BETA in gain8 and 2000 in base and h6[-1] > 0:
        scale = max(1.0, (gain8[MAX_BETA] - base[2000]) / h6[-1])
    rows = []
    for target in TARGETS:
        need = target - e0(target)
        depth, curve = (6, h6) if need <= h6[-1] or scale == 1.0 else (8, h6 * scale)
        beta = float(np.expm1(np.interp(need, curve, x))) if need > 0 else 0.0
        rows.append(
            {
                "uci_elo": target,
                "model_elo": min(max(target, 800), 2400),
                "search_weight": round(min(beta, MAX_BETA), 2),
                "search_depth": depth,
                "expected_elo": round(e0(target) + float(np.interp(math.log1p(beta), x, curve))),
            }
        )
    curves = {
        "model_alone_elo_by_rating": {str(k): round(v) for k, v in sorted(base.items())},
        "gain_by_beta_depth6_at_1600": {
            f"{b:g}": round(float(h)) for b, h in zip(betas, h6, strict=True)
        },
        "depth8_scale": round(scale, 3),
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
    """Measured Elo of the calibrated engine at each R (and the model alone), table and plot."""
    from latentchess.plots.human import plot_calibration

    calibrated, alone = [], []
    for rating in fit.ratings:
        s = _settings(rating.name)
        if s is None or s.get("verify") == "true":
            continue
        point = (float(s["elo"]), rating.elo, rating.lower, rating.upper, rating)
        if set(s) == {"elo"}:
            calibrated.append(point)
        elif set(s) <= {"elo", "verify"}:
            alone.append(point)
    calibrated.sort()
    alone.sort()
    lines = [
        "# The calibrated engine: measured Elo against the UCI_Elo asked for",
        "",
        "BayesElo over every game in `calibration/`, `strength/grid/` and `strength/validate/`, "
        "each `stockfish:elo=N` anchored at N; Stockfish 15.1 at 50 ms per move, every game "
        "from the initial position. Target: within +-150 of the diagonal.",
        "",
        "| UCI_Elo asked | measured Elo | 95% interval | off by | games | score |",
        "|---:|---:|---|---:|---:|---:|",
    ]
    for target, elo, low, high, r in calibrated:
        lines.append(
            f"| {target:.0f} | {elo:.0f} | [{low:.0f}, {high:.0f}] | {elo - target:+.0f} | "
            f"{r.games} | {100 * r.points / r.games:.0f}% |"
        )
    within = sum(abs(p[1] - p[0]) <= 150 for p in calibrated)
    lines += ["", f"Within +-150: {within} of {len(calibrated)} ratings."]
    (out / "calibration.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    payload = {
        "calibrated": [_point(*p) for p in calibrated],
        "model_alone": [_point(*p) for p in alone],
        "fit": fit.to_dict(),
        "commit": git_commit(),
    }
    (out / "calibration.json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    series = {"calibrated (shipped table)": [p[:4] for p in calibrated]}
    if alone:
        series["the model alone at rating R (before)"] = [p[:4] for p in alone]
    plot_calibration(series, out / "calibration.png")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    """Fit the table (default) or report the validation games."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", action="store_true", help="report, do not write the table")
    parser.add_argument("--table", type=Path, default=TABLE, help="the table to write")
    args = parser.parse_args(argv)
    strength = RESULTS / "strength"
    roots = [RESULTS / "calibration", strength / "grid", strength / "validate"]
    fit, pgns = fit_games(roots)
    print(fit.table())
    if args.report:
        report(fit, strength)
        return 0
    rows, curves = table_rows(fit)
    table = {
        "about": "UCI_Elo (Stockfish 15.1 UCI_Elo scale, 50 ms per move for Stockfish) -> the "
        "rating the human model is conditioned on, the strength search's beta and depth. Fitted "
        "by benchmarks/human_calibration_fit.py from the games in benchmarks/results/human_play/"
        "calibration and strength/grid; checked by strength/validate (calibration.md there).",
        "rows": rows,
        "curves": curves,
        "games": sum(1 for _ in pgns),
        "commit": git_commit(),
    }
    args.table.write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
