"""The SPRT over game pairs: published LLRs, an independent MLE, bounds, and real matches."""

from __future__ import annotations

import json
import math

import chess.pgn
import numpy as np
import pytest
from scipy import optimize

from latentchess.cli import main
from latentchess.errors import DataFormatError, LatentChessError
from latentchess.evaluation.limits import parse_limit
from latentchess.evaluation.match import MatchConfig, Player, run_match
from latentchess.evaluation.openings import read_pgn_openings
from latentchess.evaluation.sprt import (
    PAIR_SCORES,
    SprtConfig,
    llr,
    pentanomial,
    pentanomial_elo,
    sprt_status,
)

OPENINGS = """[Opening "Italian"]
[ECO "C50"]

1. e4 e5 2. Nf3 Nc6 3. Bc4 *

[Opening "Queen's gambit"]
[ECO "D06"]

1. d4 d5 2. c4 *
"""

# --- the LLR against published numbers and an independent computation ---------------------------

# Pentanomial counts [N0..N4] (pairs scoring 0, 0.5, 1, 1.5, 2) and the LLR the fastchess project
# publishes for them in its unit tests (tests/sprt_test.cpp, 2 decimals; its Stats(LL, LD, WL, DD,
# WD, WW) constructor: N2 = WL + DD) ...
PUBLISHED_TESTS = [
    ((365, 16618, 36029 + 200, 16974, 390), 0.0, 2.0, "normalized", 2.25),
    ((127, 4883, 10311 + 401, 5150, 104), -1.75, 0.25, "normalized", 3.01),
    ((223, 9863, 20279 + 1000, 10037, 246), 0.5, 2.5, "logistic", -3.07),
    ((871, 26175, 55003 + 980, 26678, 821), 0.0, 2.0, "logistic", -4.98),
]
# ... and as printed by fastchess runs (default model: normalized) quoted in public notes and
# engine READMEs: "Ptnml(0-2): [0, 0, 1, 8, 1] ... LLR: 1.24 (42.1%) (-2.94, 2.94) [0.00, 50.00]".
PUBLISHED_RUNS = [
    ((0, 0, 1, 8, 1), 0.0, 50.0, "normalized", 1.24),
    ((0, 0, 2, 0, 37), 0.0, 20.0, "normalized", 2.96),
    ((352, 579, 1264, 743, 464), 9.0, 16.0, "normalized", 4.60),
]


@pytest.mark.parametrize(("counts", "elo0", "elo1", "model", "expected"), PUBLISHED_TESTS)
def test_llr_matches_fastchess_unit_tests(counts, elo0, elo1, model, expected) -> None:
    assert llr(counts, elo0, elo1, model) == pytest.approx(expected, abs=0.005)


@pytest.mark.parametrize(("counts", "elo0", "elo1", "model", "expected"), PUBLISHED_RUNS)
def test_llr_matches_published_fastchess_runs(counts, elo0, elo1, model, expected) -> None:
    assert llr(counts, elo0, elo1, model) == pytest.approx(expected, abs=0.005)


def reference_llr(counts, elo0: float, elo1: float, model: str) -> float:
    """The GSPRT's LLR by brute force: maximise the multinomial likelihood under each hypothesis'
    constraint with a general-purpose constrained optimiser (no closed form, no 1-D root)."""
    regularised = np.array([c if c else 1e-3 for c in counts], dtype=np.float64)
    total = regularised.sum()
    p_hat = regularised / total

    def constraint(elo: float):
        if model == "logistic":
            score = 1.0 / (1.0 + 10.0 ** (-elo / 400.0))
            return lambda p: p @ PAIR_SCORES - score
        t = math.sqrt(2.0) * elo * math.log(10.0) / 800.0
        return lambda p: (
            (p @ PAIR_SCORES - 0.5) - t * np.sqrt(p @ (PAIR_SCORES - p @ PAIR_SCORES) ** 2)
        )

    def mle(elo: float) -> np.ndarray:
        found = optimize.minimize(
            lambda p: -(p_hat @ np.log(p)),
            np.full(5, 0.2),
            jac=lambda p: -p_hat / p,
            method="SLSQP",
            bounds=[(1e-12, 1.0)] * 5,
            constraints=[
                {"type": "eq", "fun": lambda p: p.sum() - 1.0},
                {"type": "eq", "fun": constraint(elo)},
            ],
            options={"ftol": 1e-15, "maxiter": 2000},
        )
        return found.x

    return float(total * (p_hat @ (np.log(mle(elo1)) - np.log(mle(elo0)))))


