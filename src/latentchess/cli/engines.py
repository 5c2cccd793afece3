"""Subcommands of this area (see latentchess.cli): ``uci``, ``bestmove``, ``analyse``, ``play``,
``bench``.

All take ``--engine SPEC`` (default :data:`~latentchess.engines.default.DEFAULT_ENGINE_SPEC`, the
strongest engine measured here) and treat every engine alike, through
:class:`~latentchess.engines.base.Engine`. ``--model``, ``--width``, ``--mode``, ``--precision``
and ``--threads`` are shorthand for the spec's ``KEY=VALUE`` pairs (``--engine latent --model DIR``
is ``--engine latent:model=DIR``); an engine that does not know a key refuses it. Heavy imports
(torch, the model, the native core) happen inside the handlers.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from typing import TYPE_CHECKING, Any

from latentchess.engines.default import DEFAULT_ENGINE_SPEC, DEFAULT_MOVE_TIME_S
from latentchess.errors import EngineError, InvalidFenError

if TYPE_CHECKING:
    import chess
    import chess.engine

    from latentchess.engines.base import Analysis, Engine
    from latentchess.engines.registry import EngineSpec

_SPEC_FLAGS = ("model", "width", "mode", "precision", "threads")
"""Flags that add ``KEY=VALUE`` to the engine spec (``--depth`` too, for ``uci``)."""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this area's subcommands to the ``latentchess`` parser."""
    uci = subparsers.add_parser(
        "uci",
        help=f"speak UCI on stdin/stdout (GUIs, cutechess, lichess-bot) as {DEFAULT_ENGINE_SPEC!r} "
        "or the --engine spec",
        description=f"Speak UCI on stdin/stdout with the engine --engine names (default "
        f"{DEFAULT_ENGINE_SPEC!r}); the UCI option 'Engine' switches it in a running session. An "
        "engine's slow set-up (the latent model) runs in the background; 'isready' waits for it.",
    )
    _spec_arguments(uci, limits=False)  # each UCI 'go' carries its own limits
    _engine_argument(uci)
    uci.add_argument(
        "--tunable",
        action="store_true",
        help="declare the alpha-beta search's tunable constants as UCI spin options (spec key "
        "tune=1), for SPSA tuners that drive the engine by setoption (OpenBench, fastchess)",
    )
    uci.set_defaults(func=_uci)

    best = subparsers.add_parser(
        "bestmove",
        help=f"print the engine's move for a position ({DEFAULT_ENGINE_SPEC!r} unless --engine)",
        description="Print the move (UCI) on stdout and the search summary on stderr.",
    )
    _position_arguments(best)
    _spec_arguments(best)
    _engine_argument(best)
    best.add_argument("--json", action="store_true", help="print a JSON object instead")
    best.set_defaults(func=_bestmove)

    analyse = subparsers.add_parser(
        "analyse",
        help="analyse a position: best move, score, principal variation, best lines",
        description="Search a position: the best move, its score, depth, nodes and speed, and "
        "the engine's root moves best first (MultiPV lines for engines with a MultiPV option; "
        "the latent planner scores every legal move with its calibrated win probability).",
    )
    _position_arguments(analyse)
    _spec_arguments(analyse)
    _engine_argument(analyse)
    analyse.add_argument(
        "--multipv",
        type=int,
        default=3,
        metavar="N",
        help="engines with a MultiPV option: the N best moves, each with its line (0: every "
        "legal move; default: %(default)s)",
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

    options = subparsers.add_parser(
        "options",
        help="list an engine's options: UCI name, type, default, range, spec key",
        description="The options the engine declares (what 'uci' lists and 'setoption' sets; "
        "the spec key sets the same option in an engine spec, e.g. 'latent:depth=4').",
    )
    options.add_argument(
        "spec", nargs="?", default=None, help=f"(default: {DEFAULT_ENGINE_SPEC!r})"
    )
    options.add_argument("--json", action="store_true", help="print JSON instead of a table")
    options.set_defaults(func=_options)

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
    _spec_arguments(play)
    _engine_argument(play)
    play.set_defaults(func=_play)


def _spec_arguments(parser: argparse.ArgumentParser, *, limits: bool = True) -> None:
    shorthand = "adds KEY=VALUE to the engine spec: "
    parser.add_argument("--model", metavar="DIR", help=f"{shorthand}model=DIR (latent, hybrid)")
    if limits:
        parser.add_argument(
            "--depth",
            type=int,
            help=f"depth limit in plies (default: the engine's own; {DEFAULT_MOVE_TIME_S:g} s per "
            "move for engines without a configured depth)",
        )
        parser.add_argument("--time", type=float, metavar="SECONDS", help="time limit per move")
        parser.add_argument(
            "--nodes", type=int, help="node limit per move (latent engine: positions embedded)"
        )
    else:
        parser.add_argument("--depth", type=int, help=f"{shorthand}depth=N")
    parser.add_argument("--width", type=int, help=f"{shorthand}width=K (latent top-k)")
    parser.add_argument("--mode", help=f"{shorthand}mode=M (latent: minimax or beam)")
    parser.add_argument(
        "--precision",
        choices=("auto", "fp32", "int8", "bf16"),
        help=f"{shorthand}precision=P (latent model precision)",
    )
    parser.add_argument("--threads", type=int, help=f"{shorthand}threads=N")


def _engine_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine",
        metavar="SPEC",
        help=f"engine spec (default: {DEFAULT_ENGINE_SPEC!r}, the strongest measured here); "
        "'latent' for the latent planner, or e.g. 'ab:hash=64', 'hybrid:mode=order', "
        "'stockfish:elo=1800' (see 'latentchess match --list-engines')",
    )


