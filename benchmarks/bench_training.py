"""Training throughput: views per second of a full SupCon step, per model config and precision.

A step is what ``latentchess train`` does per batch: embed the views (forward), the SupCon loss over
the batch, backward, and an SGD (momentum) update. Precisions: ``fp32`` and ``bf16`` (float32
weights under ``torch.autocast(bfloat16)``; the loss stays float32). Each rate is also expressed
as achieved model GFLOP/s (3x the forward FLOPs per view: forward + backward) divided by the rate
of a large square GEMM of the same dtype measured in the same process, so results from different
machines compare. The batch is the training default (128 anchors x 6 views) unless one step would
take longer than ``--step-seconds``; then fewer anchors are used (CPUs without native bfloat16
emulate it ~50-100x slower) and the table says so.

With ``--precision-check DATA`` it also compares, per config, the loss and the gradient of one
real training batch in fp32 and under bf16 autocast (does bf16 step the same way?).

Usage::

    .venv/bin/python benchmarks/bench_training.py            # tiny, mini, small x fp32, bf16
    .venv/bin/python benchmarks/bench_training.py --quick    # tiny, mini; shorter timing
    .venv/bin/python benchmarks/bench_training.py --precision-check runs/sf15-cache

Writes ``benchmarks/results/training.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from _gemm import gemm_gflops
from latentchess.models import MODEL_CONFIGS, Encoder, EncoderConfig
from latentchess.models.inference import cpu_has_fast_bf16
from latentchess.provenance import git_commit as _git_commit
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


def time_steps(
    config: EncoderConfig, precision: str, views: int, steps: int
) -> tuple[float, list[float]]:
    """Run ``steps`` training steps of ``views`` positions; returns (first, later step times)."""
    torch.manual_seed(0)
    encoder = Encoder(config).train()
    optimizer = torch.optim.SGD(encoder.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    tokens = torch.randint(0, config.vocab_size, (views, config.seq_len), dtype=torch.uint8)
    labels = torch.rand(views)
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
    probe_views = 2
    _, (probe,) = time_steps(config, precision, probe_views, 2)  # after warm-up; sizes the batch
    per_view = probe / probe_views
    anchors = int(min(max_anchors, step_seconds / (per_view * VIEWS_PER_ANCHOR)))
    if anchors >= 1:
        views = anchors * VIEWS_PER_ANCHOR
        _, later = time_steps(config, precision, views, 1 + repeats)
    else:  # even one anchor's step exceeds the cap (emulated bf16): report the probe step
        views, later = probe_views, [probe]
    best = min(later)
    views_per_s = views / best
    return {
        "config": name,
        "params": sum(p.numel() for p in Encoder(config).parameters()),
        "precision": precision,
        "anchors": anchors,
        "views_per_step": views,
        "reduced_batch": anchors < max_anchors,
        "probe_only": anchors < 1,
        "step_seconds_best": best,
        "step_seconds_median": sorted(later)[len(later) // 2],
        "views_per_s": views_per_s,
        "model_gflops": views_per_s * 3 * forward_flops(config) / 1e9,
    }


def precision_check(data: Path, name: str, anchors: int) -> dict[str, Any]:
    """Loss and gradient of one real batch in fp32 and under bf16 autocast, same weights.

    The batch is drawn as in training (anchors plus 5 positives within 0.05) from ``data``; the
    encoder is freshly initialised (seed 0) without dropout, the regime where embeddings are most
    alike and bfloat16's 8-bit mantissa matters most. Reports both losses and the cosine between
    the two flattened gradients (1.0: bf16 steps the same way).
    """
    import numpy as np

    from latentchess.models import Encoder
    from latentchess.training.data import open_training_data
    from latentchess.training.positives import PositiveSampler

    cache = open_training_data(data, Path(tempfile.mkdtemp(prefix="bench-cache-")))
    labels = np.asarray(cache.win_prob_white)
    rng = np.random.default_rng(0)
    anchor_rows = rng.choice(len(labels), size=anchors, replace=False)
    positives = PositiveSampler(labels, 0.05).sample(anchor_rows, VIEWS_PER_ANCHOR - 1, rng)
    views = np.concatenate([anchor_rows[:, None], positives], axis=1).reshape(-1)
    tokens = torch.from_numpy(np.asarray(cache.tokens[views]))
    view_labels = torch.from_numpy(labels[views])
    torch.manual_seed(0)
    config = dataclasses.replace(MODEL_CONFIGS[name], dropout=0.0)
    encoder = Encoder(config).train()
    out: dict[str, Any] = {"config": name, "views": len(views), "data": str(data)}
    grads = {}
    for precision in ("fp32", "bf16"):
        encoder.zero_grad(set_to_none=True)
        tick = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            z = encoder(tokens)
        loss = supcon_loss(z.float(), view_labels)
        loss.backward()
        out[f"loss_{precision}"] = float(loss.detach())
        out[f"seconds_{precision}"] = time.perf_counter() - tick
        grads[precision] = torch.cat([p.grad.flatten() for p in encoder.parameters()]).double()
    out["grad_cosine"] = float(
        torch.nn.functional.cosine_similarity(grads["fp32"], grads["bf16"], dim=0)
    )
    out["grad_norm_ratio"] = float(grads["bf16"].norm() / grads["fp32"].norm())
    print(f"precision check: {out}", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny and mini, fewer repeats")
    parser.add_argument("--configs", nargs="+", default=None, help="default: tiny mini small")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: on a CPU shared with other work, more threads than idle "
        "cores make every step wait on descheduled threads, seconds per step)",
    )
    parser.add_argument("--step-seconds", type=float, default=None, help="cap on one step")
    parser.add_argument("--precision-check", type=Path, default=None, metavar="DATA")
    parser.add_argument("--precision-check-anchors", type=int, default=16)
    parser.add_argument("--precision-check-configs", nargs="+", default=["tiny", "mini"])
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
    checks = []
    if args.precision_check is not None:
        for name in args.precision_check_configs:
            checks.append(precision_check(args.precision_check, name, args.precision_check_anchors))
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
        "precision_check": checks,
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
        reduced = " (probe)" if r["probe_only"] else " (reduced)" if r["reduced_batch"] else ""
        speedup = f"{r['speedup_vs_fp32']:.2f}" if "speedup_vs_fp32" in r else ""
        lines.append(
            f"| {r['config']} | {r['params'] / 1e6:.2f}M | {r['precision']} | "
            f"{r['views_per_step']}{reduced} | {r['views_per_s']:.1f} | {r['model_gflops']:.2f} | "
            f"{r['gemm_ratio']:.2f} | {speedup} |"
        )
    if doc.get("precision_check"):
        lines += [
            "",
            "Precision check: one real batch (anchors + 5 positives within 0.05), fresh encoder "
            "(seed 0, no dropout), loss and gradient in fp32 and under bf16 autocast:",
            "",
            "| config | views | loss fp32 | loss bf16 | gradient cosine | bf16/fp32 grad norm |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for c in doc["precision_check"]:
            lines.append(
                f"| {c['config']} | {c['views']} | {c['loss_fp32']:.4f} | {c['loss_bf16']:.4f} | "
                f"{c['grad_cosine']:.4f} | {c['grad_norm_ratio']:.3f} |"
            )
    lines += [
        "",
        "views/s: best of the timed steps (the first step is warm-up). One view is one "
        "embedded position; the training default is 768 views/step (128 anchors x 6). "
        "'(reduced)': fewer anchors so that a step fits the time cap; '(probe)': even one "
        "anchor's step exceeds the cap, so the rate is that of a single 2-view step.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
