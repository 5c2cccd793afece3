"""Held-out ranking metrics of two models on one split, with paired block-bootstrap intervals.

Both models score the same held-out rows of a training cache (the split of ``--seed``, as the
training loop makes it: :func:`latentchess.training.data.split_holdout`) with their own stored
axis; the Spearman correlation and pair accuracy of each, and their differences, get 95%
intervals from a bootstrap that resamples the split's blocks of consecutive rows (a game's
positions stay together), the same blocks for both models.

    .venv/bin/python benchmarks/heldout_paired.py --data runs/sparse-encoder/data/all-cache \
        --model src/latentchess/weights/sparse-64 --model runs/x/model --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from latentchess.data.cache import TrainingCache
from latentchess.models import load_model
from latentchess.training.data import HOLDOUT_BLOCK, split_holdout
from latentchess.training.metrics import pair_accuracy, spearman


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True, help="training cache directory")
    p.add_argument("--model", type=Path, action="append", required=True, help="twice")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--holdout-fraction", type=float, default=0.02)
    p.add_argument("--holdout-max", type=int, default=20_000)
    p.add_argument("--delta", type=float, default=0.05)
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--json", type=Path, required=True)
    args = p.parse_args()
    if len(args.model) != 2:
        p.error("give --model exactly twice")

    cache = TrainingCache.open(args.data)
    labels_all = np.asarray(cache.win_prob_white, dtype=np.float32)
    split = split_holdout(
        len(labels_all), fraction=args.holdout_fraction, maximum=args.holdout_max, seed=args.seed
    )
    rows = split.holdout
    labels = labels_all[rows].astype(np.float64)
    tokens = np.array(cache.tokens[rows])
    scores = [load_model(m, precision="fp32").score_tokens(tokens) for m in args.model]

    def metrics(index: np.ndarray) -> list[tuple[float, float]]:
        return [
            (
                spearman(s[index], labels[index]),
                pair_accuracy(s[index], labels[index], delta=args.delta, seed=args.seed),
            )
            for s in scores
        ]

    everything = np.arange(len(rows))
    point = metrics(everything)
    blocks = rows // HOLDOUT_BLOCK
    _, block_of = np.unique(blocks, return_inverse=True)
    members = [np.flatnonzero(block_of == b) for b in range(block_of.max() + 1)]
    rng = np.random.default_rng(args.seed)
    draws = []
    for _ in range(args.resamples):
        pick = rng.integers(0, len(members), size=len(members))
        draws.append(metrics(np.concatenate([members[b] for b in pick])))
    arr = np.asarray(draws)  # (R, 2 models, 2 metrics)

    def interval(values: np.ndarray) -> list[float]:
        return [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))]

    result: dict[str, object] = {
        "data": str(args.data),
        "holdout_rows": len(rows),
        "blocks": len(members),
        "resamples": args.resamples,
        "models": [str(m) for m in args.model],
    }
    for k, name in enumerate(("spearman", "pair_accuracy")):
        result[name] = [{"value": point[i][k], "ci95": interval(arr[:, i, k])} for i in range(2)]
        result[f"{name}_difference"] = {
            "value": point[1][k] - point[0][k],
            "ci95": interval(arr[:, 1, k] - arr[:, 0, k]),
        }
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    json.dump(result, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