def _engine_spec(args: argparse.Namespace, *, depth_in_spec: bool = False) -> EngineSpec:
    """The spec ``--engine`` names (default: the default engine) with the shorthand flags'
    ``KEY=VALUE`` pairs added (the spec's own pairs win).

    Raises:
        EngineError: a bad spec.
    """
    from latentchess.engines.registry import parse_engine_spec

    text = (args.engine or DEFAULT_ENGINE_SPEC).strip()
    spec = parse_engine_spec(text)
    flags = (*_SPEC_FLAGS, "depth") if depth_in_spec else _SPEC_FLAGS
    named = {key.lower() for key in spec.params}
    pairs = [
        f"{flag}={getattr(args, flag)}"
        for flag in flags
        if getattr(args, flag, None) is not None and flag not in named
    ]
    if not pairs:
        return spec
    return parse_engine_spec(text + ("," if ":" in text else ":") + ",".join(pairs))


def _create(args: argparse.Namespace, spec: EngineSpec) -> Engine:
    """The engine; a key it does not know is reported with the flag that set it."""
    from latentchess.engines.registry import create_engine

    try:
        return create_engine(spec)
    except EngineError as error:
        given = [f"--{flag}" for flag in _SPEC_FLAGS if getattr(args, flag, None) is not None]
        if given and args.engine is None:
            raise EngineError(
                f"{error} ({', '.join(given)} set spec keys of {spec.text!r}; the default engine "
                f"is {DEFAULT_ENGINE_SPEC!r}: add e.g. --engine latent)"
            ) from None
        raise


def _limit(args: argparse.Namespace, engine: Engine) -> chess.engine.Limit:
    """``--depth``/``--time``/``--nodes``, or the engine's default limit when none is given."""
    import chess.engine

    if args.depth is None and args.time is None and args.nodes is None:
        return engine.default_limit()
    return chess.engine.Limit(depth=args.depth, time=args.time, nodes=args.nodes)


def _score_text(analysis: Analysis) -> str:
    """UCI-style score from the side to move's view: ``cp 35``, ``mate 2``, ``mate -1``."""
    if analysis.mate is not None:
        return f"mate {analysis.mate}"
    return f"cp {analysis.score_cp}" if analysis.score_cp is not None else "none"


def _uci(args: argparse.Namespace) -> int:
    from latentchess.uci import run

    spec = _engine_spec(args, depth_in_spec=True).text
    if args.tunable:
        from latentchess.engines.registry import parse_engine_spec

        if parse_engine_spec(spec).kind != "ab":
            raise EngineError(f"--tunable needs an 'ab' engine, got {spec!r}")
        spec += ("," if ":" in spec else ":") + "tune=1"
    return run(spec=spec)


