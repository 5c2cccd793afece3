"""Our Table 2: Elo of a model by search depth, in minimax and beam modes, on the evaluation ladder.

Each configuration (mode, depth 1..6, width 3 or each of ``--width``) is bracketed with
``latentchess.evaluation.ladder`` against the same rungs (a random mover, Stockfish at 30 nodes,
Sunfish, Stockfish 15.1 UCI_Elo levels), our engine at a fixed depth and every rung at
``--opponent-limit`` (the paper: 50 ms per move). All games go to one PGN, so calibration games
between rungs are played once and shared, and an interrupted run resumes. At the end one BayesElo
fit over every game of the PGN (UCI_Elo levels anchored at their nominal ratings) gives each
configuration its Elo with a 95% interval; the fit uses all configurations' games, so the lower
rungs are calibrated by all of them.

Configurations are named ``LABEL-MODE-dDEPTH`` (``-wWIDTH`` added for widths other than 3;
``--label`` defaults to ``latent``), so two models, or two widths, can share one PGN and one fit:
copy an earlier run's games.pgn into --out and its games count as already played.

Writes, under --out: games.pgn, depth_elo.json (the ``plot depth-elo`` format plus the fit, the
brackets and timings), depth_elo.md, depth_elo.png.

    .venv/bin/python benchmarks/depth_ladder.py --out benchmarks/results/depth_ladder
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

import chess.engine
import chess.pgn

from latentchess.engines.external import find_executable
from latentchess.evaluation.elo import fit_bayeselo, read_pgn_outcomes
from latentchess.evaluation.game import Adjudication
from latentchess.evaluation.ladder import LOWER_RUNGS, Rung, match_runner, run_ladder
from latentchess.evaluation.limits import parse_limit
from latentchess.evaluation.openings import load_openings
from latentchess.plots.elo import DepthElo, plot_depth_elo
from latentchess.provenance import git_commit
from latentchess.textfiles import find_text, open_text


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/depth_ladder"))
    p.add_argument("--model", help="model directory (default: the shipped default model)")
    p.add_argument("--modes", default="minimax,beam")
    p.add_argument("--depths", default="1,2,3,4,5,6")
    p.add_argument(
        "--width", default="3", help="comma-separated widths (default 3): one configuration each"
    )
    p.add_argument(
        "--label",
        default="latent",
        help="name prefix of the configurations (default latent: latent-minimax-d6)",
    )
    p.add_argument("--opponent-limit", default="50ms")
    p.add_argument("--elo-levels", default="1350,1550,1750,1950", help="UCI_Elo rungs")
    p.add_argument("--games-per-step", type=int, default=4)
    p.add_argument("--games-per-rung", type=int, default=12)
    p.add_argument("--calibration-games", type=int, default=20)
    p.add_argument(
        "--focus",
        action="append",
        default=[],
        help="a configuration (e.g. latent-minimax-d6) that gets --focus-games per rung",
    )
    p.add_argument("--focus-games", type=int, default=36)
    p.add_argument("--max-plies", type=int, default=300)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    pgn = find_text(args.out / "games.pgn")  # or games.pgn.xz, ... once stored compressed
    levels = [int(x) for x in args.elo_levels.split(",")]
    rungs = [*LOWER_RUNGS, *(Rung(spec=f"stockfish:elo={e}", elo=float(e)) for e in levels)]
    stockfish = str(find_executable("stockfish"))
    count = max(args.games_per_rung, args.calibration_games) // 2 + 1
    with chess.engine.SimpleEngine.popen_uci(stockfish) as engine:
        openings = load_openings(None, count, seed=0, engine=engine, max_cp=50)
    from latentchess.engines.registry import create_engine

    adjudication = Adjudication(make=lambda: create_engine("stockfish"))
    model = f",model={args.model}" if args.model else ""
    configs = []
    widths = [int(w) for w in args.width.split(",")]
    grid = [
        (mode, depth, width)
        for mode in args.modes.split(",")
        for depth in (int(d) for d in args.depths.split(","))
        for width in widths
    ]
    for mode, depth, width in grid:
        name = f"{args.label}-{mode}-d{depth}" + ("" if width == 3 else f"-w{width}")
        spec = f"latent:depth={depth},width={width},mode={mode}{model},name={name}"
        play = match_runner(
            pgn_path=pgn,
            limit=parse_limit(f"depth={depth}"),  # a depth in the limit overrides the spec's
            opponent_limit=parse_limit(args.opponent_limit),
            rungs=rungs,
            openings=openings,
            workers=args.workers,
            max_plies=args.max_plies,
            adjudication=adjudication,
            progress=not args.no_progress,
        )
        result = run_ladder(
            spec,
            rungs,
            play,
            games_per_step=args.games_per_step,
            games_per_rung=args.focus_games if name in args.focus else args.games_per_rung,
            calibration_games=args.calibration_games,
            log=lambda line: print(line, file=sys.stderr, flush=True),
        )
        print(result.summary(), flush=True)
        configs.append(
            {
                "series": f"{args.label} {mode}, width {width}",
                "mode": mode,
                "depth": depth,
                "width": width,
                "name": name,
                "spec": spec,
                "below": result.below,
                "above": result.above,
            }
        )

    move_seconds = engine_move_seconds(pgn)
    outcomes, _ = read_pgn_outcomes([pgn])
    for config in configs:  # every game in the PGN, also those of earlier, longer runs
        me = str(config["name"])
        tally: dict[str, list[float]] = {}
        for o in outcomes:
            if me in (o.white, o.black):
                other, points = (o.black, o.score) if o.white == me else (o.white, 1 - o.score)
                tally.setdefault(other, []).append(points)
        config["scores"] = {k: [sum(v) / len(v), len(v)] for k, v in tally.items()}
    anchors = {f"stockfish:elo={e}": float(e) for e in levels}
    present = {o.white for o in outcomes} | {o.black for o in outcomes}
    fit = fit_bayeselo(outcomes, anchors={k: v for k, v in anchors.items() if k in present})
    print(fit.table())
    points = []
    for config in configs:
        rating = fit.rating(str(config["name"]))
        config |= {"elo": rating.elo, "elo_low": rating.lower, "elo_high": rating.upper}
        config |= {"games": rating.games, "points": rating.points}
        times = move_seconds.get(str(config["name"]), [])
        config |= {
            "moves": len(times),
            "seconds_per_move": round(float(sum(times) / max(len(times), 1)), 3),
            "engine_minutes": round(float(sum(times)) / 60, 1),
        }
        points.append(
            DepthElo(str(config["series"]), int(config["depth"]), rating.elo, rating.lower,
                     rating.upper)
        )  # fmt: skip
    payload = {
        "results": configs,
        "fit": fit.to_dict(),
        "opponent_limit": args.opponent_limit,
        "command": " ".join([sys.executable.rsplit("/", 1)[-1], *sys.argv]),
        "commit": git_commit(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "workers": args.workers,
    }
    (args.out / "depth_elo.json").write_text(json.dumps(payload, indent=1) + "\n")
    plot_depth_elo(points, args.out / "depth_elo.png")
    _write_markdown(args.out / "depth_elo.md", payload, fit.table())
    return 0


def engine_move_seconds(pgn: Path) -> dict[str, list[float]]:
    """Every player's thinking time per move (the ``[%emt]`` comments), over all games."""
    times: dict[str, list[float]] = {}
    with open_text(pgn) as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            players = (game.headers["White"], game.headers["Black"])
            for node in game.mainline():
                emt = node.emt()
                if emt is not None:
                    mover = players[0] if node.parent.board().turn == chess.WHITE else players[1]
                    times.setdefault(mover, []).append(emt)
    return times


