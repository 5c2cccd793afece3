"""The contrastive GAB encoder against the 77-token SOLIS encoder at equal CPU time.

Both train at the same time, one thread each (so each gets one core of two), with the same SupCon
trainer on the same training cache (``latentchess train``: 1 positive per anchor, batch 128,
cosine schedule, seed 0; SGD at lr 0.03 for the SOLIS encoder, AdamW at 1e-3 for the GAB one, see
``GAB_RECIPE``), for ``--minutes`` each: steps are set from each
config's measured steps per minute (``--steps-per-minute``) so that the cosine schedule ends with
the budget, and ``--max-minutes`` (1.5x) stops a run the machine slowed down. Then, per model:

* held-out Spearman and pair accuracy (the trainer's final metrics);
* single-good-move choice: how often greedy, depth-2 and depth-4 minimax (width 3) play
  Stockfish's best move where it beats the second best by ``--gap`` cp, on held-out positions
  (``strength_study.good_move_positions``), with Wilson 95% intervals;
* with ``--ladder-games N``: the Elo ladder at depth 4 and 6 (``latentchess ladder``), 95%
  intervals.

The encoders are scored in parallel too, one process and one thread each (``--evaluate CONFIG``
is that process); each writes ``RUNS/CONFIG/eval.json`` atomically when done, and a rerun reuses
it when its settings match, so a killed scoring redoes only the unfinished encoder (its ladder
games resume from their PGN).

Results: ``OUT/gab_vs_solis.json`` and ``.md``. The real run (2 hours each, as the issue asks)::

    # all shared positions, the one file with MultiPV gaps first (single-good-move positions)
    mkdir -p data && cd ../shared/data && cat sf15-d9-eco-selfplay.csv.gz \
        sf15-selfplay-mpv1.csv.gz tcec-engine-evals.csv.gz > "$OLDPWD/data/all.csv.gz" && cd -
    .venv/bin/latentchess data import-csv data/all.csv.gz --out data/all
    .venv/bin/latentchess data build-cache data/all --out data/all-cache
    .venv/bin/python benchmarks/gab_vs_solis.py --dataset data/all --runs runs/gab-vs-solis \
        --minutes 120 --positions 250 --ladder-games 12
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from latentchess.provenance import git_commit
from strength_study import good_move_positions, model_metrics, move_choice

REPO = Path(__file__).resolve().parents[1]
LATENTCHESS = str(Path(sys.executable).with_name("latentchess"))
RECIPE = ["--positives", "1", "--batch-size", "128", "--schedule", "cosine"]
SOLIS_RECIPE = "--lr 0.03"  # the SupCon trainer's default: SGD, momentum 0.9
GAB_RECIPE = "--optimizer adamw --lr 0.001"
"""The GAB trunk (post-norm) collapses to one point under SGD at the SOLIS rates (0.003 learns,
slowly; 0.03 collapses within 100 steps) and under AdamW at 3e-3; AdamW 1e-3 learned fastest in
200-step probes (``gab_probes.md``)."""


def _train_all(args: argparse.Namespace, rates: dict[str, float]) -> dict[str, Path]:
    """Train every config at once, one thread each (both cores busy, equal CPU time each)."""
    models: dict[str, Path] = {}
    running: list[tuple[str, subprocess.Popen[bytes]]] = []
    for config, steps_per_minute in rates.items():
        out = args.runs / config
        models[config] = out / "model"
        if args.reuse and (out / "model" / "config.json").exists():
            continue  # --reuse: score the model a run wrote, do not continue it
        steps = max(int(steps_per_minute * args.minutes), 2)
        command = [
            LATENTCHESS, "train", "--data", str(args.cache), "--out", str(out),
            "--model-config", config, *RECIPE,
            *shlex.split(args.gab_recipe if config.startswith("gab") else args.solis_recipe),
            "--steps", str(steps),
            "--max-minutes", str(1.5 * args.minutes), "--threads", "1",
            "--eval-every", str(max(steps // 4, 1)),
            "--checkpoint-every", str(max(steps // 10, 1)),
            "--seed", "0", "--precision", "fp32", "--no-progress",
        ]  # fmt: skip
        print(f"train {config}: {' '.join(command)}", file=sys.stderr, flush=True)
        log = (args.runs / f"{config}.log").open("ab")
        running.append((config, subprocess.Popen(command, stdout=log, stderr=log)))
        log.close()
    for config, process in running:
        if process.wait() != 0:
            raise SystemExit(f"training {config} failed: see {args.runs / (config + '.log')}")
    return models


def _ladder(model: Path, depth: int, games: int, out: Path) -> dict[str, Any]:
    result = out / f"ladder_d{depth}.json"
    command = [
        LATENTCHESS, "ladder", f"latent:model={model},depth={depth}", "--limit",
        f"depth={depth}", "--opponent-limit", "50ms", "--adjudicate",
        "--games-per-step", str(games), "--games-per-rung", str(games),
        "--calibration-games", "20", "--workers", "1", "--no-progress",
        "--json", str(result), "--pgn", str(out / f"ladder_d{depth}.pgn"),
    ]  # fmt: skip
    subprocess.run(command, check=True)
    return json.loads(result.read_text())


def _ladder_cell(ladder: dict[str, Any]) -> str:
    """'ELO [LOW, HIGH] (N games)' for the laddered engine in a ``latentchess ladder`` JSON."""
    for rating in ladder["fit"]["ratings"]:
        if rating["name"] == ladder["engine"]:
            return (
                f"{rating['elo']:.0f} [{rating['lower']:.0f}, {rating['upper']:.0f}] "
                f"({rating['games']} games)"
            )
    raise ValueError(f"{ladder['engine']} is not in its ladder's fit")


def _curves(run: Path) -> list[dict[str, float]]:
    """Held-out evaluations of one run with the training minutes behind each (from its metrics)."""
    minutes_at: dict[int, float] = {}
    points = []
    for line in (run / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get("kind") == "train":
            minutes_at[row["step"]] = row["elapsed_s"] / 60
        elif row.get("kind") == "eval":
            before = [step for step in minutes_at if step <= row["step"]]
            minutes = minutes_at[max(before)] if before else 0.0
            points.append({"step": row["step"], "minutes": minutes, "spearman": row["spearman"],
                           "loss": row["heldout_loss"]})  # fmt: skip
    return points


def _plot_curves(curves: dict[str, list[dict[str, float]]], path: Path) -> None:
    """Held-out Spearman and SupCon loss against training minutes, one line per encoder."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for config, points in curves.items():
        minutes = [p["minutes"] for p in points]
        left.plot(minutes, [p["spearman"] for p in points], marker="o", label=config)
        right.plot(minutes, [p["loss"] for p in points], marker="o", label=config)
    left.set(xlabel="training minutes (one thread)", ylabel="held-out Spearman (4,096 positions)")
    right.set(xlabel="training minutes (one thread)", ylabel="held-out SupCon loss")
    left.set_ylim(0.8, None)
    right.set_ylim(None, 5.0)
    for axes in (left, right):
        axes.grid(alpha=0.3)
        axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _eval_settings(args: argparse.Namespace) -> dict[str, Any]:
    return {"positions": args.positions, "gap_cp": args.gap, "ladder_games": args.ladder_games}


