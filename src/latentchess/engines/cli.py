"""Subcommands of this area (see latentchess.cli): ``uci``, ``bestmove``, ``analyse``, ``play``.

All take ``--model DIR`` (default: the default model path), ``--depth``, ``--width`` and
``--mode``. Heavy imports (torch, the model) happen inside the handlers.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from typing import TYPE_CHECKING, Any

from latentchess.errors import EngineError, InvalidFenError
from latentchess.search import MODES, SearchConfig

if TYPE_CHECKING:
    import chess
    import chess.engine

    from latentchess.engines.latent import LatentEngine


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this area's subcommands to the ``latentchess`` parser."""
    uci = subparsers.add_parser(
        "uci",
        help="run the engine as a UCI engine on stdin/stdout (GUIs, cutechess, lichess-bot)",
        description="Speak UCI on stdin/stdout. The model loads in the background after 'uci'.",
    )
    _search_arguments(uci, limits=False)  # each UCI 'go' carries its own limits
    uci.add_argument(
        "--engine",
        metavar="SPEC",
        help="run this engine spec instead (e.g. 'ab', 'ab:eval=hce,hash=64'; "
        "see 'latentchess match --list-engines')",
    )
    uci.set_defaults(func=_uci)

    best = subparsers.add_parser(
        "bestmove",
        help="print the engine's move for a position",
        description="Print the move (UCI) on stdout and the search summary on stderr.",
    )
    _position_arguments(best)
    _search_arguments(best)
    _engine_argument(best)
    best.add_argument("--json", action="store_true", help="print a JSON object instead")
    best.set_defaults(func=_bestmove)

    analyse = subparsers.add_parser(
        "analyse",
        help="score every legal move of a position",
        description=(
            "Search a position and list each legal move with its rank, the axis projection of the "
            "position after it, its searched value, and the calibrated win probability and "
            "centipawns."
        ),
    )
    _position_arguments(analyse)
    _search_arguments(analyse)
    _engine_argument(analyse)
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
        help="play against the engine in the terminal",
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
    parser.add_argument("--model", metavar="DIR", help="model directory (default: default model)")
    parser.add_argument(
        "--depth", type=int, default=defaults.depth, help="plies (default: %(default)s)"
    )
    parser.add_argument(
        "--width", type=int, default=defaults.width, help="top-k (default: %(default)s)"
    )
    parser.add_argument(
        "--mode", choices=MODES, default=defaults.mode, help="search mode (default: %(default)s)"
    )
    parser.add_argument(
        "--precision",
        choices=("auto", "fp32", "bf16"),
        default="auto",
        help="model precision (default: %(default)s)",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default: 1)")
    if limits:
        parser.add_argument("--time", type=float, metavar="SECONDS", help="time limit per move")
        parser.add_argument("--nodes", type=int, help="limit on positions embedded per move")


def _engine_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine",
        metavar="SPEC",
        help="use this engine spec instead of the latent engine, e.g. 'ab' or 'ab:hash=64' "
        "(--depth, --time, --nodes give its limit)",
    )


def _spec_limit(args: argparse.Namespace) -> chess.engine.Limit:
    import chess.engine

    if args.time is None and args.nodes is None:
        return chess.engine.Limit(depth=args.depth)
    return chess.engine.Limit(time=args.time, nodes=args.nodes)


def _spec_bestmove(args: argparse.Namespace, board: chess.Board) -> int:
    from latentchess.engines.registry import create_engine

    engine = create_engine(args.engine)
    try:
        analysis = engine.analyse(board, _spec_limit(args))
    finally:
        engine.close()
    score = f"mate {analysis.mate}" if analysis.mate is not None else f"cp {analysis.score_cp}"
    move = analysis.best_move
    if args.json:
        print(
            json.dumps(
                {
                    "fen": board.fen(),
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
        f"depth {analysis.depth} score {score} nodes {analysis.nodes} "
        f"time {analysis.time_s:.2f}s pv {' '.join(m.uci() for m in analysis.pv)}",
        file=sys.stderr,
    )
    return 0


def _spec_analyse(args: argparse.Namespace, board: chess.Board) -> int:
    import chess

    from latentchess.engines.ab import AlphaBetaEngine
    from latentchess.engines.registry import create_engine

    engine = create_engine(args.engine)
    try:
        if isinstance(engine, AlphaBetaEngine):  # every legal move, as a MultiPV search
            outcome = engine.search(board, _spec_limit(args), multipv=board.legal_moves.count())
            lines = [
                (line.pv, f"mate {line.mate}" if line.mate is not None else f"cp {line.score_cp}")
                for line in outcome.info.lines
            ]
            depth, nodes, seconds = outcome.info.depth, outcome.nodes, outcome.time_s
        else:
            analysis = engine.analyse(board, _spec_limit(args))
            score = (
                f"mate {analysis.mate}" if analysis.mate is not None else f"cp {analysis.score_cp}"
            )
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
        print(
            json.dumps(
                {
                    "fen": board.fen(),
                    "depth": depth,
                    "nodes": nodes,
                    "time_s": seconds,
                    "moves": rows,
                },
                indent=2,
            )
        )
        return 0
    print(f"{board.fen()}  ({'White' if board.turn else 'Black'} to move)")
    print(f"{args.engine}: depth {depth}  nodes {nodes}  time {seconds:.2f}s")
    print(f"{'rank':>4}  {'move':<7} {'score':>10}  pv")
    for row in rows:
        pv = board.variation_san([chess.Move.from_uci(m) for m in row["pv"]])
        print(f"{row['rank']:>4}  {row['san']:<7} {row['score']:>10}  {pv}")
    return 0


def _position_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("fen", metavar="FEN", help="the position ('startpos' for the standard one)")
    parser.add_argument("--moves", nargs="*", default=[], metavar="UCI", help="moves to play first")


def _config(args: argparse.Namespace) -> SearchConfig:
    try:
        return SearchConfig(mode=args.mode, depth=args.depth, width=args.width)
    except ValueError as error:
        raise EngineError(str(error)) from None


def _engine(args: argparse.Namespace) -> LatentEngine:
    from latentchess.engines.latent import LatentEngine

    config = _config(args)
    return LatentEngine.from_options(
        args.model,
        mode=config.mode,
        depth=config.depth,
        width=config.width,
        precision=args.precision,
        threads=args.threads,
    )


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

    if args.engine:
        from latentchess.engines.registry import create_engine, parse_engine_spec
        from latentchess.uci.spec_session import SpecSession

        spec = parse_engine_spec(args.engine)
        engine = create_engine(spec)
        name = f"latentchess {spec.text}"
        return run(make_session=lambda write: SpecSession(write, engine=engine, name=name))

    return run(
        model=args.model, config=_config(args), threads=args.threads, precision=args.precision
    )


def _bestmove(args: argparse.Namespace) -> int:
    board = _board(args)
    if args.engine:
        return _spec_bestmove(args, board)
    engine = _engine(args)
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
    if args.engine:
        return _spec_analyse(args, board)
    engine = _engine(args)
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

    from latentchess.terminal import play_terminal

    board = chess.Board()
    if args.fen:
        args.moves = []
        board = _board(args)
    color = {"white": chess.WHITE, "black": chess.BLACK}.get(args.color)
    if color is None:
        color = random.choice([chess.WHITE, chess.BLACK])
    if args.engine:
        from latentchess.engines.registry import create_engine

        engine: Any = create_engine(args.engine)
        limit = _spec_limit(args)
    else:
        engine, limit = _engine(args), _limit(args)
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
