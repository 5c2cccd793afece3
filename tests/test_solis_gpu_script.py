"""benchmarks/solis_gpu.sh: the probe plans a schedule once, and later calls resume it unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from training_fixtures import synthetic_cache

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "solis_gpu.sh"
SMALL = ["--positives", "3", "--holdout-fraction", "0.1", "--eval-positions", "64"]
SMALL += ["--axis-positions", "16", "--precision", "fp32", "--seed", "0"]


def _call(cache: Path, out: Path, minutes: str, **env: str) -> subprocess.CompletedProcess[str]:
    settings = {
        **os.environ,
        "LC": f"{sys.executable} -m latentchess",
        "DEVICE": "cpu",
        "THREADS": "1",
        "BATCH": "8",
        "PROBE_MINUTES": "0.02",
        **env,
    }
    return subprocess.run(
        ["bash", str(SCRIPT), str(cache), str(out), "micro", minutes, *SMALL],
        env=settings,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _metrics(out: Path) -> list[dict[str, object]]:
    lines = (out / "main" / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line]


def test_probe_plans_once_and_later_calls_resume(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    synthetic_cache(cache, rows=800)
    out = tmp_path / "run"
    first = _call(cache, out, "0.001")  # the budget runs out after the first step
    assert first.returncode == 0, first.stderr
    plan = json.loads((out / "plan.json").read_text())
    assert plan["batch_size"] == 8 and plan["config"] == "micro"
    assert plan["steps"] >= 200  # the floor: the probe measured a positive rate
    assert (out / "probe" / "metrics.jsonl").is_file()
    stopped = _metrics(out)[-1]
    assert stopped["kind"] == "final" and 0 < int(stopped["step"]) < plan["steps"]

    # A second call keeps the plan (TOTAL_STEPS applies only to a new run) and finishes it.
    second = _call(cache, out, "5", TOTAL_STEPS="7")
    assert second.returncode == 0, second.stderr
    assert json.loads((out / "plan.json").read_text()) == plan
    records = _metrics(out)
    assert any(r["kind"] == "start" and r["resumed"] for r in records)
    assert records[-1]["kind"] == "final" and records[-1]["step"] == plan["steps"]
    assert (out / "main" / "model" / "model.safetensors").is_file()


def test_total_steps_skips_the_probe(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    synthetic_cache(cache, rows=800)
    out = tmp_path / "run"
    done = _call(cache, out, "5", TOTAL_STEPS="6")
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "plan.json").read_text())["steps"] == 6
    assert not (out / "probe").exists()
    assert _metrics(out)[-1]["step"] == 6
