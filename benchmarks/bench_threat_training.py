"""Training speed of a threat network: the dense against the sparse first-layer update.

The same run twice (feature set, width, batch, seed, steps; one torch thread) through
``latentchess train nnue``'s loop, once with ``--dense-features`` (Adam on every row of the
first layer) and once with ``--sparse-features`` (the feature tables' sparse gradients and lazy
Adam: only the rows a batch touches). Each step's CPU time (the process's, not the clock: the
machine is shared) is read at the loop's step callback; the evaluation and the checkpoint come
after the last step, outside the timing.

Usage::

    python benchmarks/bench_threat_training.py --data DATA.csv.gz:20000 --steps 20

Writes ``benchmarks/results/threats/training.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from latentchess.nnue.model import NnueConfig
from latentchess.provenance import git_commit
from latentchess.training.curves import read_metrics
from latentchess.training.nnue import NnueTrainConfig
from latentchess.training.objectives.nnue import train_nnue

RESULTS = Path(__file__).resolve().parent / "results" / "threats" / "training.json"


def run(args: argparse.Namespace, sparse: bool, root: Path) -> dict[str, Any]:
    """One training run; the CPU seconds of each step and the loss it reached."""
    cfg = NnueTrainConfig(
        data=(args.data,),
        out=root / ("sparse" if sparse else "dense"),
        cache=args.cache,
        network=NnueConfig(feature_set=args.features, l1=args.l1, l2=32, psqt=True),
        batch_size=args.batch_size,
        lr=args.lr,
        steps=args.steps,
        eval_every=0,
        checkpoint_every=args.steps,
        log_every=args.steps,
        threads=1,
        device="cpu",
        seed=args.seed,
        sparse_features=sparse,
        progress=False,
    )
    marks: list[float] = []

    def on_step(step: int) -> None:
        marks.append(time.process_time())

    result = train_nnue(cfg, on_step=on_step)
    steps = np.diff(marks)  # steps 2..N: the first holds the loop's set-up, not timed
    train = [r for r in read_metrics(cfg.out / "metrics.jsonl") if r["kind"] == "train"]
    return {
        "update": "sparse" if sparse else "dense",
        "steps": result.step,
        "cpu_s_per_step_median": float(np.median(steps)),
        "cpu_s_steps_2_to_n": float(steps.sum()),
        "positions_per_cpu_s": float(args.batch_size / np.median(steps)),
        "train_loss_mean": train[-1]["loss"],
        "val_loss": result.metrics.get("val_loss"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="labelled positions, PATH[:ROWS]")
    parser.add_argument("--cache", type=Path, default=None, help="feature cache (built if absent)")
    parser.add_argument("--features", default="KA9+TNK")
    parser.add_argument("--l1", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        if args.cache is None:
            args.cache = Path(tmp) / "cache"
        runs = [run(args, sparse, Path(tmp)) for sparse in (False, True)]
    document = {
        "command": shlex.join(["python", "benchmarks/bench_threat_training.py", *sys.argv[1:]]),
        "commit": git_commit(),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "cpu": platform.processor() or platform.machine(),
        "load_average": os.getloadavg()[0],
        "torch": torch.__version__,
        "features": args.features,
        "l1": args.l1,
        "batch_size": args.batch_size,
        "runs": runs,
        "speed_up": runs[0]["cpu_s_per_step_median"] / runs[1]["cpu_s_per_step_median"],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(json.dumps(document, indent=2))


if __name__ == "__main__":
    main()
