"""Training throughput: views per second of a full SupCon step, per model config and precision.

A step is what ``latentchess train`` does per batch: embed the views (forward), the SupCon loss over
the batch, backward, and an SGD (momentum) update. Precisions: ``fp32`` and ``bf16`` (float32
weights under ``torch.autocast(bfloat16)``; the loss stays float32). Each rate is also expressed
as achieved model GFLOP/s (3x the forward FLOPs per view: forward + backward) divided by the rate
of a large square GEMM of the same dtype measured in the same process, so results from different
machines compare. The batch is the training default (128 anchors x 6 views) unless one step would
take longer than ``--step-seconds``; then fewer anchors are used (CPUs without native bfloat16
emulate it ~50-100x slower) and the table says so.

With ``--loss-check DATA`` it also trains one small encoder for ``--loss-check-steps`` steps in
each precision on the same data (same seed and batches) and records the held-out metrics, to show
whether bf16 autocast harms what is learnt.

Usage::

    .venv/bin/python benchmarks/bench_training.py            # tiny, mini, small x fp32, bf16
    .venv/bin/python benchmarks/bench_training.py --quick    # tiny, mini; shorter timing
    .venv/bin/python benchmarks/bench_training.py --loss-check runs/sf15-cache

Writes ``benchmarks/results/training.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

from latentchess.models import MODEL_CONFIGS, Encoder, EncoderConfig
from latentchess.models.inference import cpu_has_fast_bf16
from latentchess.training.losses import supcon_loss

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
VIEWS_PER_ANCHOR = 6  # 1 + 5 positives


def forward_flops(c: EncoderConfig) -> float:
    """FLOPs (2 per multiply-add) of one forward pass for one position (CLS + 77 tokens)."""
    s = c.seq_len + 1
    per_layer = (
        2 * s * c.hidden * 3 * c.hidden  # Q, K, V projections
        + 2 * 2 * s * s * c.hidden  # attention scores and weighted values
        + 2 * s * c.hidden * c.hidden  # attention output projection
        + 2 * 2 * s * c.hidden * c.mlp  # feed-forward, two matrices
    )
    return float(c.layers * per_layer + 2 * c.hidden * c.dim)


def gemm_gflops(dtype: torch.dtype, size: int, seconds: float) -> tuple[float, int]:
    """Best GFLOP/s of an ``n x n`` matmul (``n`` grows from 256 to ``size`` while fast)."""
    n = 256
    while True:
        a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
        tick = time.perf_counter()
        a @ b
        if n >= size or time.perf_counter() - tick > 0.1:
            break
        n *= 2
    best, start = 0.0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        tick = time.perf_counter()
        a @ b
        best = max(best, 2 * n**3 / (time.perf_counter() - tick) / 1e9)
    return best, n


def time_steps(
    config: EncoderConfig, precision: str, anchors: int, steps: int
) -> tuple[float, list[float]]:
    """Run ``steps`` training steps of ``anchors * 6`` views; returns (first, later step times)."""
    torch.manual_seed(0)
    encoder = Encoder(config).train()
    optimizer = torch.optim.SGD(encoder.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    views = anchors * VIEWS_PER_ANCHOR
    tokens = torch.randint(0, config.vocab_size, (views, config.seq_len), dtype=torch.uint8)
    labels = torch.rand(anchors).repeat_interleave(VIEWS_PER_ANCHOR)  # views share a label
    times = []
    for _ in range(steps):
        tick = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            z = encoder(tokens)
        loss = supcon_loss(z.float(), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - tick)
    return times[0], times[1:]


def measure(
    name: str, precision: str, *, step_seconds: float, repeats: int, max_anchors: int
) -> dict[str, Any]:
    config = MODEL_CONFIGS[name]
    probe, _ = time_steps(config, precision, 1, 1)  # one anchor: sizes the batch
    per_view = probe / VIEWS_PER_ANCHOR
    anchors = int(max(1, min(max_anchors, step_seconds / (per_view * VIEWS_PER_ANCHOR))))
    _, later = time_steps(config, precision, anchors, 1 + repeats)
    best = min(later)
    views_per_s = anchors * VIEWS_PER_ANCHOR / best
    return {
        "config": name,
        "params": sum(p.numel() for p in Encoder(config).parameters()),
        "precision": precision,
        "anchors": anchors,
        "views_per_step": anchors * VIEWS_PER_ANCHOR,
        "reduced_batch": anchors < max_anchors,
        "step_seconds_best": best,
        "step_seconds_median": sorted(later)[len(later) // 2],
        "views_per_s": views_per_s,
        "model_gflops": views_per_s * 3 * forward_flops(config) / 1e9,
    }


def precision_loss_check(data: Path, steps: int, threads: int) -> dict[str, Any]:
    """Train the same small encoder in fp32 and in bf16 autocast; held-out metrics of each."""
    import tempfile

    from latentchess.training.config import TrainConfig
    from latentchess.training.trainer import train

    model = EncoderConfig(name="L1-H32", layers=1, hidden=32, heads=2, mlp=64, dim=32, dropout=0.0)
    out: dict[str, Any] = {"model": model.to_dict(), "steps": steps, "batch_size": 32}
    with tempfile.TemporaryDirectory() as tmp:
        for precision in ("fp32", "bf16"):
            cfg = TrainConfig(
                data=data,
                out=Path(tmp) / precision,
                model=model,
                steps=steps,
                batch_size=32,
                precision=precision,
                threads=threads,
                holdout_max=4096,
                eval_every=0,
                axis_per_side=4096,
                checkpoint_every=10 * steps,
                progress=False,
            )
            result = train(cfg)
            out[precision] = {
                k: result.metrics[k] for k in ("spearman", "pair_accuracy", "heldout_loss")
            }
            out[precision]["seconds"] = result.seconds
            print(f"loss check {precision}: {out[precision]}", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny and mini, fewer repeats")
    parser.add_argument("--configs", nargs="+", default=None, help="default: tiny mini small")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--step-seconds", type=float, default=None, help="cap on one step")
    parser.add_argument("--loss-check", type=Path, default=None, metavar="DATA")
    parser.add_argument("--loss-check-steps", type=int, default=100)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    configs = args.configs or (["tiny", "mini"] if args.quick else ["tiny", "mini", "small"])
    step_seconds = args.step_seconds or (2.0 if args.quick else 6.0)
    repeats = 2 if args.quick else 3

    gemm = {}
    for label, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        rate, n = gemm_gflops(dtype, 2048, 1.0 if args.quick else 3.0)
        gemm[label] = {"gflops": rate, "size": n}
        print(f"GEMM {label} {n}x{n}: {rate:.1f} GFLOP/s", flush=True)
    rows = []
    for name in configs:
        for precision in ("fp32", "bf16"):
            row = measure(
                name, precision, step_seconds=step_seconds, repeats=repeats, max_anchors=128
            )
            row["gemm_ratio"] = row["model_gflops"] / gemm[precision]["gflops"]
            rows.append(row)
            print(
                f"{name:6} {precision}: {row['views_per_s']:8.1f} views/s at "
                f"{row['views_per_step']} views/step, {row['model_gflops']:.1f} GFLOP/s = "
                f"{row['gemm_ratio']:.2f} x GEMM",
                flush=True,
            )
    for name in configs:
        fp32, bf16 = (next(r for r in rows if r["config"] == name and r["precision"] == p)
                      for p in ("fp32", "bf16"))  # fmt: skip
        bf16["speedup_vs_fp32"] = bf16["views_per_s"] / fp32["views_per_s"]
    loss_check = None
    if args.loss_check is not None:
        loss_check = precision_loss_check(args.loss_check, args.loss_check_steps, args.threads)
    document = {
        "command": shlex.join(["python", "benchmarks/bench_training.py", *sys.argv[1:]]),
        "git_commit": _git_commit(),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "cpu_has_fast_bf16": cpu_has_fast_bf16(),
            "torch": torch.__version__,
            "threads": args.threads,
        },
        "gemm": gemm,
        "results": rows,
        "loss_check": loss_check,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "training.json").write_text(json.dumps(document, indent=2) + "\n")
    (args.out / "training.md").write_text(_markdown(document))
    print(f"wrote {args.out / 'training.json'} and .md")
    return 0


def _markdown(doc: dict[str, Any]) -> str:
    machine, gemm = doc["machine"], doc["gemm"]
    lines = [
        "# Training throughput (SupCon step: forward, loss, backward, SGD update)",
        "",
        f"Command: `{doc['command']}` (commit {doc['git_commit']}).",
        f"Machine: {machine['processor']}, {machine['platform']}, torch {machine['torch']}, "
        f"{machine['threads']} thread(s), CPU capability {machine['cpu_capability']}, "
        f"native bf16: {machine['cpu_has_fast_bf16']}.",
        f"GEMM: fp32 {gemm['fp32']['gflops']:.1f} GFLOP/s ({gemm['fp32']['size']}^2), "
        f"bf16 {gemm['bf16']['gflops']:.1f} GFLOP/s ({gemm['bf16']['size']}^2).",
        "",
        "| config | params | precision | views/step | views/s | model GFLOP/s | / GEMM "
        "| bf16 / fp32 |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in doc["results"]:
        reduced = " (reduced)" if r["reduced_batch"] else ""
        speedup = f"{r['speedup_vs_fp32']:.2f}" if "speedup_vs_fp32" in r else ""
        lines.append(
            f"| {r['config']} | {r['params'] / 1e6:.2f}M | {r['precision']} | "
            f"{r['views_per_step']}{reduced} | {r['views_per_s']:.1f} | {r['model_gflops']:.2f} | "
            f"{r['gemm_ratio']:.2f} | {speedup} |"
        )
    check = doc.get("loss_check")
    if check:
        lines += [
            "",
            f"Precision loss check: {check['steps']} steps, batch {check['batch_size']}, "
            "1-layer hidden-32 encoder, same seed and batches:",
            "",
            "| precision | Spearman | pair accuracy | held-out loss | seconds |",
            "|---|---:|---:|---:|---:|",
        ]
        for p in ("fp32", "bf16"):
            r = check[p]
            lines.append(
                f"| {p} | {r['spearman']:.3f} | {r['pair_accuracy']:.3f} | "
                f"{r['heldout_loss']:.3f} | {r['seconds']:.0f} |"
            )
    lines += [
        "",
        "views/s: best of the timed steps (the first step is warm-up). One view is one "
        "embedded position; the training default is 768 views/step (128 anchors x 6). "
        "'(reduced)': fewer anchors so that a step fits the time cap.",
        "",
    ]
    return "\n".join(lines)


def _git_commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


if __name__ == "__main__":
    raise SystemExit(main())
