"""NNUE measurements: training positions/s, quantisation error, evaluations/s, nodes/s.

Usage (each part appends its record to ``benchmarks/results/nnue.json``)::

    python benchmarks/bench_nnue.py training --cache RUN/cache [--threads 2] [--l1 128 256]
    python benchmarks/bench_nnue.py quant --model DIR --cache RUN/cache [--positions 20000]
    python benchmarks/bench_nnue.py evals --model DIR [--games 40]
    python benchmarks/bench_nnue.py nodes --model DIR [--seconds 2] [--positions 12]
    python benchmarks/bench_nnue.py equality [--positions 10000] [--features SET]
    python benchmarks/bench_nnue.py evalloss --eval hce --eval nnue:DIR ... [--positions 4000]

``evalloss`` asks how well each static evaluator predicts Stockfish on positions no network here
was trained on: quiet positions from the rated Lichess games (human play, another distribution than
the engine games and self-play the networks learn from), labelled by Stockfish's static evaluation
and by a depth-9 search. It reports the target-score loss at the thesis's scale and at each
evaluator's best-fitting scale (so HCE's centipawns are not penalised for their unit), and the
correlation.

``quant`` measures the shipped integer inference (the Python reference, equal to the core's by
test) against the float network on held-out cache rows, in WDL space ``sigmoid(cp / 361)``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import time
from pathlib import Path
from typing import Any

import chess
import numpy as np
import torch

from latentchess.provenance import git_commit

RESULTS = Path(__file__).resolve().parent / "results" / "nnue.json"
SHARED = Path(__file__).resolve().parents[2] / "shared"  # the checkout's ../shared


def _shown(path: Path) -> str:
    """``path`` as a record shows it: from the checkout's root (``../shared/...`` for the shared
    data), so that no machine's directory layout lands in committed results."""
    root = Path(__file__).resolve().parents[1]
    return os.path.relpath(Path(path).resolve(), root)


def _record(kind: str, data: dict[str, Any], command: str) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    records = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    records.append(
        {
            "kind": kind,
            **data,
            "command": command,
            "git_commit": git_commit(),
            "cpu": platform.processor() or platform.machine(),
            "load_average_1min": load,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        }
    )
    RESULTS.write_text(json.dumps(records, indent=2) + "\n")
    print(json.dumps(records[-1], indent=2))


def training(args: argparse.Namespace) -> dict[str, Any]:
    """Optimiser steps per second of the real loss on cache rows -> positions/s."""
    from latentchess.nnue.dataset import open_cache
    from latentchess.nnue.model import Nnue, NnueConfig
    from latentchess.training.nnue import score_loss

    torch.set_num_threads(args.threads)
    cache = open_cache(args.cache)
    rng = np.random.default_rng(0)
    out: dict[str, Any] = {"threads": args.threads, "batch_size": args.batch_size, "rates": {}}
    for l1 in args.l1:
        net = Nnue(NnueConfig(feature_set=cache.meta["feature_set"], l1=l1, l2=32))
        opt = torch.optim.Adam(net.parameters(), lr=5e-4)
        times = []
        for step in range(args.steps + 2):
            rows = np.sort(rng.choice(len(cache), args.batch_size, replace=False))
            tick = time.perf_counter()
            feats = torch.from_numpy(np.asarray(cache.features[rows], dtype=np.int64))
            stm = torch.from_numpy(np.asarray(cache.stm[rows], dtype=np.int64))
            score = torch.from_numpy(np.asarray(cache.score[rows], dtype=np.float32))
            loss = score_loss(net(feats[:, 0], feats[:, 1], stm), score)
            opt.zero_grad()
            loss.backward()
            opt.step()
            net.clip_weights()
            if step >= 2:  # warm-up steps excluded
                times.append(time.perf_counter() - tick)
        out["rates"][str(l1)] = args.batch_size / float(np.median(times))
    return out


def quant(args: argparse.Namespace) -> dict[str, Any]:
    """Float vs integer inference on held-out rows (WDL space and centipawns)."""
    from latentchess.nnue.dataset import open_cache
    from latentchess.nnue.io import load_nnue
    from latentchess.nnue.model import quantised_forward
    from latentchess.training.nnue import holdout_split

    model = load_nnue(args.model)
    cache = open_cache(args.cache)
    training_cfg = model.metadata.get("training", {})
    _, hold = holdout_split(
        len(cache),
        float(training_cfg.get("holdout_fraction", 0.02)),
        int(training_cfg.get("holdout_max", 50_000)),
        int(training_cfg.get("seed", 0)),
    )
    rows = hold[: args.positions]
    feats = np.asarray(cache.features[rows], dtype=np.int64)
    stm = np.asarray(cache.stm[rows], dtype=np.int64)
    target = np.asarray(cache.score[rows], dtype=np.float64)
    with torch.no_grad():
        cp_float = model.network(
            torch.from_numpy(feats[:, 0]), torch.from_numpy(feats[:, 1]), torch.from_numpy(stm)
        ).numpy()
    pad = model.network.cfg.features.size
    white = [f[f != pad] for f in feats[:, 0]]
    black = [f[f != pad] for f in feats[:, 1]]
    cp_int = quantised_forward(model.quantised, white, black, stm).astype(np.float64)

    def wdl(cp: np.ndarray, scale: float = 361.0) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-cp / scale))

    diff = np.abs(wdl(cp_float) - wdl(cp_int))
    return {
        "model": str(args.model),
        "positions": len(rows),
        "wdl_abs_error_mean": float(diff.mean()),
        "wdl_abs_error_p99": float(np.quantile(diff, 0.99)),
        "wdl_abs_error_max": float(diff.max()),
        "cp_abs_error_mean": float(np.abs(cp_float - cp_int).mean()),
        "float_vs_target_wdl_mae": float(np.abs(wdl(cp_float) - wdl(target, 410.0)).mean()),
        "int_vs_target_wdl_mae": float(np.abs(wdl(cp_int) - wdl(target, 410.0)).mean()),
    }


