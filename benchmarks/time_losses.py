"""Time losses and stop latency of a clock match, from its PGN's ``[%emt]``/``[%clk]`` comments.

Usage::

    python benchmarks/time_losses.py benchmarks/results/time_losses/ab_vs_ab_1+0.01.pgn.xz \
        --out benchmarks/results/time_losses [--load-log LOG] [--move-overhead-ms 30]

For every engine move (book moves skipped) the match wrote the wall time it measured around
``Engine.play`` (``%emt``: for a ``uci:`` engine, python-chess's round trip over the pipe, what a
GUI sees) and the clock after the increment (``%clk``, floored at zero by the match). From them:

* ``spent``: seconds the move took;
* ``left``: the clock before the move minus ``spent``, *not* floored: a negative value is a move
  that overran its clock (a flag under a zero-tolerance GUI; the match forgives ``--time-margin``);
* ``hard``: the native time manager's hard limit for the clocks the engine was given
  (:func:`latentchess.core.alphabeta.time_budget_ms`, the engine's default move overhead), and
  ``overshoot = spent - hard``: how late the move came beyond the engine's own deadline (pipe,
  scheduling and the search's stop latency together).

Writes ``NAME.json`` (``--name``, default ``time_losses``): counts, the distributions' median,
p90, p99 and max, the lowest clock, the terminations, the flagging moves (from the games'
``TerminationDetails``: a flagging move is not in the move list), the load average when given a
log of ``EPOCH LOAD1 LOAD5 LOAD15`` lines, and per engine its time per move and the clock it had
left when each game ended (``by_player``: how two time managers spend the same clock); and
``NAME.png`` (histograms of ``spent`` and ``overshoot``).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import subprocess
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import chess
import chess.engine
import chess.pgn

from latentchess.textfiles import find_text, open_text, read_text


@dataclass(frozen=True, kw_only=True)
class MoveTime:
    """One engine move.

    Attributes:
        round: the game's PGN round.
        player: who moved (PGN name).
        ply: plies before the move.
        clock: seconds on the mover's clock before the move.
        spent: wall seconds the move took (``%emt``).
        left: ``clock - spent`` (negative: overran the clock).
        hard: the native time manager's hard limit for this move, seconds.
        soft: its soft target, seconds.
    """

    round: int
    player: str
    ply: int
    clock: float
    spent: float
    left: float
    hard: float
    soft: float

    @property
    def overshoot(self) -> float:
        """Seconds beyond the engine's own hard limit (negative: it stopped in time)."""
        return self.spent - self.hard


def _time_control(text: str) -> tuple[float, float]:
    base, _, increment = text.partition("+")
    return float(base), float(increment or 0.0)


def read_moves(path: Path, move_overhead_ms: int) -> tuple[list[MoveTime], list[chess.pgn.Game]]:
    """Every timed engine move of every game in ``path``, and the games."""
    from latentchess.core.alphabeta import time_budget_ms

    moves: list[MoveTime] = []
    games: list[chess.pgn.Game] = []
    with open_text(path) as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            games.append(game)
            base, increment = _time_control(game.headers["TimeControl"])
            clocks = {chess.WHITE: base, chess.BLACK: base}
            names = {chess.WHITE: game.headers["White"], chess.BLACK: game.headers["Black"]}
            board = game.board()
            for node in game.mainline():
                turn = board.turn
                emt = node.emt()
                if emt is not None:
                    limit = chess.engine.Limit(
                        white_clock=clocks[chess.WHITE],
                        black_clock=clocks[chess.BLACK],
                        white_inc=increment,
                        black_inc=increment,
                    )
                    soft_ms, hard_ms = time_budget_ms(
                        limit, board, move_overhead_ms=move_overhead_ms
                    )
                    moves.append(
                        MoveTime(
                            round=int(game.headers["Round"]),
                            player=names[turn],
                            ply=board.ply(),
                            clock=clocks[turn],
                            spent=emt,
                            left=clocks[turn] - emt,
                            hard=hard_ms / 1000.0,
                            soft=soft_ms / 1000.0,
                        )
                    )
                    clock = node.clock()
                    clocks[turn] = clock if clock is not None else clocks[turn]
                board.push(node.move)
    return moves, games


def _quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(q: float) -> float:  # nearest rank
        return ordered[min(len(ordered), max(1, math.ceil(q * len(ordered)))) - 1]

    return {
        "median": statistics.median(ordered),
        "p90": at(0.90),
        "p99": at(0.99),
        "p999": at(0.999),
        "max": ordered[-1],
    }


def _load(path: Path | None) -> dict[str, float] | None:
    if path is None:
        return None
    one_minute = [
        float(line.split()[1]) for line in read_text(find_text(path)).splitlines() if line.strip()
    ]
    if not one_minute:
        return None
    return {
        "samples": len(one_minute),
        "min": min(one_minute),
        "median": statistics.median(one_minute),
        "max": max(one_minute),
    }


_FLAG_RE = re.compile(r"used (?P<used>[\d.]+)s with (?P<had>[\d.]+)s left")


