"""The search's tunable constants (core/cpp/search_parameters.h) through AlphaBeta, the ``ab``
spec and UCI: defaults equal to the old constants, changes reach the search, and the options
appear over UCI only with the tuning switch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import chess
import chess.engine
import pytest

from latentchess.core import _native
from latentchess.core.alphabeta import SEARCH_PARAMETERS, AlphaBeta
from latentchess.core.bench import run_bench
from latentchess.engines.ab import AlphaBetaConfig, AlphaBetaEngine
from latentchess.engines.registry import create_engine
from latentchess.errors import EngineError
from latentchess.uci import UciSession
from uci_fixtures import SessionTranscript

DEFAULTS = {parameter.name: parameter.default for parameter in SEARCH_PARAMETERS}
MIDDLEGAME = "r1bq1rk1/pp3ppp/2n1pn2/2pp4/1bPP4/2NBPN2/PP3PPP/R1BQ1RK1 w - - 0 8"


def _nodes(engine: AlphaBeta, depth: int = 8) -> int:
    engine.new_game()
    return engine.search(chess.Board(MIDDLEGAME), chess.engine.Limit(depth=depth)).nodes


def test_python_table_matches_the_core() -> None:
    assert _native.search_parameter_defaults() == DEFAULTS  # same names, order and values
    for parameter in SEARCH_PARAMETERS:
        assert parameter.minimum <= parameter.default <= parameter.maximum
        assert parameter.c_end > 0 and parameter.r_end > 0


def test_explicit_defaults_leave_the_search_unchanged_and_a_change_changes_it() -> None:
    depth = 6
    assert run_bench(depth, parameters=DEFAULTS).nodes == run_bench(depth).nodes
    baseline = _nodes(AlphaBeta("hce", hash_mb=4))
    for name, value in (("reverse_futility_margin", 140), ("lmr_base_percent", 120)):
        changed = _nodes(AlphaBeta("hce", hash_mb=4, parameters={name: value}))
        assert changed != baseline, name
    engine = AlphaBeta("hce", hash_mb=4, parameters={"lmr_base_percent": 120})
    engine.set_parameters({"lmr_base_percent": 75})  # back to the default
    assert _nodes(engine) == baseline


def test_correction_history_changes_the_search_only_when_on_and_new_game_clears_it() -> None:
    """Off by default (the bench above is unchanged); on, it corrects static evaluations from
    what the search has found with the same pawns, so the tree changes, and a new game forgets
    it: the same search after ``new_game`` visits the same nodes."""
    off = _nodes(AlphaBeta("hce", hash_mb=4))
    engine = AlphaBeta("hce", hash_mb=4, parameters={"correction_history_percent": 100})
    on = _nodes(engine)
    assert on != off
    assert _nodes(engine) == on  # _nodes starts a new game: table and histories cleared
    board = chess.Board(MIDDLEGAME)
    result = engine.search(board, chess.engine.Limit(depth=8))
    assert result.best_move in board.legal_moves


def test_capture_history_reorders_captures_only_when_weighted() -> None:
    """On by default at a divisor of 512 (since an SPRT kept it); off (0), the table is never
    read, and a heavier weight (16) reorders captures more: each visits other nodes than the
    default, the same number each time from a new game, and returns a legal move."""
    default = _nodes(AlphaBeta("hce", hash_mb=4))
    off = _nodes(AlphaBeta("hce", hash_mb=4, parameters={"capture_history_divisor": 0}))
    assert off != default
    assert _nodes(AlphaBeta("hce", hash_mb=4, parameters={"capture_history_divisor": 0})) == off
    engine = AlphaBeta("hce", hash_mb=4, parameters={"capture_history_divisor": 16})
    on = _nodes(engine)
    assert on not in (off, default)
    assert _nodes(engine) == on
    board = chess.Board(MIDDLEGAME)
    result = engine.search(board, chess.engine.Limit(depth=8))
    assert result.best_move in board.legal_moves


def test_singular_double_and_negative_extensions_change_the_search_only_when_set() -> None:
    """The double extension is off by default, the negative one on (1 ply, since an SPRT kept
    it). Each one switched against the default changes which nodes a search deep enough for
    singular extensions visits, the same number each time from a new game, and the search still
    returns a legal move; the core refuses a negative extension of more than two plies."""
    default = _nodes(AlphaBeta("hce", hash_mb=4), depth=10)
    for parameters in ({"singular_double_margin": 8}, {"singular_negative_extension": 0}):
        engine = AlphaBeta("hce", hash_mb=4, parameters=parameters)
        changed = _nodes(engine, depth=10)
        assert changed != default, parameters
        assert _nodes(engine, depth=10) == changed
        board = chess.Board(MIDDLEGAME)
        assert engine.search(board, chess.engine.Limit(depth=9)).best_move in board.legal_moves
    with pytest.raises(ValueError, match="singular_negative_extension must be at most 2, got 3"):
        engine._engine.parameters = {"singular_negative_extension": 3}


@pytest.mark.parametrize(
    ("name", "value", "too_large"),
    [
        ("probcut_margin", 0, None),  # on by default (200)
        ("razoring_margin", 300, None),
        ("lmr_root", 0, 2),  # on by default (1)
        ("lmr_table_capture", 0, 3),  # on by default (1)
        ("quiescence_table_eval", 0, 2),  # on by default
        ("table_cut_history", 0, 2),  # on by default
        ("lmr_table_pv", 1, 4),
        ("lmr_cutoff_count", 1, 3),
        ("lmr_deeper_margin", 64, None),
        ("futility_lmr_depth", 0, 2),  # on by default
        ("fail_low_prior_bonus", 0, 2),  # on by default
        ("threat_history", 0, 2),  # on by default
        ("continuation_far", 1, 2),
        ("lmr_cut_node", 2, 4),  # 1 by default
        ("fifty_move_scaling", 1, 2),
        ("eval_history", 20, None),
        ("capture_futility_margin", 200, None),
        ("check_extension", 0, 2),  # 1 by default
        ("history_bonus_per_depth", 100, None),
        ("reverse_futility_blend", 1, 2),
        ("iir_depth", 4, None),
        ("aspiration_fail_high_depth", 1, 2),
        ("quiescence_stand_pat_blend", 1, 2),
        ("threat_order", 0, None),  # 8000 by default
        ("check_order", 16000, None),
    ],
)
def test_pruning_switches_change_the_search_only_when_set(
    name: str, value: int, too_large: int | None
) -> None:
    """Each switch set against its default changes which nodes a middlegame search visits, the
    same number each time from a new game, and the search still returns a legal move; a value
    out of the switch's range is refused by name."""
    default = _nodes(AlphaBeta("hce", hash_mb=4), depth=10)
    engine = AlphaBeta("hce", hash_mb=4, parameters={name: value})
    changed = _nodes(engine, depth=10)
    assert changed != default, name
    assert _nodes(engine, depth=10) == changed
    board = chess.Board(MIDDLEGAME)
    assert engine.search(board, chess.engine.Limit(depth=9)).best_move in board.legal_moves
    with pytest.raises(ValueError, match=f"{name} must be at least 0, got -1"):
        engine._engine.parameters = {name: -1}
    if too_large is not None:
        with pytest.raises(
            ValueError, match=f"{name} must be at most {too_large - 1}, got {too_large}"
        ):
            engine._engine.parameters = {name: too_large}


