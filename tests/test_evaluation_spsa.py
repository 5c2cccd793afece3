"""SPSA (latentchess.evaluation.spsa, ``latentchess tune spsa``): the OpenBench update rule against
a hand computation, convergence on a noisy objective with a known optimum, resume, and a real
two-iteration run of the command over in-process games."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from pathlib import Path

import pytest

from latentchess.cli import main
from latentchess.engines.registry import create_engine
from latentchess.errors import DataFormatError
from latentchess.evaluation.spsa import (
    SpsaConfig,
    SpsaParameter,
    SpsaState,
    load_state,
    match_objective,
    run_spsa,
    schedule,
    spsa_iteration,
    tuned_spec,
)


def _float(name: str, start: float, c_end: float, r_end: float) -> SpsaParameter:
    return SpsaParameter(
        name=name, start=start, minimum=0, maximum=100, c_end=c_end, r_end=r_end, integer=False
    )


def test_first_update_matches_a_hand_computation() -> None:
    # N = 10 iterations, A = 10% of N = 1, alpha 0.602, gamma 0.101 (OpenBench's defaults).
    x = _float("x", 10.0, c_end=2.0, r_end=0.01)
    n = SpsaParameter(name="n", start=50, minimum=0, maximum=100, c_end=3.0, r_end=0.002)
    state = SpsaState.start([x, n], SpsaConfig(iterations=10, pairs=3, seed=5))
    played: list[tuple[dict[str, float], dict[str, float], int, int]] = []

    def objective(
        plus: Mapping[str, float], minus: Mapping[str, float], iteration: int, pairs: int
    ) -> tuple[int, int, int]:
        played.append((dict(plus), dict(minus), iteration, pairs))
        return 3, 2, 1  # the plus side: +3 =2 -1 over 3 pairs

    entry = spsa_iteration(state, objective)
    plus, minus, iteration, pairs = played[0]
    assert (iteration, pairs) == (1, 3)

    # c = c_end * N^gamma, c_1 = c / 1^gamma; a = r_end * c_end^2 * (A + N)^alpha,
    # r_1 = a / (A + 1)^alpha / c_1^2; theta += r_1 * c_1 * (wins - losses) * flip.
    c1 = 2.0 * 10**0.101
    r1 = 0.01 * 2.0**2 * 11**0.602 / 2**0.602 / c1**2
    flip = 1 if plus["x"] > minus["x"] else -1
    assert entry["flips"]["x"] == flip
    assert plus["x"] == pytest.approx(10.0 + flip * c1)
    assert minus["x"] == pytest.approx(10.0 - flip * c1)
    assert state.theta["x"] == pytest.approx(10.0 + r1 * c1 * (3 - 1) * flip)

    # The integer: whole numbers rounded with one shared uniform, 2 * c_1 apart give or take one.
    c1n = 3.0 * 10**0.101
    r1n = 0.002 * 3.0**2 * 11**0.602 / 2**0.602 / c1n**2
    flip_n = entry["flips"]["n"]
    assert float(plus["n"]).is_integer() and float(minus["n"]).is_integer()
    assert abs((plus["n"] - minus["n"]) - 2 * flip_n * c1n) < 1.0
    assert state.theta["n"] == pytest.approx(50 + r1n * c1n * 2 * flip_n)
    assert state.iteration == 1 and len(state.history) == 1

    # At the last iteration the schedule reaches c_end and r_end exactly.
    assert schedule(x, state.config, 10) == pytest.approx((2.0, 0.01))
    # c_k of an integer never goes below 0.5.
    small = SpsaParameter(name="s", start=3, minimum=1, maximum=6, c_end=0.1, r_end=0.002)
    assert schedule(small, state.config, 10)[0] == 0.5


def test_values_stay_in_range() -> None:
    edge = SpsaParameter(name="e", start=100, minimum=90, maximum=100, c_end=5.0, r_end=1.0)
    state = SpsaState.start([edge], SpsaConfig(iterations=20, seed=1))

    def always_plus_wins(
        plus: Mapping[str, float], minus: Mapping[str, float], iteration: int, pairs: int
    ) -> tuple[int, int, int]:
        assert 90 <= plus["e"] <= 100 and 90 <= minus["e"] <= 100
        return 2, 0, 0

    run_spsa(state, always_plus_wins, progress=False)
    assert 90 <= state.theta["e"] <= 100


OPTIMUM = {"x": 30.0, "y": 70.0}


def _noisy_games(
    plus: Mapping[str, float], minus: Mapping[str, float], iteration: int, pairs: int
) -> tuple[int, int, int]:
    """Games between two settings whose Elo is -0.1 * squared distance to OPTIMUM: each game a
    win with probability 0.7 * p, a loss with 0.7 * (1 - p) (p: the logistic expectation)."""

    def elo(values: Mapping[str, float]) -> float:
        return -0.1 * sum((values[name] - OPTIMUM[name]) ** 2 for name in OPTIMUM)

    expected = 1 / (1 + 10 ** (-(elo(plus) - elo(minus)) / 400))
    rng = random.Random(iteration)  # the noise depends on the iteration only (resumable)
    wins = draws = losses = 0
    for _ in range(2 * pairs):
        u = rng.random()
        if u < 0.7 * expected:
            wins += 1
        elif u > 1 - 0.7 * (1 - expected):
            losses += 1
        else:
            draws += 1
    return wins, draws, losses


def _synthetic_parameters() -> list[SpsaParameter]:
    return [
        SpsaParameter(name="x", start=60, minimum=0, maximum=100, c_end=4.0, r_end=0.01),
        SpsaParameter(name="y", start=40, minimum=0, maximum=100, c_end=4.0, r_end=0.01),
    ]


def test_converges_on_a_noisy_objective_with_a_known_optimum() -> None:
    state = SpsaState.start(_synthetic_parameters(), SpsaConfig(iterations=2000, pairs=8, seed=1))
    start_distance = math.dist((60, 40), OPTIMUM.values())
    run_spsa(state, _noisy_games, progress=False)
    distance = math.dist(state.theta.values(), OPTIMUM.values())
    assert distance < start_distance / 6, (state.theta, distance)


def _without_timing(history: list[dict[str, object]]) -> list[dict[str, object]]:
    return [{k: v for k, v in entry.items() if k != "seconds"} for entry in history]


def test_resume_gives_the_uninterrupted_result(tmp_path: Path) -> None:
    config = SpsaConfig(iterations=40, pairs=2, seed=3)
    whole = run_spsa(
        SpsaState.start(_synthetic_parameters(), config),
        _noisy_games,
        path=tmp_path / "whole.json",
        progress=False,
    )
    path = tmp_path / "killed.json"
    run_spsa(
        SpsaState.start(_synthetic_parameters(), config),
        _noisy_games,
        path=path,
        until=17,
        progress=False,
    )
    resumed = load_state(path)  # a new process would start here
    assert resumed.iteration == 17
    run_spsa(resumed, _noisy_games, path=path, progress=False)
    assert resumed.theta == whole.theta
    assert _without_timing(resumed.history) == _without_timing(whole.history)
    assert load_state(path).theta == whole.theta
    assert not path.with_name(path.name + ".tmp").exists()


def test_bad_state_files_are_refused_naming_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": 1,\n "theta": ', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"broken\.json"):
        load_state(broken)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": 1, "theta": {}}), encoding="utf-8")
    with pytest.raises(DataFormatError, match="not an SPSA state file"):
        load_state(other)


def test_tune_spsa_command_plays_real_games_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state_path = tmp_path / "tune" / "spsa.json"
    command = [
        "tune",
        "spsa",
        "--state",
        str(state_path),
        "--engine",
        "ab:eval=hce,hash=2,reverse_futility_margin=90",
        "--params",
        "reverse_futility_margin,lmr_base_percent",
        "--iterations",
        "2",
        "--pairs",
        "1",
        "--limit",
        "nodes=150",
        "--max-plies",
        "120",
        "--balance-cp",
        "0",
        "--workers",
        "2",
    ]
    assert main(command) == 0
    out = capsys.readouterr().out
    state = load_state(state_path)
    assert state.iteration == 2
    assert [e["wins"] + e["draws"] + e["losses"] for e in state.history] == [2, 2]
    assert state.history[0]["plus"] != state.history[0]["minus"]
    assert state_path.with_suffix(".png").stat().st_size > 0
    assert state.parameters[0].start == 90  # the spec's value, not the default (85)
    assert state.parameters[1].start == 75
    spec = tuned_spec("ab:eval=hce,hash=2,reverse_futility_margin=90", state)
    assert spec.count("reverse_futility_margin=") == 1  # the tuned value replaced the spec's
    assert f"tuned spec: {spec}" in out
    assert "reverse_futility_margin=90,lmr_base_percent=75,name=base' --sprt 0,5" in out
    engine = create_engine(spec)  # the exported set is a valid spec of real values
    values = engine._search.parameters  # type: ignore[attr-defined]
    assert values["reverse_futility_margin"] == round(state.theta["reverse_futility_margin"])

    # Every game is in the PGN beside the state, its Event naming the iteration.
    import chess.pgn

    with state_path.with_suffix(".pgn").open(encoding="utf-8") as handle:
        events = []
        while (headers := chess.pgn.read_headers(handle)) is not None:
            events.append(headers["Event"])
    assert (
        sorted(events)
        == ["latentchess tune spsa, iteration 1"] * 2 + ["latentchess tune spsa, iteration 2"] * 2
    )

    # The same command again resumes: nothing left to play, same state.
    assert main(command) == 0
    assert "resuming" in capsys.readouterr().err
    assert load_state(state_path).history == state.history
    # Another run's options are refused rather than mixed into this history.
    assert main([*command[:-2], "--workers", "1", "--pairs", "2"]) == 2
    assert "holds another SPSA run" in capsys.readouterr().err
    # --report reads the file alone.
    assert main(["tune", "spsa", "--state", str(state_path), "--report"]) == 0
    assert "reverse_futility_margin" in capsys.readouterr().out


def test_an_iteration_killed_midway_resumes_from_its_finished_games(tmp_path: Path) -> None:
    """The objective appends each game to the PGN; run again for the same iteration (as after a
    kill before the state was saved), it replays nothing and returns the same score."""
    from latentchess.evaluation.limits import parse_limit
    from latentchess.evaluation.openings import eco_openings

    pgn = tmp_path / "games.pgn"
    openings = eco_openings(2, seed=0)
    objective = match_objective(
        "ab:eval=hce,hash=2", parse_limit("nodes=150"), openings, max_plies=60, pgn=pgn
    )
    plus, minus = {"reverse_futility_margin": 100.0}, {"reverse_futility_margin": 70.0}
    first = objective(plus, minus, 1, 2)
    size = pgn.stat().st_size
    assert sum(first) == 4 and size > 0
    assert objective(plus, minus, 1, 2) == first  # resumed: no game played again
    assert pgn.stat().st_size == size
    assert sum(objective(plus, minus, 2, 2)) == 4 and pgn.stat().st_size > size  # the next one
