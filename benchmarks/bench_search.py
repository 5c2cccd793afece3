"""Cost of the embedding-guided search per move, and the greedy / minimax / beam comparison.

Sections (all at width 3 unless stated):

1. Cold search per depth (fresh cache per position, one fixed-depth search, no iterative
   deepening) over a few middlegame positions, for
   ``minimax`` (the default: alpha-beta among the expanded children, leaves scored refutations
   first), ``minimax-wide`` (alpha-beta, whole sibling sets), ``minimax-plain`` (no cutoffs: what
   the SOLIS reference code embeds, ~12.7K positions at depth 6) and ``beam``. Reported: positions
   embedded per move, time per move, share of the time spent in the model, and the ratio of the
   time to what the model alone needs for that many positions (measured in the same process).
2. A self-play game as the engine plays it (iterative deepening, the cache kept across moves):
   time and positions per move and the cache hit rate.
3. Positions with a single good move (Stockfish's best move beats the second by ``--gap`` cp,
   from a labelled dataset): how often 1-ply greedy choice, depth-4 pruned minimax and depth-4
   level-wise beam find it. Meaningful only for a trained model.

Without ``--model`` (and no default model shipped yet) a randomly initialised ``--config`` model is
used: fine for costs, meaningless for the comparison. The machine is shared; the load average is
recorded at the start and the end. Usage::

    .venv/bin/python benchmarks/bench_search.py --quick
    .venv/bin/python benchmarks/bench_search.py --threads 2 \
        --model src/latentchess/weights/gab-micro
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import chess
import chess.engine
import numpy as np
import torch

from latentchess.batch_keys import tokenize_boards, zobrist_hashes
from latentchess.engines.latent import LatentEngine
from latentchess.models import Encoder, get_config
from latentchess.models.inference import LatentModel
from latentchess.models.io import default_model_path, load_model
from latentchess.search import EmbeddingCache, SearchConfig, Searcher, SearchResult

REPO = Path(__file__).resolve().parents[1]
SHARED_SAMPLE = Path(__file__).resolve().parents[2] / "shared/data/sf15-d9-eco-selfplay.csv.gz"
VARIANTS: dict[str, dict[str, Any]] = {
    "minimax": {},
    "minimax-wide": {"leaf_chunk": 0},
    "minimax-plain": {"alpha_beta": False, "leaf_chunk": 0},
    "beam": {"mode": "beam"},
}


# -- positions ------------------------------------------------------------------------------------


def _read_labelled(path: Path) -> list[dict[str, str]]:
    """Rows of a labelled dataset: the shared CSV (gzip, no header) or a Parquet dataset."""
    if path.is_dir():
        from latentchess.data.store import read_dataset

        table = read_dataset(path, columns=["fen", "best_move", "multipv_gap_cp"])
        return [
            {k: "" if v is None else str(v) for k, v in row.items()} for row in table.to_pylist()
        ]
    opener = gzip.open if path.suffix == ".gz" else open
    columns = ("fen", "cp_white", "mate_white", "win_prob_white", "best_move", "depth", "gap")
    rows = []
    with opener(path, "rt", encoding="utf-8") as handle:  # type: ignore[operator]
        for line in handle:
            fields = line.rstrip("\n").split(",")
            if len(fields) == len(columns):
                row = dict(zip(columns, fields, strict=True))
                rows.append(
                    {"fen": row["fen"], "best_move": row["best_move"], "multipv_gap_cp": row["gap"]}
                )
    return rows


def single_good_move_positions(
    path: Path, *, min_gap_cp: float = 200.0, count: int = 60, seed: int = 0
) -> list[tuple[chess.Board, chess.Move]]:
    """Positions whose best move beats the second best by ``min_gap_cp`` (side to move's view).

    Positions with a forced mate in the label are skipped when the gap is missing, and so are
    positions where the best move itself mates (every search finds those).
    """
    rows = [
        r
        for r in _read_labelled(path)
        if r["multipv_gap_cp"] not in ("", "None") and float(r["multipv_gap_cp"]) >= min_gap_cp
    ]
    random.Random(seed).shuffle(rows)
    chosen = []
    for row in rows:
        position = good_move(row["fen"], row["best_move"])
        if position is not None:
            chosen.append(position)
        if len(chosen) == count:
            break
    return chosen


def good_move(fen: str, uci: str) -> tuple[chess.Board, chess.Move] | None:
    """The position and its best move, or None if the move is illegal or mates at once."""
    board = chess.Board(fen)
    move = chess.Move.from_uci(uci)
    if move not in board.legal_moves:
        return None
    board.push(move)
    mates = board.is_checkmate()
    board.pop()
    return None if mates else (board, move)


def middlegame_positions(count: int, seed: int) -> list[chess.Board]:
    """Positions with 8-30 moves played: from the shared sample if present, else random games."""
    rng = random.Random(seed)
    if SHARED_SAMPLE.exists():
        fens = []
        with gzip.open(SHARED_SAMPLE, "rt", encoding="utf-8") as handle:
            for index, line in enumerate(handle):
                if index > 200_000:
                    break
                fen = line.split(",", 1)[0]
                if 8 <= int(fen.split()[5]) <= 30:
                    fens.append(fen)
        boards = [chess.Board(fen) for fen in rng.sample(fens, count * 3)]
        return [b for b in boards if b.legal_moves.count() >= 20][:count]
    boards = []
    while len(boards) < count:
        board = chess.Board()
        for _ in range(rng.randint(16, 40)):
            board.push(rng.choice(list(board.legal_moves)))
            if board.is_game_over():
                break
        if not board.is_game_over():
            boards.append(board)
    return boards


# -- measurements ---------------------------------------------------------------------------------


def model_throughput(model: LatentModel, boards: Sequence[chess.Board]) -> dict[int, float]:
    """Positions per second of the model alone at batch sizes 8, 32 and 128 (best of rounds)."""
    children = []
    for board in boards:
        for move in board.legal_moves:
            child = board.copy(stack=False)
            child.push(move)
            children.append(child)
    tokens = tokenize_boards(children[:128])
    rates = {}
    for batch in (8, 32, 128):
        chunk = np.resize(tokens, (batch, tokens.shape[1]))
        model.score_tokens(chunk)
        best = 0.0
        for _ in range(3):
            began, calls = time.perf_counter(), 0
            while time.perf_counter() - began < 0.5:
                model.score_tokens(chunk)
                calls += 1
            best = max(best, batch * calls / (time.perf_counter() - began))
        rates[batch] = best
    return rates


def cold_per_depth(
    engine: LatentEngine,
    boards: Sequence[chess.Board],
    depths: Sequence[int],
    variants: Sequence[str],
    rate: float,
    plain_max_depth: int,
) -> list[dict[str, Any]]:
    """Section 1: one fixed-depth search per position with a fresh cache."""
    rows = []
    for variant in variants:
        for depth in depths:
            if variant == "minimax-plain" and depth > plain_max_depth:
                continue
            config = SearchConfig(
                depth=depth, width=3, draw_score=engine.config.draw_score, **VARIANTS[variant]
            )
            results = []
            for board in boards:
                searcher = Searcher(engine.score_boards, config)
                results.append(searcher.search(board, iterate=False))
            row = _summary(results, rate)
            row.update(variant=variant, depth=depth)
            rows.append(row)
            print(
                f"{variant:>14} depth {depth}: {row['positions_per_move']:8.0f} positions/move "
                f"{row['seconds_per_move']:7.2f} s/move  model share {row['model_share']:.0%}",
                file=sys.stderr,
            )
    return rows


def _summary(results: Sequence[SearchResult], rate: float) -> dict[str, Any]:
    nodes = float(np.mean([r.nodes for r in results]))
    seconds = float(np.mean([r.time_s for r in results]))
    scorer = float(np.mean([r.scorer_time_s for r in results]))
    hits = sum(r.cache_hits for r in results)
    lookups = hits + sum(r.nodes for r in results)
    return {
        "positions_per_move": nodes,
        "seconds_per_move": seconds,
        "scorer_calls_per_move": float(np.mean([r.scorer_calls for r in results])),
        "model_share": scorer / seconds if seconds else 0.0,
        "time_vs_model_alone": seconds / (nodes / rate) if nodes else None,
        "cache_hit_rate": hits / lookups if lookups else 0.0,
    }


def surrogate_scorer(boards: Sequence[chess.Board]) -> np.ndarray:
    """A fast stand-in for a model: material balance plus position-keyed noise, in (-1, 1)."""
    values = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
    keys = zobrist_hashes(boards)
    noise = (keys % np.uint64(10_007)).astype(np.float64) / 10_007.0 - 0.5  # [-0.5, 0.5)
    material = np.array(
        [
            sum(
                v
                * (
                    chess.popcount(b.pieces_mask(p, chess.WHITE))
                    - chess.popcount(b.pieces_mask(p, chess.BLACK))
                )
                for p, v in values.items()
            )
            for b in boards
        ],
        dtype=np.float64,
    )
    return 0.8 * np.tanh(material / 10) + 0.4 * noise


def surrogate_counts(boards: Sequence[chess.Board], depths: Sequence[int]) -> list[dict[str, Any]]:
    """Section 1b: positions embedded per move with :func:`surrogate_scorer` (no model: fast)."""
    rows = []
    for variant in VARIANTS:
        for depth in depths:
            config = SearchConfig(depth=depth, width=3, **VARIANTS[variant])
            counts = [
                Searcher(surrogate_scorer, config).search(board, iterate=False).nodes
                for board in boards
            ]
            rows.append(
                {"variant": variant, "depth": depth, "positions_per_move": float(np.mean(counts))}
            )
    return rows


def self_play(engine: LatentEngine, plies: int, depth: int, seed: int) -> dict[str, Any]:
    """Section 2: the engine plays both sides from a short random opening."""
    rng = random.Random(seed)
    board = chess.Board()
    for _ in range(4):
        board.push(rng.choice(list(board.legal_moves)))
    engine.new_game()
    results = []
    for _ in range(plies):
        if board.is_game_over():
            break
        result = engine.search(board, chess.engine.Limit(depth=depth))
        results.append(result)
        board.push(result.move)
    cache = engine.searcher.cache
    return {
        "plies": len(results),
        "depth": depth,
        "mode": engine.config.mode,
        "seconds_per_move": float(np.mean([r.time_s for r in results])),
        "max_seconds_per_move": float(max(r.time_s for r in results)),
        "positions_per_move": float(np.mean([r.nodes for r in results])),
        "model_share": float(
            sum(r.scorer_time_s for r in results) / sum(r.time_s for r in results)
        ),
        "cache_hit_rate": cache.hit_rate,
        "cache_entries": len(cache),
        "per_move": [
            {"nodes": r.nodes, "hits": r.cache_hits, "time_s": round(r.time_s, 3)} for r in results
        ],
    }


def compare_single_good_move(
    engine: LatentEngine,
    positions: Sequence[tuple[chess.Board, chess.Move]],
    depth: int = 4,
    width: int = 3,
) -> dict[str, Any]:
    """Section 3: how often greedy, pruned minimax and level-wise beam find the one good move."""
    shared = EmbeddingCache(1_000_000)  # static scores do not depend on the mode
    draw = engine.config.draw_score
    methods = {
        "greedy (1 ply)": SearchConfig(depth=1, width=width, draw_score=draw),
        f"minimax depth {depth}": SearchConfig(depth=depth, width=width, draw_score=draw),
        f"beam depth {depth}": SearchConfig(depth=depth, width=width, mode="beam", draw_score=draw),
    }
    return {"positions": len(positions), "found": count_found(engine, positions, methods, shared)}


def count_found(
    engine: LatentEngine,
    positions: Sequence[tuple[chess.Board, chess.Move]],
    methods: dict[str, SearchConfig],
    cache: EmbeddingCache,
) -> dict[str, int]:
    """For each search setting, how many positions it answers with the given move."""
    found = dict.fromkeys(methods, 0)
    for board, best in positions:
        for name, config in methods.items():
            searcher = Searcher(engine.score_boards, config)
            searcher.cache = cache
            if searcher.search(board, iterate=False).move == best:
                found[name] += 1
    return found


# -- driver ---------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="model directory (default: the default model)")
    parser.add_argument("--config", default="tiny", help="random model size without a model")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="small run (depths <= 4)")
    parser.add_argument("--positions", type=int, help="positions for the per-depth table")
    parser.add_argument("--max-depth", type=int, help="deepest depth in the per-depth table")
    parser.add_argument("--plain-max-depth", type=int, help="deepest plain-minimax depth")
    parser.add_argument("--game-plies", type=int, help="plies of the self-play game")
    parser.add_argument("--game-depth", type=int, help="depth of the self-play game")
    parser.add_argument(
        "--good-moves",
        type=Path,
        default=SHARED_SAMPLE,
        help="labelled dataset (shared CSV or Parquet dir) for section 3",
    )
    parser.add_argument("--good-move-count", type=int, help="positions for section 3")
    parser.add_argument("--gap", type=float, default=200.0, help="min best-vs-second gap, cp")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args()
    quick = args.quick
    positions = args.positions or (3 if quick else 6)
    max_depth = args.max_depth or (4 if quick else 6)
    plain_max_depth = args.plain_max_depth or (4 if quick else 6)
    game_plies = args.game_plies or (6 if quick else 20)
    game_depth = args.game_depth or (4 if quick else 6)
    good_count = args.good_move_count or (10 if quick else 60)

    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    model_path = args.model or default_model_path()
    if model_path.exists():
        model = load_model(model_path, precision=args.precision)
        model_name = str(model_path)
    else:
        torch.manual_seed(args.seed)
        config = get_config(args.config)
        axis = np.random.default_rng(args.seed).normal(size=config.dim)
        model = LatentModel.from_encoder(Encoder(config), axis, precision=args.precision)
        model_name = f"random {args.config} (no trained model at {model_path})"
    engine = LatentEngine(model, SearchConfig())
    boards = middlegame_positions(positions, args.seed)
    rates = model_throughput(model, boards)
    rate = rates[32]
    print(f"model alone: {rates}", file=sys.stderr)

    cold = cold_per_depth(
        engine, boards, range(1, max_depth + 1), list(VARIANTS), rate, plain_max_depth
    )
    surrogate_boards = middlegame_positions(10, args.seed + 1)
    surrogate = surrogate_counts(surrogate_boards, range(2, 7))
    games = []
    for mode in ("minimax", "beam"):
        player = LatentEngine(model, SearchConfig(mode=mode, depth=game_depth))
        games.append(self_play(player, game_plies, game_depth, args.seed))
        print(
            f"game {mode}: {games[-1]['seconds_per_move']:.2f} s/move, "
            f"hit rate {games[-1]['cache_hit_rate']:.0%}",
            file=sys.stderr,
        )
    comparison = None
    if args.good_moves.exists():
        good = single_good_move_positions(
            args.good_moves, min_gap_cp=args.gap, count=good_count, seed=args.seed
        )
        comparison = compare_single_good_move(engine, good)
        comparison.update(source=str(args.good_moves), min_gap_cp=args.gap)
        print(f"single good move: {comparison['found']}", file=sys.stderr)

    report = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "torch": torch.__version__,
            "threads": args.threads,
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "model": {
            "name": model_name,
            "config": model.config.to_dict(),
            "precision": model.precision,
        },
        "model_alone_positions_per_s": rates,
        "cold_per_depth": cold,
        "surrogate_counts": {"positions": len(surrogate_boards), "rows": surrogate},
        "games": games,
        "single_good_move": comparison,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "search.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (args.out / "search.md").write_text(_markdown(report), encoding="utf-8")
    print(f"wrote {args.out / 'search.json'} and search.md", file=sys.stderr)
    return 0


def _goals(report: dict[str, Any]) -> list[str]:
    """Depth 6, width 3: minimax <= 1 s per move, beam <= 200 ms, against what was measured."""
    rate = report["model_alone_positions_per_s"][32]
    lines = ["", "## Goals (depth 6, width 3)", ""]
    for variant, goal in (("minimax", 1.0), ("beam", 0.2)):
        rows = [r for r in report["cold_per_depth"] if r["variant"] == variant and r["depth"] == 6]
        if not rows:
            continue
        row = rows[0]
        needed = row["positions_per_move"] / goal
        lines.append(
            f"- {variant}: {row['seconds_per_move']:.2f} s per move (goal {goal:g} s): "
            f"{row['positions_per_move']:.0f} positions at {rate:.0f} positions/s; the goal needs "
            f"the model at {needed:.0f} positions/s ({needed / rate:.1f}x this run's), since "
            f"{row['model_share']:.0%} of the time is the model."
        )
    return lines


def _markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        "# Search cost per move",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Model: {report['model']['name']} ({report['model']['config']['name']}, "
        f"{report['model']['precision']}); torch {m['torch']}, {m['threads']} thread(s), "
        f"{m['cpus']} CPUs; load average {m['load_average_before']} before, "
        f"{m['load_average_after']} after (shared machine: absolute times are pessimistic).",
        "",
        "Model alone (same process): "
        + ", ".join(
            f"{v:.0f} positions/s at batch {k}"
            for k, v in report["model_alone_positions_per_s"].items()
        ),
        "",
        "## Cold search per depth (width 3, fresh cache, fixed depth)",
        "",
        "| variant | depth | positions/move | s/move | scorer calls | model share | "
        "time / model alone |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in report["cold_per_depth"]:
        ratio = row["time_vs_model_alone"]
        lines.append(
            f"| {row['variant']} | {row['depth']} | {row['positions_per_move']:.0f} | "
            f"{row['seconds_per_move']:.2f} | {row['scorer_calls_per_move']:.0f} | "
            f"{row['model_share']:.0%} | {'' if ratio is None else f'{ratio:.2f}'} |"
        )
    surrogate = report["surrogate_counts"]
    lines += [
        "",
        f"## Positions embedded per move with a surrogate scorer ({surrogate['positions']} "
        "positions)",
        "",
        "Material balance plus position-keyed noise instead of a model (fast, so depth 6 of the "
        "plain reference search is affordable); counts depend on the scorer's ordering quality.",
        "",
        "| depth | " + " | ".join(VARIANTS) + " |",
        "|---:|" + "---:|" * len(VARIANTS),
    ]
    by_depth: dict[int, dict[str, float]] = {}
    for row in surrogate["rows"]:
        by_depth.setdefault(row["depth"], {})[row["variant"]] = row["positions_per_move"]
    for depth, counts in sorted(by_depth.items()):
        lines.append(f"| {depth} | " + " | ".join(f"{counts[v]:.0f}" for v in VARIANTS) + " |")
    lines += _goals(report)
    lines += [
        "",
        "## Self-play game (iterative deepening, cache kept across moves)",
        "",
        "| mode | depth | plies | s/move (mean) | s/move (max) | positions/move | "
        "cache hit rate | model share |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for game in report["games"]:
        lines.append(
            f"| {game['mode']} | {game['depth']} | {game['plies']} | "
            f"{game['seconds_per_move']:.2f} | {game['max_seconds_per_move']:.2f} | "
            f"{game['positions_per_move']:.0f} | {game['cache_hit_rate']:.0%} | "
            f"{game['model_share']:.0%} |"
        )
    comparison = report["single_good_move"]
    if comparison:
        lines += [
            "",
            "## Positions with a single good move",
            "",
            f"{comparison['positions']} positions from {comparison['source']} where "
            f"Stockfish's best move beats the second by >= {comparison['min_gap_cp']:.0f} cp "
            "(mating moves excluded).",
            "",
            "| method | found |",
            "|---|---:|",
        ]
        for name, found in comparison["found"].items():
            lines.append(f"| {name} | {found}/{comparison['positions']} |")
        if report["model"]["name"].startswith("random"):
            lines += ["", "A random model: these counts are chance level, not a comparison."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
