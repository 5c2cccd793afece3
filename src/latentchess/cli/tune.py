"""Subcommands of this area (see latentchess.cli): ``tune spsa``.

``latentchess tune spsa --state RUN.json`` tunes the alpha-beta search's parameters
(:data:`~latentchess.core.alphabeta.SEARCH_PARAMETERS`) by SPSA over in-process game pairs
(:mod:`latentchess.evaluation.spsa`), or on a Dask cluster's workers with ``--cluster``; running
the same command again resumes from the state file.
It ends (and ``--report`` answers at any time) with a table, a plot of each parameter's path and
the tuned set as an engine spec, to be kept only if ``latentchess match --sprt`` accepts it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from latentchess.argtypes import positive_int
from latentchess.cluster import add_cluster_argument, cluster_pool

__all__ = ["register"]


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this area's subcommands to the ``latentchess`` parser."""
    from latentchess.cli.evaluation import _LIMIT_HELP, _add_openings, _limit, _spec

    tune = subparsers.add_parser(
        "tune",
        help="tune the alpha-beta search's parameters (SPSA)",
        description="Tune engine parameters from game results.",
    )
    methods = tune.add_subparsers(dest="method", metavar="METHOD", required=True)
    p = methods.add_parser(
        "spsa",
        help="SPSA over game pairs of 'ab' against itself (the OpenBench recipe)",
        description="SPSA as OpenBench runs it: every iteration plays game pairs of the engine "
        "with theta + c_k * flip against theta - c_k * flip (each opening with both colours) and "
        "moves theta by r_k * c_k * (wins - losses) * flip. The state (theta, iteration, random "
        "generator, history) is saved to --state after every iteration; the same command "
        "resumes it. A tuned set is kept only once 'latentchess match --sprt' of the printed "
        "spec against the defaults accepts H1.",
    )
    p.add_argument("--state", type=Path, help="the run's JSON state file (required to tune)")
    p.add_argument(
        "--engine",
        type=_spec,
        default="ab",
        help="the 'ab' spec the values are added to (default: %(default)s, the shipped "
        "network); e.g. ab:eval=hce,hash=16",
    )
    p.add_argument(
        "--params",
        help="comma-separated parameters to tune (default: all; see 'latentchess tune spsa "
        "--list')",
    )
    p.add_argument(
        "--list",
        action="store_true",
        help="print the tunable parameters as OpenBench's SPSA input (name, int, default, min, "
        "max, c_end, r_end) and exit",
    )
    p.add_argument(
        "--iterations", type=positive_int, default=1000, help="N iterations (default 1000)"
    )
    p.add_argument(
        "--pairs", type=positive_int, default=4, help="game pairs per iteration (default 4)"
    )
    p.add_argument(
        "--limit", type=_limit, default="nodes=5000", help=_LIMIT_HELP + " (default nodes=5000)"
    )
    p.add_argument("--workers", type=positive_int, help="concurrent games (default 2, 1 on 1 core)")
    p.add_argument("--max-plies", type=positive_int, default=400, help="draw at N plies (400)")
    p.add_argument("--alpha", type=float, default=0.602, help="learning-rate decay (0.602)")
    p.add_argument("--gamma", type=float, default=0.101, help="perturbation decay (0.101)")
    p.add_argument(
        "--a-ratio", type=float, default=0.1, help="A as a fraction of the iterations (0.1)"
    )
    p.add_argument(
        "--r-end", type=float, help="every parameter's r_end (default: each one's own, 0.002)"
    )
    p.add_argument(
        "--report",
        action="store_true",
        help="print the state file's table and spec, write the plot, and exit (no games)",
    )
    p.add_argument("--plot", type=Path, help="the plot (default: the state file with .png)")
    p.add_argument(
        "--pgn",
        type=Path,
        help="the games, appended as each finishes (default: the state file with .pgn); an "
        "iteration killed midway resumes from them",
    )
    add_cluster_argument(p)
    _add_openings(p)
    p.set_defaults(func=_spsa)


def _parameters(args: argparse.Namespace) -> list[Any]:
    from latentchess.core.alphabeta import SEARCH_PARAMETERS, check_search_parameters
    from latentchess.engines.registry import parse_engine_spec
    from latentchess.errors import LatentChessError
    from latentchess.evaluation.spsa import SpsaParameter

    by_name = {parameter.name: parameter for parameter in SEARCH_PARAMETERS}
    names = list(by_name) if not args.params else [n.strip() for n in args.params.split(",")]
    unknown = [name for name in names if name not in by_name]
    if unknown:
        raise LatentChessError(f"unknown parameters {unknown!r}; known: {', '.join(by_name)}")
    # A value the --engine spec sets is where tuning starts (else the default).
    given = {key.lower(): value for key, value in parse_engine_spec(args.engine).params.items()}
    starts = check_search_parameters({name: given[name] for name in names if name in given})
    return [
        SpsaParameter(
            name=name,
            start=starts.get(name, by_name[name].default),
            minimum=by_name[name].minimum,
            maximum=by_name[name].maximum,
            c_end=by_name[name].c_end,
            r_end=args.r_end if args.r_end is not None else by_name[name].r_end,
        )
        for name in names
    ]