def _random_games(games: int, plies: int, seed: int) -> tuple[list[str], list[list[int]]]:
    rng = random.Random(seed)
    fens, moves = [], []
    for _ in range(games):
        board = chess.Board()
        played: list[int] = []
        for _ in range(plies):
            legal = list(board.legal_moves)
            if not legal:
                break
            move = rng.choice(legal)
            promotion = move.promotion or 0
            played.append(move.from_square | (move.to_square << 6) | (promotion << 12))
            board.push(move)
        fens.append(chess.STARTING_FEN)
        moves.append(played)
    return fens, moves


def evals(args: argparse.Namespace) -> dict[str, Any]:
    """Native evaluations/s along random games: incremental accumulators vs full refresh."""
    from latentchess.core.nnue import load_network, native_module

    network = load_network(args.model)
    fens, games = _random_games(args.games, 120, seed=1)
    result = dict(native_module().nnue_speed(network, fens, games, args.repeats))
    result["ratio_incremental_over_refresh"] = result["incremental_per_s"] / result["refresh_per_s"]
    return {"model": str(args.model), "feature_set": network.feature_set, **result}


def nodes(args: argparse.Namespace) -> dict[str, Any]:
    """Nodes/s of ab with the NNUE, ab with the HCE, and Stockfish, on the same positions."""
    from latentchess.engines.registry import create_engine

    rng = random.Random(2)
    boards = []
    for _ in range(args.positions):
        board = chess.Board()
        for _ in range(rng.randrange(8, 40)):
            legal = list(board.legal_moves)
            if not legal or board.is_game_over():
                break
            board.push(rng.choice(legal))
        if not board.is_game_over():
            boards.append(board)
    out: dict[str, Any] = {"seconds_per_position": args.seconds, "positions": len(boards)}
    limit = chess.engine.Limit(time=args.seconds)
    for name, spec in (("nnue", f"ab:eval={args.model}"), ("hce", "ab:eval=hce")):
        engine = create_engine(spec)
        total_nodes, total_time = 0, 0.0
        try:
            for board in boards:
                tick = time.perf_counter()
                analysis = engine.analyse(board, limit)
                total_time += time.perf_counter() - tick
                total_nodes += int(analysis.nodes or 0)
        finally:
            close = getattr(engine, "close", None)
            if close is not None:
                close()
        out[f"{name}_nodes_per_s"] = total_nodes / total_time
    with chess.engine.SimpleEngine.popen_uci("/usr/games/stockfish") as stockfish:
        stockfish.configure({"Threads": 1, "Hash": 16})
        total_nodes, total_time = 0, 0.0
        for board in boards:
            info = stockfish.analyse(board, limit)
            total_nodes += int(info.get("nodes", 0))
            total_time += float(info.get("time", args.seconds))
    out["stockfish_nodes_per_s"] = total_nodes / total_time
    out["nnue_over_hce"] = out["nnue_nodes_per_s"] / out["hce_nodes_per_s"]
    return out


def equality(args: argparse.Namespace) -> dict[str, Any]:
    """The core's features against the Python reference on real positions (every block)."""
    from latentchess.core.nnue import native_module
    from latentchess.nnue.dataset import _rows, parse_source
    from latentchess.nnue.features import parse_feature_set, position_features

    native = native_module()
    fs = parse_feature_set(args.features)
    source = parse_source(f"{args.data}:{args.positions}:{args.every}")
    checked, mismatches = 0, []
    for file, number, fields in _rows(source):
        board = chess.Board(fields[0])
        position = native.Position(fields[0])
        reference = position_features(board, fs)
        for perspective in (0, 1):
            if (
                list(native.nnue_features(position, perspective, fs.name))
                != reference[perspective].tolist()
            ):
                mismatches.append(f"{file.name} line {number} perspective {perspective}")
        checked += 1
    return {
        "feature_set": fs.name,
        "data": source.spec,
        "positions": checked,
        "mismatches": len(mismatches),
        "first_mismatches": mismatches[:5],
    }


