"""Paired comparison of match runs played from the same openings with the same colours.

Usage::

    python benchmarks/paired_games.py speed/games.pgn horizon10/games.pgn opening300/games.pgn \
        --player ab --out benchmarks/results/ab_vs_sf2850/opening300 [--name paired]

The first PGN is the baseline. A game is keyed by its PGN round, its book moves (the moves
commented ``{ book }``) and the colour the player (``--player``: a substring of exactly one
side's name) had; runs of ``latentchess match`` with the same ``--games`` and seed play round r
from the same opening with the same colours, so the keys match. Each later run is compared with
the baseline over the keys both have:

* the player's score in each, and the paired difference per game (points, -1..1) with a 95%
  interval from the spread of the per-game differences (normal approximation: the mean plus or
  minus 1.96 standard errors). When an opening decides much of a game's result the pairs
  correlate and this interval is narrower than the difference of two independent scores;
* that difference as Elo, ``elo(baseline + difference) - elo(baseline)`` at the ends of the
  interval too (the baseline's score is taken as known);
* how many games scored better, worse and the same.

Rounds that one run lacks are left out of its pairs and counted; a round whose key differs
(another opening or colour) stops the script, naming both files and the round. Writes
``NAME.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from game_errors import player_games  # this folder: run as a script from anywhere
from latentchess.evaluation.elo import elo_of_score
from latentchess.textfiles import strip_compression

Z95 = 1.959964


@dataclass(frozen=True)
class GameKey:
    """What makes two games comparable: round, book line and the player's colour."""

    round: int
    book: str
    player_white: bool


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """One run against the baseline over the rounds both have."""

    pgn: str
    games: int
    unpaired: int
    score: float
    baseline_score: float
    difference: float
    difference_lower: float
    difference_upper: float
    elo_difference: float
    elo_lower: float
    elo_upper: float
    better: int
    worse: int
    same: int


class PairingError(ValueError):
    """Two runs that cannot be paired, or a game without a numbered round."""


def _elo(score: float) -> float:
    """:func:`elo_of_score` kept finite: a paired difference may reach a score of 0 or 1."""
    return elo_of_score(min(max(score, 1e-6), 1.0 - 1e-6))


def read_scores(path: Path, player: str) -> dict[int, tuple[GameKey, float]]:
    """The player's points per round of ``path``, with each game's key."""
    scores: dict[int, tuple[GameKey, float]] = {}
    for number, game, player_white in player_games(path, player):
        try:
            round_number = int(game.headers.get("Round", ""))
        except ValueError:
            raise PairingError(
                f"{path}: game {number}: Round {game.headers.get('Round')!r} is not a number"
            ) from None
        result = game.headers.get("Result", "*")
        if result not in ("1-0", "0-1", "1/2-1/2"):
            continue  # unfinished: nothing to pair
        book = " ".join(
            node.move.uci() for node in game.mainline() if node.comment.strip() == "book"
        )
        white_points = {"1-0": 1.0, "0-1": 0.0}.get(result, 0.5)
        points = white_points if player_white else 1.0 - white_points
        if round_number in scores:
            raise PairingError(f"{path}: game {number}: round {round_number} appears twice")
        scores[round_number] = (GameKey(round_number, book, player_white), points)
    return scores


def compare(
    baseline: dict[int, tuple[GameKey, float]],
    run: dict[int, tuple[GameKey, float]],
    *,
    baseline_name: str,
    run_name: str,
) -> Comparison:
    """``run`` against ``baseline`` over the rounds both finished."""
    rounds = sorted(set(baseline) & set(run))
    for round_number in rounds:
        if baseline[round_number][0] != run[round_number][0]:
            raise PairingError(
                f"round {round_number} is another game in {run_name} than in {baseline_name} "
                f"(book {run[round_number][0].book!r} against "
                f"{baseline[round_number][0].book!r}, or the other colour): not paired runs"
            )
    if not rounds:
        raise PairingError(f"{run_name} and {baseline_name} have no finished round in common")
    differences = [run[r][1] - baseline[r][1] for r in rounds]
    base_score = statistics.fmean(baseline[r][1] for r in rounds)
    mean = statistics.fmean(differences)
    spread = statistics.stdev(differences) if len(differences) > 1 else 0.0
    half = Z95 * spread / math.sqrt(len(differences))
    lower, upper = mean - half, mean + half
    return Comparison(
        pgn=run_name,
        games=len(rounds),
        unpaired=len(set(baseline) ^ set(run)),
        score=base_score + mean,
        baseline_score=base_score,
        difference=mean,
        difference_lower=lower,
        difference_upper=upper,
        elo_difference=_elo(base_score + mean) - _elo(base_score),
        elo_lower=_elo(base_score + lower) - _elo(base_score),
        elo_upper=_elo(base_score + upper) - _elo(base_score),
        better=sum(d > 0 for d in differences),
        worse=sum(d < 0 for d in differences),
        same=sum(d == 0 for d in differences),
    )


def _label(path: Path) -> str:
    return f"{path.parent.name}/{strip_compression(path)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pgn", type=Path, nargs="+", help="the baseline first, then the runs")
    parser.add_argument("--player", default="ab", help="substring of the studied engine's name")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--name", default="paired", help="output file stem")
    args = parser.parse_args()
    if len(args.pgn) < 2:
        parser.error("give the baseline PGN and at least one run to compare with it")
    try:
        runs = [read_scores(path, args.player) for path in args.pgn]
        base_name = _label(args.pgn[0])
        comparisons = [
            compare(runs[0], run, baseline_name=base_name, run_name=_label(path))
            for path, run in zip(args.pgn[1:], runs[1:], strict=True)
        ]
    except (OSError, ValueError) as error:  # PairingError, or player_games' unreadable game
        print(f"paired_games: {error}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    summary = {
        "command": " ".join(["python", "benchmarks/paired_games.py", *sys.argv[1:]]),
        "player": args.player,
        "baseline": base_name,
        "comparisons": [asdict(comparison) for comparison in comparisons],
    }
    target = args.out / f"{args.name}.json"
    partial = target.with_suffix(".json.partial")
    partial.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    partial.replace(target)
    print(f"against {base_name} ({args.player}), same rounds, openings and colours:\n")
    print("| run | games | score | baseline | difference [95%] | Elo [95%] | better/worse/same |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for c in comparisons:
        print(
            f"| {c.pgn} | {c.games} | {c.score:.1%} | {c.baseline_score:.1%} | "
            f"{c.difference:+.3f} [{c.difference_lower:+.3f}, {c.difference_upper:+.3f}] | "
            f"{c.elo_difference:+.0f} [{c.elo_lower:+.0f}, {c.elo_upper:+.0f}] | "
            f"{c.better}/{c.worse}/{c.same} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
