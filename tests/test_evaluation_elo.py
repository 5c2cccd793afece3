"""BayesElo fit on synthetic games drawn from known ratings; match-score Elo; PGN reading."""

from __future__ import annotations

import math

import numpy as np
import pytest

from latentchess.errors import DataFormatError, LatentChessError
from latentchess.evaluation.elo import (
    GameOutcome,
    expected_score,
    fit_bayeselo,
    read_pgn_outcomes,
    score_elo,
)

TRUE = {"anchor": 1400.0, "b": 1620.0, "c": 1800.0, "d": 1530.0, "e": 1230.0}
ADVANTAGE, DRAW_ELO = 40.0, 120.0


def simulate(seed: int, games_per_pair: int, ratings: dict[str, float] = TRUE) -> list[GameOutcome]:
    """Round robin under the BayesElo model, colours alternating."""
    rng = np.random.default_rng(seed)
    names = list(ratings)
    games = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            for k in range(games_per_pair):
                white, black = (a, b) if k % 2 == 0 else (b, a)
                x = ratings[white] - ratings[black] + ADVANTAGE
                p_white = float(expected_score(x - DRAW_ELO))
                p_black = float(expected_score(-x - DRAW_ELO))
                u = rng.random()
                score = 1.0 if u < p_white else 0.0 if u < p_white + p_black else 0.5
                games.append(GameOutcome(white, black, score))
    return games


def test_recovers_known_ratings_within_intervals() -> None:
    fit = fit_bayeselo(simulate(0, 300), anchors={"anchor": TRUE["anchor"]})
    for name, true in TRUE.items():
        rating = fit.rating(name)
        assert rating.lower <= true <= rating.upper, (name, rating)
        if name != "anchor":
            assert 10 < rating.upper - rating.lower < 120  # informative, not degenerate
    value, low, high = fit.advantage
    assert low <= ADVANTAGE <= high and low < value < high
    value, low, high = fit.draw_elo
    assert low <= DRAW_ELO <= high
    assert fit.rating("anchor").anchored and fit.rating("anchor").elo == TRUE["anchor"]
    assert [r.name for r in fit.ratings] == sorted(TRUE, key=lambda n: -TRUE[n])
    assert "White advantage" in fit.table()


def test_interval_coverage_is_close_to_nominal() -> None:
    # 30 independent data sets: 95% intervals must cover the truth most of the time.
    covered = total = 0
    for seed in range(30):
        fit = fit_bayeselo(simulate(100 + seed, 60), anchors={"anchor": 1400.0}, prior_draws=0)
        for name in ("b", "c", "d", "e"):
            rating = fit.rating(name)
            covered += rating.lower <= TRUE[name] <= rating.upper
            total += 1
    assert covered / total >= 0.85


def test_without_anchor_ratings_have_the_given_mean() -> None:
    fit = fit_bayeselo(simulate(1, 100), offset=1500.0)
    assert abs(np.mean([r.elo for r in fit.ratings]) - 1500.0) < 1e-6
    spread = fit.rating("c").elo - fit.rating("e").elo
    assert abs(spread - (TRUE["c"] - TRUE["e"])) < 120


def test_fixed_parameters_are_not_estimated() -> None:
    fit = fit_bayeselo(simulate(2, 50), advantage=0.0, draw_elo=100.0)
    assert fit.advantage == (0.0, 0.0, 0.0)
    assert fit.draw_elo == (100.0, 100.0, 100.0)


def test_perfect_score_stays_finite_with_the_prior() -> None:
    games = [GameOutcome("strong", "weak", 1.0), GameOutcome("weak", "strong", 0.0)] * 5
    fit = fit_bayeselo(games, anchors={"weak": 1000.0})
    strong = fit.rating("strong")
    assert math.isfinite(strong.elo) and strong.elo > 1300
    assert strong.upper > strong.elo > strong.lower


def test_undetermined_players_are_an_error() -> None:
    games = [GameOutcome("a", "b", 1.0), GameOutcome("c", "d", 0.5)]
    with pytest.raises(LatentChessError, match="never met an anchored player"):
        fit_bayeselo(games, anchors={"a": 1500.0})
    with pytest.raises(LatentChessError, match="split into 2 groups"):
        fit_bayeselo(games)
    with pytest.raises(LatentChessError, match="played no game"):
        fit_bayeselo(games, anchors={"zz": 1.0})
    with pytest.raises(LatentChessError, match="no finished games"):
        fit_bayeselo([])


def test_score_elo() -> None:
    even = score_elo(30, 40, 30)
    assert even.elo == pytest.approx(0.0) and even.lower < 0 < even.upper
    ahead = score_elo(60, 20, 20)
    assert ahead.elo == pytest.approx(-400 * math.log10(1 / 0.7 - 1))
    assert ahead.lower < ahead.elo < ahead.upper
    assert score_elo(3, 0, 0).elo == math.inf