def _write_markdown(path: Path, payload: dict, table: str) -> None:
    rows = [
        "| configuration | mode | depth | width | Elo | 95% interval | games | score "
        "| bracket (beats / not) | s/move | engine min |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in payload["results"]:
        rows.append(
            f"| {c['name']} | {c['mode']} | {c['depth']} "
            f"| {c.get('width', 3)} "
            f"| {c['elo']:.0f} | [{c['elo_low']:.0f}, "
            f"{c['elo_high']:.0f}] | {c['games']} | {100 * c['points'] / c['games']:.0f}% | "
            f"{c['below'] or '-'} / {c['above'] or '-'} | {c['seconds_per_move']:.2f} | "
            f"{c['engine_minutes']:.1f} |"
        )
    text = (
        "# Elo by search depth (our Table 2)\n\n"
        f"Command: `{payload['command']}` at commit {payload['commit']} on "
        f"{payload['machine']}. Opponents at {payload['opponent_limit']} per move. "
        "s/move and engine min: our engine's thinking time per move and in all its games (from "
        f"the PGN's [%emt]); games ran {payload.get('workers', 2)} at a time.\n\n"
        + "\n".join(rows)
        + "\n\nJoint BayesElo fit over every game (UCI_Elo levels anchored):\n\n```\n"
        + table
        + "\n```\n\n![Elo by depth](depth_elo.png)\n"
    )
    path.write_text(text)


if __name__ == "__main__":
    raise SystemExit(main())
