"""The metrics log of a run (``metrics.jsonl``) and its training-curve plot."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["MetricsLog", "read_metrics", "plot_training_curves"]


class MetricsLog:
    """Appends one JSON object per line; on resume, drops records from after the checkpoint.

    Args:
        path: the ``metrics.jsonl`` file.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def truncate_after(self, step: int) -> None:
        """Remove records of steps beyond ``step`` (logged after the checkpoint being resumed)."""
        if not self.path.exists():
            return
        kept = [r for r in read_metrics(self.path) if int(r.get("step", 0)) <= step]
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in kept))
        os.replace(tmp, self.path)

    def write(self, record: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as handle:
            handle.write(json.dumps(dict(record)) + "\n")


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """All complete records of a ``metrics.jsonl`` (a torn last line from a kill is skipped)."""
    records = []
    for line in Path(path).read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def plot_training_curves(metrics_path: str | Path, png_path: str | Path) -> Path:
    """Plot training loss, held-out loss, Spearman and pair accuracy against the step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = read_metrics(metrics_path)
    train = [r for r in records if r.get("kind") == "train"]
    evals = [r for r in records if r.get("kind") == "eval"]
    fig, (ax_loss, ax_rank) = plt.subplots(1, 2, figsize=(11, 4))
    ax_loss.plot([r["step"] for r in train], [r["loss"] for r in train], label="train", lw=1)
    ax_loss.plot(
        [r["step"] for r in evals], [r["heldout_loss"] for r in evals], "o-", label="held-out"
    )
    ax_loss.set(xlabel="step", ylabel="SupCon loss", title="loss")
    ax_loss.legend()
    for key, label in (("spearman", "Spearman(cos, p)"), ("pair_accuracy", "pair accuracy")):
        ax_rank.plot([r["step"] for r in evals], [r[key] for r in evals], "o-", label=label)
    ax_rank.set(xlabel="step", title="held-out ordering by the advantage axis")
    ax_rank.legend()
    fig.tight_layout()
    png_path = Path(png_path)
    fig.savefig(png_path, dpi=110)
    plt.close(fig)
    return png_path
