"""Fit the WDL model behind ``UCI_ShowWDL`` to an engine's own self-play, and measure it.

Usage::

    latentchess data selfplay --out runs/wdl/selfplay --games 800 --nodes 10000 --seed 7
    python benchmarks/fit_wdl.py runs/wdl/selfplay --out benchmarks/results/wdl \
        [--network src/latentchess/weights/nnue-default --write]

Reads Stockfish ``.bin`` records (score, game result, position) made by ``latentchess data
selfplay`` with the network whose scores are modelled, leaves out mate scores, and fits
:class:`latentchess.wdl.WdlModel` by maximum likelihood on the first 80% of the records (files in
name order, records in game order, so the split falls between games but for one). On the last
20% it reports the log loss and the expected-score error of the fit, against python-chess's
Stockfish models applied to our scores as they are (a borrowed scale), a constant model (the
held-out rates) and the ``wdl.json`` already beside the network, if any (does it still fit?).
``--write`` stores the fit as ``wdl.json`` beside the network.

Writes ``OUT/wdl_fit.json`` and ``OUT/wdl_fit.png`` (W/D/L against the score at three material
levels, with the held-out positions' binned frequencies).
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import time
from pathlib import Path

import chess
import chess.engine
import numpy as np

from latentchess.core.nnue import default_nnue_path
from latentchess.data.packed_sfen import read_records
from latentchess.wdl import WdlModel, fit_wdl_model, material_count


def _load(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    cp, material, outcome, ply = [], [], [], []
    for _, record in read_records(path):
        score = record.score_cp
        if score is None:
            continue
        cp.append(score)
        material.append(material_count(record.board()))
        outcome.append(record.result)
        ply.append(record.ply)
    return np.array(cp, float), np.array(material), np.array(outcome), np.array(ply)


def _log_loss(win: np.ndarray, draw: np.ndarray, loss: np.ndarray, outcome: np.ndarray) -> float:
    chosen = np.where(outcome == 1, win, np.where(outcome == -1, loss, draw))
    return float(-np.log(np.clip(chosen, 1e-9, 1.0)).mean())


def _score_error(win: np.ndarray, draw: np.ndarray, outcome: np.ndarray) -> float:
    expected = win + 0.5 * draw
    return float(np.sqrt(((expected - (outcome + 1) / 2) ** 2).mean()))


def _borrowed(model: str, cp: np.ndarray, ply: np.ndarray) -> tuple[np.ndarray, ...]:
    rows = [
        chess.engine.Cp(int(v)).wdl(model=model, ply=int(p))  # type: ignore[arg-type]
        for v, p in zip(cp, ply, strict=True)
    ]
    w, d, losses = (
        np.array([getattr(r, k) for r in rows]) / 1000 for k in ("wins", "draws", "losses")
    )
    return w, d, losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="a .bin file or a directory of them")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--network", type=Path, default=default_nnue_path())
    parser.add_argument("--degree", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="save wdl.json beside the network")
    parser.add_argument("--source", default="", help="provenance text stored with the fit")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    began = time.time()
    cp, material, outcome, ply = _load(args.data)
    split = int(0.8 * len(cp))
    fit_rows, held = slice(0, split), slice(split, None)
    model = fit_wdl_model(cp[fit_rows], material[fit_rows], outcome[fit_rows], degree=args.degree)
    rates = np.array([(outcome[fit_rows] == k).mean() for k in (1, 0, -1)])
    candidates: dict[str, tuple[np.ndarray, ...]] = {
        "fitted (ours)": model.probabilities(cp[held], material[held]),
        "constant (training rates)": tuple(np.full(len(cp[held]), r) for r in rates),
    }
    shipped = WdlModel.load(args.network)  # the network's wdl.json, if any: does it still fit?
    if shipped is not None:
        candidates["the network's wdl.json"] = shipped.probabilities(cp[held], material[held])
    for borrowed in ("sf16", "sf15.1"):
        candidates[f"python-chess {borrowed} on our scores"] = _borrowed(
            borrowed, cp[held], ply[held]
        )
    evaluation = {
        name: {
            "log_loss": _log_loss(w, d, lo, outcome[held]),
            "expected_score_rmse": _score_error(w, d, outcome[held]),
        }
        for name, (w, d, lo) in candidates.items()
    }
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    metrics = {
        "positions_fitted": split,
        "positions_held_out": len(cp) - split,
        "held_out_log_loss": evaluation["fitted (ours)"]["log_loss"],
        "outcome_rates_fitted": dict(
            zip(("win", "draw", "loss"), rates.round(4).tolist(), strict=True)
        ),
    }
    model = WdlModel(a=model.a, b=model.b, source=args.source, metrics=metrics)
    report = {
        "data": args.data.name,
        "network": args.network.name,
        "commit": commit,
        "degree": args.degree,
        "model": {"a": list(model.a), "b": list(model.b)},
        **metrics,
        "held_out": evaluation,
        "seconds": round(time.time() - began, 1),
    }
    (args.out / "wdl_fit.json").write_text(json.dumps(report, indent=2) + "\n")
    if args.write:
        print("wrote", model.save(args.network))
    _plot(model, cp[held], material[held], outcome[held], args.out / "wdl_fit.png")
    print(json.dumps(report, indent=2))


def _plot(
    model: WdlModel, cp: np.ndarray, material: np.ndarray, outcome: np.ndarray, path: Path
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4), sharey=True)
    grid = np.linspace(-600, 600, 241)
    for axis, (low, high) in zip(axes, ((0, 30), (30, 60), (60, 79)), strict=True):
        rows = (material >= low) & (material < high)
        middle = float(material[rows].mean()) if rows.any() else (low + high) / 2
        for probability, colour, name in zip(
            model.probabilities(grid, np.full_like(grid, middle)),
            ("tab:green", "tab:gray", "tab:red"),
            ("win", "draw", "loss"),
            strict=True,
        ):
            axis.plot(grid, probability, color=colour, label=f"{name} (fit, material {middle:.0f})")
        edges = np.linspace(-600, 600, 25)
        centres = (edges[1:] + edges[:-1]) / 2
        for value, colour in ((1, "tab:green"), (0, "tab:gray"), (-1, "tab:red")):
            shares = [
                (outcome[rows & (cp >= a) & (cp < b)] == value).mean()
                if (rows & (cp >= a) & (cp < b)).sum() >= 20
                else np.nan
                for a, b in itertools.pairwise(edges)
            ]
            axis.scatter(centres, shares, color=colour, s=12)
        axis.set_title(f"material {low}-{high - 1} ({rows.sum()} held-out positions)")
        axis.set_xlabel("score, side to move (cp)")
    axes[0].set_ylabel("probability (dots: held-out frequencies)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
