"""Ladder: bracket search and calibration on simulated games, and a tiny real run."""

from __future__ import annotations

import itertools

import chess.pgn
import numpy as np
import pytest

from evaluation_fixtures import require_stockfish
from latentchess.engines.registry import parse_engine_spec
from latentchess.errors import LatentChessError
from latentchess.evaluation.elo import GameOutcome, expected_score
from latentchess.evaluation.ladder import (
    LOWER_RUNGS,
    Rung,
    default_rungs,
    match_runner,
    run_ladder,
    stockfish_elo_range,
)
from latentchess.evaluation.limits import parse_limit
from latentchess.evaluation.openings import Opening

RUNGS = default_rungs(elo_range=(1350, 2850), lower=LOWER_RUNGS)
HIDDEN = {
    "random": -100.0,
    "greedy": 350.0,
    "stockfish-skill0-nodes30": 750.0,
    "sunfish": 1050.0,
}


class Simulator:
    """Plays games between specs under the BayesElo model with hidden true ratings."""

    def __init__(self, engine_elo: float, seed: int = 0) -> None:
        self.true = {**HIDDEN, "latent:depth=4": engine_elo}
        self.true.update({r.name: r.elo for r in RUNGS if r.elo is not None})
        self.rng = np.random.default_rng(seed)
        self.games: dict[tuple[str, str], list[GameOutcome]] = {}

    def __call__(self, a: str, b: str, count: int) -> list[GameOutcome]:
        name_a, name_b = parse_engine_spec(a).name, parse_engine_spec(b).name
        games = self.games.setdefault((name_a, name_b), [])
        while len(games) < count:
            white, black = (name_a, name_b) if len(games) % 2 == 0 else (name_b, name_a)
            x = self.true[white] - self.true[black] + 30.0
            p_white = float(expected_score(x - 110.0))
            p_black = float(expected_score(-x - 110.0))
            u = self.rng.random()
            games.append(
                GameOutcome(
                    white, black, 1.0 if u < p_white else 0.0 if u < p_white + p_black else 0.5
                )
            )
        return list(games)


def test_brackets_and_rates_an_engine_inside_the_uci_elo_range() -> None:
    play = Simulator(1720.0)
    result = run_ladder("latent:depth=4", RUNGS, play, games_per_step=20, games_per_rung=150)
    assert result.bracketed
    assert (result.below, result.above) == ("stockfish:elo=1550", "stockfish:elo=1750")
    assert result.scores[result.below][0] > 0.5 >= result.scores[result.above][0]
    rating = result.fit.rating("latent:depth=4")
    assert rating.lower <= 1720.0 <= rating.upper
    assert rating.upper - rating.lower < 200
    assert "bracket: beats stockfish:elo=1550" in result.summary()


def test_weak_engines_use_calibrated_lower_rungs() -> None:
    play = Simulator(550.0, seed=1)
    result = run_ladder("latent:depth=4", RUNGS, play, games_per_step=20, games_per_rung=150)
    assert result.bracketed and result.above == "stockfish-skill0-nodes30"
    # The unrated rungs were chained up to the weakest anchor in the same run.
    assert ("sunfish", "stockfish:elo=1350") in play.games
    assert ("greedy", "stockfish-skill0-nodes30") in play.games
    rating = result.fit.rating("latent:depth=4")
    assert rating.lower <= 550.0 <= rating.upper
    sunfish = result.fit.rating("sunfish")
    assert not sunfish.anchored and sunfish.lower <= HIDDEN["sunfish"] <= sunfish.upper


def test_an_engine_beyond_the_ladder_is_flagged() -> None:
    result = run_ladder("latent:depth=4", RUNGS, Simulator(3600.0), games_per_rung=40)
    assert not result.bracketed and result.above is None
    assert result.below == "stockfish:elo=2850"
    assert "not bracketed" in result.summary()


def test_a_ladder_needs_an_anchor() -> None:
    with pytest.raises(LatentChessError, match="at least one rung with a nominal elo"):
        run_ladder("random", [Rung(spec="sunfish", guess=1000.0)], Simulator(0.0))


