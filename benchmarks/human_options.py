"""The human model's training options at CPU scale, on held-out players, with paired intervals.

Every run trains ``cf-nano`` (93K parameters) with ``latentchess train chessformer`` for the same
number of steps of the same batch, then ``latentchess eval-human`` scores it on the Lichess games of
``testsuites/lichess_2021-10_sample.pgn`` whose players never appear in the rated-games corpus (the
field's protocol: blitz, skip 10 plies, clock >= 30 s). Each comparison is a paired bootstrap over
those games (:func:`latentchess.evaluation.human.paired_difference`): both models scored the same
positions.

Runs (``--steps`` S, default 1200):

* ``rated``: the rated games only, S steps (the baseline);
* ``pretrain``: S steps on ``--engine-rows`` TCEC positions (the engine's move and score), then
  ``finetune``: S steps on the rated games from it; ``rated-2x``: 2 S steps on the rated games
  (the same total steps);
* ``mix``: S steps on the rated games with the TCEC positions mixed in, share 0.5 decaying to 0;
* ``mirror``: ``--mirror 0.5``; ``time-control``: ``--time-control`` (also scored on every speed).

    .venv/bin/python benchmarks/human_options.py --shared ../shared \
        --out runs/human_options --results benchmarks/results/human_options

Reruns skip what is done (a model directory, an eval JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from latentchess.evaluation.human import paired_difference

LATENTCHESS = [sys.executable, "-m", "latentchess"]


def _run(argv: list[str], log: Path) -> float:
    """Run a latentchess command (output to ``log``); its CPU seconds."""
    print("+ latentchess " + " ".join(argv), flush=True)
    before = os.times()
    with log.open("a") as handle:
        subprocess.run([*LATENTCHESS, *argv], check=True, stdout=handle, stderr=subprocess.STDOUT)
    after = os.times()
    return (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shared", type=Path, default=Path("../shared"))
    p.add_argument("--out", type=Path, default=Path("runs/human_options"))
    p.add_argument("--results", type=Path, default=Path("benchmarks/results/human_options"))
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--engine-rows", type=int, default=200_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", nargs="*", default=None, help="run only these runs")
    args = p.parse_args()
    out, results = args.out, args.results
    out.mkdir(parents=True, exist_ok=True)
    results.mkdir(parents=True, exist_ok=True)
    corpus = args.shared / "data" / "lichess-rated-games.pgn.gz"
    heldout = args.shared / "testsuites" / "lichess_2021-10_sample.pgn"
    rated, engine = out / "rated.npz", out / "tcec.npz"
    cpu: dict[str, float] = {}
    if not rated.exists() or not engine.exists():
        from latentchess.data.moves import read_csv_moves, read_pgn_moves

        started = time.process_time()
        read_pgn_moves(corpus, progress=True).save(rated)
        tcec = args.shared / "data" / "tcec-engine-evals.csv.gz"
        read_csv_moves(tcec, max_rows=args.engine_rows).save(engine)
        cpu["parse"] = time.process_time() - started

    common = ["--model-config", "cf-nano", "--batch-size", str(args.batch_size), "--lr", "1e-3"]
    common += ["--threads", "1", "--device", "cpu", "--eval-every", "0", "--no-progress"]
    common += ["--final-positions", "2048", "--checkpoint-every", "400", "--log-every", "100"]
    common += ["--seed", str(args.seed)]
    s = args.steps
    suffix = f"-s{args.seed}" if args.seed else ""
    runs: dict[str, list[str]] = {
        "rated": ["--data", str(rated), "--steps", str(s)],
        "pretrain": ["--data", str(engine), "--steps", str(s)],
        "finetune": ["--data", str(rated), "--steps", str(s)],
        "rated-2x": ["--data", str(rated), "--steps", str(2 * s)],
        "mix": ["--data", str(rated), "--steps", str(s), "--mix-data", str(engine)],
        "mirror": ["--data", str(rated), "--steps", str(s), "--mirror", "0.5"],
        "time-control": ["--data", str(rated), "--steps", str(s), "--time-control"],
    }
    runs["mix"] += ["--mix-share", "0.5"]
    runs["finetune"] += ["--init-from", str(out / f"pretrain{suffix}" / "model")]
    evaluated = {"pretrain"}  # the engine model is a step, not a contestant
    chosen = args.only if args.only is not None else list(runs)
    for name in chosen:
        run_dir = out / f"{name}{suffix}"
        if not (run_dir / "model" / "config.json").exists():
            argv = ["train", "chessformer", *runs[name], "--out", str(run_dir), *common]
            cpu[f"train_{name}"] = _run(argv, out / f"{name}{suffix}.log")
        if name in evaluated:
            continue
        speeds = ["blitz", "any"] if name in ("rated", "time-control") else ["blitz"]
        for speed in speeds:
            target = results / f"{name}{suffix}{'' if speed == 'blitz' else '-any'}.json"
            if target.exists():
                continue
            argv = ["eval-human", str(heldout), "--exclude-players-of", str(corpus)]
            argv += ["--model", str(run_dir / "model"), "--time-control", speed]
            argv += ["--no-progress", "--json", str(target)]
            cpu[f"eval_{name}_{speed}"] = _run(argv, out / f"{name}{suffix}.log")
    cpu_path = results / f"cpu_seconds{suffix}.json"
    previous = json.loads(cpu_path.read_text()) if cpu_path.exists() else {}
    cpu_path.write_text(json.dumps({**previous, **cpu}, indent=2) + "\n")

    pairs = {  # (a, b, scored speeds): b minus a
        "pretrain then fine-tune vs rated games, equal fine-tuning steps": (
            "rated",
            "finetune",
            "",
        ),
        "pretrain then fine-tune vs rated games, equal total steps": ("rated-2x", "finetune", ""),
        "twice the steps on rated games vs rated games": ("rated", "rated-2x", ""),
        "engine data mixed in (0.5 decaying) vs rated games": ("rated", "mix", ""),
        "mirror 0.5 vs none": ("rated", "mirror", ""),
        "time-control input vs none": ("rated", "time-control", ""),
        "time-control input vs none, every speed": ("rated", "time-control", "-any"),
    }
    summary = {}
    for label, (a, b, tag) in pairs.items():
        paths = [results / f"{x}{suffix}{tag}.json" for x in (a, b)]
        if all(path.exists() for path in paths):
            diff = paired_difference(*paths, seed=args.seed)
            summary[label] = {"a": a, "b": b, "speeds": tag or "blitz", **diff}
            ci = diff["ci95"]
            print(f"{label}: {diff['difference']:+.4f} [{ci[0]:+.4f}, {ci[1]:+.4f}]")
    (results / f"differences{suffix}.json").write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
