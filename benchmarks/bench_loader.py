"""Chessformer training throughput with and without loader workers (``--loader-workers``).

Each configuration trains the same steps from the same data three ways in one run: the batches
made by the training process itself (workers 0, the baseline), and by 1 and 2 worker processes
while the model trains. The batches, and so the weights, are the same (tested); only the speed
differs. Reported: positions/s over the steps after the first 10 (warm-up), and the share of a
step the training process spends making its batch without workers (``batch_arrays`` timed alone).

    .venv/bin/python benchmarks/bench_loader.py --data runs/human_options/rated.npz \\
        --out benchmarks/results/loader --device cpu --threads 1

On a GPU (``--device cuda``) the batch-making share is what workers hide; on a CPU with few
cores the workers compete with the model's own threads.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import torch

from latentchess.models.chessformer import get_chessformer_config
from latentchess.provenance import git_commit
from latentchess.training.distributed import DistContext
from latentchess.training.objectives.chessformer import (
    ChessformerObjective,
    ChessformerTrainConfig,
    train_chessformer,
)


def _rate(metrics: Path, skip: int) -> float:
    """Steps per second between the first ``train`` record after ``skip`` steps and the last."""
    rows = [json.loads(line) for line in metrics.open()]
    train = [r for r in rows if r.get("kind") == "train" and r["step"] > skip]
    first, last = train[0], train[-1]
    return (last["step"] - first["step"]) / (last["elapsed_s"] - first["elapsed_s"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True, help="a MoveData .npz or a PGN")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--work", type=Path, default=Path("runs/bench_loader"))
    p.add_argument("--configs", nargs="+", default=["cf-nano:128", "maia3-3m:64"])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--workers", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    results: list[dict[str, Any]] = []
    for spec in args.configs:
        name, batch = spec.split(":")
        model = get_chessformer_config(name)
        row: dict[str, Any] = {"config": name, "batch_size": int(batch), "steps_per_s": {}}
        for workers in args.workers:
            run = args.work / f"{name}-w{workers}"
            shutil.rmtree(run, ignore_errors=True)
            cfg = ChessformerTrainConfig(
                data=args.data,
                out=run,
                model=model,
                steps=args.steps,
                batch_size=int(batch),
                warmup=5,
                eval_every=0,
                final_positions=64,
                checkpoint_every=10_000,
                log_every=5,
                progress=False,
                device=args.device,
                threads=args.threads,
                loader_workers=workers,
            )
            train_chessformer(cfg)
            rate = _rate(run / "metrics.jsonl", skip=10)
            row["steps_per_s"][workers] = rate
            print(f"{name} batch {batch} workers {workers}: {rate * int(batch):.0f} positions/s")
            if workers == 0:  # the batch-making share of a step, timed alone
                objective = ChessformerObjective(cfg, DistContext())
                tick = time.perf_counter()
                for step in range(20):
                    objective.batch_arrays(step)
                make = (time.perf_counter() - tick) / 20
                row["batch_seconds"] = make
                row["batch_share"] = make * rate
                row["batch_us_per_position"] = 1e6 * make / int(batch)
        base = row["steps_per_s"][args.workers[0]]
        row["positions_per_s"] = {w: r * int(batch) for w, r in row["steps_per_s"].items()}
        row["speedup"] = {w: r / base for w, r in row["steps_per_s"].items()}
        results.append(row)
    out = {
        "command": "python benchmarks/bench_loader.py " + " ".join(sys.argv[1:]),
        "commit": git_commit(),
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "load_average": os.getloadavg(),
            "torch": torch.__version__,
            "device": args.device,
            "threads": args.threads,
        },
        "results": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "loader.json").write_text(json.dumps(out, indent=1) + "\n")
    lines = [
        "| config | batch | batch making (us/position) | share of a step | positions/s, workers "
        + " / ".join(str(w) for w in args.workers)
        + " | x baseline |",
        "|---|---:|---:|---:|---|---|",
    ]
    for row in results:
        rates = " / ".join(f"{row['positions_per_s'][w]:.0f}" for w in args.workers)
        ratios = " / ".join(f"{row['speedup'][w]:.2f}" for w in args.workers)
        making = f"{row['batch_us_per_position']:.0f} | {row['batch_share']:.0%}"
        lines.append(f"| {row['config']} | {row['batch_size']} | {making} | {rates} | {ratios} |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
