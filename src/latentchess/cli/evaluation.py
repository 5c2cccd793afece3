"""Subcommands of this area (see latentchess.cli): match, elo, ladder, puzzles, epd.

Only argparse and the engine registry's names are needed to build the parser; everything else is
imported inside the handlers so ``latentchess --help`` stays quick.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from pathlib import Path
from typing import Any

from latentchess.argtypes import positive_int
from latentchess.cluster import add_cluster_argument, cluster_pool
from latentchess.engines.default import DEFAULT_ENGINE_SPEC
from latentchess.provenance import recording_models
from latentchess.textfiles import write_text

__all__ = ["register"]

_SPEC_HELP = (
    "engine spec KIND[:KEY=VALUE,...], e.g. stockfish:elo=1400, stockfish:skill=3, sunfish, "
    "uci:/path/to/engine,Hash=16, xboard:phalanx, random, latent:depth=4,width=3 "
    "(see --list-engines)"
)
_LIMIT_HELP = "per-move limit: 50ms, time=0.05, depth=3, nodes=1000, tc=60+0.6 (clock), or combined"


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this area's subcommands to the ``latentchess`` parser."""
    _register_match(subparsers)
    _register_elo(subparsers)
    _register_ladder(subparsers)
    _register_puzzles(subparsers)
    _register_epd(subparsers)


# --- argument types ---------------------------------------------------------------------------


def _spec(text: str) -> str:
    from latentchess.engines.registry import parse_engine_spec
    from latentchess.errors import EngineError

    try:
        parse_engine_spec(text)
    except EngineError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    return text


def _limit(text: str) -> Any:
    from latentchess.evaluation.limits import LimitError, parse_limit

    try:
        return parse_limit(text)
    except LimitError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _elo_pair(text: str) -> tuple[float, float]:
    first, sep, second = text.partition(",")
    try:
        if not sep:
            raise ValueError
        elo0, elo1 = float(first), float(second)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ELO0,ELO1 (e.g. 0,10), got {text!r}") from None
    if not elo0 < elo1:
        raise argparse.ArgumentTypeError(f"expected ELO0 < ELO1, got {text!r}")
    return elo0, elo1


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 0.5:
        raise argparse.ArgumentTypeError(f"expected a probability in (0, 0.5), got {text!r}")
    return value


def _anchor(text: str) -> tuple[str, float]:
    name, _, value = text.rpartition("=")
    try:
        rating = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=ELO, got {text!r}") from None
    if not name:
        raise argparse.ArgumentTypeError(f"expected NAME=ELO, got {text!r}")
    return name, rating


def _command_line(args: argparse.Namespace) -> str:
    """The command as a user would retype it: ``latentchess`` and the arguments, shell-quoted
    (not the absolute path of whatever script started the process)."""
    import shlex

    return shlex.join(["latentchess", *getattr(args, "argv", sys.argv[1:])])


def _write_json(path: Path | None, payload: object) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(payload, dict):
        from latentchess.provenance import git_commit

        payload = payload | {"git_commit": git_commit()}
    text = json.dumps(_jsonable(payload), indent=2, allow_nan=False)
    write_text(path, text + "\n")  # compressed when the name says so (result.json.xz)


