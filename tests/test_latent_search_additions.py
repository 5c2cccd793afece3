"""The two additions to the paper's latent search on the native core: ``qs`` (captures resolved
at the horizon, SEE winners kept by top-k) and ``revise`` (a wider re-search after a fail-low).

Off (``qs=0,revise=0``), the native search equals the Python reference search exactly: that is
tests/test_native_latent.py's ``test_native_search_equals_the_python_search`` (25 boards, depths
1-3, both modes) and the check below on the engine's own switches.
"""

from __future__ import annotations

from pathlib import Path

import chess
import chess.engine
import pytest

from latent_fixtures import random_sparse_model
from latentchess.core import _native as native
from latentchess.engines.latent import LatentEngine, declared_search
from latentchess.models import LatentModel
from latentchess.models.config import SparseEncoderConfig
from latentchess.search import MATE_VALUE, SearchConfig, Searcher, is_mate_value
from latentchess.search.native import NativeScorer, NativeSearcher, native_encoder

CONFIG = SparseEncoderConfig(name="sparse-qs-test", l1=64, hidden=16, dim=16)
TRAINED = Path(__file__).resolve().parents[1] / "src" / "latentchess" / "weights" / "sparse-64"


def _model(seed: int = 1) -> LatentModel:
    return random_sparse_model(CONFIG, seed)


@pytest.fixture(scope="module")
def model() -> LatentModel:
    return _model()


@pytest.fixture(scope="module")
def encoder(model: LatentModel):  # type: ignore[no-untyped-def]
    return native_encoder(model)