def _bestmove(args: argparse.Namespace) -> int:
    board = _board(args)
    spec = _engine_spec(args)
    engine = _create(args, spec)
    try:
        analysis = engine.go(board, _limit(args, engine))
    finally:
        engine.close()
    move = analysis.best_move
    if args.json:
        print(
            json.dumps(
                {
                    "fen": board.fen(),
                    "engine": spec.text,
                    "bestmove": move.uci() if move else None,
                    "san": board.san(move) if move else None,
                    "score": _score_text(analysis),
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
        f"{spec.text}: depth {analysis.depth} score {_score_text(analysis)} nodes "
        f"{analysis.nodes} time {analysis.time_s:.2f}s pv {' '.join(m.uci() for m in analysis.pv)}",
        file=sys.stderr,
    )
    return 0


def _analyse(args: argparse.Namespace) -> int:
    import chess

    board = _board(args)
    spec = _engine_spec(args)
    if args.multipv < 0:
        raise EngineError(f"--multipv must be >= 0, got {args.multipv!r}")
    if not any(board.generate_legal_moves()):
        print(f"{board.fen()}  ({'White' if board.turn else 'Black'} to move)")
        print("no legal moves: " + ("checkmate" if board.is_check() else "stalemate"))
        return 0
    engine = _create(args, spec)
    try:
        if any(option.name == "MultiPV" for option in engine.options()):
            count = board.legal_moves.count()
            engine.set_option("MultiPV", count if args.multipv == 0 else min(args.multipv, count))
        analysis = engine.analyse(board, _limit(args, engine))
    finally:
        engine.close()
    rows: list[dict[str, Any]] = [
        {
            "rank": row.rank,
            "move": row.move.uci(),
            "san": board.san(row.move),
            "score": row.uci_score() or row.score,
            "win_prob_white": row.win_prob_white,
            "pv": [m.uci() for m in row.pv],
        }
        for row in analysis.moves
    ]
    best = analysis.best_move
    if args.json:
        print(
            json.dumps(
                {
                    "fen": board.fen(),
                    "engine": spec.text,
                    "bestmove": best.uci() if best else None,
                    "score": _score_text(analysis),
                    "win_prob_white": analysis.win_prob_white,
                    "pv": [m.uci() for m in analysis.pv],
                    "depth": analysis.depth,
                    "seldepth": analysis.seldepth,
                    "nodes": analysis.nodes,
                    "nps": analysis.nps,
                    "time_s": analysis.time_s,
                    "moves": rows,
                },
                indent=2,
            )
        )
        return 0
    print(f"{board.fen()}  ({'White' if board.turn else 'Black'} to move)")
    if best is None:
        print(f"{spec.text}: no move found (depth {analysis.depth}, nodes {analysis.nodes})")
        return 0
    speed = f"  nps {analysis.nps:,}" if analysis.nps else ""
    reach = f"depth {analysis.depth}" + (f"/{analysis.seldepth}" if analysis.seldepth else "")
    print(
        f"best {board.san(best)}  score {_score_text(analysis)}  {reach}  nodes "
        f"{analysis.nodes:,}{speed}  time {analysis.time_s:.2f}s  ({spec.text})"
    )
    print(f"pv {board.variation_san(analysis.pv)}")
    print(f"{'rank':>4}  {'move':<7} {'score':>10} {'P(White)':>8}  line")
    for row in rows:
        line = board.variation_san([chess.Move.from_uci(m) for m in row["pv"]])
        chance = "" if row["win_prob_white"] is None else f"{row['win_prob_white']:.3f}"
        score = row["score"] if isinstance(row["score"], str) else f"{row['score']:+.4f}"
        print(f"{row['rank']:>4}  {row['san']:<7} {score:>10} {chance:>8}  {line}")
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
    engine = _create(args, _engine_spec(args))
    try:
        play_terminal(
            engine,
            human=color,
            board=board,
            limit=_limit(args, engine),
            input_stream=sys.stdin,
            output=sys.stdout,
        )
    finally:
        engine.close()
    return 0


def _options(args: argparse.Namespace) -> int:
    from latentchess.engines.registry import create_engine

    spec = args.spec or DEFAULT_ENGINE_SPEC
    engine = create_engine(spec, wait=False)  # declarations need no model loaded
    try:
        declared = engine.options()
    finally:
        engine.close()
    rows = [
        {
            "name": o.name,
            "type": o.option.type,
            "default": o.option.default,
            "min": o.option.min,
            "max": o.option.max,
            "var": o.option.var or [],
            "key": o.key,
        }
        for o in declared
    ]
    if args.json:
        print(json.dumps({"engine": spec, "options": rows}, indent=2))
        return 0
    print(f"{spec}: {len(rows)} options (UCI: setoption name NAME value V; spec: KEY=V)")
    for row in rows:
        if row["type"] == "spin":
            allowed = f"[{row['min']}, {row['max']}]"
        elif row["type"] == "combo":
            allowed = "|".join(row["var"])
        else:
            allowed = ""
        default = "" if row["default"] is None else row["default"]
        print(
            f"  {row['name']:<16} {row['type']:<7} {default!s:<12} {allowed:<24} {row['key'] or ''}"
        )
    return 0


def _position_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("fen", metavar="FEN", help="the position ('startpos' for the standard one)")
    parser.add_argument("--moves", nargs="*", default=[], metavar="UCI", help="moves to play first")


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