@pytest.mark.parametrize("model", ["logistic", "normalized"])
@pytest.mark.parametrize(
    ("counts", "elo0", "elo1"),
    [
        ((3, 20, 45, 25, 7), 0.0, 10.0),
        ((10, 40, 100, 30, 5), 0.0, 5.0),
        ((0, 4, 30, 9, 0), -5.0, 5.0),
        ((2, 0, 7, 0, 12), 0.0, 50.0),
        ((50, 200, 600, 260, 60), 0.0, 10.0),
        ((0, 0, 12, 0, 0), 0.0, 20.0),
    ],
)
def test_llr_agrees_with_a_brute_force_mle(counts, elo0, elo1, model) -> None:
    expected = reference_llr(counts, elo0, elo1, model)
    assert llr(counts, elo0, elo1, model) == pytest.approx(expected, rel=1e-4, abs=1e-4)


def test_llr_invariants_and_edge_cases() -> None:
    assert llr((0, 0, 0, 0, 0), 0.0, 10.0) == 0.0
    # Mirror: swapping the players reverses the counts and negates the Elo hypotheses.
    counts = (4, 11, 30, 17, 6)
    mirrored = llr(counts[::-1], -10.0, 0.0)
    assert mirrored == pytest.approx(-llr(counts, 0.0, 10.0), rel=1e-9)
    # All draws: a score of exactly 1/2 is H0 (Elo 0), and the evidence grows with the pairs.
    draws = [llr((0, 0, n, 0, 0), 0.0, 10.0) for n in (10, 100, 1000)]
    assert draws[0] < 0.0 and draws[1] < draws[0] and draws[2] < draws[1]
    assert draws[2] < SprtConfig(elo0=0, elo1=10).lower  # 1000 drawn pairs reject +10 Elo
    # One pair per outcome bin is symmetric: between H0 = -5 and H1 = +5, no evidence either way.
    assert llr((1, 1, 1, 1, 1), -5.0, 5.0) == pytest.approx(0.0, abs=1e-9)
    assert llr((1, 1, 1, 1, 1), -5.0, 5.0, "normalized") == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(LatentChessError, match="five non-negative"):
        llr((1, 2, 3), 0.0, 5.0)  # type: ignore[arg-type]


def test_bounds_and_config_checks() -> None:
    config = SprtConfig(elo0=0, elo1=10)
    assert (config.lower, config.upper) == pytest.approx((-2.944439, 2.944439), abs=1e-6)
    config = SprtConfig(elo0=0, elo1=5, alpha=0.05, beta=0.1)
    assert config.lower == pytest.approx(math.log(0.1 / 0.95))
    assert config.upper == pytest.approx(math.log(0.9 / 0.05))
    assert config.header() == "elo0=0 elo1=5 alpha=0.05 beta=0.1 model=logistic"
    with pytest.raises(LatentChessError, match="elo0 < elo1"):
        SprtConfig(elo0=5, elo1=5)
    with pytest.raises(LatentChessError, match="alpha must lie in"):
        SprtConfig(elo0=0, elo1=5, alpha=0.7)
    with pytest.raises(LatentChessError, match="unknown SPRT model 'bayes'"):
        SprtConfig(elo0=0, elo1=5, model="bayes")  # type: ignore[arg-type]


def test_pairs_counted_and_decisions() -> None:
    # Rounds 1-2: win + draw (1.5); 3-4: loss + loss (0); 5-6: draw + draw (1); 7 alone.
    points = {1: 1.0, 2: 0.5, 3: 0.0, 4: 0.0, 5: 0.5, 6: 0.5, 7: 1.0}
    assert pentanomial(points) == ((1, 0, 1, 1, 0), (7,))
    assert pentanomial({2: 1.0}) == ((0, 0, 0, 0, 0), (1,))
    config = SprtConfig(elo0=0, elo1=200)
    winning = {r: 1.0 for r in range(1, 31)}  # 15 pairs won twice
    status = sprt_status(config, winning)
    assert status.decision == "H1" and status.llr >= config.upper and status.pairs == 15
    losing = {r: 0.0 for r in range(1, 31)}
    assert sprt_status(config, losing).decision == "H0"
    undecided = sprt_status(config, {1: 1.0, 2: 0.0})
    assert undecided.decision is None and config.lower < undecided.llr < config.upper
    record = status.to_dict()
    assert record["pentanomial"] == [0, 0, 0, 0, 15] and record["games"] == 30


