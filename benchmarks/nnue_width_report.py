"""Accumulator widths compared on their training curves: held-out loss by step and by minute.

    python benchmarks/nnue_width_report.py OUT_DIR NAME=METRICS.jsonl [NAME=METRICS.jsonl ...]

Each METRICS.jsonl is a ``latentchess train nnue`` run's ``metrics.jsonl`` (same data, seed and
held-out rows; only the width differs). Writes OUT_DIR/curves.png (held-out loss against step and
against training minutes) and OUT_DIR/curves.json (each run's evaluations, its last rate in
positions/s, and the loss ratio to the first run at the steps both evaluated).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from latentchess.training.curves import read_metrics


def summarise(path: Path) -> dict[str, Any]:
    """Evaluations (step, loss, live units, minutes) and the training rate of one run."""
    records = read_metrics(path)
    seconds = {r["step"]: r["elapsed_s"] for r in records if r["kind"] == "train"}
    rates = [r["positions_per_s"] for r in records if r["kind"] == "train"]
    evaluations = []
    for record in records:
        if record["kind"] == "eval":
            step = record["step"]
            known = [s for s in seconds if s <= step]
            evaluations.append(
                {
                    "step": step,
                    "val_loss": record["val_loss"],
                    "live_l2_units": record.get("live_l2_units"),
                    "minutes": seconds[max(known)] / 60 if known else None,
                }
            )
    return {"metrics": str(path), "evaluations": evaluations, "last_positions_per_s": rates[-1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("runs", nargs="+", help="NAME=METRICS.jsonl")
    args = parser.parse_args()
    runs = {}
    for item in args.runs:
        name, _, path = item.rpartition("=")
        if not path:
            parser.error(f"expected NAME=METRICS.jsonl, got {item!r}")
        runs[name] = summarise(Path(path))
    first = next(iter(runs.values()))
    base = {e["step"]: e["val_loss"] for e in first["evaluations"]}
    for run in runs.values():
        run["ratio_to_first"] = {
            e["step"]: round(e["val_loss"] / base[e["step"]], 4)
            for e in run["evaluations"]
            if e["step"] in base
        }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "curves.json").write_text(json.dumps(runs, indent=1) + "\n")
    figure, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for name, run in runs.items():
        points = run["evaluations"]
        axes[0].plot([p["step"] for p in points], [p["val_loss"] for p in points], label=name)
        timed = [p for p in points if p["minutes"] is not None]
        axes[1].plot([p["minutes"] for p in timed], [p["val_loss"] for p in timed], label=name)
    axes[0].set_xlabel("step (16,384 positions)")
    axes[1].set_xlabel("training minutes (one CPU thread)")
    axes[0].set_ylabel("held-out loss")
    for axis in axes:
        axis.set_yscale("log")
        axis.grid(alpha=0.3)
        axis.legend()
    figure.suptitle("NNUE accumulator width: same data, seed and recipe")
    figure.tight_layout()
    figure.savefig(args.out / "curves.png", dpi=110)
    print(json.dumps({name: run["evaluations"][-1] for name, run in runs.items()}))


if __name__ == "__main__":
    main()
