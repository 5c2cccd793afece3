"""The hybrid engine: each mode legal and mating where the latent planner alone does not, the
safety net admitting a capture a (fake) proposer ranked last, the native hooks it relies on
(``searchmoves``, external move orders), a UCI transcript, and deterministic counters."""

from __future__ import annotations

import threading
import time

import chess
import chess.engine
import pytest

from latentchess.engines.ab import AlphaBetaEngine
from latentchess.engines.hybrid import HybridConfig, HybridEngine, LatentProposer
from latentchess.engines.latent import LatentEngine
from latentchess.errors import EngineError
from latentchess.search.hybrid import Candidate, HorizonSearch, ply_one_orders
from latentchess.uci.session import UciSession

# Legal's mate: 1.Nf6+ gxf6 2.Bxf7# (mate in 2).
MATE_IN_TWO = "r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 10"
MATING_MOVE = chess.Move.from_uci("d5f6")
POSITIONS = (
    chess.STARTING_FEN,
    "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
    "8/5pk1/6p1/8/3R4/6P1/5PKP/3r4 b - - 0 40",
)


@pytest.fixture(scope="module")
def latent() -> LatentEngine:
    return LatentEngine.from_options(None, precision="fp32", depth=2)


def _hybrid(latent: LatentEngine, **fields: object) -> HybridEngine:
    config = HybridConfig(**fields)  # type: ignore[arg-type]
    return HybridEngine(
        config,
        proposer=LatentProposer(latent, depth=config.latent_depth),
        scorer=latent.model.score_tokens,
        draw_score=latent.config.draw_score,
        name=f"hybrid-{config.mode}",
    )


class LastIsBestProposer:
    """A fake proposer that ranks the moves by UCI text, the ``buried`` move last."""

    def __init__(self, buried: chess.Move) -> None:
        self.buried = buried

    def propose(self, board: chess.Board, deadline: float | None) -> list[Candidate]:
        moves = sorted((m for m in board.legal_moves if m != self.buried), key=chess.Move.uci)
        moves.append(self.buried)
        return [Candidate(move=m, score=-float(i), rank=i) for i, m in enumerate(moves)]


def test_latent_planner_alone_misses_the_mate(latent: LatentEngine) -> None:
    board = chess.Board(MATE_IN_TWO)
    assert latent.play(board, chess.engine.Limit(depth=2)) != MATING_MOVE


@pytest.mark.parametrize(
    "fields",
    [{"mode": "verify", "k": 3}, {"mode": "order"}, {"mode": "horizon", "depth": 3}],
    ids=["verify", "order", "horizon"],
)
def test_each_mode_plays_legal_moves_and_mates(latent: LatentEngine, fields: dict) -> None:
    engine = _hybrid(latent, **fields)
    for fen in POSITIONS:
        board = chess.Board(fen)
        depth = 1 if fields["mode"] == "horizon" else 4
        move = engine.play(board, chess.engine.Limit(depth=depth))
        assert move in board.legal_moves
    board = chess.Board(MATE_IN_TWO)
    analysis = engine.analyse(
        board, chess.engine.Limit(depth=3 if fields["mode"] == "horizon" else 4)
    )
    assert analysis.best_move == MATING_MOVE
    assert analysis.mate == 2
    assert engine.counters.searches == len(POSITIONS) + 1


def test_time_limit_is_kept(latent: LatentEngine) -> None:
    for mode in ("verify", "order", "horizon"):
        engine = _hybrid(latent, mode=mode)
        board = chess.Board(POSITIONS[1])
        began = time.monotonic()
        move = engine.play(board, chess.engine.Limit(time=0.2))
        assert move in board.legal_moves
        assert time.monotonic() - began < 0.6, mode


def test_safety_net_admits_a_winning_capture_ranked_last() -> None:
    # White wins the black queen with Rxd5; the fake proposer ranks it last, so k=2 leaves it out.
    board = chess.Board("4k3/8/8/3q4/8/8/8/3RK3 w - - 0 1")
    capture = chess.Move.from_uci("d1d5")
    engine = HybridEngine(
        HybridConfig(mode="verify", k=2, admit_cp=100),
        proposer=LastIsBestProposer(capture),
        scorer=lambda tokens: [0.0] * len(tokens),  # type: ignore[arg-type,return-value]
    )
    assert engine.play(board, chess.engine.Limit(depth=5)) == capture
    assert engine.counters.admitted == 1
    assert engine.counters.outside_top_k == 1
    assert engine.counters.rest_better == 1
    # With every move validated (k=0) there is no rest, nothing to admit, same move.
    every = HybridEngine(
        HybridConfig(mode="verify", k=0),
        proposer=LastIsBestProposer(capture),
        scorer=lambda tokens: [0.0] * len(tokens),  # type: ignore[arg-type,return-value]
    )
    assert every.play(board, chess.engine.Limit(depth=5)) == capture
    assert every.counters.admitted == 0 and every.counters.outside_top_k == 0


