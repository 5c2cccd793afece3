"""The sparse encoder and the latent search on the native core against the other paths, one run.

Part 1, embeddings/s (one thread each, the same process, one after the other):

* sparse encoder, native: ``children`` (the search's workload: every legal child of each
  position, make / score / unmake; incremental accumulators vs a refresh per child) and
  ``games`` (``nnue_speed``'s workload: every position along random games);
* sparse encoder, PyTorch fp32 (``LatentModel.score_tokens``: tokens in, scores out) in batches of
  40 (a node's children) and 1024;
* the shipped default latent model (GAB transformer, gab-micro) on its int8 path (ONNX Runtime,
  ``precision="int8"``), batches of 40 and 1024;
* the NNUE evaluation (the shipped ``nnue-default``, ``nnue_speed``: incremental and refresh along
  the same games).

Part 2, search speed on the same positions: the native latent search vs the Python search with
the same native scores and with PyTorch's (the path before the native core): positions embedded
per second at a fixed depth, and the depth completed within 1 s (iterative deepening).

The model: ``--model DIR`` (a sparse model directory) or ``--checkpoint PT`` (a SupCon checkpoint
of a sparse encoder; its advantage axis is computed here as SOLIS does: mean embedding of White's
mates minus Black's, from ``--mates`` rows of the shared labelled CSV). Results:
``benchmarks/results/latent_native/<name>.json`` (+ ``.md``), with ``uptime`` before and after (the
machine has 2 cores and other jobs run on the other one).

    .venv/bin/python benchmarks/bench_latent_native.py --model runs/sparse-encoder/sparse-64/model
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import platform
import random
import subprocess
import time
from pathlib import Path
from typing import Any

import chess
import numpy as np
import torch

from latentchess.batch_keys import tokenize_boards
from latentchess.core import _native as native
from latentchess.models import LatentModel, load_model
from latentchess.models.config import SparseEncoderConfig, encoder_config_from_dict
from latentchess.models.sparse_encoder import SparseEncoder
from latentchess.provenance import git_commit, repo_relative
from latentchess.search import SearchConfig, Searcher
from latentchess.search.native import NativeScorer, NativeSearcher, native_encoder

RESULTS = Path(__file__).resolve().parent / "results" / "latent_native"


SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


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
            played.append(move.from_square | move.to_square << 6 | (move.promotion or 0) << 12)
            board.push(move)
        fens.append(chess.STARTING_FEN)
        moves.append(played)
    return fens, moves


def _positions(count: int, seed: int) -> list[chess.Board]:
    """Middlegame-ish positions of random games (8 to 40 plies), none finished."""
    rng, boards = random.Random(seed), []
    while len(boards) < count:
        board = chess.Board()
        for _ in range(rng.randrange(8, 40)):
            legal = list(board.legal_moves)
            if not legal:
                break
            board.push(rng.choice(legal))
        if not board.is_game_over():
            boards.append(board)
    return boards


def _mates_axis(encoder: SparseEncoder, rows: int) -> np.ndarray:
    white, black = [], []
    with gzip.open(SHARED / "sf15-d9-eco-selfplay.csv.gz", "rt") as handle:
        for row in csv.reader(handle):
            if row[2] and len(white) < rows and int(row[2]) > 0:
                white.append(row[0])
            elif row[2] and len(black) < rows and int(row[2]) < 0:
                black.append(row[0])
            if len(white) >= rows and len(black) >= rows:
                break
    model = LatentModel(encoder, np.ones(encoder.config.dim, dtype=np.float32), precision="fp32")
    return (model.embed(white).mean(0) - model.embed(black).mean(0)).astype(np.float32)


def _sparse_model(args: argparse.Namespace) -> tuple[LatentModel, str]:
    if args.model:
        return load_model(args.model, precision="fp32"), str(args.model)
    state = torch.load(args.checkpoint, map_location="cpu", weights_only=False)
    config = encoder_config_from_dict(state["config"]["model"])
    assert isinstance(config, SparseEncoderConfig)
    encoder = SparseEncoder(config)
    encoder.load_state_dict(state["model"])
    axis = _mates_axis(encoder, args.mates)
    return LatentModel(encoder, axis, precision="fp32"), f"{args.checkpoint} (step {state['step']})"


def _rate(function: Any, items: int, repeat: int) -> float:
    function()  # warm-up
    began = time.perf_counter()
    for _ in range(repeat):
        function()
    return items * repeat / (time.perf_counter() - began)


def _torch_rates(model: LatentModel, boards: list[chess.Board]) -> dict[str, float]:
    out = {}
    for batch in (40, 1024):
        chosen = [boards[i % len(boards)] for i in range(batch)]
        tokens = tokenize_boards(chosen)
        repeat = max(1, 4096 // batch)
        out[f"batch_{batch}_per_s"] = _rate(lambda t=tokens: model.score_tokens(t), batch, repeat)
    return out


def embeddings(model: LatentModel, encoder: Any, args: argparse.Namespace) -> dict[str, Any]:
    boards = _positions(200, seed=7)
    fens = [board.fen() for board in boards]
    out: dict[str, Any] = {"positions": len(fens)}
    sparse: dict[str, Any] = {}
    for mode in ("incremental", "refresh"):
        count, seconds, _ = encoder.time_children(fens, mode == "incremental", args.repeat)
        sparse[f"children_{mode}_per_s"] = count / seconds
    game_fens, games = _random_games(args.games, 120, seed=1)
    sparse["games"] = dict(encoder.time_games(game_fens, games, args.repeat))
    sparse["pytorch_fp32"] = _torch_rates(model, boards)
    out["sparse"] = sparse
    gab = load_model(None, precision="int8", threads=1)
    out["gab_int8"] = {
        "model": repo_relative(str(gab.path)),
        "config": gab.config.name,
        **_torch_rates(gab, boards),
    }
    from latentchess.core.nnue import load_network

    network = load_network(None)
    out["nnue"] = {
        "feature_set": network.feature_set,
        **dict(native.nnue_speed(network, game_fens, games, args.repeat)),
    }
    return out


def _lichess_fens(count: int) -> list[str]:
    import chess.pgn

    fens: list[str] = []
    with gzip.open(SHARED / "lichess-rated-games.pgn.gz", "rt", errors="replace") as handle:
        while len(fens) < count and (game := chess.pgn.read_game(handle)) is not None:
            board = game.board()
            for move in game.mainline_moves():
                board.push(move)
                fens.append(board.fen())
    return fens[:count]


def tolerance(model: LatentModel, count: int) -> dict[str, Any]:
    """|native - PyTorch fp32| axis scores on Lichess positions (not in the training CSVs), at
    the automatic accumulator scale and at the NNUE's 127."""
    fens = _lichess_fens(count)
    reference = model.score(fens)
    out: dict[str, Any] = {"positions": len(fens)}
    for name, scale in (("automatic", 0), ("nnue_127", 127)):
        encoder = native_encoder(model, accumulator_scale=scale)
        difference = np.abs(reference - encoder.score_fens(fens))
        out[name] = {
            "accumulator_scale": encoder.accumulator_scale,
            "max": float(difference.max()),
            "p99": float(np.percentile(difference, 99)),
            "mean": float(difference.mean()),
        }
    return out