def _lichess_quiet_fens(pgn: Path, positions: int, every: int) -> list[str]:
    import gzip

    import chess.pgn

    from latentchess.core import _native
    from latentchess.nnue.distil import is_quiet

    fens: list[str] = []
    with gzip.open(pgn, "rt", encoding="utf-8") as handle:
        while len(fens) < positions:
            game = chess.pgn.read_game(handle)
            if game is None:
                break
            board = game.board()
            for ply, move in enumerate(game.mainline_moves()):
                board.push(move)
                if ply >= 10 and ply % every == 0 and is_quiet(_native.Position(board.fen())):
                    fens.append(board.fen())
    return fens[:positions]


def evalloss(args: argparse.Namespace) -> dict[str, Any]:
    """Static evaluators against Stockfish (static eval, depth-9 search) on held-out positions."""
    import chess.engine

    from latentchess.core import _native
    from latentchess.nnue.distil import StaticEvaluator

    fens = _lichess_quiet_fens(args.pgn, args.positions, args.every)
    stm_sign = np.array([1.0 if " w " in f else -1.0 for f in fens])
    with StaticEvaluator(args.stockfish) as stockfish:
        static = np.array([stockfish.evaluate(f) for f in fens], dtype=float) * stm_sign
    with chess.engine.SimpleEngine.popen_uci(args.stockfish) as engine:
        searched = []
        for fen in fens:
            info = engine.analyse(chess.Board(fen), chess.engine.Limit(depth=args.depth))
            searched.append(info["score"].relative.score(mate_score=5000))
    search = np.clip(np.array(searched, dtype=float), -5000, 5000)

    def sig(x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-x))

    def loss(pred: np.ndarray, target: np.ndarray, scale: float) -> float:
        return float(np.mean(np.abs(sig(pred / scale) - sig(target / 410.0)) ** 2.6))

    results: dict[str, Any] = {}
    for spec in args.eval:
        values = np.array([_native.evaluate(_native.Position(f), spec) for f in fens], dtype=float)
        entry: dict[str, Any] = {}
        for name, target in (("static", static), ("depth9", search)):
            scales = np.arange(150.0, 1000.0, 10.0)
            losses = [loss(values, target, s) for s in scales]
            entry[name] = {
                "loss_at_361": loss(values, target, 361.0),
                "best_loss": float(min(losses)),
                "best_scale": float(scales[int(np.argmin(losses))]),
                "pearson": float(np.corrcoef(values, target)[0, 1]),
            }
        results[spec.replace(str(Path.cwd()) + "/", "")] = entry
    return {
        "positions": len(fens),
        "source": f"{_shown(args.pgn)} (quiet positions, every {args.every}th ply from ply 10)",
        "stockfish_depth": args.depth,
        "evaluators": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="part", required=True)
    t = sub.add_parser("training")
    t.add_argument("--cache", type=Path, required=True)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--batch-size", type=int, default=16384)
    t.add_argument("--steps", type=int, default=10)
    t.add_argument("--l1", type=int, nargs="+", default=[128, 256])
    q = sub.add_parser("quant")
    q.add_argument("--model", type=Path, required=True)
    q.add_argument("--cache", type=Path, required=True)
    q.add_argument("--positions", type=int, default=20000)
    e = sub.add_parser("evals")
    e.add_argument("--model", type=Path, required=True)
    e.add_argument("--games", type=int, default=40)
    e.add_argument("--repeats", type=int, default=5)
    q2 = sub.add_parser("equality")
    q2.add_argument("--data", default=str(SHARED / "data/tcec-engine-evals.csv.gz"))
    q2.add_argument("--positions", type=int, default=10000)
    q2.add_argument("--every", type=int, default=241)
    q2.add_argument("--features", default="ALL+H+V+D1+D2+PH+PV+MB+MC")
    n = sub.add_parser("nodes")
    n.add_argument("--model", type=Path, required=True)
    n.add_argument("--seconds", type=float, default=2.0)
    n.add_argument("--positions", type=int, default=12)
    v = sub.add_parser("evalloss")
    v.add_argument("--eval", action="append", required=True, help="hce, pesto or nnue:DIR")
    v.add_argument("--pgn", type=Path, default=SHARED / "data/lichess-rated-games.pgn.gz")
    v.add_argument("--positions", type=int, default=4000)
    v.add_argument("--every", type=int, default=7)
    v.add_argument("--depth", type=int, default=9)
    v.add_argument("--stockfish", default="/usr/games/stockfish")
    args = parser.parse_args()
    command = "python " + " ".join(subprocess.list2cmdline([a]) for a in __import__("sys").argv)
    parts = {"training": training, "quant": quant, "evals": evals, "nodes": nodes}
    part = {**parts, "equality": equality, "evalloss": evalloss}[args.part]
    _record(args.part, part(args), command)


if __name__ == "__main__":
    main()
