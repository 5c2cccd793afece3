"""Held-out Spearman and pair accuracy of several SOLIS models on positions none of them trained on.

The sparse encoders of the encoder study trained on the whole 5,459,313-row cache (20,000 rows
held out by ``split_holdout``, seed 0); the GPU-trained SOLIS Small runs trained on a random
3,000,000 of those rows (seed 0, sorted), with their own 20,000 held out. The positions held out
from both are the full cache's held-out rows that are not among the Small runs' training rows.
Each model is scored with its own stored advantage axis (what the planner uses), on White's win
probability, with the training loop's metrics.

    .venv/bin/python benchmarks/solis_small_heldout.py --cache runs/sparse-encoder/data/all-cache \
        --model sparse-64=src/latentchess/weights/sparse-64 --model small-b128=runs/... \
        --json benchmarks/results/solis_small_gpu/heldout.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from latentchess.data.cache import TrainingCache
from latentchess.models.io import load_model
from latentchess.training.config import TrainConfig
from latentchess.training.data import split_holdout
from latentchess.training.metrics import axis_cosine, embed_tokens, pair_accuracy, spearman

SUBSET_ROWS = 3_000_000  # the GPU runs' cache: rng(0).choice(rows, 3,000,000, replace=False)


def common_heldout(rows: int, *, seed: int, fraction: float, maximum: int) -> np.ndarray:
    """Full-cache rows held out from the full-cache runs and never trained on by the subset runs."""
    full = split_holdout(rows, fraction=fraction, maximum=maximum, seed=seed).holdout
    subset = np.sort(np.random.default_rng(0).choice(rows, SUBSET_ROWS, replace=False))
    split = split_holdout(SUBSET_ROWS, fraction=fraction, maximum=maximum, seed=seed)
    subset_train = subset[split.train]
    return full[~np.isin(full, subset_train)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--model", action="append", required=True, help="LABEL=DIR (repeat)")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    defaults = TrainConfig.__dataclass_fields__
    seed = defaults["seed"].default
    fraction = defaults["holdout_fraction"].default
    maximum = defaults["holdout_max"].default
    cache = TrainingCache.open(args.cache)
    rows = common_heldout(len(cache), seed=seed, fraction=fraction, maximum=maximum)
    tokens = np.asarray(cache.tokens[rows])
    labels = np.asarray(cache.win_prob_white[rows], dtype=np.float32)
    results = []
    for item in args.model:
        label, _, path = item.partition("=")
        model = load_model(path, precision="fp32")
        start = time.perf_counter()
        z = embed_tokens(model.encoder, tokens, device=torch.device("cpu"), precision="fp32")
        cos = axis_cosine(z, model.axis)
        results.append(
            {
                "model": label,
                "path": path,
                "content_hash": model.content_hash,
                "spearman": spearman(cos, labels),
                "pair_accuracy": pair_accuracy(cos, labels, delta=0.05, seed=seed),
                "seconds": time.perf_counter() - start,
            }
        )
        print(json.dumps(results[-1]), flush=True)
    document = {
        "positions": len(rows),
        "cache": str(args.cache),
        "split": {
            "seed": seed,
            "fraction": fraction,
            "maximum": maximum,
            "subset_rows": SUBSET_ROWS,
        },
        "results": results,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