def search_speed(model: LatentModel, encoder: Any, args: argparse.Namespace) -> dict[str, Any]:
    boards = _positions(args.search_positions, seed=3)
    config = SearchConfig(depth=args.depth, width=args.width)

    def torch_scorer(batch: Any) -> np.ndarray:
        return model.score_tokens(tokenize_boards(batch))

    makers = {
        "native": lambda: NativeSearcher(encoder, config),
        "python_native_scores": lambda: Searcher(NativeScorer(encoder), config),
        "python_pytorch_scores": lambda: Searcher(torch_scorer, config),
    }
    out: dict[str, Any] = {"positions": len(boards), "width": args.width, "depth": args.depth}
    moves: dict[str, list[str]] = {}
    for name, make in makers.items():
        nodes, seconds, depths = 0, 0.0, []
        played = []
        for board in boards:
            searcher = make()
            began = time.perf_counter()
            result = searcher.search(board)
            seconds += time.perf_counter() - began
            nodes += result.nodes
            played.append(str(result.move))
            searcher = make()
            start = time.monotonic()
            timed = searcher.search(
                board, depth=64, deadline=start + 1.0, soft_deadline=start + 1.0
            )
            depths.append(timed.depth)
        moves[name] = played
        out[name] = {
            "seconds_per_search": seconds / len(boards),
            "positions_per_s": nodes / seconds,
            "nodes_per_search": nodes / len(boards),
            "depth_in_1s": depths,
            "mean_depth_in_1s": float(np.mean(depths)),
        }
    out["same_moves_native_vs_python_native_scores"] = sum(
        a == b for a, b in zip(moves["native"], moves["python_native_scores"], strict=True)
    )
    out["same_moves_native_vs_python_pytorch_scores"] = sum(
        a == b for a, b in zip(moves["native"], moves["python_pytorch_scores"], strict=True)
    )
    return out


