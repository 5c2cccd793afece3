"""Tabulate the encoder study of issue 28: sparse encoders of D = 32/64/128, and the GAB
transformer at the sparse encoder's training minutes, on one held-out split and at 10+0.1.

    .venv/bin/python benchmarks/encoder_study_report.py --out benchmarks/results/encoder_study

Each run is a ``latentchess train`` output folder (its ``metrics.jsonl``: the last training
line's elapsed time and rate, the final held-out evaluation on the run's own split; every run
here trained on the same cache, so the split is the same 20,000 positions) and a
``benchmarks/latent_tc.sh`` results folder (``elo.json``: the planner at 10+0.1 against
``UCI_Elo`` 1350 and the Skill-0 rung). The commands that made both are in the README.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).parents[1]
RUNS = (  # label, training run, latent_tc results folder, the engine's width
    ("sparse-32", "runs/sparse-encoder/sparse-32", "sparse-32-w8", 8),
    ("sparse-64 (shipped)", "runs/sparse-encoder/sparse-64", "sparse-64-w8", 8),
    ("sparse-128", "runs/sparse-encoder/sparse-128", "sparse-128-w8", 8),
    ("gab-micro, 45 min of steps", "runs/equal-minutes/gab-micro-45min", "gab-micro-45min", 3),
    ("gab-micro (142 min, was shipped)", None, "gab-default", 3),
)
GAB_SHIPPED = {  # the shipped GAB model's card (its own held-out split of the same positions)
    "steps": 12720,
    "minutes": 142.3,
    "spearman": 0.881,
    "pair_accuracy": 0.908,
    "parameters": 295552,
}


def _run(folder: Path) -> dict[str, float]:
    lines = [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines() if x]
    train = [x for x in lines if x.get("kind") == "train"]
    final = next(x for x in reversed(lines) if x.get("kind") == "final")
    config = json.loads((folder / "model" / "config.json").read_text())
    return {
        "steps": final["step"],
        "minutes": round(train[-1]["elapsed_s"] / 60, 1),
        "spearman": round(final["spearman"], 4),
        "pair_accuracy": round(final["pair_accuracy"], 4),
        "heldout_loss": round(final["heldout_loss"], 4),
        "dim": config["encoder"].get("dim"),
    }


def _elo(folder: Path) -> dict[str, float] | None:
    path = folder / "elo.json"
    if not path.exists():
        return None
    fit = json.loads(path.read_text())
    (row,) = [r for r in fit["ratings"] if r["name"].startswith("latent")]
    return {"elo": round(row["elo"]), "lower": round(row["lower"]), "upper": round(row["upper"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows = []
    for label, run, tc, width in RUNS:
        row: dict[str, object] = {"model": label, "width": width}
        row.update(_run(ROOT / run) if run else GAB_SHIPPED)
        row["elo_10+0.1"] = _elo(ROOT / "benchmarks/results/latent_tc" / tc)
        rows.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "study.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    lines = [
        "| model | steps | training minutes | held-out Spearman | pair accuracy "
        "| Elo at 10+0.1 [95%] (width) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        elo = r["elo_10+0.1"]
        shown = "" if elo is None else f"{elo['elo']} [{elo['lower']}, {elo['upper']}]"  # type: ignore[index]
        lines.append(
            f"| {r['model']} | {r['steps']:,} | {r['minutes']} | {r['spearman']:.3f} "
            f"| {r['pair_accuracy']:.3f} | {shown} ({r['width']}) |"
        )
    (args.out / "study.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