def test_read_pgn_outcomes(tmp_path) -> None:
    pgn = tmp_path / "games.pgn"
    pgn.write_text(
        '[White "a"]\n[Black "b"]\n[Result "1-0"]\n\n1. e4 1-0\n\n'
        '[White "b"]\n[Black "a"]\n[Result "1/2-1/2"]\n\n1. d4 1/2-1/2\n\n'
        '[White "a"]\n[Black "b"]\n[Result "*"]\n\n1. c4 *\n',
        encoding="utf-8",
    )
    outcomes, skipped = read_pgn_outcomes([pgn])
    assert outcomes == [GameOutcome("a", "b", 1.0), GameOutcome("b", "a", 0.5)]
    assert skipped == 1
    bad = tmp_path / "bad.pgn"
    bad.write_text('[White "a"]\n[Black "b"]\n[Result "2-0"]\n\n1. e4 *\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad\.pgn: game 1: unknown result '2-0'"):
        read_pgn_outcomes([bad])


def simulate_time_odds(seed: int, games: int, slope: float) -> list[GameOutcome]:
    """A strong engine against one anchor at 1x, 2x, 4x and 8x its time, under the model."""
    rng = np.random.default_rng(seed)
    truth = {"engine": 1900.0, "anchor": 1500.0}
    out = []
    for label, factor in (("anchor", 1), ("anchor-2x", 2), ("anchor-4x", 4), ("anchor-8x", 8)):
        opponent_rating = truth["anchor"] + slope * math.log2(factor)
        for k in range(games):
            white_is_engine = k % 2 == 0
            x = (truth["engine"] - opponent_rating) * (1 if white_is_engine else -1) + ADVANTAGE
            p_white = float(expected_score(x - DRAW_ELO))
            p_black = float(expected_score(-x - DRAW_ELO))
            u = rng.random()
            score = 1.0 if u < p_white else 0.0 if u < p_white + p_black else 0.5
            white, black = ("engine", label) if white_is_engine else (label, "engine")
            out.append(GameOutcome(white, black, score))
    return out


def test_time_odds_recover_slope_and_rating() -> None:
    odds = {f"anchor-{f}x": ("anchor", float(f)) for f in (2, 4, 8)}
    fit = fit_bayeselo(
        simulate_time_odds(7, 400, slope=90.0), anchors={"anchor": 1500.0}, time_odds=odds
    )
    slope, low, high = fit.time_slope  # type: ignore[misc]
    assert low <= 90.0 <= high and high - low < 60
    engine = fit.rating("engine")
    assert engine.lower <= 1900.0 <= engine.upper
    for name, (_, factor) in odds.items():  # odds players sit at anchor + slope * doublings
        assert fit.rating(name).elo == pytest.approx(1500.0 + slope * math.log2(factor))
        assert not fit.rating(name).anchored and fit.rating(name).upper > fit.rating(name).elo
    assert "Elo per doubling of time" in fit.table()
    assert fit.to_dict()["time_slope"] == list(fit.time_slope)  # type: ignore[arg-type]


def test_time_odds_tighten_the_rating_of_an_engine_far_above_its_anchor() -> None:
    # The engine wins almost everything at equal time; the odds games, nearer 50%, carry the
    # information (the rating-list recipe). With them the interval is narrower.
    games = simulate_time_odds(8, 60, slope=120.0)
    equal_time = [g for g in games if "anchor" in (g.white, g.black)]
    only_equal = fit_bayeselo(equal_time, anchors={"anchor": 1500.0})
    odds = {f"anchor-{f}x": ("anchor", float(f)) for f in (2, 4, 8)}
    with_odds = fit_bayeselo(games, anchors={"anchor": 1500.0}, time_odds=odds)
    width = lambda fit: fit.rating("engine").upper - fit.rating("engine").lower  # noqa: E731
    assert width(with_odds) < width(only_equal)
    assert with_odds.rating("engine").lower <= 1900.0 <= with_odds.rating("engine").upper


def test_time_odds_errors_name_the_problem() -> None:
    games = simulate_time_odds(9, 4, slope=100.0)
    with pytest.raises(LatentChessError, match="played no game"):
        fit_bayeselo(games, anchors={"anchor": 1500.0}, time_odds={"nobody": ("anchor", 2.0)})
    with pytest.raises(LatentChessError, match="base player 'ghost'"):
        fit_bayeselo(games, anchors={"anchor": 1500.0}, time_odds={"anchor-2x": ("ghost", 2.0)})
    with pytest.raises(LatentChessError, match="itself given odds"):
        fit_bayeselo(
            games,
            anchors={"anchor": 1500.0},
            time_odds={"anchor-2x": ("anchor", 2.0), "anchor-4x": ("anchor-2x", 2.0)},
        )
    with pytest.raises(LatentChessError, match="both anchored"):
        fit_bayeselo(games, anchors={"anchor-2x": 1500.0}, time_odds={"anchor-2x": ("anchor", 2)})
    with pytest.raises(LatentChessError, match="must be > 0"):
        fit_bayeselo(games, anchors={"anchor": 1500.0}, time_odds={"anchor-2x": ("anchor", 0.0)})


def test_time_odds_without_anchors_keep_the_mean_constraint() -> None:
    games = simulate_time_odds(10, 200, slope=100.0)
    odds = {f"anchor-{f}x": ("anchor", float(f)) for f in (2, 4, 8)}
    fit = fit_bayeselo(games, offset=0.0, time_odds=odds)
    own = [fit.rating("engine").elo, fit.rating("anchor").elo]
    assert sum(own) == pytest.approx(0.0, abs=1e-6)  # the mean runs over players without odds
    assert fit.rating("engine").elo - fit.rating("anchor").elo == pytest.approx(400, abs=90)
