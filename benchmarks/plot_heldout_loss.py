"""Held-out loss against positions seen, for several training runs on one figure.

Each run is a ``metrics.jsonl`` (plain or compressed) written by ``latentchess train nnue``
(records of kind ``eval`` and ``final``); its label is ``LABEL=PATH`` or the path.

    .venv/bin/python benchmarks/plot_heldout_loss.py --out loss.png \\
        v6=runs/v6/tnk256/metrics.jsonl control=runs/v6/ka9ctl/metrics.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from latentchess.textfiles import read_text


def heldout_curve(text: str) -> tuple[list[float], list[float]]:
    """(positions seen in millions, held-out loss) of a metrics.jsonl's eval records, in order.

    The positions of an eval record are those of the train record of the same step (the batch
    size times the step when no train record has it)."""
    records = []
    for line in text.splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a torn last line from a kill
    seen = {r["step"]: r["positions"] for r in records if r.get("kind") == "train"}
    per_step = max((p / s for s, p in seen.items() if s), default=0.0)
    xs, ys = [], []
    for record in records:
        if record.get("kind") in ("eval", "final") and "val_loss" in record:
            step = record["step"]
            xs.append(seen.get(step, step * per_step) / 1e6)
            ys.append(float(record["val_loss"]))
    return xs, ys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="LABEL=metrics.jsonl or metrics.jsonl")
    parser.add_argument("--out", type=Path, required=True, help="PNG to write")
    parser.add_argument("--title", default="held-out loss")
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=100)
    for run in args.runs:
        label, _, path = run.rpartition("=")
        xs, ys = heldout_curve(read_text(path))
        ax.plot(xs, ys, marker="o", markersize=3, label=label or path)
    ax.set_xlabel("positions seen (millions)")
    ax.set_ylabel("held-out loss")
    ax.set_title(args.title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out)
    print(args.out)


if __name__ == "__main__":
    main()