def _markdown(record: dict[str, Any]) -> str:
    e, s, t = record["embeddings"], record["search"], record["tolerance"]
    sp = e["sparse"]
    lines = [
        f"# Sparse encoder and latent search on the native core ({record['name']})",
        "",
        f"Model: {record['model']}; commit {record['git_commit']}; {record['cpu']}.",
        f"Load before: `{record['uptime_before']}`; after: `{record['uptime_after']}`.",
        f"|native - PyTorch fp32| axis score on {t['positions']:,} Lichess positions:",
        "",
        *(
            f"* accumulator scale {t[k]['accumulator_scale']}: max {t[k]['max']:.2e}, 99th "
            f"percentile {t[k]['p99']:.2e}, mean {t[k]['mean']:.2e}"
            for k in ("automatic", "nnue_127")
        ),
        "",
        f"Accumulator scale used below: {record['accumulator_scale']}.",
        "",
        "One thread each; embeddings/s = positions scored per second.",
        "",
        "| path | workload | embeddings/s |",
        "|---|---|---|",
        f"| sparse, native incremental | children (make/score/unmake) | "
        f"{sp['children_incremental_per_s']:,.0f} |",
        f"| sparse, native refresh | children | {sp['children_refresh_per_s']:,.0f} |",
        f"| sparse, native incremental | along games | {sp['games']['incremental_per_s']:,.0f} |",
        f"| sparse, native refresh | along games | {sp['games']['refresh_per_s']:,.0f} |",
        f"| sparse, PyTorch fp32 | batch 40 | {sp['pytorch_fp32']['batch_40_per_s']:,.0f} |",
        f"| sparse, PyTorch fp32 | batch 1024 | {sp['pytorch_fp32']['batch_1024_per_s']:,.0f} |",
        f"| GAB ({e['gab_int8']['config']}), int8 ONNX | batch 40 | "
        f"{e['gab_int8']['batch_40_per_s']:,.0f} |",
        f"| GAB ({e['gab_int8']['config']}), int8 ONNX | batch 1024 | "
        f"{e['gab_int8']['batch_1024_per_s']:,.0f} |",
        f"| NNUE ({e['nnue']['feature_set']}), native incremental | along games | "
        f"{e['nnue']['incremental_per_s']:,.0f} |",
        f"| NNUE, native refresh | along games | {e['nnue']['refresh_per_s']:,.0f} |",
        "",
        f"Search: {s['positions']} positions, minimax width {s['width']}, depth {s['depth']} "
        "(fixed depth), then iterative deepening for 1 s.",
        "",
        "| search | s / search | positions embedded/s | nodes / search | mean depth in 1 s |",
        "|---|---|---|---|---|",
    ]
    for name in ("native", "python_native_scores", "python_pytorch_scores"):
        row = s[name]
        lines.append(
            f"| {name} | {row['seconds_per_search']:.4f} | {row['positions_per_s']:,.0f} | "
            f"{row['nodes_per_search']:,.0f} | {row['mean_depth_in_1s']:.1f} |"
        )
    lines += [
        "",
        f"Same move at depth {s['depth']}: native vs Python with native scores "
        f"{s['same_moves_native_vs_python_native_scores']}/{s['positions']}, vs Python with "
        f"PyTorch scores {s['same_moves_native_vs_python_pytorch_scores']}/{s['positions']}.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", type=Path, help="a sparse model directory")
    source.add_argument("--checkpoint", type=Path, help="a sparse SupCon checkpoint (.pt)")
    parser.add_argument("--mates", type=int, default=2000, help="rows per side for the axis")
    parser.add_argument("--name", default="latest")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--search-positions", type=int, default=12)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--width", type=int, default=3)
    parser.add_argument("--tolerance-positions", type=int, default=10_000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    before = _uptime()
    model, described = _sparse_model(args)
    encoder = native_encoder(model)
    record: dict[str, Any] = {
        "name": args.name,
        "model": described,
        "encoder": model.config.to_dict(),
        "accumulator_scale": encoder.accumulator_scale,
        "git_commit": git_commit(),
        "cpu": platform.processor() or platform.machine(),
        "uptime_before": before,
        "tolerance": tolerance(model, args.tolerance_positions),
        "embeddings": embeddings(model, encoder, args),
        "search": search_speed(model, encoder, args),
        "uptime_after": _uptime(),
        "command": "benchmarks/bench_latent_native.py "
        + (f"--model {args.model}" if args.model else f"--checkpoint {args.checkpoint}")
        + f" --name {args.name}",
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(record, indent=2) + "\n")
    (RESULTS / f"{args.name}.md").write_text(_markdown(record))
    print(_markdown(record))


if __name__ == "__main__":
    main()
