"""Inference speed and fidelity of the encoder per config x path x batch size x threads.

Paths:
    torch-fp32           LatentModel(precision="fp32"): float32, PyTorch's fused encoder-layer
                         inference kernels.
    torch-bf16           LatentModel(precision="bf16"): bfloat16 weights (CPU).
    torch-bf16-autocast  float32 weights under torch.autocast(cpu, bfloat16).
    ort-fp32             ONNX Runtime on the exported float32 graph.
    ort-int8             ONNX Runtime on the dynamically quantised graph (per-channel int8
                         weights, 7-bit range); what LatentModel(precision="int8") runs.

Every throughput is also given relative to a GEMM measured in the same process with the same
thread count: achieved model GFLOP/s divided by the GEMM's GFLOP/s (a 1024 x 1024 float32 GEMM
timed interleaved with each row's paths, so background load affects both; the bfloat16 GEMM once
up front). Fidelity is the cosine between each path's embedding and the float32 one on real
positions (``../shared/data`` sample when present, else random games), with a random model
whose layers are initialised independently (random init is fine for speed; fidelity on a random
net is a stand-in for a trained one).

Timing takes the best of several short interleaved rounds, so background load on a shared machine
costs less accuracy. Usage::

    .venv/bin/python benchmarks/bench_inference.py            # full run
    .venv/bin/python benchmarks/bench_inference.py --quick    # tiny + mini, fewer batch sizes
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import platform
import random
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import chess
import numpy as np
import torch

from _gemm import gemm_gflops
from latentchess.encoding import tokenize_batch
from latentchess.models import MODEL_CONFIGS, Encoder, EncoderConfig, LatentModel
from latentchess.models.inference import cpu_has_fast_bf16, resolve_precision

REPO = Path(__file__).resolve().parents[1]
SHARED_SAMPLE = Path(__file__).resolve().parents[2] / "shared/data/sf15-d9-eco-selfplay.csv.gz"
PATHS = ("torch-fp32", "torch-bf16", "torch-bf16-autocast", "ort-fp32", "ort-int8")
FIDELITY_THRESHOLD = 0.999
ROW_GEMM_SIZE = 1024
Runner = Callable[[np.ndarray], np.ndarray]


def model_flops(c: EncoderConfig) -> float:
    """Multiply-add FLOPs (2 per MAC) of one forward pass for one position."""
    s = c.seq_len + 1  # CLS + 77 tokens
    per_layer = (
        2 * s * c.hidden * 3 * c.hidden  # QKV projection
        + 2 * 2 * s * s * c.hidden  # scores and weighted sum
        + 2 * s * c.hidden * c.hidden  # output projection
        + 2 * 2 * s * c.hidden * c.mlp  # feed-forward
    )
    return float(c.layers * per_layer + 2 * c.hidden * c.dim)


def sample_positions(n: int) -> tuple[np.ndarray, str]:
    """``(n, 77)`` tokens of real positions and where they came from."""
    if SHARED_SAMPLE.is_file():
        fens = []
        with gzip.open(SHARED_SAMPLE, "rt") as f:
            for i, line in enumerate(f):
                if i % 97 == 0:  # spread over many games
                    fens.append(line.split(",", 1)[0])
                    if len(fens) == n:
                        break
        return tokenize_batch(fens), str(SHARED_SAMPLE)
    rng = random.Random(0)
    boards, board = [], chess.Board()
    while len(boards) < n:
        moves = list(board.legal_moves)
        if not moves or board.ply() > 150:
            board = chess.Board()
            continue
        board.push(rng.choice(moves))
        boards.append(board.copy(stack=False))
    return tokenize_batch(boards), "random games (python-chess)"


def random_encoder(config: EncoderConfig, seed: int = 0) -> Encoder:
    """A random encoder whose layers are initialised independently (not copies of one)."""
    torch.manual_seed(seed)
    encoder = Encoder(config)
    for layer in encoder.layers.layers:
        layer.self_attn._reset_parameters()
        layer.linear1.reset_parameters()
        layer.linear2.reset_parameters()
    return encoder.eval()


def build_runners(
    encoder: Encoder, paths: list[str], threads: int, workdir: Path
) -> dict[str, Runner]:
    """One callable per path: ``(B, 77)`` uint8 -> ``(B, D)`` float32 unit embeddings."""
    axis = np.ones(encoder.config.dim, dtype=np.float32)
    runners: dict[str, Runner] = {}
    for path in paths:
        if path in ("torch-fp32", "torch-bf16"):
            model = LatentModel.from_encoder(
                copy.deepcopy(encoder),
                axis,
                precision=path.removeprefix("torch-"),
                threads=threads,  # explicit: the default picks threads by batch size
            )
            runners[path] = lambda t, m=model: m.embed_tokens(t, batch_size=len(t) or 1)
        elif path == "torch-bf16-autocast":
            net = copy.deepcopy(encoder).eval()

            def autocast(t: np.ndarray, net: Encoder = net) -> np.ndarray:
                with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
                    z = net(torch.from_numpy(t).long())
                return torch.nn.functional.normalize(z.float(), dim=-1).numpy()

            runners[path] = autocast
        elif path.startswith("ort-"):
            from latentchess.models.export import export_onnx, onnx_session

            file = workdir / f"{path}.onnx"
            if not file.exists():  # exported once per config, reused for each thread count
                export_onnx(encoder, file, int8=path == "ort-int8")
            session = onnx_session(file, threads=threads)

            def ort(t: np.ndarray, s: Any = session) -> np.ndarray:
                z = s.run(None, {"tokens": t})[0]
                return z / np.linalg.norm(z, axis=1, keepdims=True)

            runners[path] = ort
        else:
            raise ValueError(f"unknown path {path!r}; choose from {list(PATHS)}")
    return runners


def _embed_for(run: Runner, tokens: np.ndarray, seconds: float) -> np.ndarray:
    """Embed ``tokens`` in chunks of 32, stopping early after ``seconds`` (slow paths)."""
    chunks, start = [], time.perf_counter()
    for i in range(0, len(tokens), 32):
        chunks.append(run(np.ascontiguousarray(tokens[i : i + 32])))
        if time.perf_counter() - start > seconds:
            break
    return np.concatenate(chunks)


def _gemm_round(a: torch.Tensor, seconds: float) -> float:
    """GFLOP/s of ``a @ a`` (float32) over ``seconds``: the per-row reference rate."""
    calls, start = 0, time.perf_counter()
    while calls < 1 or time.perf_counter() - start < seconds:
        a @ a
        calls += 1
    return calls * 2 * a.shape[0] ** 3 / (time.perf_counter() - start) / 1e9


def throughput(run: Runner, tokens: np.ndarray, seconds: float) -> float:
    """Positions per second over at least ``seconds`` (and at least one call)."""
    calls, start = 0, time.perf_counter()
    while calls < 1 or time.perf_counter() - start < seconds:
        run(tokens)
        calls += 1
    return calls * len(tokens) / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny + mini, 3 batch sizes")
    parser.add_argument("--configs", default="tiny,mini,small")
    parser.add_argument("--batches", default="1,8,32,128,512")
    parser.add_argument("--threads", default="1,2", help="torch/ORT intra-op thread counts")
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds, best counts")
    parser.add_argument("--seconds", type=float, default=0.4, help="per measurement")
    parser.add_argument("--fidelity-positions", type=int, default=512)
    parser.add_argument(
        "--max-call-seconds",
        type=float,
        default=8.0,
        help="skip a path at a batch size when its previous rate predicts calls this long",
    )
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    parser.add_argument(
        "--render", type=Path, metavar="JSON", help="only rewrite inference.md from a JSON result"
    )
    args = parser.parse_args(argv)
    if args.render is not None:
        report = json.loads(args.render.read_text())
        _write_markdown(args.out / "inference.md", _markdown(report))
        return 0
    if args.quick:
        args.configs, args.batches, args.rounds, args.seconds = "tiny,mini", "1,32,128", 2, 0.25
    configs = [MODEL_CONFIGS[name] for name in args.configs.split(",")]
    batches = sorted(int(b) for b in args.batches.split(","))
    thread_counts = [int(t) for t in args.threads.split(",")]
    paths = args.paths.split(",")
    warnings.filterwarnings("ignore")
    import logging

    logging.getLogger().setLevel(logging.ERROR)  # onnxruntime.quantization's advice

    tokens, source = sample_positions(max(args.fidelity_positions, max(batches)))
    report: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", "benchmarks/bench_inference.py", *sys.argv[1:]]),
        "machine": {
            "cpu": _cpu_name(),
            "cores": os.cpu_count(),
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "fast_bf16": cpu_has_fast_bf16(),
            "auto_precision_cpu": resolve_precision("auto", torch.device("cpu")),
            "torch": torch.__version__,
            "python": platform.python_version(),
            "loadavg_start": os.getloadavg(),
        },
        "positions": source,
        "max_call_seconds": args.max_call_seconds,
        "gemm": [],
        "fidelity": [],
        "speed": [],
    }
    for threads in thread_counts:
        torch.set_num_threads(threads)
        (fp32, n32), (bf16, n16) = (
            gemm_gflops(d, 2048, 1.0) for d in (torch.float32, torch.bfloat16)
        )
        report["gemm"].append(
            {
                "threads": threads,
                "fp32_gflops": fp32,
                "fp32_size": n32,
                "bf16_gflops": bf16,
                "bf16_size": n16,
            }
        )
        print(f"threads={threads} GEMM fp32 {fp32:.1f} (n={n32}) bf16 {bf16:.2f} (n={n16}) GFLOP/s")
    last_rate: dict[tuple[str, int, str], float] = {}
    gemm_a = torch.randn(ROW_GEMM_SIZE, ROW_GEMM_SIZE)
    for config in configs:
        encoder = random_encoder(config)
        params = encoder.num_parameters()
        flops = model_flops(config)
        with tempfile.TemporaryDirectory() as tmp:
            torch.set_num_threads(max(thread_counts))
            runners = build_runners(encoder, paths, max(thread_counts), Path(tmp))
            fidelity_tokens = tokens[: args.fidelity_positions]
            reference = runners["torch-fp32"](fidelity_tokens) if "torch-fp32" in runners else None
            for path, run in runners.items():
                if reference is None:
                    break
                embeddings = _embed_for(run, fidelity_tokens, seconds=15.0)
                cosine = (embeddings * reference[: len(embeddings)]).sum(axis=1)
                row = {
                    "config": config.name,
                    "path": path,
                    "positions": len(embeddings),
                    "min_cosine": float(cosine.min()),
                    "mean_cosine": float(cosine.mean()),
                    "meets_threshold": bool(cosine.min() >= FIDELITY_THRESHOLD),
                }
                report["fidelity"].append(row)
                print(f"{config.name} {path}: cosine min {row['min_cosine']:.5f}", flush=True)
            for threads in thread_counts:
                torch.set_num_threads(threads)
                runners = build_runners(encoder, paths, threads, Path(tmp))
                gemm = next(g for g in report["gemm"] if g["threads"] == threads)
                for batch in batches:
                    batch_tokens = np.ascontiguousarray(tokens[:batch])
                    # Skip a path whose last batch size predicts overlong calls (emulated bf16).
                    active = {
                        p: r
                        for p, r in runners.items()
                        if batch / last_rate.get((config.name, threads, p), 1e9)
                        < args.max_call_seconds
                    }
                    for path, run in list(active.items()):
                        start = time.perf_counter()
                        run(batch_tokens)  # warm-up, and a hard check on the call time
                        elapsed = time.perf_counter() - start
                        if elapsed > args.max_call_seconds:
                            del active[path]
                            last_rate[(config.name, threads, path)] = batch / elapsed
                    best = dict.fromkeys(active, 0.0)
                    row_gemm = 0.0  # the fp32 GEMM rate under this row's background load
                    for _ in range(args.rounds):
                        row_gemm = max(row_gemm, _gemm_round(gemm_a, args.seconds))
                        for path, run in active.items():
                            best[path] = max(
                                best[path], throughput(run, batch_tokens, args.seconds)
                            )
                    for path, rate in best.items():
                        last_rate[(config.name, threads, path)] = rate
                        achieved = rate * flops / 1e9
                        report["speed"].append(
                            {
                                "config": config.name,
                                "params": params,
                                "path": path,
                                "threads": threads,
                                "batch": batch,
                                "positions_per_s": rate,
                                "model_gflops": achieved,
                                "row_gemm_fp32_gflops": row_gemm,
                                "vs_gemm_fp32": achieved / row_gemm,
                                "vs_gemm_bf16": achieved / gemm["bf16_gflops"],
                            }
                        )
                    summary = " ".join(f"{p}={r:.0f}" for p, r in best.items())
                    print(f"{config.name} t={threads} b={batch}: {summary}", flush=True)
    report["machine"]["loadavg_end"] = os.getloadavg()
    report["fastest_faithful"] = _fastest_faithful(report)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "inference.json").write_text(json.dumps(report, indent=1) + "\n")
    _write_markdown(args.out / "inference.md", _markdown(report))
    print(f"wrote {args.out / 'inference.json'} and {args.out / 'inference.md'}")
    return 0


def _write_markdown(path: Path, markdown: str) -> None:
    """Write ``inference.md``, keeping the section ``bench_precision_cache.py`` appends."""
    kept = ""
    if path.is_file():
        text = path.read_text()
        start = text.find("## `auto` decision cache")
        kept = "\n" + text[start:] if start >= 0 else ""
    path.write_text(markdown.rstrip("\n") + "\n" + kept)


def _fastest_faithful(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Per config, threads and batch: the fastest path whose fidelity meets the threshold."""
    faithful = {(f["config"], f["path"]) for f in report["fidelity"] if f["meets_threshold"]}
    best: dict[tuple[str, int, int], dict[str, Any]] = {}
    for row in report["speed"]:
        key = (row["config"], row["threads"], row["batch"])
        if (row["config"], row["path"]) not in faithful:
            continue
        if key not in best or row["positions_per_s"] > best[key]["positions_per_s"]:
            best[key] = row
    fp32 = {
        (r["config"], r["threads"], r["batch"]): r["positions_per_s"]
        for r in report["speed"]
        if r["path"] == "torch-fp32"
    }
    return [
        {
            "config": c,
            "threads": t,
            "batch": b,
            "path": row["path"],
            "positions_per_s": row["positions_per_s"],
            "vs_torch_fp32": row["positions_per_s"] / fp32[(c, t, b)]
            if (c, t, b) in fp32
            else None,
        }
        for (c, t, b), row in sorted(best.items())
    ]


