"""Inference throughput by batch size, before and after threads were fixed per model.

Before (``--before``, default the commit this change started from), ``LatentModel`` with the
default ``threads=None`` switched PyTorch to one thread for calls of at most 64 positions and back
to the process-wide setting (all cores) for larger ones, on every call; after, the model sets the
thread count once when it is built (one thread for ``threads=None``) and no call changes it. This
script loads the shipped default model at each precision in a fresh process per code version (the
two versions alternate, ``--rounds`` times), and times ``score_tokens`` on batches of 1 to 1024
positions with the defaults a library user gets (``load_model(path, precision=...)``, PyTorch's
default thread count at start). Each process also times a float32 GEMM at its start and end (the
machine's yardstick; the CPU is shared, so compare ratios within a row).

Usage::

    .venv/bin/python benchmarks/bench_batch.py                     # writes benchmarks/results/
    .venv/bin/python benchmarks/bench_batch.py --precisions fp32 --seconds 0.2   # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MODEL = REPO / "src" / "latentchess" / "weights" / "default"
SIZES = (1, 2, 4, 8, 16, 32, 64, 65, 128, 256, 512, 1024)
RESULTS = REPO / "benchmarks" / "results"


def positions(n: int) -> list[str]:
    """``n`` FENs from seeded random games (self-contained: works with either code version)."""
    import random

    import chess

    rng = random.Random(0)
    board, fens = chess.Board(), []
    while len(fens) < n:
        moves = list(board.legal_moves)
        if not moves or board.ply() > 120:
            board = chess.Board()
            continue
        board.push(rng.choice(moves))
        fens.append(board.fen())
    return fens


def worker(precisions: list[str], seconds: float) -> dict[str, Any]:
    """Runs inside one code version's process: rates per precision and batch size."""
    import numpy as np
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _gemm import gemm_gflops
    from latentchess.encoding import tokenize_batch
    from latentchess.models import load_model

    tokens = tokenize_batch(positions(max(SIZES)))
    import latentchess

    out: dict[str, Any] = {"threads": torch.get_num_threads(), "rates": {}}
    out["module"] = latentchess.__file__
    out["gemm_start"] = gemm_gflops(torch.float32, 512, 0.5)[0]
    for precision in precisions:
        model = load_model(MODEL, precision=precision)
        rates = {}
        for size in SIZES:
            batch = np.ascontiguousarray(tokens[:size])
            model.score_tokens(batch)  # warm-up
            best, calls, began = float("inf"), 0, time.perf_counter()
            while calls < 3 or time.perf_counter() - began < seconds:
                tick = time.perf_counter()
                model.score_tokens(batch)
                best = min(best, time.perf_counter() - tick)
                calls += 1
            rates[str(size)] = size / best
        out["rates"][precision] = rates
    out["gemm_end"] = gemm_gflops(torch.float32, 512, 0.5)[0]
    out["threads_after"] = torch.get_num_threads()
    return out


def export(ref: str, into: Path) -> Path:
    """``git archive`` of ``ref``'s ``src`` into ``into``; returns the ``src`` directory."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref, "src"], cwd=REPO, capture_output=True, check=True
    ).stdout
    tar = into / "src.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as handle:
        handle.extractall(into, filter="data")
    return into / "src"


def run_version(src: Path, precisions: list[str], seconds: float) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    env.pop("LATENTCHESS_PRECISION", None)
    command = [sys.executable, __file__, "--worker", "--precisions", ",".join(precisions)]
    command += ["--seconds", str(seconds)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"worker for {src} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(doc: dict[str, Any]) -> str:
    lines = [
        "# Inference throughput by batch size: threads per call (before) vs per model (after)",
        "",
        f"Command: `{doc['command']}`",
        "",
        f"Machine: {doc['machine']}; torch default threads {doc['threads']} (after loading: "
        f"{doc['threads_after']}); load average "
        f"{doc['load_start']} before, {doc['load_end']} after (shared machine: compare within a "
        "row). Model: the shipped default (micro). Rates are positions/s, best call of each "
        f"size over two alternating runs per version; before = `{doc['before']}`.",
        "",
        "Float32 GEMM yardstick (GFLOP/s, 512 x 512, start/end of each process): "
        + ", ".join(f"{v} {g['gemm_start']:.0f}/{g['gemm_end']:.0f}" for v, g in doc["gemm"]),
        "",
    ]
    for precision in doc["precisions"]:
        before, after = doc["best"]["before"][precision], doc["best"]["after"][precision]
        lines += [
            f"## {precision}",
            "",
            "| batch | before pos/s | after pos/s | after / before | before / before@64 "
            "| after / after@64 |",
            "|---:|---:|---:|---:|---:|---:|",
        ]
        for size in SIZES:
            b, a = before[str(size)], after[str(size)]
            lines.append(
                f"| {size} | {b:,.0f} | {a:,.0f} | {a / b:.2f} | {b / before['64']:.2f} "
                f"| {a / after['64']:.2f} |"
            )
        worst_b = min(before[str(s)] for s in SIZES if s > 64) / before["64"]
        worst_a = min(after[str(s)] for s in SIZES if s > 64) / after["64"]
        lines += [
            "",
            f"Worst rate above 64 positions relative to 64: before {worst_b:.2f}, after "
            f"{worst_a:.2f}.",
            "",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--before", default="bde4f42", help="git ref of the old code")
    parser.add_argument("--precisions", default="fp32,int8,bf16")
    parser.add_argument("--seconds", type=float, default=0.4, help="timing per batch size")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "batch_throughput")
    args = parser.parse_args()
    precisions = args.precisions.split(",")
    if args.worker:
        print(json.dumps(worker(precisions, args.seconds)))
        return
    load_start = [round(x, 2) for x in os.getloadavg()]
    best: dict[str, dict[str, dict[str, float]]] = {"before": {}, "after": {}}
    gemm: list[tuple[str, dict[str, float]]] = []
    threads = None
    threads_after: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sources = {"before": export(args.before, Path(tmp)), "after": REPO / "src"}
        for round_number in range(args.rounds):
            for version in ("before", "after"):
                got = run_version(sources[version], precisions, args.seconds)
                threads = got["threads"]
                threads_after[version] = got["threads_after"]
                assert got["module"].startswith(str(sources[version])), got["module"]
                gemm.append((version, {k: got[k] for k in ("gemm_start", "gemm_end")}))
                for precision, rates in got["rates"].items():
                    mine = best[version].setdefault(precision, {})
                    for size, rate in rates.items():
                        mine[size] = max(mine.get(size, 0.0), rate)
                print(f"round {round_number + 1}/{args.rounds} {version} done", file=sys.stderr)
    import torch

    doc = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"torch {torch.__version__}, native bf16 {_native_bf16()}",
        "threads": threads,
        "threads_after": threads_after,
        "load_start": load_start,
        "load_end": [round(x, 2) for x in os.getloadavg()],
        "before": args.before,
        "precisions": precisions,
        "gemm": gemm,
        "best": best,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(doc, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(report(doc))
    print(report(doc))


def _native_bf16() -> bool:
    from latentchess.models.inference import cpu_has_fast_bf16

    return cpu_has_fast_bf16()


if __name__ == "__main__":
    main()
