"""Before/after check of NNUE training moving onto the shared loop: same numbers, same speed.

Runs the same fixed-seed NNUE trainings (random games labelled with the material balance, made
here; one thread) on the source tree of git revision ``--base`` (the NNUE trainer's own loop,
``latentchess.training.nnue.train_nnue``) and on this checkout (the NNUE objective of
``latentchess.training.loop``), each in its own process, and compares every training loss,
learning rate and positions count, every held-out metric, the final metrics and a SHA-256 of the
written weights' tensors. Runs: ``plain`` (target-score loss, two Adam parameter groups, the rate
decaying at epoch boundaries inside the run); ``resumed`` (the same, stopped after 5 steps by its
step count and continued by a second invocation); ``pqr`` (PQR fine-tuning from ``plain``'s model).
Then a speed run (L1 256, batch 1024, 60 steps): positions per second of the training records
after the first, before and after (same machine, one after the other; not identical numbers).

    .venv/bin/python benchmarks/nnue_loop_equivalence.py --base 04950ba
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "nnue_loop_equivalence.json"


def _write_csv(path: Path, games: int, seed: int = 0) -> None:
    """Random games labelled with White's material balance (as tests/test_nnue_training.py)."""
    import chess

    values = {chess.PAWN: 100, chess.KNIGHT: 300, chess.BISHOP: 300, chess.ROOK: 500}
    values[chess.QUEEN] = 900
    rng, rows = random.Random(seed), []
    for _ in range(games):
        board = chess.Board()
        for _ in range(60):
            moves = list(board.legal_moves)
            if not moves or board.is_game_over():
                break
            move = rng.choice(moves)
            material = sum(
                v * (len(board.pieces(t, chess.WHITE)) - len(board.pieces(t, chess.BLACK)))
                for t, v in values.items()
            )
            rows.append(f"{board.fen()},{material},,0.5,{move.uci()},1,")
            board.push(move)
    path.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))


def _runs() -> dict[str, Any]:
    """The fixed-seed runs, in this process (its ``latentchess`` is whichever is importable)."""
    import numpy as np
    import torch
    from safetensors.numpy import load_file

    torch.set_num_threads(1)
    from latentchess.nnue.model import NnueConfig
    from latentchess.training.nnue import NnueTrainConfig

    try:
        from latentchess.training.objectives.nnue import train_nnue
    except ImportError:  # the base revision: the NNUE trainer's own loop
        from latentchess.training.nnue import train_nnue  # type: ignore[attr-defined,no-redef]

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "pos.csv.gz"
        _write_csv(csv, games=40)
        common: dict[str, Any] = {
            "data": (str(csv),),
            "cache": Path(tmp) / "cache",
            "network": NnueConfig(feature_set="ALL", l1=32, l2=8, psqt=True),
            "dense_lr_scale": 0.5,
            "batch_size": 128,
            "epoch_positions": 300,
            "gamma": 0.7,
            "lr": 5e-3,
            "eval_every": 4,
            "checkpoint_every": 100,
            "log_every": 1,
            "threads": 1,
            "device": "cpu",
            "progress": False,
            "holdout_fraction": 0.1,
        }

        def record(run: Path, result: Any) -> dict[str, Any]:
            records = [
                json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()
            ]
            keep = ("kind", "step", "loss", "lr", "positions", "val_loss", "live_l2_units")
            keep += ("val_score_loss",)
            tensors = load_file(str(result.model_dir / "model.safetensors"))
            digest = hashlib.sha256()
            for name in sorted(tensors):  # the tensors, not the file (its layout may vary)
                digest.update(name.encode() + np.ascontiguousarray(tensors[name]).tobytes())
            return {
                "records": [
                    {k: r[k] for k in keep if k in r}
                    for r in records
                    if r["kind"] in ("train", "eval", "final")
                ],
                "weights_sha256": digest.hexdigest(),
                "step": result.step,
                "stop_reason": result.stop_reason,
                "metrics": result.metrics,
            }

        plain = Path(tmp) / "plain"
        result = train_nnue(NnueTrainConfig(out=plain, steps=12, **common))
        out["plain"] = record(plain, result)
        resumed = Path(tmp) / "resumed"
        train_nnue(NnueTrainConfig(out=resumed, steps=5, **common))
        result = train_nnue(NnueTrainConfig(out=resumed, steps=12, **common))
        out["resumed"] = record(resumed, result)
        pqr = Path(tmp) / "pqr"
        tuned = {**common, "loss": "pqr", "init": plain / "model", "cache": Path(tmp) / "pqrc"}
        result = train_nnue(NnueTrainConfig(out=pqr, steps=4, **tuned))
        out["pqr"] = record(pqr, result)

        speed = Path(tmp) / "speed"
        _write_csv(Path(tmp) / "big.csv.gz", games=400, seed=1)
        fast = {**common, "data": (str(Path(tmp) / "big.csv.gz"),), "cache": Path(tmp) / "bigc"}
        fast |= {"network": NnueConfig(l1=256, l2=32), "batch_size": 1024, "eval_every": 0}
        fast |= {"log_every": 10, "epoch_positions": None}
        train_nnue(NnueTrainConfig(out=speed, steps=60, **fast))
        lines = (speed / "metrics.jsonl").read_text().splitlines()
        rates = [json.loads(x)["positions_per_s"] for x in lines if '"train"' in x][1:]
        out["speed_positions_per_s"] = sum(rates) / len(rates)
    return out


def _in_subprocess(src: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    code = f"import sys, json; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
    code += "import nnue_loop_equivalence as m; print(json.dumps(m._runs()))"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="git revision of the 'before' code")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "base.tar"
        with archive.open("wb") as handle:
            subprocess.run(
                ["git", "-C", str(REPO), "archive", args.base, "src"], stdout=handle, check=True
            )
        with tarfile.open(archive) as tar:
            tar.extractall(Path(tmp) / "base", filter="data")
        # The native core is a build product, not in the archive: the base uses this one's.
        for built in (REPO / "src" / "latentchess" / "core").glob("_native*.so"):
            shutil.copy2(built, Path(tmp) / "base" / "src" / "latentchess" / "core" / built.name)
        before = _in_subprocess(Path(tmp) / "base" / "src")
    after = _in_subprocess(REPO / "src")
    names = ("plain", "resumed", "pqr")
    identical = {name: before[name] == after[name] for name in names}
    speed = {
        "before": before.pop("speed_positions_per_s"),
        "after": after.pop("speed_positions_per_s"),
    }
    report = {
        "base": args.base,
        "identical": identical,
        "speed_positions_per_s": speed,
        "load_1min": os.getloadavg()[0],
        "before": before,
        "after": after,
    }
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")
    for name in names:
        losses = [round(r["loss"], 6) for r in after[name]["records"] if r["kind"] == "train"]
        print(f"{name:8} identical {identical[name]} {after[name]['weights_sha256'][:16]} {losses}")
    print(
        f"positions/s (L1 256, batch 1024, 1 thread): before {speed['before']:.0f}, "
        f"after {speed['after']:.0f} -> {RESULTS}"
    )
    if not all(identical.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