def _jsonable(value: object) -> object:
    """Strict JSON: paths as strings, infinite Elo as "inf"/"-inf", NaN as null."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Path):
        return str(value)
    return value


def _engine_list() -> str:
    from latentchess.engines.registry import ENGINES

    lines = []
    for kind in ENGINES.values():
        state = "" if kind.available() else "  (not installed)"
        lines.append(f"  {kind.name:<10} {kind.summary}{state}")
    return "engine kinds:\n" + "\n".join(lines)


class _ListEngines(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(_engine_list())
        parser.exit()


def _add_openings(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--openings",
        type=Path,
        help="opening file: .pgn (lines), .epd (positions) or a Polyglot .bin book, e.g. "
        "/usr/share/games/gnuchess/book.bin (default: a balanced sample of ECO lines)",
    )
    p.add_argument(
        "--opening-plies", type=positive_int, help="cut PGN lines / book walks to N plies"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of opening sampling (default 0)")
    p.add_argument(
        "--chess960",
        action="store_true",
        help="play Chess960: start positions drawn at random (with --seed) from the 960, "
        "instead of --openings",
    )
    p.add_argument(
        "--balance-cp",
        type=int,
        default=60,
        help="ECO sample only: keep lines Stockfish (depth 10) scores within +-N cp; 0 disables",
    )


def _load_openings(args: argparse.Namespace, count: int) -> list[Any]:
    import chess.engine

    from latentchess.engines.external import find_executable
    from latentchess.errors import LatentChessError
    from latentchess.evaluation.openings import chess960_openings, load_openings

    if args.chess960:
        if args.openings is not None:
            raise LatentChessError("--chess960 draws its own start positions; drop --openings")
        return chess960_openings(count, seed=args.seed)
    if args.openings is None and args.balance_cp > 0:
        stockfish = str(find_executable("stockfish"))
        with chess.engine.SimpleEngine.popen_uci(stockfish) as engine:
            return load_openings(None, count, seed=args.seed, engine=engine, max_cp=args.balance_cp)
    return load_openings(args.openings, count, seed=args.seed, plies=args.opening_plies)


# --- match ---------------------------------------------------------------------------------------


def _register_match(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "match",
        help="play two engines against each other (PGN out, resumable)",
        description="Play a match between two engines; every opening is played with both "
        "colours. Games are appended to --pgn as they finish; rerunning the same command "
        "resumes. Shows the score and Elo difference so far. With --sprt, a sequential test "
        "over game pairs (pentanomial GSPRT, as fishtest and fastchess) stops the match once "
        "it accepts H0 or H1; --games is then the maximum.",
        epilog=_engine_list_lazy(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("engine1", type=_spec, help=_SPEC_HELP)
    p.add_argument("engine2", type=_spec, help="the opponent (same syntax)")
    p.add_argument("--list-engines", action=_ListEngines, help="list engine kinds and exit")
    p.add_argument(
        "--games",
        type=positive_int,
        help="number of games (default 20); with --sprt the maximum (default 2000, even)",
    )
    p.add_argument("--limit", type=_limit, default="50ms", help=_LIMIT_HELP + " (default 50ms)")
    p.add_argument("--limit1", type=_limit, help="engine1's limit, if different")
    p.add_argument("--limit2", type=_limit, help="engine2's limit, if different")
    _add_openings(p)
    p.add_argument("--workers", type=positive_int, help="concurrent games (default 2, 1 on 1 core)")
    add_cluster_argument(p)
    p.add_argument(
        "--pgn",
        type=Path,
        help="append games to this PGN and resume from it (.pgn.gz, .pgn.xz: compressed)",
    )
    p.add_argument("--event", default="latentchess match", help="PGN Event (identifies the match)")
    p.add_argument(
        "--time-margin", type=float, default=0.1, help="clock tolerance in seconds (default 0.1)"
    )
    _add_game_rules(p)
    s = p.add_argument_group("sequential test (SPRT over game pairs)")
    s.add_argument(
        "--sprt",
        type=_elo_pair,
        metavar="ELO0,ELO1",
        help="test H0: engine1 - engine2 = ELO0 Elo against H1: = ELO1, e.g. 0,10; stop at a "
        "decision",
    )
    s.add_argument("--alpha", type=_probability, default=0.05, help="false-H1 rate (0.05)")
    s.add_argument("--beta", type=_probability, default=0.05, help="false-H0 rate (0.05)")
    s.add_argument(
        "--sprt-model",
        choices=("logistic", "normalized"),
        default="logistic",
        help="Elo of the bounds: logistic (default, OpenBench's) or normalized (fishtest's)",
    )
    p.add_argument(
        "--json",
        type=Path,
        help="write the result as JSON (every game's record too, unless --pgn holds the games)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_match)


def _add_game_rules(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-plies", type=positive_int, default=600, help="draw after N plies")
    g = p.add_argument_group("adjudication (off unless --adjudicate)")
    g.add_argument("--adjudicate", action="store_true", help="end clear games early")
    g.add_argument("--adjudicator", type=_spec, default="stockfish", help="judging engine spec")
    g.add_argument("--adjudicator-limit", type=_limit, default="depth=8", help="its search")
    g.add_argument("--resign-cp", type=int, default=1000, help="resign threshold (cp)")
    g.add_argument("--resign-plies", type=int, default=6, help="for this many plies (0: never)")
    g.add_argument("--draw-move", type=int, default=40, help="draw adjudication from move N")
    g.add_argument("--draw-cp", type=int, default=10, help="when |eval| <= N cp ...")
    g.add_argument("--draw-plies", type=int, default=10, help="... for this many plies (0: never)")


def _adjudication(args: argparse.Namespace) -> Any:
    from latentchess.engines.registry import create_engine
    from latentchess.evaluation.game import Adjudication

    if not args.adjudicate:
        return None
    return Adjudication(
        make=functools.partial(create_engine, args.adjudicator),  # pickles to cluster workers
        limit=args.adjudicator_limit.fixed_limit(),
        resign_cp=args.resign_cp,
        resign_plies=args.resign_plies or None,
        draw_move=args.draw_move,
        draw_cp=args.draw_cp,
        draw_plies=args.draw_plies or None,
        name=args.adjudicator,
    )


def _engine_list_lazy() -> str:
    from latentchess.engines.registry import ENGINES

    return "engine kinds: " + ", ".join(ENGINES) + " (details: --list-engines)"


def _match(args: argparse.Namespace) -> int:
    import time

    from latentchess.evaluation.match import MatchConfig, Player, default_workers, run_match
    from latentchess.evaluation.sprt import SprtConfig

    limit = args.limit  # argparse applies type= to string defaults too
    player1 = Player.from_spec(args.engine1, args.limit1 or limit)
    player2 = Player.from_spec(args.engine2, args.limit2 or limit)
    adjudication = _adjudication(args)
    sprt = None
    games = args.games or 20
    if args.sprt is not None:
        sprt = SprtConfig(
            elo0=args.sprt[0],
            elo1=args.sprt[1],
            alpha=args.alpha,
            beta=args.beta,
            model=args.sprt_model,
        )
        games = args.games or 2000
        if games % 2:
            print(f"error: --games with --sprt must be even (pairs), got {games}", file=sys.stderr)
            return 2
    started = time.monotonic()
    config = MatchConfig(
        games=games,
        workers=args.workers or default_workers(),
        event=args.event,
        time_margin=args.time_margin,
        max_plies=args.max_plies,
        adjudication=adjudication,
        progress=not args.no_progress,
        sprt=sprt,
    )
    openings = _load_openings(args, (games + 1) // 2)
    with recording_models() as models, cluster_pool(args.cluster) as pool:
        result = run_match(player1, player2, openings, config, pgn_path=args.pgn, pool=pool)
    print(result.summary())
    terminations: dict[str, int] = {}
    for game in result.games:
        terminations[game.termination] = terminations.get(game.termination, 0) + 1
    print("terminations: " + ", ".join(f"{k} {v}" for k, v in sorted(terminations.items())))
    elo = result.elo()
    status = result.sprt_status()
    # With a PGN the games are there; the JSON keeps their counts, not a second copy of each.
    games_list = [{k: v for k, v in g.__dict__.items() if k != "pgn"} for g in result.games]
    _write_json(
        args.json,
        {
            "engine1": args.engine1,
            "engine2": args.engine2,
            "limit1": str(player1.limit),
            "limit2": str(player2.limit),
            "score": dict(zip(("wins", "draws", "losses"), result.score, strict=True)),
            "elo": {"diff": elo.elo, "lower": elo.lower, "upper": elo.upper},
            "sprt": None if status is None else status.to_dict(),
            "max_games": games,
            "resumed_games": result.resumed,
            "wall_seconds": round(time.monotonic() - started, 1),
            "game_count": len(result.games),
            "plies": sum(game.plies for game in result.games),
            "terminations": dict(sorted(terminations.items())),
            **({} if args.pgn else {"games": games_list}),
            "pgn": args.pgn,
            "models": models,
            "command": _command_line(args),
        },
    )
    return 0


# --- elo -----------------------------------------------------------------------------------------


def _register_elo(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "elo",
        help="fit BayesElo ratings to PGN games",
        description="Fit ratings (BayesElo model: White advantage and draw Elo estimated) to "
        "the games of PGN files, with 95%% intervals. Anchor players at fixed ratings, or "
        "ratings average to --offset.",
    )
    p.add_argument("pgn", type=Path, nargs="+", help="PGN files (plain, .gz, .xz or .zst)")
    p.add_argument(
        "--anchor", type=_anchor, action="append", default=[], help="NAME=ELO (repeatable)"
    )
    p.add_argument(
        "--anchor-stockfish",
        action="store_true",
        help="anchor every player named stockfish:elo=N at N",
    )
    p.add_argument(
        "--time-odds",
        nargs=3,
        action="append",
        default=[],
        metavar=("NAME", "BASE", "FACTOR"),
        help="NAME is player BASE with FACTOR times its thinking time: its rating is BASE's plus "
        "a fitted Elo per doubling of time (repeatable), e.g. --time-odds glaurung-4x-time "
        "glaurung 4",
    )
    p.add_argument("--prior", type=float, default=1.0, help="virtual draws per pair (default 1)")
    p.add_argument("--confidence", type=float, default=0.95, help="interval level")
    p.add_argument("--offset", type=float, default=0.0, help="mean rating without anchors")
    p.add_argument("--json", type=Path, help="write the fit as JSON")
    p.set_defaults(func=_elo)


def _elo(args: argparse.Namespace) -> int:
    import re

    from latentchess.errors import LatentChessError
    from latentchess.evaluation.elo import fit_bayeselo, read_pgn_outcomes

    outcomes, skipped = read_pgn_outcomes(args.pgn)
    anchors = dict(args.anchor)
    if args.anchor_stockfish:
        for name in {o.white for o in outcomes} | {o.black for o in outcomes}:
            match = re.fullmatch(r"stockfish:elo=(\d+)", name)
            if match:
                anchors.setdefault(name, float(match[1]))
    time_odds: dict[str, tuple[str, float]] = {}
    for name, base, factor in args.time_odds:
        try:
            time_odds[name] = (base, float(factor))
        except ValueError:
            raise LatentChessError(
                f"--time-odds {name} {base} {factor}: FACTOR must be a number"
            ) from None
    fit = fit_bayeselo(
        outcomes,
        anchors=anchors,
        prior_draws=args.prior,
        confidence=args.confidence,
        offset=args.offset,
        time_odds=time_odds,
    )
    print(fit.table())
    if skipped:
        print(f"({skipped} unfinished game(s) skipped)")
    _write_json(args.json, fit.to_dict() | {"command": _command_line(args)})
    return 0


# --- ladder --------------------------------------------------------------------------------------


def _rung(text: str) -> Any:
    from latentchess.evaluation.ladder import Rung

    spec, *rest = text.split()
    fields: dict[str, Any] = {"spec": _spec(spec)}
    for item in rest:
        key, sep, value = item.partition("=")
        try:
            if key in ("elo", "guess") and sep:
                fields[key] = float(value)
            elif key == "limit" and sep:
                _limit(value)
                fields["limit"] = value
            else:
                raise ValueError
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"bad rung item {item!r} in {text!r} (expected elo=N, guess=N or limit=LIMIT)"
            ) from None
    if "elo" not in fields and "guess" not in fields:
        raise argparse.ArgumentTypeError(f"rung {text!r} needs elo=N (anchor) or guess=N")
    return Rung(**fields)


def _register_ladder(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "ladder",
        help="bracket an engine between rated opponents and estimate its Elo",
        description="Binary-search the ladder of opponents for the strongest one the engine "
        "beats and the weakest it does not, play more games against both, calibrate unrated "
        "lower rungs against Stockfish's UCI_Elo levels, and fit Elo with every UCI_Elo level "
        "anchored at its nominal value. Default rungs: a random mover, a one-ply capture "
        "grabber (greedy), Stockfish at 30 nodes, sunfish, and Stockfish UCI_Elo from its "
        "declared minimum to maximum every --step.",
    )
    p.add_argument("engine", type=_spec, help=_SPEC_HELP)
    p.add_argument("--pgn", type=Path, required=True, help="all games go here (resumable)")
    p.add_argument("--limit", type=_limit, default="50ms", help=_LIMIT_HELP + " (default 50ms)")
    p.add_argument(
        "--opponent-limit",
        type=_limit,
        default=None,
        help="limit of rungs without their own (default: --limit); the paper: --limit depth=6 "
        "--opponent-limit 50ms",
    )
    p.add_argument(
        "--rung",
        type=_rung,
        action="append",
        help="'SPEC elo=N' (anchor) or 'SPEC guess=N [limit=LIMIT]' (repeatable; replaces the "
        "default rungs)",
    )
    p.add_argument(
        "--add-rung",
        type=_rung,
        action="append",
        default=[],
        help="a rung added to the default ones, e.g. 'gnuchess guess=1800' (repeatable)",
    )
    p.add_argument("--step", type=positive_int, default=200, help="UCI_Elo spacing (default 200)")
    p.add_argument("--games-per-step", type=positive_int, default=20, help="bracket search games")
    p.add_argument("--games-per-rung", type=positive_int, default=100, help="games vs the bracket")
    p.add_argument("--calibration-games", type=positive_int, default=40, help="per lower-rung pair")
    _add_openings(p)
    p.add_argument("--workers", type=positive_int, help="concurrent games")
    add_cluster_argument(p)
    _add_game_rules(p)
    p.add_argument("--json", type=Path, help="write the result as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=_ladder)


def _ladder(args: argparse.Namespace) -> int:
    from latentchess.evaluation.ladder import default_rungs, match_runner, run_ladder
    from latentchess.evaluation.match import default_workers

    limit = args.limit  # argparse applies type= to string defaults too
    rungs = [*(args.rung or default_rungs(step=args.step)), *args.add_rung]
    openings = _load_openings(args, max(args.games_per_rung, args.calibration_games) // 2 + 1)
    with recording_models() as models, cluster_pool(args.cluster) as pool:
        play = match_runner(
            pgn_path=args.pgn,
            limit=limit,
            rungs=rungs,
            openings=openings,
            workers=args.workers or default_workers(),
            opponent_limit=args.opponent_limit,
            max_plies=args.max_plies,
            adjudication=_adjudication(args),
            progress=not args.no_progress,
            pool=pool,
        )
        result = run_ladder(
            args.engine,
            rungs,
            play,
            games_per_step=args.games_per_step,
            games_per_rung=args.games_per_rung,
            calibration_games=args.calibration_games,
            log=lambda line: print(line, file=sys.stderr),
        )
    print(result.summary())
    print(result.fit.table())
    _write_json(
        args.json,
        {
            "engine": args.engine,
            "limit": str(limit),
            "opponent_limit": str(args.opponent_limit or limit),
            "below": result.below,
            "above": result.above,
            "bracketed": result.bracketed,
            "scores": result.scores,
            "fit": result.fit.to_dict(),
            "pgn": args.pgn,
            "models": models,
            "command": _command_line(args),
        },
    )
    return 0


# --- puzzles -------------------------------------------------------------------------------------


def _register_puzzles(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("puzzles", help="solve Lichess-format puzzles, or make new ones")
    sub = p.add_subparsers(dest="puzzles_command", metavar="ACTION", required=True)

    s = sub.add_parser(
        "solve",
        help="accuracy of an engine on a puzzle CSV",
        description="Play the solver's side of every puzzle (the first move is the opponent's; "
        "any mating move solves) and report accuracy overall, per rating band and per theme.",
    )
    s.add_argument("csv", type=Path, help="Lichess puzzle CSV")
    s.add_argument(
        "--engine",
        type=_spec,
        default=DEFAULT_ENGINE_SPEC,
        help=_SPEC_HELP + f" (default {DEFAULT_ENGINE_SPEC})",
    )
    s.add_argument(
        "--limit", type=_limit, default="depth=6", help=_LIMIT_HELP + " (default depth=6)"
    )
    s.add_argument("--workers", type=positive_int, default=1, help="engines in parallel")
    add_cluster_argument(s)
    s.add_argument("--max", type=positive_int, help="only the first N puzzles")
    s.add_argument("--band-width", type=positive_int, default=400, help="rating band width")
    s.add_argument("--themes", type=int, default=10, help="show the N most common themes")
    s.add_argument("--plot", type=Path, help="bar chart of accuracy per band (PNG)")
    s.add_argument("--strict", action="store_true", help="stop at the first malformed row")
    s.add_argument("--json", type=Path, help="write the report as JSON")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.set_defaults(func=_puzzles_solve)

    m = sub.add_parser(
        "make",
        help="build single-move puzzles from a labelled dataset",
        description="Positions where Stockfish's best move beats the second best by at least "
        "--gap-cp, with the opponent's previous move from the same game, rated by a Stockfish "
        "solve-depth proxy (recipe: latentchess.evaluation.puzzles).",
    )
    m.add_argument("dataset", type=Path, help="Parquet dataset directory")
    m.add_argument("out", type=Path, help="output CSV")
    m.add_argument("--gap-cp", type=int, default=300, help="minimum best-vs-second gap (cp)")
    m.add_argument("--max-depth", type=positive_int, default=12, help="deepest proxy search")
    m.add_argument("--count", type=positive_int, help="at most N puzzles (seeded sample)")
    m.add_argument("--seed", type=int, default=0, help="sampling seed")
    m.add_argument("--stockfish", default="stockfish", help="Stockfish binary")
    m.add_argument("--no-progress", action="store_true", help="no progress bar")
    m.set_defaults(func=_puzzles_make)


def _puzzles_solve(args: argparse.Namespace) -> int:
    from latentchess.engines.registry import create_engine, parse_engine_spec
    from latentchess.evaluation.puzzles import read_puzzles, run_puzzles

    limit = args.limit  # argparse applies type= to string defaults too
    puzzles, problems = read_puzzles(args.csv, strict=args.strict)
    for problem in problems:
        print(f"skipped: {problem}", file=sys.stderr)
    if args.max:
        puzzles = puzzles[: args.max]
    with recording_models() as models, cluster_pool(args.cluster) as pool:
        report = run_puzzles(
            functools.partial(create_engine, args.engine),  # the spec as text: pickles
            puzzles,
            limit.fixed_limit(),
            workers=args.workers,
            progress=not args.no_progress,
            engine_name=parse_engine_spec(args.engine).name,
            limit_text=str(limit),
            pool=pool,
        )
    print(report.table(args.band_width, themes=args.themes))
    if args.plot:
        report.plot(args.plot, args.band_width)
        print(f"chart: {args.plot}")
    _write_json(
        args.json,
        report.to_dict(args.band_width)
        | {
            "csv": args.csv,
            "skipped_rows": len(problems),
            "models": models,
            "command": _command_line(args),
        },
    )
    return 0


def _puzzles_make(args: argparse.Namespace) -> int:
    from latentchess.evaluation.puzzles import make_puzzles, write_puzzles

    puzzles, stats = make_puzzles(
        args.dataset,
        gap_cp=args.gap_cp,
        stockfish=args.stockfish,
        max_depth=args.max_depth,
        count=args.count,
        seed=args.seed,
        progress=not args.no_progress,
    )
    written = write_puzzles(args.out, puzzles)
    print(
        f"{written} puzzles -> {args.out} ({stats['rows']} rows, {stats['candidates']} with a gap "
        f">= {args.gap_cp} cp, {stats['no_previous_position']} without the previous position, "
        f"{stats['duplicates']} duplicates)"
    )
    return 0


# --- epd -----------------------------------------------------------------------------------------


def _register_epd(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "epd",
        help="score an engine on EPD test suites (bm/am accuracy, STS points)",
        description="Ask the engine for a move in every position: solved when it is a bm move "
        "and no am move; STS c0 'move=points' are summed per theme (id prefix). Malformed lines "
        "are reported with file:line and skipped (or fatal with --strict).",
    )
    p.add_argument("files", type=Path, nargs="+", help="EPD files")
    p.add_argument(
        "--engine",
        type=_spec,
        default=DEFAULT_ENGINE_SPEC,
        help=_SPEC_HELP + f" (default {DEFAULT_ENGINE_SPEC})",
    )
    p.add_argument(
        "--limit", type=_limit, default="depth=6", help=_LIMIT_HELP + " (default depth=6)"
    )
    p.add_argument("--workers", type=positive_int, default=1, help="engines in parallel")
    p.add_argument("--max", type=positive_int, help="only the first N positions of each file")
    p.add_argument("--strict", action="store_true", help="stop at the first malformed line")
    p.add_argument("--json", type=Path, help="write the report as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_epd)


def _epd(args: argparse.Namespace) -> int:
    from latentchess.engines.registry import create_engine, parse_engine_spec
    from latentchess.evaluation.epd import read_epd, run_epd

    limit = args.limit  # argparse applies type= to string defaults too
    positions = []
    skipped = 0
    for path in args.files:
        found, problems = read_epd(path, strict=args.strict)
        for problem in problems:
            print(f"skipped: {problem}", file=sys.stderr)
        skipped += len(problems)
        positions += found[: args.max] if args.max else found
    with recording_models() as models:
        report = run_epd(
            lambda: create_engine(args.engine),
            positions,
            limit.fixed_limit(),
            workers=args.workers,
            progress=not args.no_progress,
            engine_name=parse_engine_spec(args.engine).name,
            limit_text=str(limit),
        )
    print(report.table())
    if skipped:
        print(f"({skipped} malformed line(s) skipped)")
    _write_json(
        args.json,
        report.to_dict()
        | {
            "files": [str(f) for f in args.files],
            "skipped_lines": skipped,
            "models": models,
            "command": _command_line(args),
        },
    )
    return 0
