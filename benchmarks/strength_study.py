"""What buys strength per CPU-hour: short trainings changing one thing each, scored by move choice.

Correlation is not strength (held-out Spearman saturates near 0.93 within minutes), and games cost
hours, so each trained model is scored on *move choice*: held-out positions of the shared dataset
where Stockfish's best move beats its second best by ``--gap`` cp (a single good move; positions
whose best move mates at once are left out). Reported per model: how often 1-ply greedy choice and
depth-2 / depth-4 minimax (width 3) play that move, next to held-out Spearman and pair accuracy and
the training's CPU minutes. The positions come from the held-out blocks of the full dataset's split
(seed 0, 2%), beyond the first shard, so no model here trained on them: the full-data runs hold them
out, and the quarter-data run trains on the first shard only.

Runs (one core each, two at a time, each ``--minutes`` long by its step count):

- ``micro-p1``: the default recipe (micro, 1 positive per anchor, batch 128), shorter;
- ``micro-p3``: 3 positives per anchor at the same views per step (batch 64);
- ``micro-quarter``: the default recipe on a quarter of the data (the first of four shards);
- ``tiny-p1``: a 5.7x larger encoder at the same wall time (fewer steps);

plus the shipped default model (the default recipe, 2000 steps, 31 minutes). Training length is
the default model against ``micro-p1``; search depth is in ``depth_ladder``'s results.

    .venv/bin/python benchmarks/strength_study.py --dataset data/sf15 --runs runs/study
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import chess
import numpy as np

from bench_search import count_found, good_move
from latentchess.data.store import read_dataset, shard_paths
from latentchess.engines.latent import LatentEngine
from latentchess.models.io import default_model_path, load_model
from latentchess.provenance import git_commit
from latentchess.search import EmbeddingCache, SearchConfig
from latentchess.training.data import split_holdout

REPO = Path(__file__).resolve().parents[1]
LATENTCHESS = str(Path(sys.executable).with_name("latentchess"))

# name -> (train arguments, steps per minute of one core, measured on this machine: micro ~278
# views/s and tiny ~0.31 of that; steps are set so each run takes about --minutes)
RUNS: dict[str, tuple[list[str], float]] = {
    "micro-p1": (["--model-config", "micro", "--positives", "1", "--batch-size", "128"], 65.0),
    "micro-p3": (["--model-config", "micro", "--positives", "3", "--batch-size", "64"], 65.0),
    "micro-quarter": (["--model-config", "micro", "--positives", "1", "--batch-size", "128"], 65.0),
    "tiny-p1": (["--model-config", "tiny", "--positives", "1", "--batch-size", "128"], 20.0),
}


def good_move_positions(
    dataset: Path, *, gap_cp: float, count: int, seed: int
) -> list[tuple[chess.Board, chess.Move]]:
    """Single-good-move positions from the held-out blocks after the first shard (see above)."""
    table = read_dataset(dataset, columns=["fen", "best_move", "multipv_gap_cp"])
    rows = table.num_rows
    first_shard = read_dataset_rows(shard_paths(dataset)[0])
    split = split_holdout(rows, fraction=0.02, maximum=20_000, seed=0)
    candidates = [int(i) for i in split.holdout if i >= first_shard]
    fens = table.column("fen").to_pylist()
    moves = table.column("best_move").to_pylist()
    gaps = table.column("multipv_gap_cp").to_pylist()
    random.Random(seed).shuffle(candidates)
    chosen: list[tuple[chess.Board, chess.Move]] = []
    for i in candidates:
        if gaps[i] is None or gaps[i] < gap_cp or not moves[i]:
            continue
        position = good_move(fens[i], moves[i])
        if position is not None:
            chosen.append(position)
        if len(chosen) == count:
            break
    return chosen


def read_dataset_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


def train_all(args: argparse.Namespace, quarter: Path) -> dict[str, float]:
    """Run (or resume) every training, two at a time on one core each; returns CPU minutes."""
    pending = list(RUNS)
    running: dict[str, tuple[subprocess.Popen[bytes], float]] = {}
    minutes: dict[str, float] = {}
    while pending or running:
        while pending and len(running) < args.parallel:
            name = pending.pop(0)
            extra, steps_per_minute = RUNS[name]
            data = quarter if name == "micro-quarter" else args.cache
            steps = int(steps_per_minute * args.minutes)
            command = [
                LATENTCHESS, "train", "--data", str(data), "--out", str(args.runs / name),
                *extra, "--steps", str(steps), "--lr", "0.03", "--schedule", "cosine",
                "--max-minutes", str(1.5 * args.minutes), "--threads", "1",
                "--eval-every", str(max(steps // 4, 1)), "--checkpoint-every", "100",
                "--seed", "0", "--precision", "fp32", "--no-progress",
            ]  # fmt: skip
            log = (args.runs / f"{name}.log").open("ab")
            print(f"start {name}: {' '.join(command)}", file=sys.stderr, flush=True)
            running[name] = (subprocess.Popen(command, stdout=log, stderr=log), time.time())
        time.sleep(5)
        for name, (process, started) in list(running.items()):
            if process.poll() is not None:
                if process.returncode != 0:
                    raise SystemExit(f"{name} failed; see {args.runs / name}.log")
                minutes[name] = (time.time() - started) / 60
                print(f"done {name}: {minutes[name]:.1f} min", file=sys.stderr, flush=True)
                del running[name]
    return minutes


def model_metrics(model_dir: Path) -> dict[str, Any]:
    """Held-out metrics and training time, as the trainer wrote them into the model's config."""
    config = json.loads((model_dir / "config.json").read_text())
    training = config["training"]
    return {
        **config["metrics"],
        "encoder": config["encoder"]["name"],
        "steps": training["steps_done"],
        "train_minutes": training["train_seconds"] / 60,
    }