def test_default_rungs_start_at_stockfish_declared_minimum() -> None:
    require_stockfish()
    low, high = stockfish_elo_range()
    rungs = default_rungs(step=300)
    anchors = [r.elo for r in rungs if r.elo is not None]
    assert anchors[0] == low and anchors[-1] == high
    assert all(b - a <= 300 for a, b in itertools.pairwise(anchors))


def test_real_tiny_ladder_resumes_from_its_pgn(tmp_path) -> None:
    require_stockfish()
    pgn = tmp_path / "ladder.pgn"
    rungs = [
        Rung(spec="stockfish:elo=1350", elo=1350.0),
        Rung(spec="random:seed=7,name=other-random", guess=0.0),
    ]
    openings = [Opening(name="start")]

    def ladder() -> object:
        play = match_runner(
            pgn_path=pgn, limit=parse_limit("depth=1"), rungs=rungs, openings=openings,
            workers=2, progress=False,
        )  # fmt: skip
        return run_ladder(
            "random:seed=3", rungs, play, games_per_step=2, games_per_rung=2, calibration_games=2
        )

    first = ladder()
    with pgn.open(encoding="utf-8") as handle:
        count = sum(1 for _ in iter(lambda: chess.pgn.read_headers(handle), None))
    assert count >= 4
    before = pgn.read_text(encoding="utf-8")
    second = ladder()
    assert pgn.read_text(encoding="utf-8") == before  # everything was resumed
    assert second.scores == first.scores
    assert "random:seed=3" in {r.name for r in first.fit.ratings}


def test_match_runner_gives_rungs_the_opponent_limit_and_caps_game_length(tmp_path) -> None:
    from latentchess.evaluation.match import Player

    rungs = [
        Rung(spec="random:seed=1,name=r1", elo=1000.0),
        Rung(spec="random:seed=2,name=r2", guess=500.0, limit="nodes=5"),
    ]
    built: dict[str, str] = {}

    def make_player(spec: str, limit: object) -> Player:
        built[spec] = str(limit)
        return Player.from_spec(spec, limit)  # type: ignore[arg-type]

    pgn = tmp_path / "games.pgn"
    play = match_runner(
        pgn_path=pgn, limit=parse_limit("depth=1"), opponent_limit=parse_limit("50ms"),
        rungs=rungs, openings=[Opening(name="start")], workers=1, max_plies=12,
        progress=False, make_player=make_player,
    )  # fmt: skip
    assert len(play("random:seed=3", "random:seed=1,name=r1", 2)) == 2
    play("random:seed=3", "random:seed=2,name=r2", 2)
    assert built["random:seed=3"] == str(parse_limit("depth=1"))
    assert built["random:seed=1,name=r1"] == str(parse_limit("50ms"))
    assert built["random:seed=2,name=r2"] == str(parse_limit("nodes=5"))
    with pgn.open(encoding="utf-8") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            assert len(list(game.mainline_moves())) <= 12


def test_bracket_steps_up_when_the_longer_match_beats_the_probe() -> None:
    rungs = [
        Rung(spec="random:name=a", guess=0.0),
        Rung(spec="greedy:name=b", guess=400.0),
        Rung(spec="stockfish:elo=1350", elo=1350.0),
    ]

    def play(engine: str, rung: str, count: int) -> list[GameOutcome]:
        # vs a: always wins; vs b: 2/4 in the probe, every later game won; vs 1350: always lost
        def score(i: int) -> float:
            if rung == "random:name=a":
                return 1.0
            if rung == "greedy:name=b":
                return float(i % 2 == 0) if i < 4 else 1.0
            return 0.0

        name = parse_engine_spec(rung).name
        return [GameOutcome("me", name, score(i)) for i in range(count)]

    result = run_ladder("random:name=me", rungs, play, games_per_step=4, games_per_rung=12)
    assert (result.below, result.above) == ("b", "stockfish:elo=1350")
    assert result.scores["b"] == (10 / 12, 12)
    assert result.scores["stockfish:elo=1350"][1] == 12