def test_bad_values_are_refused_and_change_nothing() -> None:
    engine = AlphaBeta("hce", hash_mb=4, parameters={"aspiration_delta": 30})
    with pytest.raises(EngineError, match="unknown search parameter 'aspiration'"):
        engine.set_parameters({"aspiration": 3})
    with pytest.raises(EngineError, match=r"must lie in \[2, 8\], got 0"):
        engine.set_parameters({"aspiration_delta": 25, "null_move_depth_divisor": 0})
    with pytest.raises(EngineError, match="needs a whole number"):
        engine.set_parameters({"aspiration_delta": "wide"})
    assert engine.parameters == DEFAULTS | {"aspiration_delta": 30}
    # The core guards its own invariants too (a zero divisor would crash the search).
    with pytest.raises(ValueError, match="null_move_depth_divisor must be at least 1"):
        engine._engine.parameters = {"null_move_depth_divisor": 0}


CLOCK = chess.engine.Limit(white_clock=20.0, black_clock=20.0, white_inc=0.1, black_inc=0.1)


def clocked_nodes(name: str, value: int) -> int:
    """Nodes of one clocked search of MIDDLEGAME with one time parameter changed, after checking
    that a value past its range (301 is past both of these) is refused by name."""
    with pytest.raises(EngineError, match=name):
        AlphaBeta("hce", hash_mb=4, parameters={name: 301})
    engine = AlphaBeta("hce", hash_mb=4, parameters={name: value})
    return engine.search(chess.Board(MIDDLEGAME), CLOCK).nodes