def test_native_searchmoves_and_move_orders() -> None:
    board = chess.Board(POSITIONS[1])
    ab = AlphaBetaEngine()
    only = chess.Move.from_uci("a2a3")
    outcome = ab.search(board, chess.engine.Limit(depth=4), search_moves=[only])
    assert outcome.best_move == only
    assert all(line.pv[0] == only for line in outcome.info.lines)
    # An order table keyed by the Polyglot key changes the search's order (and so its node
    # count) but not the legality of the result; identical inputs give identical node counts.
    quiets = sorted(board.legal_moves, key=chess.Move.uci, reverse=True)
    orders = {chess.polyglot.zobrist_hash(board): quiets}
    counts = []
    for _ in range(2):
        ab.new_game()
        result = ab.search(board, chess.engine.Limit(depth=6), move_orders=orders)
        assert result.best_move in board.legal_moves
        counts.append(result.nodes)
    ab.new_game()
    plain = ab.search(board, chess.engine.Limit(depth=6))
    assert counts[0] == counts[1]
    assert plain.nodes != counts[0]


def test_time_spent_before_the_search_comes_out_of_its_budget() -> None:
    # A move whose whole budget went to the proposer: the native time manager counts from the
    # move's start, so it finishes the one iteration it always completes and stops.
    board = chess.Board(POSITIONS[1])
    ab = AlphaBetaEngine()
    for limit in (
        chess.engine.Limit(time=30.0),
        chess.engine.Limit(white_clock=60.0, black_clock=60.0, white_inc=1.0, black_inc=1.0),
    ):
        outcome = ab.search(board, limit, spent_s=60.0)
        assert outcome.best_move in board.legal_moves
        assert outcome.info.depth == 1
        assert outcome.time_s >= 30.0  # the move's time, the spent part included


def test_order_mode_hands_alpha_beta_the_callers_clock(latent: LatentEngine) -> None:
    # Under a clock, `order` searches with the caller's limit and the latent time as spent, so
    # its alpha-beta budgets the move by the same time manager as `ab` alone.
    engine = _hybrid(latent, mode="order")
    seen: list[tuple[chess.engine.Limit, float]] = []
    search = engine.alpha_beta.search

    def spy(board: chess.Board, limit: chess.engine.Limit, **kwargs: object):  # type: ignore[no-untyped-def]
        seen.append((limit, float(kwargs["spent_s"])))  # type: ignore[arg-type]
        return search(board, limit, **kwargs)  # type: ignore[arg-type]

    engine.alpha_beta.search = spy  # type: ignore[method-assign]
    board = chess.Board(POSITIONS[1])
    clock = chess.engine.Limit(white_clock=3.0, black_clock=3.0, white_inc=0.05, black_inc=0.05)
    assert engine.play(board, clock) in board.legal_moves
    limit, spent = seen[-1]
    assert limit.white_clock == 3.0 and limit.white_inc == 0.05 and limit.time is None
    assert spent > 0.0  # the proposer's and the ply-one orders' time


def test_ply_one_orders_rank_every_reply() -> None:
    board = chess.Board(POSITIONS[1])

    def pawns_forward(tokens):  # White's view: more advanced material = higher (a fake scorer)
        return [float(row.sum() % 97) / 97.0 for row in tokens]

    roots = list(board.legal_moves)[:3]
    orders = ply_one_orders(board, roots, pawns_forward)
    assert len(orders) == 3
    for root in roots:
        board.push(root)
        order = orders[chess.polyglot.zobrist_hash(board)]
        assert set(order) == set(board.legal_moves)
        board.pop()


def test_horizon_search_mates_with_a_constant_scorer() -> None:
    search = HorizonSearch(lambda tokens: [0.0] * len(tokens))  # type: ignore[arg-type,return-value]
    result = search.search(chess.Board(MATE_IN_TWO), depth=3)
    assert result.move == MATING_MOVE and result.value == pytest.approx(97.0)
    assert result.positions > 0 and result.batches > 0


def test_config_errors_name_the_value() -> None:
    with pytest.raises(EngineError, match="'sideways'"):
        HybridConfig(mode="sideways")
    with pytest.raises(EngineError, match="-1"):
        HybridConfig(k=-1)
    with pytest.raises(EngineError, match="'bogus'"):
        HybridEngine.from_options(bogus="1")


def test_counters_are_deterministic(latent: LatentEngine) -> None:
    runs = []
    for _ in range(2):
        latent.new_game()
        engine = _hybrid(latent, mode="verify", k=2)
        moves = []
        for fen in (*POSITIONS, MATE_IN_TWO):
            moves.append(engine.play(chess.Board(fen), chess.engine.Limit(depth=4)))
        runs.append((moves, engine.counters.text()))
    assert runs[0] == runs[1]
    assert "searches 4" in runs[0][1]


def test_uci_transcript(latent: LatentEngine) -> None:
    lines: list[str] = []
    done = threading.Event()

    def write(line: str) -> None:
        lines.append(line)
        if line.startswith("bestmove"):
            done.set()

    session = UciSession(write, spec="hybrid", engine=_hybrid(latent))
    session.handle_line("uci")
    assert "option name HybridMode type combo default verify var verify var order var horizon" in (
        lines
    )
    assert lines[-1] == "uciok"
    session.handle_line("setoption name HybridMode value order")
    session.handle_line("setoption name HybridK value x")
    assert any("HybridK" in line and "'x'" in line for line in lines)
    session.handle_line("isready")
    assert "readyok" in lines
    session.handle_line(f"position fen {MATE_IN_TWO}")
    session.handle_line("go depth 4")
    assert done.wait(30)
    assert lines[-1].startswith("bestmove d5f6")
    assert any(line.startswith("info string hybrid order") for line in lines)
    session.handle_line("quit")