def _write_evaluation(args: argparse.Namespace, config: str, model: Path) -> None:
    """Score one encoder (this process: one thread) and write ``eval.json`` atomically."""
    import torch

    torch.set_num_threads(1)
    positions = good_move_positions(args.dataset, gap_cp=args.gap, count=args.positions, seed=0)
    print(f"{config}: {len(positions)} single-good-move positions", file=sys.stderr, flush=True)
    metrics = model_metrics(model)
    result: dict[str, Any] = {
        "settings": _eval_settings(args),
        "train_minutes": round(metrics["train_minutes"], 1),
        "steps": metrics["steps"],
        "positions": len(positions),  # all there are, if the held-out split has fewer
        "spearman": metrics["spearman"],
        "pair_accuracy": metrics["pair_accuracy"],
        "move_choice": move_choice(model, positions),
    }
    print(config, "move choice", json.dumps(result["move_choice"]), file=sys.stderr, flush=True)
    if args.ladder_games:
        result["ladder"] = {
            depth: _ladder(model, depth, args.ladder_games, model.parent) for depth in (4, 6)
        }
    path = model.parent / "eval.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    os.replace(tmp, path)


def _evaluate_all(args: argparse.Namespace, models: dict[str, Path]) -> dict[str, Any]:
    """Every encoder's scores, computed in parallel (one process each) unless already on disk."""
    results: dict[str, Any] = {}
    pending: list[tuple[str, subprocess.Popen[bytes]]] = []
    for config, model in models.items():
        path = model.parent / "eval.json"
        if path.exists() and json.loads(path.read_text()).get("settings") == _eval_settings(args):
            continue
        command = [sys.executable, __file__, *sys.argv[1:], "--evaluate", config]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        log = (args.runs / f"{config}-eval.log").open("ab")
        print(f"score {config}: log {log.name}", file=sys.stderr, flush=True)
        pending.append((config, subprocess.Popen(command, stdout=log, stderr=log, env=env)))
        log.close()
    for config, process in pending:
        if process.wait() != 0:
            raise SystemExit(f"scoring {config} failed: see {args.runs / (config + '-eval.log')}")
    for config, model in models.items():
        results[config] = json.loads((model.parent / "eval.json").read_text())
        results[config].pop("settings")
    return results


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", type=Path, required=True, help="the shared data as Parquet")
    p.add_argument("--cache", type=Path, help="its training cache (default: DATASET-cache)")
    p.add_argument("--runs", type=Path, required=True)
    p.add_argument("--minutes", type=float, default=120.0, help="training minutes per encoder")
    p.add_argument(
        "--steps-per-minute",
        default="micro=65,gab-micro=40",
        help="CONFIG=RATE,... one thread (measure: steps / train_seconds of a short run)",
    )
    p.add_argument("--solis-recipe", default=SOLIS_RECIPE, help="train options of SOLIS configs")
    p.add_argument("--gab-recipe", default=GAB_RECIPE, help="train options of gab-* configs")
    p.add_argument("--gap", type=float, default=150.0)
    p.add_argument("--positions", type=int, default=400)
    p.add_argument("--ladder-games", type=int, default=0, help="games per rung (0: no ladder)")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks/results/gab_encoder")
    p.add_argument("--label", default="")
    p.add_argument("--reuse", action="store_true", help="score existing models, train no more")
    p.add_argument("--evaluate", metavar="CONFIG", help=argparse.SUPPRESS)  # one scoring process
    args = p.parse_args()
    args.cache = args.cache or args.dataset.with_name(args.dataset.name + "-cache")
    args.runs.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    rates = {k: float(v) for k, v in (item.split("=") for item in args.steps_per_minute.split(","))}
    if args.evaluate:
        _write_evaluation(args, args.evaluate, args.runs / args.evaluate / "model")
        return 0
    started = time.time()
    models = _train_all(args, rates)
    results = _evaluate_all(args, models)
    payload = {
        "label": args.label,
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        "commit": git_commit(),
        "load_average_1min": os.getloadavg()[0],
        "positions": sorted({row["positions"] for row in results.values()}),
        "gap_cp": args.gap,
        "wall_minutes": round((time.time() - started) / 60, 1),
        "results": results,
    }
    (args.out / "gab_vs_solis.json").write_text(json.dumps(payload, indent=1) + "\n")
    lines = [
        "# GAB encoder vs 77-token encoder" + (f" ({args.label})" if args.label else ""),
        "",
        f"Equal budget: {args.minutes:g} min of steps at the given rates, stopped at "
        f"{1.5 * args.minutes:g} min (one thread each; the minutes column is what each took), "
        f"recipes: SOLIS `{args.solis_recipe}`, GAB `{args.gab_recipe}`; "
        f"single good move: {'/'.join(map(str, payload['positions']))} held-out positions "
        f"(gap >= {args.gap:g} cp), "
        f"Wilson 95% intervals. Load average {payload['load_average_1min']:.1f}. Command: "
        f"`{payload['command']}`.",
        "",
        "| encoder | steps | minutes | Spearman | pair acc. | greedy | minimax d2 | minimax d4 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for config, row in results.items():
        choice = row["move_choice"]
        cells = [
            f"{choice[m]['rate']:.3f} [{choice[m]['interval'][0]:.2f}, "
            f"{choice[m]['interval'][1]:.2f}]"
            for m in ("greedy", "minimax_d2", "minimax_d4")
        ]
        lines.append(
            f"| {config} | {row['steps']} | {row['train_minutes']} | {row['spearman']:.3f} | "
            f"{row['pair_accuracy']:.3f} | " + " | ".join(cells) + " |"
        )
    if any("ladder" in row for row in results.values()):
        lines += [
            "",
            "Ladder (Stockfish 15.1 `UCI_Elo` scale, opponents at 50 ms per move, 95% intervals):",
            "",
            "| encoder | depth 4 | depth 6 |",
            "|---|---:|---:|",
        ]
        for config, row in results.items():
            if "ladder" in row:
                cells = [_ladder_cell(row["ladder"][key]) for key in ("4", "6")]
                lines.append(f"| {config} | " + " | ".join(cells) + " |")
    curves = {config: _curves(model.parent) for config, model in models.items()}
    payload["curves"] = curves
    (args.out / "gab_vs_solis.json").write_text(json.dumps(payload, indent=1) + "\n")
    _plot_curves(curves, args.out / "gab_vs_solis.png")
    lines += ["", "Held-out curves: `gab_vs_solis.png` (and `curves` in the JSON)."]
    (args.out / "gab_vs_solis.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