def test_time_parameters_set_the_plan_and_the_iterations() -> None:
    """``time_moves_to_go`` sets the budget (the engine's own budget and its search's agree);
    ``time_iteration_percent`` decides how far into it new iterations start."""
    board = chess.Board()
    default = AlphaBetaEngine(AlphaBetaConfig(evaluator="hce", hash_mb=4))
    shorter = AlphaBetaEngine(
        AlphaBetaConfig(evaluator="hce", hash_mb=4, search_parameters={"time_moves_to_go": 10})
    )
    plan = default.time_budget(CLOCK, board)
    short_plan = shorter.time_budget(CLOCK, board)
    assert plan is not None and short_plan is not None
    assert short_plan.soft > plan.soft * 1.7  # half the moves: nearly twice the budget
    outcome = shorter.search(board, chess.engine.Limit(**{**CLOCK.__dict__, "depth": 1}))
    assert outcome.soft_s == pytest.approx(short_plan.soft, abs=0.002)

    # The same iterations up to the earlier cut-off, then more: a quarter of the budget against
    # all of it (a 4x margin for the machine's timing noise).
    iteration = "time_iteration_percent"
    assert clocked_nodes(iteration, 100) > clocked_nodes(iteration, 25)


def test_the_opening_profile_front_loads_the_clock() -> None:
    """``time_opening_percent`` multiplies the clock's share at ply 0 and fades linearly to the
    plain plan by ``time_opening_plies``; the hard limit stays inside the clock, and the search
    of a board reads the board's own game ply (its FEN's move number)."""
    profile = {"time_opening_percent": 300, "time_opening_plies": 60}
    engine = AlphaBetaEngine(AlphaBetaConfig(evaluator="hce", hash_mb=4, search_parameters=profile))
    plain = AlphaBetaEngine(AlphaBetaConfig(evaluator="hce", hash_mb=4))
    increment_share = CLOCK.white_inc * 3 / 4

    def at_ply(ply: int) -> chess.Board:
        board = chess.Board()
        board.fullmove_number = ply // 2 + 1
        return board

    def clock_share(budget_engine: AlphaBetaEngine, ply: int) -> float:
        budget = budget_engine.time_budget(CLOCK, at_ply(ply))
        assert budget is not None and 0 < budget.soft <= budget.hard <= CLOCK.white_clock
        return budget.soft - increment_share

    base = clock_share(plain, 0)
    assert clock_share(plain, 40) == pytest.approx(base, abs=0.002)  # off: no ply matters
    assert clock_share(engine, 0) == pytest.approx(3 * base, abs=0.003)
    assert clock_share(engine, 30) == pytest.approx(2 * base, abs=0.003)  # halfway: 1 + 2/2
    shares = [clock_share(engine, ply) for ply in range(0, 80, 10)]
    assert shares == sorted(shares, reverse=True)
    assert clock_share(engine, 60) == pytest.approx(base, abs=0.002)  # faded out

    board = at_ply(30)
    outcome = engine.search(board, chess.engine.Limit(**{**CLOCK.__dict__, "depth": 1}))
    budget = engine.time_budget(CLOCK, board)
    assert budget is not None and outcome.soft_s == pytest.approx(budget.soft, abs=0.002)
    out_of_range = [
        ("time_opening_percent", 99),
        ("time_opening_percent", 601),
        ("time_opening_plies", 0),
        ("time_opening_plies", 1001),
    ]
    for name, bad in out_of_range:
        with pytest.raises(EngineError, match=name):
            AlphaBeta("hce", hash_mb=4, parameters={name: bad})


def test_node_share_scales_the_iterations() -> None:
    """``time_node_share_percent`` scales the iteration share by (1.5 - the best move's share of
    the nodes): at its smallest the search stops iterating far earlier than at its largest."""
    # At 10 the share is at most 0.15x, at 300 at least 1.5x (capped by the hard limit).
    share = "time_node_share_percent"
    assert clocked_nodes(share, 300) > clocked_nodes(share, 10)