def move_choice(model_dir: Path, positions: list[tuple[chess.Board, chess.Move]]) -> dict[str, Any]:
    """How often greedy and depth-2/4 minimax (width 3) play the single good move."""
    engine = LatentEngine(load_model(model_dir), SearchConfig())
    shared = EmbeddingCache(1_000_000)
    draw = engine.config.draw_score
    methods = {
        "greedy": SearchConfig(depth=1, width=3, draw_score=draw),
        "minimax_d2": SearchConfig(depth=2, width=3, draw_score=draw),
        "minimax_d4": SearchConfig(depth=4, width=3, draw_score=draw),
    }
    found = count_found(engine, positions, methods, shared)
    n = len(positions)
    return {k: {"found": v, "rate": v / n, "interval": _wilson(v, n)} for k, v in found.items()}


def _wilson(k: int, n: int, z: float = 1.96) -> list[float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(float(centre - half), 3), round(float(centre + half), 3)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", type=Path, required=True, help="the shared data as Parquet")
    p.add_argument("--cache", type=Path, help="its training cache (default: DATASET-cache)")
    p.add_argument("--runs", type=Path, required=True, help="run directories go here")
    p.add_argument("--minutes", type=float, default=10.0, help="training minutes per run")
    p.add_argument("--parallel", type=int, default=2)
    p.add_argument("--gap", type=float, default=150.0)
    p.add_argument("--positions", type=int, default=400)
    p.add_argument("--out", type=Path, default=REPO / "benchmarks/results/strength_study")
    args = p.parse_args()
    args.cache = args.cache or args.dataset.with_name(args.dataset.name + "-cache")
    args.runs.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)

    quarter = args.runs / "data-quarter"
    if not quarter.exists():
        tmp = args.runs / "data-quarter.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        shutil.copy2(shard_paths(args.dataset)[0], tmp)
        tmp.rename(quarter)
    started = time.time()
    wall = train_all(args, quarter)
    positions = good_move_positions(args.dataset, gap_cp=args.gap, count=args.positions, seed=0)
    print(f"{len(positions)} single-good-move positions", file=sys.stderr)
    # The study's reference is the model shipped when it ran (micro-p1, 2000 steps, v0.1; the
    # shipped default is gab-micro since v0.2: pass that v0.1 directory as $LATENTCHESS_MODEL).
    shipped = model_metrics(default_model_path())
    models = {f"default ({shipped['encoder']}, {shipped['steps']} steps)": default_model_path()}
    models |= {name: args.runs / name / "model" for name in RUNS}
    results = {}
    for name, path in models.items():
        metrics = model_metrics(path)
        choice = move_choice(path, positions)
        results[name] = {
            "train_minutes": round(metrics["train_minutes"], 1),
            "steps": metrics["steps"],
            "spearman": metrics["spearman"],
            "pair_accuracy": metrics["pair_accuracy"],
            "move_choice": choice,
        }
        print(name, json.dumps(results[name]), file=sys.stderr, flush=True)
    payload = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "commit": git_commit(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}",
        "positions": len(positions),
        "gap_cp": args.gap,
        "wall_minutes": round((time.time() - started) / 60, 1),
        "run_wall_minutes": {k: round(v, 1) for k, v in wall.items()},
        "results": results,
    }
    (args.out / "strength_study.json").write_text(json.dumps(payload, indent=1) + "\n")
    write_report(args.out, payload)
    return 0


def write_report(out: Path, payload: dict[str, Any]) -> None:
    """Markdown table and a bar chart of move choice per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [
        "| run | CPU min | steps | Spearman | pair acc | greedy | minimax d2 | minimax d4 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    names = list(payload["results"])
    for name in names:
        r = payload["results"][name]
        choice = r["move_choice"]
        cells = [
            f"{100 * choice[m]['rate']:.1f}% [{100 * choice[m]['interval'][0]:.0f}, "
            f"{100 * choice[m]['interval'][1]:.0f}]"
            for m in ("greedy", "minimax_d2", "minimax_d4")
        ]
        rows.append(
            f"| {name} | {r['train_minutes']} | {r['steps']} | {r['spearman']:.3f} | "
            f"{r['pair_accuracy']:.3f} | " + " | ".join(cells) + " |"
        )
    (out / "strength_study.md").write_text(
        "# What buys strength per CPU-hour\n\n"
        f"Command: `{payload['command']}` at {payload['commit']} ({payload['machine']}).\n"
        f"{payload['positions']} held-out single-good-move positions "
        f"(gap >= {payload['gap_cp']:.0f} cp); share of them where the engine plays "
        "Stockfish's move, 95% Wilson intervals.\n\n"
        + "\n".join(rows)
        + "\n\n![move choice](strength_study.png)\n"
    )
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.27
    x = np.arange(len(names))
    for k, method in enumerate(("greedy", "minimax_d2", "minimax_d4")):
        rates = [payload["results"][n]["move_choice"][method]["rate"] for n in names]
        lows = [payload["results"][n]["move_choice"][method]["interval"][0] for n in names]
        highs = [payload["results"][n]["move_choice"][method]["interval"][1] for n in names]
        err = [np.subtract(rates, lows), np.subtract(highs, rates)]
        ax.bar(x + (k - 1) * width, rates, width, yerr=err, capsize=3, label=method)
    ax.set_xticks(x, [n.replace(" (", "\n(") for n in names], fontsize=8)
    ax.set_ylabel("single good move found")
    ax.set_title(f"Move choice on {payload['positions']} held-out positions")
    ax.set_ylim(0, 0.85)
    ax.legend(loc="upper center", ncols=3)
    fig.tight_layout()
    fig.savefig(out / "strength_study.png", dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