def _markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        "# Inference benchmark",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, torch {m['torch']} "
        f"(CPU capability {m['torch_cpu_capability']}, native bf16: {m['fast_bf16']}, "
        f'`precision="auto"` on CPU -> {m["auto_precision_cpu"]}). Load average at start '
        f"{m['loadavg_start'][0]:.1f}, at end {m['loadavg_end'][0]:.1f} (other jobs share the "
        "CPU: compare ratios, not absolute rates).",
        "",
        f"Fidelity positions: {report['positions']}.",
        "",
        "## Reference GEMM (n x n, n up to 2048)",
        "",
        "| threads | fp32 GFLOP/s (n) | bf16 GFLOP/s (n) |",
        "|---:|---:|---:|",
    ]
    for g in report["gemm"]:
        lines.append(
            f"| {g['threads']} | {g['fp32_gflops']:.1f} ({g['fp32_size']}) "
            f"| {g['bf16_gflops']:.2f} ({g['bf16_size']}) |"
        )
    lines += [
        "",
        f"## Fidelity (cosine to torch fp32; threshold {FIDELITY_THRESHOLD})",
        "",
        "| config | path | positions | min | mean |",
        "|---|---|---:|---:|---:|",
    ]
    for f in report["fidelity"]:
        mark = "" if f["meets_threshold"] else " (below threshold)"
        lines.append(
            f"| {f['config']} | {f['path']} | {f['positions']} | {f['min_cosine']:.5f}{mark} "
            f"| {f['mean_cosine']:.5f} |"
        )
    lines += [
        "",
        "## Positions per second",
        "",
        "The paths of one row were measured interleaved (best of the rounds), so compare along a "
        "row; rows far apart in time saw different background load.",
        "",
        f"In brackets: model GFLOP/s as a fraction of a {ROW_GEMM_SIZE} x {ROW_GEMM_SIZE} fp32 "
        "GEMM's GFLOP/s measured interleaved in the same row (the JSON also has the fraction of "
        "the bf16 GEMM rate above); '-' = skipped because "
        f"a call took (or the previous batch size predicted) over {report['max_call_seconds']} s.",
        "",
    ]
    paths = list(dict.fromkeys(r["path"] for r in report["speed"]))
    lines += [
        "| config | threads | batch | " + " | ".join(paths) + " |",
        "|---|---:|---:|" + "---:|" * len(paths),
    ]
    rows: dict[tuple[str, int, int], dict[str, dict[str, Any]]] = {}
    for r in report["speed"]:
        rows.setdefault((r["config"], r["threads"], r["batch"]), {})[r["path"]] = r
    for (config, threads, batch), cells in rows.items():
        values = [
            f"{cells[p]['positions_per_s']:.0f} ({cells[p]['vs_gemm_fp32']:.2f})"
            if p in cells
            else "-"
            for p in paths
        ]
        lines.append(f"| {config} | {threads} | {batch} | " + " | ".join(values) + " |")
    lines += [
        "",
        "## Fastest path meeting the fidelity threshold",
        "",
        "| config | threads | batch | path | positions/s | x torch-fp32 |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for f in report["fastest_faithful"]:
        ratio = "-" if f["vs_torch_fp32"] is None else f"{f['vs_torch_fp32']:.2f}"
        lines.append(
            f"| {f['config']} | {f['threads']} | {f['batch']} | {f['path']} | "
            f"{f['positions_per_s']:.0f} | {ratio} |"
        )
    return "\n".join(lines) + "\n"


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


if __name__ == "__main__":
    sys.exit(main())
