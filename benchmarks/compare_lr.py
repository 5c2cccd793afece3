"""Learning rate, schedule and dropout: short SupCon trainings compared on held-out metrics.

Every run trains the same small encoder from the same seed (same initial weights, same batches)
for the same number of steps with SGD (momentum 0.9), varying one setting at a time, and records
the held-out Spearman correlation between cos(z, axis) and the win probability, the pair-ordering
accuracy and the held-out SupCon loss (see ``latentchess.training.metrics``). A CPU cannot train
the paper's models for 400k steps, so this is a small-scale proxy: it ranks settings by how fast
they learn, and the chosen defaults are the ones that learn fastest without collapsing.

Data: a training cache or Parquet dataset, e.g. the project's labelled positions::

    latentchess data import-csv ../shared/data/sf15-d9-eco-selfplay.csv.gz --out runs/sf15
    latentchess data build-cache runs/sf15 --out runs/sf15-cache
    .venv/bin/python benchmarks/compare_lr.py --data runs/sf15-cache          # ~10 min on 1 core
    .venv/bin/python benchmarks/compare_lr.py --data runs/sf15-cache --quick  # 3 runs

Writes ``benchmarks/results/lr_schedule.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from latentchess.models import EncoderConfig
from latentchess.provenance import git_commit as _git_commit
from latentchess.training.config import TrainConfig
from latentchess.training.curves import read_metrics
from latentchess.training.data import open_training_data
from latentchess.training.trainer import train

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"

# (lr, schedule, dropout): an lr sweep under the cosine schedule, the constant schedule at the
# two middle rates, and dropout 0.1 (the paper's) at those rates.
GRID: list[tuple[float, str, float]] = [
    (0.01, "cosine", 0.0),
    (0.03, "cosine", 0.0),
    (0.1, "cosine", 0.0),
    (0.3, "cosine", 0.0),
    (0.03, "constant", 0.0),
    (0.1, "constant", 0.0),
    (0.03, "cosine", 0.1),
    (0.1, "cosine", 0.1),
]
GRIDS = {
    "full": GRID,
    "quick": [(0.03, "cosine", 0.0), (0.1, "cosine", 0.0), (0.03, "cosine", 0.1)],
    "dropout": [(0.03, "cosine", 0.0), (0.03, "cosine", 0.1)],
}


def run_one(
    args: argparse.Namespace, cache: Path, lr: float, schedule: str, dropout: float, out: Path
) -> dict[str, Any]:
    model = EncoderConfig(
        name=f"L{args.layers}-H{args.hidden}",
        layers=args.layers,
        hidden=args.hidden,
        heads=args.heads,
        mlp=2 * args.hidden,
        dim=args.hidden,
        dropout=dropout,
    )
    cfg = TrainConfig(
        data=cache,
        out=out,
        model=model,
        steps=args.steps,
        batch_size=args.batch_size,
        lr=lr,
        schedule=schedule,
        threads=args.threads,
        seed=args.seed,
        holdout_max=args.holdout,
        eval_every=max(1, args.steps // 4),
        eval_positions=1024,
        eval_axis_per_side=512,
        axis_per_side=4096,
        checkpoint_every=10 * args.steps,
        log_every=max(1, args.steps // 20),
        progress=False,
    )
    tick = time.monotonic()
    result = train(cfg)
    records = read_metrics(out / "metrics.jsonl")
    train_losses = [r["loss"] for r in records if r["kind"] == "train"]
    curve = [
        {k: r[k] for k in ("step", "spearman", "pair_accuracy", "heldout_loss")}
        for r in records
        if r["kind"] == "eval"
    ]
    return {
        "lr": lr,
        "schedule": schedule,
        "dropout": dropout,
        "spearman": result.metrics["spearman"],
        "pair_accuracy": result.metrics["pair_accuracy"],
        "heldout_loss": result.metrics["heldout_loss"],
        "calibration_log_loss": result.metrics["calibration_log_loss"],
        "final_train_loss": train_losses[-1],
        "seconds": time.monotonic() - tick,
        "curve": curve,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="training cache or dataset dir")
    parser.add_argument("--quick", action="store_true", help="three runs instead of eight")
    parser.add_argument("--grid", choices=sorted(GRIDS), default=None, help="default: full")
    parser.add_argument("--name", default="lr_schedule", help="results file stem")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--holdout", type=int, default=4096, help="held-out positions")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = open_training_data(args.data, Path(tmp) / "cache").path
        grid = GRIDS[args.grid or ("quick" if args.quick else "full")]
        for i, (lr, schedule, dropout) in enumerate(grid):
            row = run_one(args, cache, lr, schedule, dropout, Path(tmp) / f"run{i}")
            rows.append(row)
            print(
                f"lr {lr:<5} {schedule:<8} dropout {dropout}: spearman {row['spearman']:.3f} "
                f"pair acc {row['pair_accuracy']:.3f} held-out loss {row['heldout_loss']:.3f} "
                f"({row['seconds']:.0f} s)",
                flush=True,
            )
    best = max(rows, key=lambda r: r["spearman"])
    document = {
        "command": " ".join(
            ["python", "benchmarks/compare_lr.py", *map(shlex.quote, sys.argv[1:])]
        ),
        "git_commit": _git_commit(),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "torch": torch.__version__,
            "threads": args.threads,
        },
        "setup": {
            "model": f"{args.layers} layers, hidden {args.hidden}, {args.heads} heads",
            "steps": args.steps,
            "batch_size": args.batch_size,
            "positives": 5,
            "optimizer": "SGD momentum 0.9, weight decay 1e-4, warm-up 2% of steps",
            "data": str(args.data),
            "holdout": args.holdout,
            "seed": args.seed,
        },
        "runs": rows,
        "best_by_spearman": {k: best[k] for k in ("lr", "schedule", "dropout")},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(document, indent=2) + "\n")
    (args.out / f"{args.name}.md").write_text(_markdown(document))
    print(f"wrote {args.out / args.name}.json and .md")
    return 0


def _markdown(doc: dict[str, Any]) -> str:
    setup = doc["setup"]
    lines = [
        "# Learning rate, schedule and dropout (short SupCon runs)",
        "",
        f"Command: `{doc['command']}` (commit {doc['git_commit']}).",
        f"Machine: {doc['machine']['processor']}, torch {doc['machine']['torch']}, "
        f"{doc['machine']['threads']} thread(s).",
        f"Setup: {setup['model']}; {setup['steps']} steps of {setup['batch_size']} anchors x "
        f"(1 + {setup['positives']}) views; {setup['optimizer']}; same seed, data order and "
        f"initial weights in every run; metrics on {setup['holdout']} held-out positions.",
        "",
        "| lr | schedule | dropout | Spearman | pair accuracy | held-out loss | seconds |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in doc["runs"]:
        lines.append(
            f"| {r['lr']} | {r['schedule']} | {r['dropout']} | {r['spearman']:.3f} | "
            f"{r['pair_accuracy']:.3f} | {r['heldout_loss']:.3f} | {r['seconds']:.0f} |"
        )
    best = doc["best_by_spearman"]
    lines += [
        "",
        f"Best by Spearman: lr {best['lr']}, {best['schedule']}, dropout {best['dropout']}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
