"""Training speed of the sparse (NNUE-feature) encoder against the GAB encoder, one CPU thread.

Both are timed in the same process, one after the other, through the SupCon trainer's own step
(:class:`~latentchess.training.objectives.supcon.SupConObjective`: anchors from the cache, positives
within delta, tokens from the memory map, the encoder, the SupCon loss) plus backward and the
optimiser step each recipe trains with (AdamW at 1e-3 for both; SGD momentum 0.9 for a SOLIS
encoder). ``torch.set_num_threads(1)``; fp32. Rates are anchor positions per
second (what "positions seen" counts: a step sees ``batch`` anchors) and views per second (each
anchor brings ``positives`` views, all embedded).

    .venv/bin/python benchmarks/sparse_encoder_speed.py --data runs/sparse-encoder/data/all-cache \\
        --out benchmarks/results/sparse_encoder/speed.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from latentchess.models.config import get_config
from latentchess.provenance import git_commit
from latentchess.training.config import TrainConfig
from latentchess.training.distributed import DistContext
from latentchess.training.objectives.supcon import SupConObjective

OPTIMIZERS = {"sparse": ("adamw", 0.001), "gab": ("adamw", 0.001), "solis": ("sgd", 0.03)}


def _family(config: str) -> str:
    return config.split("-")[0] if config.startswith(("sparse", "gab")) else "solis"


def measure(
    config: str, data: Path, *, batch: int, positives: int, steps: int, warmup: int
) -> dict[str, Any]:
    """Seconds per training step of ``config`` (median-free: total over ``steps`` after warm-up)."""
    optimizer_name, lr = OPTIMIZERS[_family(config)]
    with tempfile.TemporaryDirectory(prefix="sparse-speed-") as tmp:
        cfg = TrainConfig(
            data=data,
            out=Path(tmp),
            model=dataclasses.replace(get_config(config), dropout=0.0),
            batch_size=batch,
            positives=positives,
            precision="fp32",
            device="cpu",
            threads=1,
            progress=False,
            optimizer=optimizer_name,
            lr=lr,
            holdout_max=2000,
            eval_positions=256,
        )
        objective = SupConObjective(cfg, DistContext())
        model = objective.model.train()
        if optimizer_name == "adamw":
            opt: torch.optim.Optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        else:
            opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
        started = 0.0
        for step in range(warmup + steps):
            if step == warmup:
                started = time.perf_counter()
            loss, _ = objective.loss(model, step)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        seconds = (time.perf_counter() - started) / steps
    params = sum(p.numel() for p in model.parameters())
    return {
        "config": config,
        "optimizer": optimizer_name,
        "parameters": params,
        "seconds_per_step": seconds,
        "anchors_per_s": batch / seconds,
        "views_per_s": batch * (1 + positives) / seconds,
        "steps_timed": steps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="training cache directory")
    parser.add_argument("--out", type=Path, required=True, help="JSON results file")
    parser.add_argument("--configs", nargs="+", default=["sparse-32", "sparse-64", "sparse-128"])
    parser.add_argument("--reference", default="gab-micro", help="the encoder compared against")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--positives", type=int, default=5, help="paper: 5")
    parser.add_argument("--steps", type=int, default=200, help="timed steps per sparse config")
    parser.add_argument("--reference-steps", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for config in [*args.configs, args.reference]:
        steps = args.reference_steps if config == args.reference else args.steps
        row = measure(
            config,
            args.data,
            batch=args.batch_size,
            positives=args.positives,
            steps=steps,
            warmup=max(2, steps // 10),
        )
        print(json.dumps(row), flush=True)
        rows.append(row)
    reference = rows[-1]["anchors_per_s"]
    for row in rows:
        row["speedup_vs_reference"] = row["anchors_per_s"] / reference
    result = {
        "rows": rows,
        "reference": args.reference,
        "batch_size": args.batch_size,
        "positives": args.positives,
        "threads": 1,
        "precision": "fp32",
        "data": str(args.data),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "git_commit": git_commit(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
