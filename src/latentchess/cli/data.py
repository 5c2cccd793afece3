"""``latentchess data ...``: generate, label, import, merge, summarise datasets; build caches.

Only argparse wiring lives here; each handler calls one function of the data package (imported
inside the handler so that ``latentchess --help`` stays quick).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from latentchess.argtypes import non_negative_int, positive_int, shard
from latentchess.cluster import add_cluster_argument, cluster_pool

if TYPE_CHECKING:
    import chess.engine

_LIMIT_HELP = (
    "Stockfish label limit: --depth D or --nodes N (default: depth 9). Measured with "
    "benchmarks/bench_labelling.py --sweep against a depth-16 reference: at depth 9, 88% of "
    "labels lie within the SupCon margin 0.05 of the reference (depth 8: 82%, depth 10: 90%) "
    "and each extra ply costs about 2x; depth 9 is also the depth of the project's shared CSV. "
    "Each process runs Stockfish with Threads=1, Hash=16."
)


def _temperatures(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 30,60,120, got {text!r}") from None
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError(f"temperatures must be positive, got {text!r}")
    return values


def _add_engine_flags(parser: argparse.ArgumentParser, *, multipv: int) -> None:
    group = parser.add_argument_group("Stockfish", _LIMIT_HELP)
    limit = group.add_mutually_exclusive_group()
    limit.add_argument("--depth", type=positive_int, default=None, help="label search depth")
    limit.add_argument("--nodes", type=positive_int, default=None, help="label node limit")
    group.add_argument(
        "--multipv", type=positive_int, default=multipv, help=f"lines per position ({multipv})"
    )
    group.add_argument(
        "--workers",
        type=positive_int,
        default=os.cpu_count() or 1,
        help="Stockfish processes, one per core (default: os.cpu_count(), here %(default)s)",
    )
    group.add_argument(
        "--stockfish",
        type=Path,
        default=None,
        metavar="PATH",
        help="Stockfish binary (default: $LATENTCHESS_STOCKFISH, /usr/games/stockfish, PATH)",
    )


def _add_output_flags(parser: argparse.ArgumentParser, *, shard_rows: int) -> None:
    parser.add_argument(
        "--shard-rows",
        type=positive_int,
        default=shard_rows,
        help=f"rows per Parquet shard (default {shard_rows})",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="progress bar on stderr (default: on)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this area's subcommands to the ``latentchess`` parser."""
    data = subparsers.add_parser(
        "data", help="make, import and inspect labelled datasets", description=__doc__
    )
    commands = data.add_subparsers(dest="data_command", metavar="SUBCOMMAND", required=True)

    p = commands.add_parser(
        "generate",
        help="positions from Stockfish self-play games that start at ECO openings",
        description=(
            "Play games from random ECO opening lines onwards, Stockfish choosing among its "
            "MultiPV moves by a softmax (per-game temperature) with occasional random moves, to "
            "mate or draw; label every position; keep unique positions (first four FEN fields). "
            "Rerunning the same command resumes an interrupted run. --shard I/N splits a run "
            "over machines (game g belongs to shard g mod N); combine with `data merge`."
        ),
    )
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="dataset directory")
    p.add_argument(
        "--positions",
        type=positive_int,
        required=True,
        help="rows to make in total (over all shards)",
    )
    p.add_argument("--seed", type=int, default=0, help="run seed; game g is seeded by (seed, g)")
    p.add_argument("--shard", type=shard, default=(0, 1), metavar="I/N", help="default 0/1")
    p.add_argument("--openings", type=Path, default=None, metavar="PGN", help="opening lines")
    p.add_argument(
        "--temperatures",
        type=_temperatures,
        default=(30.0, 60.0, 120.0),
        help="softmax temperatures in centipawns, one drawn per game (default 30,60,120)",
    )
    p.add_argument("--random-move-prob", type=float, default=0.04, help="random move chance (0.04)")
    p.add_argument("--max-plies", type=positive_int, default=300, help="game length cap (300)")
    _add_engine_flags(p, multipv=4)
    _add_output_flags(p, shard_rows=10_000)
    add_cluster_argument(p)
    p.set_defaults(func=_generate)

    p = commands.add_parser(
        "selfplay",
        help="games of the native ab engine against itself -> Stockfish .bin training records",
        description=(
            "Play games of `ab` (its NNUE, in-process, one thread, a fixed node count) against "
            "itself from ECO opening lines plus random plies, with resign and draw adjudication, "
            "and write one 40-byte Stockfish PackedSfenValue record per kept position (score, "
            "best move, ply, game result) to OUT/selfplay-s<I>of<N>.bin, with a log of games. "
            "Rerunning the same command resumes (finished games are kept; a larger --games "
            "extends the run). Game g belongs to shard g mod N; shards' .bin files concatenate. "
            "Train on them with `latentchess train nnue --data OUT --lambda L`."
        ),
    )
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="output directory")
    p.add_argument(
        "--games", type=positive_int, required=True, help="games in total (over all shards)"
    )
    p.add_argument("--nodes", type=positive_int, default=5000, help="nodes per move (5000)")
    p.add_argument("--seed", type=int, default=0, help="run seed; game g is seeded by (seed, g)")
    p.add_argument("--shard", type=shard, default=(0, 1), metavar="I/N", help="default 0/1")
    p.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        help="games at once, one thread and engine each (the search releases the GIL; default 1)",
    )
    add_cluster_argument(p)
    p.add_argument(
        "--eval", default="nnue", metavar="EVAL", help="nnue (default), hce or an NNUE model dir"
    )
    p.add_argument("--hash", type=positive_int, default=16, metavar="MB", help="per process (16)")
    p.add_argument(
        "--openings",
        default=None,
        metavar="PGN|none",
        help="opening lines (default: pgn-extract's eco.pgn); 'none': the start position",
    )
    p.add_argument(
        "--random-plies", type=non_negative_int, default=4, help="random plies after the line (4)"
    )
    p.add_argument(
        "--opening-cp",
        type=non_negative_int,
        default=300,
        help="redraw the random plies when the first search scores beyond this (300)",
    )
    p.add_argument("--resign-cp", type=non_negative_int, default=600, help="(600)")
    p.add_argument(
        "--resign-plies",
        type=non_negative_int,
        default=8,
        help="resign after this many plies in a row beyond --resign-cp for one side (8; 0: never)",
    )
    p.add_argument("--draw-cp", type=non_negative_int, default=10, help="(10)")
    p.add_argument(
        "--draw-plies",
        type=non_negative_int,
        default=12,
        help="draw after this many plies in a row within +-draw-cp (12; 0: never)",
    )
    p.add_argument(
        "--draw-min-ply", type=non_negative_int, default=80, help="no draw adjudication before (80)"
    )
    p.add_argument("--max-plies", type=positive_int, default=400, help="draw at this ply (400)")
    p.add_argument(
        "--keep",
        choices=("quiet", "all"),
        default="quiet",
        help="quiet (default): skip positions in check or whose best move captures; all: keep all",
    )
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True)
    p.set_defaults(func=_selfplay)

    p = commands.add_parser(
        "show-bin",
        help="print the records of a Stockfish .bin training file (or check it)",
        description=(
            "Decode 40-byte PackedSfenValue records (e.g. `data selfplay` output): one line per "
            "record, FEN, score, best move, ply, result; a malformed or truncated record is "
            "reported with the file, record number and byte offset."
        ),
    )
    p.add_argument("path", type=Path, metavar="FILE.bin|DIR")
    p.add_argument("--head", type=non_negative_int, default=10, help="records to print (10)")
    p.add_argument(
        "--check", action="store_true", help="read every record, check moves, print counts"
    )
    p.set_defaults(func=_show_bin)

    p = commands.add_parser(
        "label",
        help="label the positions of a PGN, EPD, FEN-list or .bin file",
        description=(
            "Label positions from your games (PGN, also .gz/.xz/.zst), an EPD file, a file of "
            "FENs (one a line) or Stockfish .bin training records (`data selfplay`'s positions). "
            "Malformed records are reported with file:line and skipped (a malformed .bin "
            "record stops the run, naming its file, number and byte offset). "
            "Rerunning the same command resumes."
        ),
    )
    p.add_argument("file", type=Path, metavar="FILE")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="dataset directory")
    p.add_argument("--format", choices=("auto", "pgn", "epd", "fen", "bin"), default="auto")
    p.add_argument("--per-game", type=positive_int, default=None, metavar="N")
    p.add_argument("--seed", type=int, default=0, help="seed of the --per-game sampling")
    p.add_argument("--strict", action="store_true", help="stop at the first malformed record")
    _add_engine_flags(p, multipv=2)
    _add_output_flags(p, shard_rows=10_000)
    p.set_defaults(func=_label)

    p = commands.add_parser(
        "import-csv",
        help="import the project's labelled CSV (fen,cp_white,mate_white,...)",
        description=(
            "Import a headerless CSV with columns fen,cp_white,mate_white,win_prob_white,"
            "best_move,depth,multipv_gap_cp (e.g. ../shared/data/sf15-d9-eco-selfplay.csv.gz)."
        ),
    )
    p.add_argument("file", type=Path, metavar="FILE.csv.gz")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="dataset directory")
    p.add_argument("--strict", action="store_true", help="stop at the first malformed row")
    _add_output_flags(p, shard_rows=100_000)
    p.set_defaults(func=_import_csv)

    p = commands.add_parser(
        "merge",
        help="merge datasets (e.g. generate shards), dropping repeated positions",
    )
    p.add_argument("inputs", type=Path, nargs="+", metavar="DATASET")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="merged dataset")
    _add_output_flags(p, shard_rows=100_000)
    p.set_defaults(func=_merge)

    p = commands.add_parser(
        "build-cache",
        help="tokenize a dataset into the memory-mapped training cache (reused when current)",
    )
    p.add_argument("dataset", type=Path, metavar="DATASET")
    p.add_argument("--out", type=Path, required=True, metavar="CACHE_DIR")
    p.add_argument("--rebuild", action="store_true", help="rebuild even if the cache is current")
    p.add_argument("--chunk-rows", type=positive_int, default=65_536, help="rows per chunk")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True)
    p.set_defaults(func=_build_cache)

    p = commands.add_parser(
        "move-cache",
        help="engine-labelled CSVs -> one move-prediction cache (.npz) for 'train chessformer'",
        description=(
            "Parse Stockfish/TCEC CSVs (fen, cp, mate, win_prob_white, best_move, ...) into the "
            "cache 'latentchess train chessformer' reads with --data OUT.npz: files in order, each "
            "split over "
            "--workers processes, written compressed and atomically."
        ),
    )
    p.add_argument("csvs", type=Path, nargs="+", metavar="CSV")
    p.add_argument("--out", type=Path, required=True, metavar="OUT.npz")
    p.add_argument(
        "--max-rows", type=positive_int, default=None, help="rows per file (default: all)"
    )
    p.add_argument("--workers", type=positive_int, default=os.cpu_count() or 1)
    p.add_argument("--elo", type=positive_int, default=3000, help="both players' rating")
    p.add_argument("--holdout-fraction", type=float, default=0.05, help="by FEN hash")
    p.add_argument(
        "--compress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="np.savez_compressed (about 8x smaller, slower to write)",
    )
    p.set_defaults(func=_move_cache)

    p = commands.add_parser("summary", help="rows, sources, label histogram, mates, depth")
    p.add_argument("dataset", type=Path, metavar="DATASET")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=_summary)

    p = commands.add_parser(
        "import-chessbench",
        help="import ChessBench state_value/action_value .bag(z) files into a dataset",
        description=(
            "Import DeepMind ChessBench .bag/.bagz files into a Parquet dataset. Win "
            "probabilities are converted to White's view; action values give one row per "
            "position (its best move and value). Re-running resumes where a run stopped."
        ),
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help=".bag or .bagz file")
    p.add_argument("--out", required=True, type=Path, metavar="DATASET_DIR")
    p.add_argument(
        "--kind",
        choices=("state_value", "action_value", "behavioral_cloning"),  # chessbench.KINDS
        default=None,
        help="record kind (default: from the file name)",
    )
    p.add_argument(
        "--limit",
        type=non_negative_int,
        default=None,
        metavar="N",
        help="read only the first N records of each file",
    )
    p.add_argument(
        "--strict",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="fail on the first bad record instead of skipping it (default: skip and count)",
    )
    p.add_argument(
        "--shard-rows",
        type=positive_int,
        default=100_000,
        metavar="N",
        help="rows per shard (default: 100000)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_import_chessbench)


def _import_chessbench(args: argparse.Namespace) -> int:
    from latentchess.data.chessbench import import_chessbench

    summary = import_chessbench(
        args.files,
        args.out,
        kind=args.kind,
        limit=args.limit,
        strict=args.strict,
        shard_rows=args.shard_rows,
        progress=not args.quiet,
    )
    print(
        f"imported {summary.rows_written} rows into {summary.shards_written} shards in "
        f"{summary.out_dir} from {summary.records_read} records of {summary.files_read} file(s) "
        f"({summary.files_skipped} already imported, {summary.records_bad} bad records and "
        f"{summary.records_duplicate} repeated positions skipped)"
    )
    return 0


def _move_cache(args: argparse.Namespace) -> int:
    import dataclasses
    import time

    from latentchess.data.moves import concatenate_moves, read_csv_moves_parallel
    from latentchess.textfiles import open_text

    started, parts = time.monotonic(), []
    for path in args.csvs:
        if args.max_rows is None:
            with open_text(path) as handle:
                rows = sum(1 for _ in handle)
        else:
            rows = args.max_rows
        part = read_csv_moves_parallel(
            path,
            rows=rows,
            workers=args.workers,
            elo=args.elo,
            holdout_fraction=args.holdout_fraction,
        )
        # Game numbers are line numbers within a file: keep them distinct across files.
        offset = int(parts[-1].game.max()) + 1 if parts else 0
        parts.append(dataclasses.replace(part, game=part.game + offset))
        print(f"move-cache: {path}: {len(part)} positions ({time.monotonic() - started:.0f} s)")
    data = concatenate_moves(parts)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    data.save(args.out, compressed=args.compress)
    print(f"move-cache: {len(data)} positions in {args.out} ({time.monotonic() - started:.0f} s)")
    return 0


def _limit(args: argparse.Namespace) -> chess.engine.Limit:
    from latentchess.data.stockfish import make_limit

    return make_limit(depth=args.depth, nodes=args.nodes)


def _generate(args: argparse.Namespace) -> int:
    from latentchess.data.generate import DEFAULT_OPENINGS, GenerateConfig, generate

    config = GenerateConfig(
        positions=args.positions,
        seed=args.seed,
        depth=args.depth,
        nodes=args.nodes,
        multipv=args.multipv,
        temperatures=args.temperatures,
        random_move_prob=args.random_move_prob,
        max_plies=args.max_plies,
        shard_index=args.shard[0],
        num_shards=args.shard[1],
        openings=args.openings or DEFAULT_OPENINGS,
    )
    with cluster_pool(args.cluster) as pool:
        result = generate(
            config,
            args.out,
            workers=args.workers,
            shard_rows=args.shard_rows,
            stockfish=args.stockfish,
            progress=args.progress,
            pool=pool,
        )
    rate = result.labelled / result.seconds if result.seconds > 0 else 0.0
    print(
        f"generate: {result.rows} rows in {result.out} ({result.new_rows} new; "
        f"{result.labelled} positions labelled in {result.games} games, {rate:.1f} pos/s)"
    )
    return 0


def _selfplay(args: argparse.Namespace) -> int:
    from latentchess.data.generate import DEFAULT_OPENINGS
    from latentchess.data.selfplay import SelfPlayConfig, selfplay

    openings = args.openings
    config = SelfPlayConfig(
        games=args.games,
        nodes=args.nodes,
        seed=args.seed,
        evaluator=args.eval,
        hash_mb=args.hash,
        openings=None if openings == "none" else Path(openings or DEFAULT_OPENINGS),
        random_plies=args.random_plies,
        opening_cp=args.opening_cp,
        resign_cp=args.resign_cp,
        resign_plies=args.resign_plies,
        draw_cp=args.draw_cp,
        draw_plies=args.draw_plies,
        draw_min_ply=args.draw_min_ply,
        max_plies=args.max_plies,
        keep=args.keep,
        shard_index=args.shard[0],
        num_shards=args.shard[1],
    )
    result = selfplay(
        config, args.out, workers=args.workers, cluster=args.cluster, progress=args.progress
    )
    seconds = max(result.seconds, 1e-9)
    print(
        f"selfplay: {result.records} records of {result.games} games in {result.path} "
        f"({result.new_games} games, {result.new_records} records new; "
        f"{result.new_records / seconds:.1f} records/s, {result.searched / seconds:.1f} "
        f"searches/s, {result.new_games / seconds:.2f} games/s)"
    )
    return 0


def _show_bin(args: argparse.Namespace) -> int:
    from collections import Counter

    from latentchess.data.packed_sfen import read_records

    if args.check:
        results: Counter[int] = Counter()
        mates = 0
        for _, record in read_records(args.path, check_moves=True):
            results[record.result] += 1
            mates += record.mate is not None
        total = sum(results.values())
        print(
            f"{args.path}: {total} records, all legal; results (side to move) "
            f"+1 {results[1]}, 0 {results[0]}, -1 {results[-1]}; mate scores {mates}"
        )
        return 0
    for index, record in read_records(args.path):
        if index >= args.head:
            break
        score = f"mate {record.mate}" if record.mate is not None else f"cp {record.score_cp}"
        print(
            f"{record.fen}  {score}  {record.move.uci()}  ply {record.ply}  "
            f"result {record.result:+d}"
        )
    return 0


def _label(args: argparse.Namespace) -> int:
    from latentchess.data.label import label_file

    result = label_file(
        args.file,
        args.out,
        fmt=None if args.format == "auto" else args.format,
        per_game=args.per_game,
        seed=args.seed,
        limit=_limit(args),
        multipv=args.multipv,
        workers=args.workers,
        strict=args.strict,
        shard_rows=args.shard_rows,
        stockfish=args.stockfish,
        progress=args.progress,
    )
    print(
        f"label: {result.rows} rows in {result.out} ({result.new_rows} new, "
        f"{result.duplicates} repeated positions skipped, {result.malformed} malformed records "
        f"skipped)"
    )
    return 0


def _import_csv(args: argparse.Namespace) -> int:
    from latentchess.data.csv_import import import_csv

    result = import_csv(
        args.file, args.out, strict=args.strict, shard_rows=args.shard_rows, progress=args.progress
    )
    print(
        f"import-csv: {result.rows} rows in {result.out} ({result.new_rows} new, {result.games} "
        f"games, {result.duplicates} repeated positions and {result.malformed} malformed rows "
        f"skipped)"
    )
    return 0


def _merge(args: argparse.Namespace) -> int:
    from latentchess.data.merge import merge_datasets

    result = merge_datasets(
        args.inputs, args.out, shard_rows=args.shard_rows, progress=args.progress
    )
    print(f"merge: {result.rows} rows in {result.out} ({result.duplicates} repeats dropped)")
    return 0


def _build_cache(args: argparse.Namespace) -> int:
    from latentchess.data.cache import build_cache

    cache = build_cache(
        args.dataset,
        args.out,
        chunk_rows=args.chunk_rows,
        rebuild=args.rebuild,
        progress=args.progress,
    )
    print(f"build-cache: {len(cache)} positions in {cache.path}")
    return 0


def _summary(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from latentchess.data.summary import summarize

    summary = summarize(args.dataset)
    if args.json:
        record = asdict(summary)
        record["path"] = str(summary.path)
        json.dump(record, sys.stdout, indent=2)
        print()
    else:
        print(summary.format())
    return 0