def _boards(count: int, seed: int) -> list[chess.Board]:
    import random

    rng, boards = random.Random(seed), []
    while len(boards) < count:
        board = chess.Board()
        for _ in range(rng.randrange(4, 80)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        if any(board.legal_moves):
            boards.append(board)
    return boards


def _values(result) -> dict[str, float | None]:  # type: ignore[no-untyped-def]
    return {r.move.uci(): r.value for r in result.root_moves}


def test_off_is_the_papers_search(encoder) -> None:  # type: ignore[no-untyped-def]
    """qs=0,revise=0 given explicitly: the Python search's move, value and PV, on 10 positions."""
    for depth in (2, 3):
        config = SearchConfig(depth=depth, width=3, qs=False, revise=False)
        for board in _boards(10, seed=5):
            python = Searcher(NativeScorer(encoder), config).search(board)
            result = NativeSearcher(encoder, config).search(board)
            assert (result.move, result.value, result.pv) == (python.move, python.value, python.pv)


def test_a_capture_sequence_resolves_at_the_horizon(encoder) -> None:  # type: ignore[no-untyped-def]
    """Qxd5 cxd5: at depth 1 the queen capture is worth the recapture's score, not its own."""
    board = chess.Board("4k3/8/2p5/3p4/8/8/8/3QK3 w - - 0 1")
    after = board.copy()
    after.push_uci("d1d5")
    stand = float(encoder.score_fens([after.fen()])[0])
    after.push_uci("c6d5")
    recaptured = float(encoder.score_fens([after.fen()])[0])
    config = SearchConfig(depth=1, width=64, qs=True)
    result = NativeSearcher(encoder, config).search(board, exact_root=True)
    assert _values(result)["d1d5"] == pytest.approx(min(stand, recaptured), abs=1e-6)
    plain = NativeSearcher(encoder, SearchConfig(depth=1, width=64)).search(board, exact_root=True)
    assert _values(plain)["d1d5"] == pytest.approx(stand, abs=1e-6)


@pytest.mark.skipif(not (TRAINED / "config.json").is_file(), reason="no shipped sparse-64")
def test_the_shipped_model_sees_the_recapture_at_depth_1_with_qs() -> None:
    """3. Qf3 (Black's e5, Nc6 played): the paper's search at depth 1 plays Qxf7+?? (Kxf7 wins
    the queen); with qs it sees the recapture. And it takes a hanging queen (4. Nf3?? gxh5)."""
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5Q2/PPPP1PPP/RNB1KBNR w KQkq - 2 3")
    blunder = chess.Move.from_uci("f3f7")
    limit = chess.engine.Limit(depth=1)
    paper = LatentEngine.from_options(str(TRAINED), qs="0", revise="0")
    assert paper.play(board, limit) == blunder
    engine = LatentEngine.from_options(str(TRAINED), qs="1", revise="0")
    assert engine.play(board, limit) != blunder
    board = chess.Board()
    for san in ("e4", "e5", "Qh5", "Nc6", "Bc4", "g6", "Nf3"):
        board.push_san(san)
    assert engine.play(board, limit) == chess.Move.from_uci("g6h5")


def test_top_k_never_cuts_a_see_winner(encoder) -> None:  # type: ignore[no-untyped-def]
    """exd5 and exf5 win a piece by SEE: with qs both are expanded at width 1."""
    board = chess.Board("4k3/8/8/3n1b2/4P3/8/8/4K3 w - - 0 1")
    for depth in (1, 2, 3):
        result = NativeSearcher(encoder, SearchConfig(depth=depth, width=1, qs=True)).search(
            board, exact_root=True
        )
        expanded = {uci for uci, value in _values(result).items() if value is not None}
        assert {"e4d5", "e4f5"} <= expanded and len(expanded) <= 3  # the best one and both
    plain = NativeSearcher(encoder, SearchConfig(depth=2, width=1)).search(board, exact_root=True)
    assert sum(v is not None for v in _values(plain).values()) == 1


def test_evasions_in_check_inside_quiescence(encoder) -> None:  # type: ignore[no-untyped-def]
    """After Qh4?? Rxd1+ is mate (found at depth 1 by qs); with h3 played, Kh2 (a quiet evasion)
    escapes and the value is no mate."""
    config = SearchConfig(depth=1, width=256, qs=True)
    mate = chess.Board("3r2k1/5ppp/8/8/Q7/8/5PPP/3R2K1 w - - 0 1")
    result = NativeSearcher(encoder, config).search(mate, exact_root=True)
    assert _values(result)["a4h4"] == -(MATE_VALUE - 2)
    assert result.move != chess.Move.from_uci("a4h4")
    luft = chess.Board("3r2k1/5ppp/8/8/Q7/7P/5PP1/3R2K1 w - - 0 1")
    value = _values(NativeSearcher(encoder, config).search(luft, exact_root=True))["a4h4"]
    assert value is not None and not is_mate_value(value)
    plain = NativeSearcher(encoder, SearchConfig(depth=1, width=256)).search(mate, exact_root=True)
    assert not is_mate_value(_values(plain)["a4h4"])  # the paper's search cannot see it


def test_legal_moves_and_lines_with_both_additions(encoder) -> None:  # type: ignore[no-untyped-def]
    config = SearchConfig(depth=3, width=2, qs=True, revise=True)
    searcher = NativeSearcher(encoder, config)
    for board in _boards(12, seed=9):
        result = searcher.search(board)
        assert result.move in board.legal_moves and result.completed
        line = board.copy()
        for move in result.pv:
            assert move in line.legal_moves
            line.push(move)
    result = searcher.search(chess.Board(), depth=64, max_nodes=3000)
    assert result.nodes <= 3000 and result.move is not None


def test_revise_re_searches_fail_lows_wider(encoder) -> None:  # type: ignore[no-untyped-def]
    """Some iterations fail low and are searched again; where none does, the result is the
    narrow search's."""
    revised = 0
    for board in _boards(12, seed=4):
        position = native.Position(board.fen())
        wide = native.LatentSearch(encoder, width=1, revise=True).search(position, [], 4)
        narrow = native.LatentSearch(encoder, width=1).search(position, [], 4)
        assert narrow["revisions"] == 0
        if wide["revisions"]:
            revised += 1
        else:
            assert (wide["move"], wide["value"], wide["pv"]) == (
                narrow["move"],
                narrow["value"],
                narrow["pv"],
            )
    assert revised > 0


def test_partial_keeps_the_finished_root_moves_of_a_stopped_iteration(encoder) -> None:  # type: ignore[no-untyped-def]
    """An iteration stopped by the node limit: without partial it is discarded; with it the
    root moves it finished are kept, the last iteration's best searched first, each with the
    value a full iteration in the same order gives it, and the best of them played."""
    kept = 0
    for board in _boards(8, seed=11):
        position = native.Position(board.fen())
        depths: list[dict] = []  # type: ignore[type-arg]
        full = native.LatentSearch(encoder, width=3, qs=True, partial=True).search(
            position, [], 4, on_iteration=depths.append
        )
        assert not full["partial"] and full["completed"]
        if full["depth"] < 4 or len(depths) < 4:
            continue  # a forced mate ended the deepening
        third = depths[2]
        budget = (third["nodes"] + full["nodes"]) // 2  # inside the fourth iteration
        before: list[dict] = []  # type: ignore[type-arg]
        whole = native.LatentSearch(encoder, width=3, qs=True).search(
            position, [], 4, on_iteration=before.append
        )
        inside = (before[2]["nodes"] + whole["nodes"]) // 2
        old = native.LatentSearch(encoder, width=3, qs=True).search(
            position, [], 4, max_nodes=inside
        )
        assert (old["depth"], old["partial"], old["completed"]) == (3, False, False)
        assert old["move"] == before[2]["move"]
        stopped = native.LatentSearch(encoder, width=3, qs=True, partial=True).search(
            position, [], 4, max_nodes=budget
        )
        assert stopped["nodes"] <= budget and not stopped["completed"]
        if not stopped["partial"]:  # stopped before the first root move finished
            assert (stopped["depth"], stopped["move"]) == (3, third["move"])
            continue
        kept += 1
        assert stopped["depth"] == 4
        done = {uci: value for uci, _, value, _ in stopped["root_moves"] if value is not None}
        full_values = {uci: value for uci, _, value, _ in full["root_moves"]}
        assert third["move"] in done  # searched first
        assert all(full_values[uci] == value for uci, value in done.items())
        best = (max if board.turn == chess.WHITE else min)(done.values())
        assert stopped["value"] == best and done[stopped["move"]] == best
    assert kept >= 3


def test_partial_spends_the_soft_budget(model) -> None:  # type: ignore[no-untyped-def]
    """With partial a search goes on to the soft deadline; without it, it ends where the next
    iteration is not predicted to finish. Depth reached, not time, is compared."""
    board = chess.Board("r2q1rk1/1b1nbppp/pp1ppn2/8/2PNP3/2N1BP2/PP1QB1PP/R4RK1 w - - 0 12")
    reached = {}
    for partial in (False, True):
        engine = LatentEngine.from_options(model, qs="1", width="3", partial=str(partial))
        assert engine.searcher.config.partial is partial
        result = engine.analyse(board, chess.engine.Limit(depth=64, nodes=60_000))
        reached[partial] = result.depth
    assert reached[True] >= reached[False]


def test_reduce_searches_late_quiet_moves_shallower(encoder) -> None:  # type: ignore[no-untyped-def]
    """Reductions prune: fewer positions at the same depth in total, a legal best move and a
    principal variation of legal moves; below 3 plies there is nothing to reduce."""
    fewer = total_full = total_reduced = 0
    for board in _boards(10, seed=21):
        position = native.Position(board.fen())
        full = native.LatentSearch(encoder, width=4, qs=True).search(position, [], 5)
        cut = native.LatentSearch(encoder, width=4, qs=True, reduce=True).search(position, [], 5)
        total_full += full["nodes"]
        total_reduced += cut["nodes"]
        fewer += cut["nodes"] < full["nodes"]
        replay = board.copy()
        for uci in cut["pv"]:
            move = chess.Move.from_uci(uci)
            assert move in replay.legal_moves
            replay.push(move)
        shallow = [
            native.LatentSearch(encoder, width=4, qs=True, reduce=r).search(position, [], 2)
            for r in (False, True)
        ]
        assert (shallow[0]["move"], shallow[0]["value"], shallow[0]["nodes"]) == (
            shallow[1]["move"],
            shallow[1]["value"],
            shallow[1]["nodes"],
        )
    assert fewer >= 6 and total_reduced < total_full


def test_switches_from_specs_uci_and_the_model(model: LatentModel) -> None:
    engine = LatentEngine.from_options(model, qs="1", revise="0", reduce="1")
    assert (engine.config.qs, engine.config.revise, engine.config.reduce) == (True, False, True)
    assert engine.searcher._search is not None and "Reduce" in {
        o.option.name for o in engine.options()
    }
    assert engine.searcher.config.qs
    names = {o.option.name: o for o in engine.options()}
    assert names["QS"].option.type == "check" and names["Revise"].key == "revise"
    engine.set_option("QS", "false")
    engine.set_option("Revise", "true")
    assert (engine.searcher.config.qs, engine.searcher.config.revise) == (False, True)
    assert not LatentEngine.from_options(model, qs="0").config.qs
    # the shipped model declares the search it ships with; options override it
    shipped = declared_search(None)
    assert LatentEngine.from_options(None, qs="0", revise="0").config.qs is False
    assert isinstance(shipped.qs, bool) and isinstance(shipped.revise, bool)


# -- eval=: the same search scored by an alpha-beta evaluator (the decomposition's instrument) --


def _white_w_minus_l(board: chess.Board, evaluator: str) -> float:
    from latentchess.core.nnue import default_nnue_path
    from latentchess.wdl import WdlModel, material_count

    cp = native.evaluate(native.Position(board.fen()), evaluator)
    white_cp = cp if board.turn == chess.WHITE else -cp
    wdl = WdlModel.load(default_nnue_path())
    assert wdl is not None
    win, _, loss = wdl.probabilities(white_cp, material_count(board))
    return float(win - loss)


@pytest.mark.parametrize("name", ["hce", "pesto", "nnue"])
def test_eval_scores_every_child_by_the_evaluators_wdl(encoder, name: str) -> None:  # type: ignore[no-untyped-def]
    """Depth 1, no qs: each root move is worth its child's W - L under the evaluator's
    centipawns and the network's WDL model, computed here in Python (latentchess.wdl)."""
    from latentchess.core.nnue import resolve_evaluator

    config = SearchConfig(depth=1, width=64, eval=name)
    checked = 0
    for board in _boards(6, seed=11):
        result = NativeSearcher(encoder, config).search(board, exact_root=True)
        for root in result.root_moves:
            child = board.copy()
            child.push(root.move)
            if child.is_game_over(claim_draw=True) or root.value is None:
                continue
            expected = _white_w_minus_l(child, resolve_evaluator(name))
            assert root.value == pytest.approx(expected, abs=1e-9)
            checked += 1
        values = [r.value for r in result.root_moves if r.value is not None]
        best = max(values) if board.turn == chess.WHITE else min(values)
        assert result.value == pytest.approx(best)
    assert checked > 100


def test_eval_with_qs_wins_the_hanging_queen_and_reports_win_probability(model) -> None:  # type: ignore[no-untyped-def]
    """After 1.e4 e5 2.Qh5 Nc6 3.Bc4 Nf6?? 4.Nf3?? (Qxf7# was mate) the queen on h5 hangs to
    Nxh5 and Qxf7# still threatens: the HCE-scored search takes the queen; the engine's win
    probability is (1 + W - L) / 2 of the search's value, not the latent model's calibration."""
    board = chess.Board("r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/5N2/PPPP1PPP/RNB1K2R b KQkq - 0 4")
    engine = LatentEngine(model, SearchConfig(depth=3, width=4, qs=True, eval="hce"))
    analysis = engine.analyse(board, chess.engine.Limit(depth=3))
    assert analysis.best_move == chess.Move.from_uci("f6h5")
    root = next(r for r in analysis.moves if r.move == analysis.best_move)
    assert root.win_prob_white == pytest.approx((1.0 + root.score) / 2.0)
    assert engine.win_probability(0.0) == 0.5


def test_eval_errors_name_the_problem(model) -> None:  # type: ignore[no-untyped-def]
    from latentchess.errors import EngineError

    with pytest.raises(EngineError, match="unknown evaluator 'bogus'"):
        LatentEngine.from_options(TRAINED, eval="bogus")
    with pytest.raises(EngineError, match="its own model's axis"):
        LatentEngine.from_options(TRAINED, eval=f"latent:{TRAINED}")
    with pytest.raises(EngineError, match="needs the native latent search"):
        LatentEngine(model, SearchConfig(eval="hce"), native="false")
    with pytest.raises(ValueError, match="non-empty"):
        SearchConfig(eval="")