def test_pentanomial_elo_matches_fastchess_output() -> None:
    # fastchess prints "Elo: 190.85 +/- 65.54" for Ptnml [0, 0, 1, 8, 1], "19.83 +/- 6.77" for
    # [352, 579, 1264, 743, 464] and "72.85 +/- 22.33" for [1, 10, 78, 48, 13].
    for counts, elo, error in [
        ((0, 0, 1, 8, 1), 190.85, 65.54),
        ((352, 579, 1264, 743, 464), 19.83, 6.77),
        ((1, 10, 78, 48, 13), 72.85, 22.33),
    ]:
        found = pentanomial_elo(counts)
        assert found.elo == pytest.approx(elo, abs=0.01)
        assert found.error == pytest.approx(error, abs=0.01)


# --- real matches ---------------------------------------------------------------------------------


@pytest.fixture
def openings(tmp_path):
    path = tmp_path / "openings.pgn"
    path.write_text(OPENINGS, encoding="utf-8")
    return read_pgn_openings(path)


def players() -> tuple[Player, Player]:
    limit = parse_limit("depth=1")
    return Player.from_spec("greedy:seed=1", limit), Player.from_spec("random:seed=2", limit)


def read_headers(path) -> list[chess.pgn.Headers]:
    with open(path, encoding="utf-8") as handle:
        return list(iter(lambda: chess.pgn.read_headers(handle), None))


class StopMatchError(Exception):
    pass


@pytest.mark.parametrize("workers", [1, 2])
def test_sprt_match_stops_at_a_decision_and_resumes(tmp_path, openings, workers) -> None:
    """A capture grabber against a random mover decides H1 at wide bounds in a few pairs; an
    interrupted run resumes from its PGN and stops at the same rule."""
    sprt = SprtConfig(elo0=0, elo1=200)
    config = MatchConfig(games=200, workers=workers, progress=False, sprt=sprt)
    pgn = tmp_path / "sprt.pgn"

    def stop_after_five(record, result) -> None:
        if len(result.games) == 5:
            raise StopMatchError

    with pytest.raises(StopMatchError):
        run_match(*players(), openings, config, pgn_path=pgn, on_game=stop_after_five)
    assert len(read_headers(pgn)) == 5  # every finished game was kept

    result = run_match(*players(), openings, config, pgn_path=pgn)
    status = result.sprt_status()
    assert status is not None and status.decision == "H1" and status.llr >= sprt.upper
    assert result.resumed == 5 and len(result.games) < 200  # stopped early
    assert status.unfinished == () and len(result.games) == 2 * status.pairs  # whole pairs
    rounds = sorted(g.round for g in result.games)
    assert rounds == list(range(1, len(rounds) + 1))
    # Just before the last pair the test had not decided (it stops at the first crossing).
    before = sprt_status(sprt, {r: p for r, p in result.points().items() if r <= len(rounds) - 2})
    assert before.decision is None or workers > 1

    headers = read_headers(pgn)
    assert len(headers) == len(rounds)
    assert all(h["SPRT"] == sprt.header() for h in headers)
    last = headers[-1]  # the last game written carries the final state
    assert last["SPRTStatus"].endswith(": H1") and f"{status.pairs} pairs" in last["SPRTStatus"]

    # Rerunning plays nothing more and leaves the file alone; other bounds are refused.
    text = pgn.read_text(encoding="utf-8")
    again = run_match(*players(), openings, config, pgn_path=pgn)
    assert again.resumed == len(rounds) and again.sprt_status() == status
    assert pgn.read_text(encoding="utf-8") == text
    other = MatchConfig(games=200, progress=False, sprt=SprtConfig(elo0=0, elo1=100))
    with pytest.raises(DataFormatError, match="changing a sequential test's parameters"):
        run_match(*players(), openings, other, pgn_path=pgn)


def test_sprt_from_the_command_line(tmp_path, capsys) -> None:
    openings = tmp_path / "openings.pgn"
    openings.write_text(OPENINGS, encoding="utf-8")
    pgn, out = tmp_path / "games.pgn", tmp_path / "sprt.json"
    argv = [
        "match", "greedy:seed=1", "random:seed=2", "--sprt", "0,200", "--alpha", "0.05",
        "--beta", "0.1", "--sprt-model", "normalized", "--games", "100", "--limit", "depth=1",
        "--openings", str(openings), "--pgn", str(pgn), "--json", str(out), "--no-progress",
    ]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "SPRT LLR" in printed and "H1 accepted" in printed
    summary = json.loads(out.read_text(encoding="utf-8"))["sprt"]
    assert summary["decision"] == "H1" and summary["model"] == "normalized"
    assert summary["llr"] >= summary["upper"] == pytest.approx(math.log(0.9 / 0.05))
    assert sum(summary["pentanomial"]) == summary["pairs"] and summary["games"] < 100
    odd = [("101" if a == "100" else a) for a in argv]
    assert main(odd) == 2  # an odd maximum is refused
    assert "must be even" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["match", "random", "greedy", "--sprt", "10,0"])