def test_threads_keep_the_parameters() -> None:
    engine = AlphaBeta("hce", hash_mb=4, threads=3, parameters={"futility_base": 120})
    engine.threads = 1
    engine.threads = 2
    assert engine.parameters["futility_base"] == 120
    outcome = engine.search(chess.Board(MIDDLEGAME), chess.engine.Limit(depth=6))
    assert outcome.best_move in chess.Board(MIDDLEGAME).legal_moves


def test_spec_keys_set_parameters() -> None:
    engine = create_engine("ab:eval=hce,hash=2,reverse_futility_margin=120,aspiration_delta=9")
    assert isinstance(engine, AlphaBetaEngine)
    assert engine._search.parameters == DEFAULTS | {
        "reverse_futility_margin": 120,
        "aspiration_delta": 9,
    }
    assert engine.config.search_parameters == {
        "reverse_futility_margin": 120,
        "aspiration_delta": 9,
    }
    engine.set_evaluator("pesto")  # a new native engine keeps the values
    assert engine._search.parameters["aspiration_delta"] == 9
    with pytest.raises(EngineError, match="must lie in"):
        create_engine("ab:eval=hce,reverse_futility_margin=5000")
    with pytest.raises(EngineError, match="unknown ab option 'reverse_futility'"):
        create_engine("ab:eval=hce,reverse_futility=90")


def _transcript(tunable: bool) -> SessionTranscript:
    engine = AlphaBetaEngine(AlphaBetaConfig(evaluator="hce", hash_mb=2, tunable=tunable))
    return SessionTranscript(lambda write: UciSession(write, spec="ab", engine=engine))


def _go_nodes(t: SessionTranscript) -> int:
    t.send("ucinewgame", f"position fen {MIDDLEGAME}", "go depth 7")
    t.wait_for("bestmove")
    infos = [line.split() for line in t.lines if line.startswith("info depth 7 ")]
    t.lines.clear()
    return int(infos[-1][infos[-1].index("nodes") + 1])


def test_uci_options_only_with_the_tuning_switch() -> None:
    plain = _transcript(tunable=False)
    plain.send("uci")
    plain.wait_for("uciok")
    assert not any("reverse_futility_margin" in line for line in plain.lines)
    plain.lines.clear()
    plain.send("setoption name reverse_futility_margin value 140", "isready")
    plain.wait_for("readyok")
    assert any("unknown option" in line for line in plain.infos())

    tuned = _transcript(tunable=True)
    tuned.send("uci")
    tuned.wait_for("uciok")
    for parameter in SEARCH_PARAMETERS:
        expected = (
            f"option name {parameter.name} type spin default {parameter.default} "
            f"min {parameter.minimum} max {parameter.maximum}"
        )
        assert expected in tuned.lines
    tuned.lines.clear()
    baseline = _go_nodes(tuned)
    tuned.send("setoption name reverse_futility_margin value 140", "isready")
    tuned.wait_for("readyok")
    changed = _go_nodes(tuned)
    assert changed != baseline
    tuned.send("setoption name reverse_futility_margin value 85", "isready")
    tuned.wait_for("readyok")
    assert _go_nodes(tuned) == baseline
    tuned.send("setoption name reverse_futility_margin value 5000", "isready")  # out of range
    tuned.wait_for("readyok")
    assert any("option 'reverse_futility_margin' refused" in line for line in tuned.infos())


def test_uci_command_tunable_flag() -> None:
    script = "uci\nsetoption name aspiration_delta value 30\nisready\nquit\n"
    command = [sys.executable, "-m", "latentchess", "uci", "--engine", "ab:eval=hce", "--tunable"]
    done = subprocess.run(command, input=script, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "option name aspiration_delta type spin default 20 min 8 max 50" in done.stdout
    assert "readyok" in done.stdout and "unknown option" not in done.stdout
    plain = [sys.executable, "-m", "latentchess", "uci", "--engine", "ab:eval=hce"]
    done = subprocess.run(plain, input="uci\nquit\n", capture_output=True, text=True, timeout=60)
    assert "aspiration_delta" not in done.stdout


def test_the_docs_list_every_parameter() -> None:
    page = Path(__file__).resolve().parents[1] / "docs" / "engines" / "alphabeta.md"
    text = page.read_text(encoding="utf-8")
    for parameter in SEARCH_PARAMETERS:
        row = f"| `{parameter.name}` | {parameter.default} | {parameter.minimum}-"
        assert row in text, parameter.name
