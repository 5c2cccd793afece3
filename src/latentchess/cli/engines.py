"""Subcommands of this area (see latentchess.cli): ``uci``, ``bestmove``, ``analyse``, ``play``.

All take ``--engine SPEC`` (default :data:`~latentchess.engines.default.DEFAULT_ENGINE_SPEC`, the
strongest engine measured here); ``--engine latent`` is the latent planner, whose options
``--model DIR``, ``--width``, ``--mode``, ``--precision`` and ``--threads`` (and, for ``uci``,
``--depth``) are refused with any other engine rather than silently ignored. Heavy imports
(torch, the model, the native core) happen inside the handlers.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from typing import TYPE_CHECKING, Any

from latentchess.engines.default import (
    DEFAULT_ENGINE_SPEC,
    DEFAULT_MOVE_TIME_S,
    LATENT_ENGINE_KIND,
)
from latentchess.errors import EngineError, InvalidFenError
from latentchess.search import MODES, SearchConfig

if TYPE_CHECKING:
    import chess
    import chess.engine

    from latentchess.engines.latent import LatentEngine
    from latentchess.engines.registry import EngineSpec

_LATENT_FLAGS = ("model", "depth", "width", "mode", "precision", "threads")
"""Options of the latent engine (``--depth`` is also every engine's limit, except in uci)."""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this area's subcommands to the ``latentchess`` parser."""
    uci = subparsers.add_parser(
        "uci",
        help=f"speak UCI on stdin/stdout (GUIs, cutechess, lichess-bot) as {DEFAULT_ENGINE_SPEC!r} "
        "or the --engine spec",
        description=f"Speak UCI on stdin/stdout with the engine --engine names (default "
        f"{DEFAULT_ENGINE_SPEC!r}); the UCI option 'Engine' switches it in a running session. The "
        "latent engine's model loads in the background after 'uci'.",
    )
    _search_arguments(uci, limits=False)  # each UCI 'go' carries its own limits
    _engine_argument(uci)
    uci.set_defaults(func=_uci)

    best = subparsers.add_parser(
        "bestmove",
        help=f"print the engine's move for a position ({DEFAULT_ENGINE_SPEC!r} unless --engine)",
        description="Print the move (UCI) on stdout and the search summary on stderr.",
    )
    _position_arguments(best)
    _search_arguments(best)
    _engine_argument(best)
    best.add_argument("--json", action="store_true", help="print a JSON object instead")
    best.set_defaults(func=_bestmove)

    analyse = subparsers.add_parser(
        "analyse",
        help="analyse a position: best move, score, principal variation, best lines",
        description=(
            f"Search a position. With {DEFAULT_ENGINE_SPEC!r} (the default): the best move, its "
            "score, depth, nodes and speed, and the --multipv best lines. With --engine latent: "
            "each legal move with its rank, the axis projection of the position after it, its "
            "searched value, and the calibrated win probability and centipawns."
        ),
    )
    _position_arguments(analyse)
    _search_arguments(analyse)
    _engine_argument(analyse)
    analyse.add_argument(
        "--multipv",
        type=int,
        default=3,
        metavar="N",
        help="ab engine: the N best moves, each with its line (0: every legal move; default: "
        "%(default)s); the latent engine always lists every legal move",
    )
    analyse.add_argument("--json", action="store_true", help="print JSON instead of a table")
    analyse.set_defaults(func=_analyse)

    bench = subparsers.add_parser(
        "bench",
        help="search fixed positions to a fixed depth with the alpha-beta engine (as Stockfish's)",
        description="Print per-position node counts, then 'Nodes searched' (a deterministic "
        "signature of the search) and 'Nodes/second'.",
    )
    bench.add_argument("depth", type=int, nargs="?", default=None, help="plies (default: 11)")
    bench.add_argument("--eval", default="hce", help="evaluator (default: %(default)s)")
    bench.set_defaults(func=_bench)

    play = subparsers.add_parser(
        "play",
        help=f"play against the engine in the terminal ({DEFAULT_ENGINE_SPEC!r} unless --engine)",
        description="Play a game in the terminal: SAN or UCI moves; help, moves, undo, resign, "
        "quit.",
    )
    play.add_argument(
        "--color",
        choices=("white", "black", "random"),
        default="white",
        help="the colour you play (default: white)",
    )
    play.add_argument("--fen", help="start from this position instead of the standard one")
    _search_arguments(play)
    _engine_argument(play)
    play.set_defaults(func=_play)


def _search_arguments(parser: argparse.ArgumentParser, *, limits: bool = True) -> None:
    defaults = SearchConfig()
    latent = "latent engine: "
    parser.add_argument(
        "--model", metavar="DIR", help=f"{latent}model directory (default: the shipped model)"
    )
    parser.add_argument(
        "--depth",
        type=int,
        help=f"depth limit in plies (default: {defaults.depth} for the latent engine; other "
        f"engines think {DEFAULT_MOVE_TIME_S:g} s per move when no --depth/--time/--nodes)"
        if limits
        else f"{latent}search plies (default: {defaults.depth})",
    )
    parser.add_argument("--width", type=int, help=f"{latent}top-k (default: {defaults.width})")
    parser.add_argument(
        "--mode", choices=MODES, help=f"{latent}search mode (default: {defaults.mode})"
    )
    parser.add_argument(
        "--precision",
        choices=("auto", "fp32", "int8", "bf16"),
        help=f"{latent}model precision (default: auto: measured per machine, or "
        "$LATENTCHESS_PRECISION)",
    )
    parser.add_argument("--threads", type=int, help=f"{latent}torch CPU threads (default: 1)")
    if limits:
        parser.add_argument("--time", type=float, metavar="SECONDS", help="time limit per move")
        parser.add_argument(
            "--nodes", type=int, help="node limit per move (latent engine: positions embedded)"
        )


def _engine_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine",
        metavar="SPEC",
        help=f"engine spec (default: {DEFAULT_ENGINE_SPEC!r}, the strongest measured here); "
        "'latent' for the latent planner, or e.g. 'ab:hash=64', 'hybrid:mode=order', "
        "'stockfish:elo=1800' (see 'latentchess match --list-engines')",
    )


def _engine_spec(args: argparse.Namespace, *, depth_is_latent: bool = False) -> EngineSpec:
    """The spec ``--engine`` names (default: the default engine); refuses latent-only flags
    given to another engine.

    Raises:
        EngineError: a bad spec, or a latent engine option with another engine.
    """
    from latentchess.engines.registry import parse_engine_spec

    spec = parse_engine_spec(args.engine or DEFAULT_ENGINE_SPEC)
    if spec.kind != LATENT_ENGINE_KIND:
        flags = [flag for flag in _LATENT_FLAGS if flag != "depth" or depth_is_latent]
        given = [f"--{flag}" for flag in flags if getattr(args, flag, None) is not None]
        if given:
            raise EngineError(
                f"{', '.join(given)} {'is an option' if len(given) == 1 else 'are options'} of "
                f"the latent engine, not of {spec.text!r}; add --engine latent "
                f"(the default engine is {DEFAULT_ENGINE_SPEC!r})"
            )
    return spec


def _spec_limit(args: argparse.Namespace) -> chess.engine.Limit:
    """``--depth``/``--time``/``--nodes``, or :data:`DEFAULT_MOVE_TIME_S` when none is given."""
    import chess.engine

    if args.depth is None and args.time is None and args.nodes is None:
        return chess.engine.Limit(time=DEFAULT_MOVE_TIME_S)
    return chess.engine.Limit(depth=args.depth, time=args.time, nodes=args.nodes)


def _score_text(mate: int | None, cp: int | None) -> str:
    """UCI-style score from the side to move's view: ``cp 35``, ``mate 2``, ``mate -1``."""
    return f"mate {mate}" if mate is not None else f"cp {cp}"


def _spec_bestmove(args: argparse.Namespace, board: chess.Board, spec: EngineSpec) -> int:
    from latentchess.engines.registry import create_engine

    engine = create_engine(spec)
    try:
        analysis = engine.analyse(board, _spec_limit(args))
    finally:
        engine.close()
    score = _score_text(analysis.mate, analysis.score_cp)
    move = analysis.best_move
    if args.json:
        print(
            json.dumps(
                {
                    "fen": board.fen(),
                    "engine": spec.text,
                    "bestmove": move.uci() if move else None,
                    "san": board.san(move) if move else None,
                    "score": score,
                    "pv": [m.uci() for m in analysis.pv],
                    "depth": analysis.depth,
                    "nodes": analysis.nodes,
                    "time_s": analysis.time_s,
                }
            )
        )
        return 0
    print(move.uci() if move else "0000")
    print(
        f"{spec.text}: depth {analysis.depth} score {score} nodes {analysis.nodes} "
        f"time {analysis.time_s:.2f}s pv {' '.join(m.uci() for m in analysis.pv)}",
        file=sys.stderr,
    )
    return 0


def _spec_analyse(args: argparse.Namespace, board: chess.Board, spec: EngineSpec) -> int:
    import chess

    from latentchess.engines.ab import AlphaBetaEngine
    from latentchess.engines.registry import create_engine

    if not any(board.generate_legal_moves()):
        print(f"{board.fen()}  ({'White' if board.turn else 'Black'} to move)")
        print("no legal moves: " + ("checkmate" if board.is_check() else "stalemate"))
        return 0
    engine = create_engine(spec)
    seldepth: int | None = None
    nps: int | None = None
    try:
        if isinstance(engine, AlphaBetaEngine):  # the best lines, as a MultiPV search
            count = board.legal_moves.count()
            lines_wanted = count if args.multipv == 0 else min(args.multipv, count)
            outcome = engine.search(board, _spec_limit(args), multipv=lines_wanted)
            lines = [
                (line.pv, _score_text(line.mate, line.score_cp)) for line in outcome.info.lines
            ]
            depth, nodes, seconds = outcome.info.depth, outcome.nodes, outcome.time_s
            seldepth, nps = outcome.info.seldepth, outcome.info.nps
        else:
            analysis = engine.analyse(board, _spec_limit(args))
            score = _score_text(analysis.mate, analysis.score_cp)
            lines = [(analysis.pv, score)] if analysis.pv else []
            depth, nodes, seconds = analysis.depth, analysis.nodes, analysis.time_s
    finally:
        engine.close()
    rows = [
        {
            "rank": rank,
            "move": pv[0].uci(),
            "san": board.san(pv[0]),
            "score": score,
            "pv": [m.uci() for m in pv],
        }
        for rank, (pv, score) in enumerate(lines, 1)
    ]
    if args.json:
        best = rows[0] if rows else None
        print(
            json.dumps(
                {
                    "fen": board.fen(),
                    "engine": spec.text,
                    "bestmove": best["move"] if best else None,
                    "score": best["score"] if best else None,
                    "pv": best["pv"] if best else [],
                    "depth": depth,
                    "seldepth": seldepth,
                    "nodes": nodes,
                    "nps": nps,
                    "time_s": seconds,
                    "moves": rows,
                },
                indent=2,
            )
        )
        return 0
    print(f"{board.fen()}  ({'White' if board.turn else 'Black'} to move)")
    if not rows:
        print(f"{spec.text}: no move found (depth {depth}, nodes {nodes})")
        return 0
    speed = f"  nps {nps:,}" if nps else ""
    reach = f"depth {depth}" + (f"/{seldepth}" if seldepth else "")
    print(
        f"best {rows[0]['san']}  score {rows[0]['score']}  {reach}  nodes {nodes:,}{speed}  "
        f"time {seconds:.2f}s  ({spec.text})"
    )
    print(f"pv {board.variation_san([chess.Move.from_uci(m) for m in rows[0]['pv']])}")
    print(f"{'rank':>4}  {'move':<7} {'score':>10}  line")
    for row in rows:
        pv = board.variation_san([chess.Move.from_uci(m) for m in row["pv"]])
        print(f"{row['rank']:>4}  {row['san']:<7} {row['score']:>10}  {pv}")
    return 0


def _position_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("fen", metavar="FEN", help="the position ('startpos' for the standard one)")
    parser.add_argument("--moves", nargs="*", default=[], metavar="UCI", help="moves to play first")


def _latent_flags(args: argparse.Namespace, spec: EngineSpec | None = None) -> dict[str, Any]:
    """The latent engine's options: the flags given, then the spec's ``KEY=VALUE`` pairs."""
    options: dict[str, Any] = {
        flag: getattr(args, flag) for flag in _LATENT_FLAGS if getattr(args, flag, None) is not None
    }
    if spec is not None:
        options.update({key.lower(): value for key, value in spec.params.items()})
    return options


def _config(options: dict[str, Any]) -> SearchConfig:
    from latentchess.engines.latent import search_config_from_options

    return search_config_from_options(options)


def _engine(args: argparse.Namespace, spec: EngineSpec) -> LatentEngine:
    from latentchess.engines.latent import LatentEngine

    options = _latent_flags(args, spec)
    model = options.pop("model", None)
    options.setdefault("threads", 1)
    if spec.name != spec.text:
        options["name"] = spec.name
    return LatentEngine.from_options(model, **options)


def _limit(args: argparse.Namespace) -> chess.engine.Limit:
    import chess.engine

    return chess.engine.Limit(time=args.time, nodes=args.nodes)


def _board(args: argparse.Namespace) -> chess.Board:
    from latentchess.uci import Position, PositionError, build_position

    fen = None if args.fen == "startpos" else args.fen
    try:
        board, warnings = build_position(Position(fen, tuple(args.moves)))
    except PositionError as error:
        raise InvalidFenError(args.fen, str(error)) from None
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return board


def _uci(args: argparse.Namespace) -> int:
    from latentchess.uci import run
    from latentchess.uci.switch import EngineSwitchSession, LatentDefaults

    spec = _engine_spec(args, depth_is_latent=True)
    flags = _latent_flags(args)
    latent = LatentDefaults(
        model=flags.pop("model", None),
        config=_config(flags),
        threads=flags.get("threads", 1),
        precision=flags.get("precision", "auto"),
    )
    return run(make_session=lambda write: EngineSwitchSession(write, spec=spec.text, latent=latent))


def _bestmove(args: argparse.Namespace) -> int:
    board = _board(args)
    spec = _engine_spec(args)
    if spec.kind != LATENT_ENGINE_KIND:
        return _spec_bestmove(args, board, spec)
    engine = _engine(args, spec)
    result = engine.search(board, _limit(args))
    score = engine.pov_score(result.value, board.turn).relative
    if args.json:
        print(
            json.dumps(
                {
                    "fen": board.fen(),
                    "bestmove": result.move.uci() if result.move else None,
                    "san": board.san(result.move) if result.move else None,
                    "score": str(score),
                    "pv": [m.uci() for m in result.pv],
                    "depth": result.depth,
                    "nodes": result.nodes,
                    "cache_hits": result.cache_hits,
                    "time_s": result.time_s,
                }
            )
        )
        return 0
    print(result.move.uci() if result.move else "0000")
    print(
        f"depth {result.depth} score {score} nodes {result.nodes} "
        f"time {result.time_s:.2f}s pv {' '.join(m.uci() for m in result.pv)}",
        file=sys.stderr,
    )
    return 0


def _analyse(args: argparse.Namespace) -> int:
    from latentchess.engines.latent import ranked_root_moves

    board = _board(args)
    spec = _engine_spec(args)
    if args.multipv < 0:
        raise EngineError(f"--multipv must be >= 0, got {args.multipv!r}")
    if spec.kind != LATENT_ENGINE_KIND:
        return _spec_analyse(args, board, spec)
    engine = _engine(args, spec)
    result = engine.search(board, _limit(args), exact_root=True)
    rows: list[dict[str, Any]] = []
    for rank, root in enumerate(ranked_root_moves(result, board.turn), 1):
        value = root.static if root.value is None else root.value
        score = engine.pov_score(value, board.turn).relative
        rows.append(
            {
                "rank": rank,
                "move": root.move.uci(),
                "san": board.san(root.move),
                "axis": root.static,
                "value": root.value,
                "exact": root.exact,
                "win_prob_white": engine.win_probability(value),
                "score": str(score),
            }
        )
    best_score = engine.pov_score(result.value, board.turn).relative
    if args.json:
        print(
            json.dumps(
                {
                    "fen": board.fen(),
                    "bestmove": result.move.uci() if result.move else None,
                    "score": str(best_score),
                    "pv": [m.uci() for m in result.pv],
                    "depth": result.depth,
                    "mode": result.mode,
                    "nodes": result.nodes,
                    "time_s": result.time_s,
                    "moves": rows,
                },
                indent=2,
            )
        )
        return 0
    print(f"{board.fen()}  ({'White' if board.turn else 'Black'} to move)")
    if result.move is None:
        print("no legal moves: " + ("checkmate" if board.is_check() else "stalemate"))
        return 0
    pv = board.variation_san(result.pv)
    print(
        f"best {board.san(result.move)}  score {best_score}  depth {result.depth} ({result.mode})  "
        f"nodes {result.nodes}  time {result.time_s:.2f}s\npv {pv}"
    )
    print(f"{'rank':>4}  {'move':<7} {'axis':>7} {'searched':>9} {'P(White)':>8} {'score':>10}")
    for row in rows:
        searched = "" if row["value"] is None else f"{row['value']:+.4f}"
        if row["value"] is not None and not row["exact"]:
            searched = ("<=" if board.turn else ">=") + searched
        print(
            f"{row['rank']:>4}  {row['san']:<7} {row['axis']:+7.4f} {searched:>9} "
            f"{row['win_prob_white']:8.3f} {row['score']:>10}"
        )
    return 0


def _play(args: argparse.Namespace) -> int:
    import chess

    from latentchess.cli.terminal import play_terminal

    board = chess.Board()
    if args.fen:
        args.moves = []
        board = _board(args)
    color = {"white": chess.WHITE, "black": chess.BLACK}.get(args.color)
    if color is None:
        color = random.choice([chess.WHITE, chess.BLACK])
    spec = _engine_spec(args)
    if spec.kind != LATENT_ENGINE_KIND:
        from latentchess.engines.registry import create_engine

        engine: Any = create_engine(spec)
        limit = _spec_limit(args)
    else:
        engine, limit = _engine(args, spec), _limit(args)
    play_terminal(
        engine,
        human=color,
        board=board,
        limit=limit,
        input_stream=sys.stdin,
        output=sys.stdout,
    )
    return 0


def _bench(args: argparse.Namespace) -> int:
    from latentchess.core.bench import DEFAULT_BENCH_DEPTH, run_bench

    depth = DEFAULT_BENCH_DEPTH if args.depth is None else args.depth
    if not 1 <= depth <= 64:
        raise EngineError(f"bench depth must lie in [1, 64], got {depth!r}")

    def progress(index: int, board: chess.Board, nodes: int) -> None:
        print(f"Position {index + 1:>2}: {nodes:>10} nodes  {board.fen()}", file=sys.stderr)

    result = run_bench(depth, evaluator=args.eval, progress=progress)
    print("=" * 27)
    print(f"Total time (ms) : {int(result.time_s * 1000)}")
    print(f"Nodes searched  : {result.nodes}")
    print(f"Nodes/second    : {result.nps}")
    return 0
