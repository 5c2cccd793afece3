"""Before/after check of a training-loop refactor: fixed-seed SupCon runs give identical numbers.

Runs the same tiny fixed-seed ``latentchess.training.train`` runs (the test suite's synthetic
cache and micro encoder, fp32 and bf16, one thread) on the source tree of git revision ``--base``
and on this checkout, each in its own process, and compares every training loss, learning rate,
held-out metric and the SHA-256 of the written weights. Four runs: uninterrupted; stopped by
SIGTERM at step 5 and resumed; killed (KeyboardInterrupt, no checkpoint of its own) at step 6 and
resumed from step 4; bf16 for 4 steps. Key order of JSON records is not compared.

    .venv/bin/python benchmarks/loop_equivalence.py --base 050c888
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "loop_equivalence.json"


def _runs() -> dict[str, Any]:
    """The fixed-seed runs, in this process (its ``latentchess`` is whichever is importable)."""
    import torch

    torch.set_num_threads(1)
    from latentchess.training.trainer import train
    from training_fixtures import micro_config, synthetic_cache

    def term(step: int) -> None:
        if step == 5:
            os.kill(os.getpid(), signal.SIGTERM)

    def kill(step: int) -> None:
        if step == 6:
            raise KeyboardInterrupt

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        synthetic_cache(cache)
        for name in ("plain", "signal", "killed", "bf16"):
            run = Path(tmp) / name
            if name == "signal":
                first = train(micro_config(cache, run), on_step=term)
                out["signal_first"] = [first.stop_reason, first.step]
                result = train(micro_config(cache, run))
            elif name == "killed":
                with contextlib.suppress(KeyboardInterrupt):
                    train(micro_config(cache, run, checkpoint_every=4), on_step=kill)
                result = train(micro_config(cache, run, checkpoint_every=4))
            elif name == "bf16":
                result = train(micro_config(cache, run, precision="bf16", steps=4))
            else:
                result = train(micro_config(cache, run))
            lines = (run / "metrics.jsonl").read_text().splitlines()
            records = [json.loads(line) for line in lines]
            keep = ("kind", "step", "loss", "lr", "heldout_loss", "spearman", "pair_accuracy")
            keep += ("calibration_log_loss",)
            assert result.model_dir is not None
            weights = (result.model_dir / "model.safetensors").read_bytes()
            out[name] = {
                "records": [
                    {k: r[k] for k in keep if k in r}
                    for r in records
                    if r["kind"] in ("train", "eval", "final")
                ],
                "weights_sha256": hashlib.sha256(weights).hexdigest(),
                "stop_reason": result.stop_reason,
                "resumed_from": result.resumed_from,
                "precision": result.precision,
                "metrics": result.metrics,
            }
    return out


def _in_subprocess(src: Path, tests: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src), "LATENTCHESS_PRECISION_CACHE": "0"}
    code = f"import sys, json; sys.path.insert(0, {str(tests)!r}); sys.path.insert(0, "
    code += f"{str(Path(__file__).parent)!r}); import loop_equivalence as m; "
    code += "print(json.dumps(m._runs()))"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="git revision of the 'before' code")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "base.tar"
        with archive.open("wb") as handle:
            subprocess.run(
                ["git", "-C", str(REPO), "archive", args.base, "src", "tests"],
                stdout=handle,
                check=True,
            )
        with tarfile.open(archive) as tar:
            tar.extractall(Path(tmp) / "base", filter="data")
        before = _in_subprocess(Path(tmp) / "base" / "src", Path(tmp) / "base" / "tests")
    after = _in_subprocess(REPO / "src", REPO / "tests")
    identical = before == after
    report = {
        "base": args.base,
        "identical": identical,
        "load_1min": os.getloadavg()[0],
        "before": before,
        "after": after,
    }
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")
    for name in ("plain", "signal", "killed", "bf16"):
        losses = [round(r["loss"], 6) for r in after[name]["records"] if r["kind"] == "train"]
        print(f"{name:7} {after[name]['weights_sha256'][:16]} losses {losses}")
    print(f"identical before/after: {identical} -> {RESULTS}")
    if not identical:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