def summarise(
    moves: list[MoveTime], games: list[chess.pgn.Game], load: dict[str, float] | None
) -> dict[str, object]:
    """The numbers of ``time_losses.json``."""
    terminations = Counter(game.headers.get("Termination", "?") for game in games)
    flags = []
    for game in games:
        if game.headers.get("Termination") != "time forfeit":
            continue
        details = game.headers.get("TerminationDetails", "")
        used = _FLAG_RE.search(details)  # the flagging move is not in the move list
        flags.append(
            {
                "round": int(game.headers["Round"]),
                "details": details,
                "spent": float(used["used"]) if used else None,
                "clock": float(used["had"]) if used else None,
            }
        )
    illegal = [
        {"round": int(g.headers["Round"]), "details": g.headers.get("TerminationDetails", "")}
        for g in games
        if g.headers.get("Termination") == "rules infraction"
    ]
    lowest = min(moves, key=lambda m: m.left)
    overran = [m for m in moves if m.left < 0]
    return {
        "games": len(games),
        "engine_moves": len(moves),
        "time_control": games[0].headers.get("TimeControl") if games else None,
        "terminations": dict(terminations),
        "flags": flags,
        "illegal_moves": illegal,
        "spent_s": _quantiles([m.spent for m in moves]),
        "spent_s_max_with_flagging_moves": max(
            [m.spent for m in moves] + [f["spent"] for f in flags if f["spent"] is not None]
        ),
        "overshoot_beyond_hard_s": _quantiles([m.overshoot for m in moves]),
        "moves_beyond_hard": sum(m.overshoot > 0 for m in moves),
        "moves_beyond_hard_by_10ms": sum(m.overshoot > 0.010 for m in moves),
        "moves_beyond_hard_by_50ms": sum(m.overshoot > 0.050 for m in moves),
        "lowest_clock_left_s": lowest.left,
        "lowest_clock_left_move": asdict(lowest),
        "moves_overrunning_clock": len(overran),
        "games_with_a_move_overrunning_clock": len({m.round for m in overran}),
        "moves_with_under_50ms_left": sum(m.left < 0.050 for m in moves),
        "load_average_1min": load,
        "by_player": _by_player(moves),
    }


def _by_player(moves: list[MoveTime]) -> dict[str, dict[str, object]]:
    """Per engine: its moves' time (mean and quantiles) and the clock it had left after its
    last move of each game (median and least), to compare how two engines spend a clock."""
    out: dict[str, dict[str, object]] = {}
    for player in sorted({m.player for m in moves}):
        own = [m for m in moves if m.player == player]
        last: dict[int, MoveTime] = {}
        for m in own:  # moves are in game order
            last[m.round] = m
        at_end = [m.left for m in last.values()]
        out[player] = {
            "moves": len(own),
            "spent_s_mean": round(statistics.fmean(m.spent for m in own), 4),
            "spent_s": _quantiles([m.spent for m in own]),
            "spent_s_mean_first_40_plies": round(
                statistics.fmean([m.spent for m in own if m.ply <= 40] or [0.0]), 4
            ),
            "clock_left_at_game_end_s": _quantiles(at_end),
            "clock_left_at_game_end_s_mean": round(statistics.fmean(at_end), 3),
        }
    return out


def _plot(moves: list[MoveTime], out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    spent_ms = [m.spent * 1000 for m in moves]
    left.hist(spent_ms, bins=60, color="tab:blue")
    left.set_yscale("log")
    left.set_xlabel("wall time per move (ms)")
    left.set_ylabel("moves")
    left.set_title("time spent per move")
    over_ms = [m.overshoot * 1000 for m in moves]
    right.hist(over_ms, bins=60, color="tab:red")
    right.axvline(0, color="black", linewidth=0.8)
    right.set_yscale("log")
    right.set_xlabel("wall time minus the engine's hard limit (ms)")
    right.set_title("overshoot beyond the hard limit")
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(out, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pgn", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--load-log", type=Path, help="lines 'EPOCH LOAD1 LOAD5 LOAD15'")
    parser.add_argument("--move-overhead-ms", type=int, default=30, help="the engine's (ab: 30)")
    parser.add_argument("--name", default="time_losses", help="output file stem")
    parser.add_argument("--note", default="", help="stored in the JSON (e.g. the engine's source)")
    args = parser.parse_args()
    moves, games = read_moves(args.pgn, args.move_overhead_ms)
    if not moves:
        parser.error(f"no timed moves in {str(args.pgn)!r}")
    summary = summarise(moves, games, _load(args.load_log))
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    summary = {
        "pgn": args.pgn.name,
        "analysed_at_commit": commit,
        "note": args.note,
        "move_overhead_ms": args.move_overhead_ms,
        **summary,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(summary, indent=2) + "\n")
    _plot(moves, args.out / f"{args.name}.png", f"{args.pgn.name}: {len(moves)} moves")
    print(json.dumps({k: v for k, v in summary.items() if k != "flags"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
