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

``--max-games N`` trains on the corpus's first N games only (runs named ``...-gN``; the pretrained
model is shared with the full-corpus runs of the same steps): the regime where a small model makes
several passes over its data, as the shipped model does over the whole corpus. ``--model-config``
trains another size than ``cf-nano`` (runs named ``...-NAME``).

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
from latentchess.textfiles import find_text, read_text

LATENTCHESS = [sys.executable, "-m", "latentchess"]
DEFAULT_STEPS = 1200
RUNS = ("rated", "pretrain", "finetune", "rated-2x", "mix", "mirror", "time-control")


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
    p.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--engine-rows", type=int, default=200_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-games", type=int, default=None, help="train on the first N games")
    p.add_argument("--model-config", default="cf-nano", help="the Chessformer size (runs -NAME)")
    p.add_argument("--only", nargs="*", default=None, help="run only these runs")
    args = p.parse_args()
    out, results = args.out, args.results
    out.mkdir(parents=True, exist_ok=True)
    results.mkdir(parents=True, exist_ok=True)
    corpus = args.shared / "data" / "lichess-rated-games.pgn.gz"
    heldout = args.shared / "testsuites" / "lichess_2021-10_sample.pgn"
    games = f"-g{args.max_games}" if args.max_games else ""
    rated, engine = out / f"rated{games}.npz", out / "tcec.npz"
    cpu: dict[str, float] = {}
    from latentchess.data.moves import read_csv_moves, read_pgn_moves

    started = time.process_time()
    if not rated.exists():
        read_pgn_moves(corpus, progress=True, max_games=args.max_games).save(rated)
        cpu[f"parse_rated{games}"] = time.process_time() - started
    chosen = args.only if args.only is not None else RUNS
    if not engine.exists() and {"pretrain", "mix"} & set(chosen):
        started = time.process_time()
        tcec = args.shared / "data" / "tcec-engine-evals.csv.gz"
        read_csv_moves(tcec, max_rows=args.engine_rows).save(engine)
        cpu["parse_engine"] = time.process_time() - started

    common = ["--model-config", args.model_config, "--batch-size", str(args.batch_size)]
    common += ["--lr", "1e-3"]
    common += ["--threads", "1", "--device", "cpu", "--eval-every", "0", "--no-progress"]
    common += ["--final-positions", "2048", "--checkpoint-every", "400", "--log-every", "100"]
    common += ["--seed", str(args.seed)]
    s = args.steps
    # runs of other lengths than the default are named by it: rated-600, finetune-600, ...
    suffix = (f"-{s}" if s != DEFAULT_STEPS else "") + (f"-s{args.seed}" if args.seed else "")
    suffix += f"-{args.model_config}" if args.model_config != "cf-nano" else ""
    pretrained = out / f"pretrain{suffix}" / "model"  # shared by every --max-games
    suffix += games
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
    runs["finetune"] += ["--init-from", str(pretrained)]
    evaluated = {"pretrain"}  # the engine model is a step, not a contestant
    for name in chosen:
        run_dir = pretrained.parent if name == "pretrain" else out / f"{name}{suffix}"
        if not (run_dir / "model" / "config.json").exists():
            argv = ["train", "chessformer", *runs[name], "--out", str(run_dir), *common]
            cpu[f"train_{run_dir.name}"] = _run(argv, out / f"{run_dir.name}.log")
        if name in evaluated:
            continue
        every = name in ("rated", "time-control") and not suffix
        speeds = ["blitz", "any"] if every else ["blitz"]
        for speed in speeds:
            target = results / f"{name}{suffix}{'' if speed == 'blitz' else '-any'}.json"
            if find_text(target).exists():  # done (perhaps stored compressed since)
                continue
            argv = ["eval-human", str(heldout), "--exclude-players-of", str(corpus)]
            argv += ["--model", str(run_dir / "model"), "--time-control", speed]
            argv += ["--no-progress", "--json", str(target)]
            cpu[f"eval_{name}{suffix}_{speed}"] = _run(argv, out / f"{name}{suffix}.log")
    cpu_path = results / "cpu_seconds.json"
    previous = json.loads(cpu_path.read_text()) if cpu_path.exists() else {}
    cpu_path.write_text(json.dumps({**previous, **cpu}, indent=2) + "\n")

    pairs = {  # (a, b): b minus a, by results file stem
        "pretrain then fine-tune vs rated games, equal fine-tuning steps": (
            "rated-600",
            "finetune-600",
        ),
        "pretrain then fine-tune vs rated games, equal total steps": ("rated", "finetune-600"),
        "twice the steps on rated games": ("rated-600", "rated"),
        "engine data mixed in (0.5 decaying) vs rated games": ("rated", "mix"),
        "engine data mixed in vs pretrain then fine-tune, equal total steps": (
            "finetune-600",
            "mix",
        ),
        "mirror 0.5 vs none": ("rated", "mirror"),
        "time-control input vs none": ("rated", "time-control"),
        "time-control input vs none, every speed": ("rated-any", "time-control-any"),
    }
    # every other scale's runs (steps, seed, size, games: the name's suffix) against its baseline
    for found in sorted(results.glob("rated-*.json*")):
        other = found.name.split(".json")[0].removeprefix("rated")
        if other in ("-600", "-any"):
            continue
        for name, what in (
            ("finetune", "pretrain then fine-tune"),
            ("mix", "engine data mixed in"),
            ("mirror", "mirror 0.5"),
            ("time-control", "time-control input"),
        ):
            pairs[f"{what} vs rated games (runs *{other})"] = (f"rated{other}", f"{name}{other}")
    summary = {}
    for label, (a, b) in pairs.items():
        paths = [find_text(results / f"{x}.json") for x in (a, b)]
        if all(path.exists() for path in paths):
            diff = paired_difference(*paths, seed=args.seed)
            summary[label] = {"a": a, "b": b, **diff}
            ci = diff["ci95"]
            print(f"{label}: {diff['difference']:+.4f} [{ci[0]:+.4f}, {ci[1]:+.4f}]")
    # the time-control pair by speed: the same games' hits, split by their TimeControl
    pair = [find_text(results / f"{x}-any.json") for x in ("rated", "time-control")]
    if all(path.exists() for path in pair):
        from latentchess.evaluation.human import read_game_headers

        speed = {g.index: g.speed for g in read_game_headers(heldout)}
        a, b = (json.loads(read_text(find_text(path))) for path in pair)
        for name in ("bullet", "blitz", "rapid", "classical"):
            keep = [speed[g] == name for g in a["per_game"]["game"]]
            if not any(keep):
                continue
            part = [
                {
                    "per_game": {
                        k: [v for v, w in zip(r["per_game"][k], keep, strict=True) if w]
                        for k in r["per_game"]
                    }
                }
                for r in (a, b)
            ]
            diff = paired_difference(*part, seed=args.seed)
            label = f"time-control input vs none, {name} games"
            summary[label] = {"a": "rated-any", "b": "time-control-any", **diff}
            ci = diff["ci95"]
            print(f"{label}: {diff['difference']:+.4f} [{ci[0]:+.4f}, {ci[1]:+.4f}]")
    (results / "differences.json").write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