def _spsa(args: argparse.Namespace) -> int:
    from latentchess.engines.registry import parse_engine_spec
    from latentchess.errors import LatentChessError
    from latentchess.evaluation.match import default_workers
    from latentchess.evaluation.spsa import (
        SpsaConfig,
        SpsaState,
        load_state,
        match_objective,
        run_spsa,
    )

    if args.list:
        from latentchess.core.alphabeta import SEARCH_PARAMETERS

        # OpenBench's SPSA input: name, type, value, min, max, c_end, r_end (one per line).
        for parameter in SEARCH_PARAMETERS:
            print(
                f"{parameter.name}, int, {parameter.default}, {parameter.minimum}, "
                f"{parameter.maximum}, {parameter.c_end:g}, {parameter.r_end:g}"
            )
        return 0
    if args.state is None:
        raise LatentChessError("tune spsa needs --state FILE (the run's JSON state)")
    plot = args.plot or args.state.with_suffix(".png")
    if args.report:
        state = load_state(args.state)
        _print_result(state, plot)
        return 0

    spec = parse_engine_spec(args.engine)
    if spec.kind != "ab":
        raise LatentChessError(f"SPSA tunes the 'ab' engine's parameters, got {args.engine!r}")
    config = SpsaConfig(
        iterations=args.iterations,
        pairs=args.pairs,
        alpha=args.alpha,
        gamma=args.gamma,
        a_ratio=args.a_ratio,
        seed=args.seed,
    )
    context = {
        "engine": args.engine,
        "limit": str(args.limit),
        "max_plies": args.max_plies,
        "openings": "chess960" if args.chess960 else str(args.openings or "eco"),
        "opening_plies": args.opening_plies,
        "balance_cp": args.balance_cp,
    }
    fresh = SpsaState.start(_parameters(args), config, context)
    if args.state.exists():
        state = load_state(args.state)
        _check_same_run(args.state, state, fresh)
        print(f"resuming {args.state} at iteration {state.iteration}", file=sys.stderr)
    else:
        state = fresh
        state.save(args.state)
    if state.iteration < config.iterations:
        from latentchess.cli.evaluation import _load_openings

        count = min(config.iterations * config.pairs, 1000)
        openings = _load_openings(args, count)
        with cluster_pool(args.cluster) as pool:
            objective = match_objective(
                args.engine,
                args.limit,
                openings,
                workers=args.workers or default_workers(),
                max_plies=args.max_plies,
                pool=pool,
                pgn=args.pgn or args.state.with_suffix(".pgn"),
            )
            run_spsa(state, objective, path=args.state)
    _print_result(state, plot)
    return 0


def _check_same_run(path: Path, saved: Any, fresh: Any) -> None:
    """A resumed run must be the one in the file (else its schedule and history mix)."""
    from latentchess.errors import LatentChessError

    mine, theirs = fresh.to_json(), saved.to_json()
    differing = []
    for key in ("config", "context"):
        for name in sorted(set(mine[key]) | set(theirs[key])):
            if mine[key].get(name) != theirs[key].get(name):
                differing.append(
                    f"{name}: file {theirs[key].get(name)!r}, now {mine[key].get(name)!r}"
                )
    if mine["parameters"] != theirs["parameters"]:
        names = [[parameter["name"] for parameter in run["parameters"]] for run in (theirs, mine)]
        differing.append(f"parameters: file {','.join(names[0])}, now {','.join(names[1])}")
    if differing:
        raise LatentChessError(
            f"{path} holds another SPSA run ({'; '.join(differing)}); give the same options to "
            "resume it, or another --state to start a new one"
        )


def _print_result(state: Any, plot: Path) -> None:
    from latentchess.evaluation.spsa import SpsaState, plot_history, report_table, tuned_spec

    print(report_table(state))
    spec = str(state.context.get("engine", "ab"))
    print(f"tuned spec: {tuned_spec(spec, state)}")
    start = SpsaState(
        parameters=state.parameters,
        config=state.config,
        theta={p.name: float(p.start) for p in state.parameters},
    )
    base = tuned_spec(spec, start, name="base")
    limit = state.context.get("limit", "nodes=5000")
    print(
        "keep it only if an SPRT against the start accepts it: latentchess match "
        f"'{tuned_spec(spec, state, name='tuned')}' '{base}' --sprt 0,5 --limit {limit}"
    )
    print(f"plot: {plot_history(state, plot)}")
