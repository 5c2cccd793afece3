"""Human-like play (``UCI_LimitStrength``): moves drawn from the human Chessformer at a rating, on
``ab`` and ``chessformer`` alike; the verification rule; ``ab`` unchanged (and torch not imported)
when the option is off."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap

import chess
import chess.engine
import numpy as np
import pytest

from latentchess.engines.ab import AlphaBetaConfig, AlphaBetaEngine
from latentchess.engines.human import ELO_MAX, HumanConfig, HumanPlay, opponent_rating
from latentchess.engines.registry import create_engine
from latentchess.errors import EngineError
from latentchess.uci.session import UciSession
from uci_fixtures import SessionTranscript

DEPTH = chess.engine.Limit(depth=1)


def _board(*moves: str, fen: str | None = None) -> chess.Board:
    board = chess.Board(fen) if fen else chess.Board()
    for uci in moves:
        board.push_uci(uci)
    return board


# 1.e4 d5 2.exd5: at 1200 the model gives the recapture Qxd5 about 0.88.
RECAPTURE = ("e2e4", "d7d5", "e4d5")
# A Legal's-mate trap: 5...Bxd1?? and White mates with 6.Bxf7+ Ke7 7.Nd5#; weaker players take the
# queen back with the king or the knight (no mate), stronger ones play Bxf7+.
LEGAL = ("e2e4", "e7e5", "g1f3", "d7d6", "f1c4", "c8g4", "b1c3", "g7g6", "f3e5", "g4d1")
BXF7, KXD1, NXD1 = (chess.Move.from_uci(u) for u in ("c4f7", "e1d1", "c3d1"))


@pytest.fixture(scope="module")
def human() -> HumanPlay:
    play = HumanPlay(seed=0, config=HumanConfig(calibrated=False))  # the model alone
    play.ready()
    return play


def _probability(play: HumanPlay, board: chess.Board, move: chess.Move) -> float:
    prediction = play.predict(board)
    return float(prediction.probabilities[prediction.moves.index(move)])


# -- the distribution ----------------------------------------------------------------------------


def test_a_strongly_preferred_move_is_played_at_low_temperature(human: HumanPlay) -> None:
    human.replace(enabled=True, elo=1200, temperature=0.1)
    board = _board(*RECAPTURE)
    assert human.predict(board).moves[0] == chess.Move.from_uci("d8d5")
    assert _probability(human, board, chess.Move.from_uci("d8d5")) > 0.8
    assert {human.choose(board).move.uci() for _ in range(20)} == {"d8d5"}
    human.replace(temperature=0.0)  # the rating's most probable move, always
    assert human.choose(board).move.uci() == "d8d5"


def test_sampling_follows_the_tempered_nucleus(human: HumanPlay) -> None:
    probabilities = np.array([0.5, 0.3, 0.15, 0.05], dtype=np.float32)
    same = human.sampling_distribution(probabilities, 1.0, 1.0)
    np.testing.assert_allclose(same, probabilities, rtol=1e-6)
    hot = human.sampling_distribution(probabilities, 2.0, 1.0)
    np.testing.assert_allclose(hot, np.sqrt(probabilities) / np.sqrt(probabilities).sum())
    nucleus = human.sampling_distribution(probabilities, 1.0, 0.8)  # 0.5 + 0.3 reach 0.8
    np.testing.assert_allclose(nucleus, [0.625, 0.375, 0, 0], rtol=1e-6)
    assert list(human.sampling_distribution(probabilities, 0.0, 1.0)) == [1, 0, 0, 0]


def test_moves_are_legal_and_drawn_from_the_model_reproducibly() -> None:
    def game(seed: int) -> list[str]:
        play = HumanPlay(seed=seed, config=HumanConfig(enabled=True, calibrated=False, elo=1500))
        board, moves = chess.Board(), []
        for _ in range(24):
            if board.is_game_over():
                break
            analysis = play.analyse(board)
            assert analysis.best_move in board.legal_moves
            listed = {score.move for score in analysis.moves}
            assert listed == set(board.legal_moves)  # the model's distribution over legal moves
            assert abs(sum(score.score for score in analysis.moves) - 1) < 1e-4
            moves.append(analysis.best_move.uci())
            board.push(analysis.best_move)
        return moves

    first = game(7)
    assert game(7) == first  # same seed, same game
    assert game(8) != first


def test_sampled_frequencies_match_the_model() -> None:
    play = HumanPlay(seed=3, config=HumanConfig(enabled=True, calibrated=False, elo=1500))
    board = _board("e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5c6")
    prediction = play.predict(board)
    draws = [play.choose(board).move for _ in range(200)]
    for move, p in zip(prediction.moves[:2], prediction.probabilities[:2], strict=True):
        share = draws.count(move) / len(draws)
        assert abs(share - p) < 4 * np.sqrt(p * (1 - p) / len(draws)) + 0.01, (move, share, p)


def test_the_rating_changes_the_distribution(human: HumanPlay) -> None:
    board = _board(*LEGAL)
    human.replace(temperature=1.0, top_p=1.0, elo=800)
    weak = {m: _probability(human, board, m) for m in (BXF7, KXD1, NXD1)}
    human.replace(elo=1800)
    strong = {m: _probability(human, board, m) for m in (BXF7, KXD1, NXD1)}
    # The mating attack is likelier at 1800, taking the queen back (which misses it) at 800.
    assert strong[BXF7] > weak[BXF7] + 0.1
    assert weak[KXD1] + weak[NXD1] > 5 * (strong[KXD1] + strong[NXD1])
    # ... and sampling follows (a seeded stream: the same counts every run).
    counts = {}
    for elo in (800, 1800):
        play = HumanPlay(seed=11, config=HumanConfig(enabled=True, calibrated=False, elo=elo))
        counts[elo] = sum(play.choose(board).move == BXF7 for _ in range(150))
    assert counts[1800] > counts[800] + 10


def test_the_opponents_rating_comes_from_uci_opponent(human: HumanPlay) -> None:
    assert opponent_rating("GM 2800 human Carlsen") == 2800
    assert opponent_rating("none 1650 computer Some Engine 1.0") == 1650
    assert opponent_rating("none none computer Stockfish 15") is None
    assert opponent_rating("") is None
    human.replace(elo=1300, opponent="GM 2800 human Carlsen")
    assert human.ratings() == (1300, ELO_MAX)  # clamped to the model's range
    board = _board(*LEGAL)
    (expected,) = human.model.predict([board], 1300.0, float(ELO_MAX))
    np.testing.assert_allclose(human.predict(board).probabilities, expected.probabilities)
    human.replace(opponent="none none computer Stockfish")
    assert human.ratings() == (1300, 1300)
    human.replace(opponent="")
    with pytest.raises(EngineError, match="UCI_Elo must lie in"):
        human.replace(elo=3000)
    assert human.config.elo == 1300  # refused: nothing changed


# -- verification ----------------------------------------------------------------------------------

# White to move; 1.Qxh7+?? loses the queen to ...Kxh7 / ...Rxh7 and many other moves drop it too.
QUEEN = "r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/3P1Q2/PPP2PPP/RNB1K1NR w KQkq - 0 5"


def _losses(
    board: chess.Board, moves: list[chess.Move], engine: AlphaBetaEngine | None = None
) -> list[int]:
    """Each move's loss against the best at depth 6: by a fresh engine, or by ``engine`` (the
    verifier's own, whose table and histories shape its depth-6 scores)."""
    engine = engine or AlphaBetaEngine(AlphaBetaConfig(hash_mb=4))
    limit = chess.engine.Limit(depth=6)
    best = engine.search(board, limit, multipv=1).info.lines[0].score().score(mate_score=100_000)
    out = []
    for move in moves:
        line = engine.search(board, limit, multipv=1, search_moves=[move]).info.lines[0]
        out.append(best - line.score().score(mate_score=100_000))
    return out


def test_verification_removes_only_refuted_improbable_moves() -> None:
    board = chess.Board(QUEEN)
    hot = HumanConfig(
        enabled=True, calibrated=False, elo=1000, temperature=4.0
    )  # near uniform: many blunders
    off = HumanPlay(seed=5, config=hot)
    drawn_off = [off.choose(board).move for _ in range(40)]
    worst_off = max(_losses(board, drawn_off))
    assert worst_off > 300  # blunders are drawn without verification
    rule = dataclasses.replace(hot, verify=True, verify_cp=300, verify_prob=1.0, verify_depth=6)
    on = HumanPlay(seed=5, config=rule)
    choices = [on.choose(board) for _ in range(40)]
    # Re-measured by the verifier's engine: a later depth-6 search of the same engine (its table
    # and histories fuller) moves a score by a few tens of centipawns, hence the 50 cp of slack.
    worst_on = max(_losses(board, [c.move for c in choices], on._verifier_engine()))
    assert worst_on <= rule.verify_cp + 50
    assert worst_on < worst_off
    assert any(c.removed for c in choices)
    for choice in choices:
        assert all(loss > 300 for _, loss in choice.removed)
    # A probability threshold of 0 protects every move: the same draws as without verification.
    never = HumanPlay(seed=5, config=dataclasses.replace(rule, verify_prob=0.0))
    assert [never.choose(board).move for _ in range(40)] == drawn_off


# -- the engines -----------------------------------------------------------------------------------


def test_ab_and_chessformer_share_the_same_human_play() -> None:
    ab = create_engine("ab:limit_strength=true,elo=1500,seed=4")
    cf = create_engine("chessformer:limit_strength=true,uci_elo=1500,seed=4,temperature=1")
    board = chess.Board()
    for _ in range(12):
        move = ab.play(board, DEPTH)
        assert cf.play(board, DEPTH) == move
        board.push(move)
    assert "human play: elo 1500 opponent 1500 temperature 1" in ab.info_string()
    assert ab.provenance()["human_model"].endswith("chessformer-human")
    # A chessformer of engine moves plays human-like moves with the shipped human model.
    engine_model = create_engine("chessformer:model=engine,limit_strength=true,uci_elo=1500")
    assert engine_model.play(chess.Board(), DEPTH) in chess.Board().legal_moves
    assert engine_model.provenance()["human_model"].endswith("chessformer-human")
    with pytest.raises(EngineError, match="UCI_Elo"):
        create_engine("ab:limit_strength=true,elo=5000")
    with pytest.raises(EngineError, match="unknown ab option"):
        create_engine("ab:uci_elo_typo=1500")


def test_ab_is_unchanged_when_the_option_is_off() -> None:
    board = _board("e2e4", "e7e5", "g1f3", "b8c6", "f1b5")
    limit = chess.engine.Limit(depth=7)
    plain = AlphaBetaEngine(AlphaBetaConfig(hash_mb=4)).analyse(board, limit)
    toggled = AlphaBetaEngine(AlphaBetaConfig(hash_mb=4))
    toggled.set_option("UCI_Elo", "1100")
    toggled.set_option("UCI_LimitStrength", "true")
    toggled.set_option("UCI_LimitStrength", "false")
    again = toggled.analyse(board, limit)
    assert (again.best_move, again.pv, again.score_cp, again.nodes, again.depth) == (
        plain.best_move,
        plain.pv,
        plain.score_cp,
        plain.nodes,
        plain.depth,
    )
    assert toggled.info_string() == "" and "human_model" not in toggled.provenance()


class Transcript(SessionTranscript):
    def __init__(self) -> None:
        engine = AlphaBetaEngine(AlphaBetaConfig(hash_mb=4), name="ab")
        super().__init__(lambda write: UciSession(write, spec="ab", engine=engine))


def test_uci_transcript_with_limit_strength_elo_and_opponent() -> None:
    t = Transcript()
    t.send("uci")
    t.wait_for("uciok")
    for line in (
        "option name UCI_LimitStrength type check default false",
        "option name UCI_Elo type spin default 1500 min 800 max 2400",
        "option name UCI_Opponent type string default",
        "option name Temperature type string default 1",
        "option name HumanVerify type check default false",
    ):
        assert any(seen.startswith(line) for seen in t.lines), line
    t.send(
        "setoption name UCI_LimitStrength value true",
        "setoption name UCI_Elo value 1200",
        "setoption name UCI_Opponent value GM 2800 human Carlsen",
        "isready",
    )
    t.wait_for("readyok", timeout=60)
    t.send("position startpos moves e2e4 d7d5 e4d5", "go wtime 60000 btime 60000")
    best = t.wait_for("bestmove").split()[1]
    assert chess.Move.from_uci(best) in _board(*RECAPTURE).legal_moves
    assert "opponent 2400" in t.wait_for("info string human play: elo 1200")
    engine = t.session.engine
    assert isinstance(engine, AlphaBetaEngine) and engine.human.ratings() == (1200, 2400)
    t.send("setoption name UCI_Elo value 9999")
    assert "refused" in t.wait_for("info string option 'UCI_Elo'")
    t.send("setoption name UCI_LimitStrength value false", "go depth 3")
    t.wait_for("bestmove")
    assert any(line.startswith("info depth 3") for line in t.lines)  # the search again


_PROBE = textwrap.dedent(
    """
    import io, sys
    from latentchess.cli import main
    sys.stdin = io.StringIO(sys.argv[1].replace(";", "\\n"))
    main(["uci"])
    print("TORCH", "torch" in sys.modules, file=sys.stderr)
    """
)


@pytest.mark.parametrize("limit_strength", [False, True])
def test_latentchess_uci_imports_torch_only_when_limit_strength_is_on(
    limit_strength: bool,
) -> None:
    commands = "uci;isready;position startpos;go depth 2;isready"
    if limit_strength:
        commands = "uci;setoption name UCI_LimitStrength value true;" + commands[4:]
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, commands + ";quit"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "uciok" in done.stdout and "bestmove" in done.stdout
    assert f"TORCH {limit_strength}" in done.stderr


def test_the_web_board_offers_a_human_like_opponent_at_a_rating() -> None:
    from latentchess.web.opponents import RequestError, build_engine, parse_opponent

    config = parse_opponent({"kind": "ab", "params": {"elo": 1400}}, max_movetime_ms=5000)
    assert config.spec_text() == "ab:limit_strength=true,elo=1400"
    assert parse_opponent({"kind": "ab"}, max_movetime_ms=5000).spec_text() == "ab"
    with pytest.raises(RequestError, match=r"\[800, 2400\]"):
        parse_opponent({"kind": "ab", "params": {"elo": 3000}}, max_movetime_ms=5000)
    engine = build_engine(config, model=None)  # type: ignore[arg-type]  # ab needs no model
    assert isinstance(engine, AlphaBetaEngine) and engine.human.ratings() == (1400, 1400)
    assert engine.play(chess.Board(), DEPTH) in chess.Board().legal_moves


# -- strength: the search weighting and the calibration table ----------------------------------

MATE_IN_ONE = "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"  # Qxf7#


def test_search_weight_draws_from_the_models_top_moves_weighted_by_the_search() -> None:
    board = chess.Board(MATE_IN_ONE)
    plain = HumanPlay(seed=5, config=HumanConfig(enabled=True, elo=800, calibrated=False))
    strong = HumanPlay(
        seed=5,
        config=HumanConfig(
            enabled=True, elo=800, calibrated=False, search_weight=5.0, search_depth=3
        ),
    )
    top = plain.predict(board).moves[:8]
    choice = strong.choose(board)
    assert choice.move == chess.Move.from_uci("h5f7") and choice.nodes > 0
    losses = dict(choice.losses)
    assert set(losses) == set(top) and losses[choice.move] == 0  # the mate: no loss
    assert all(loss > 0 for move, loss in losses.items() if move != choice.move)
    # beta 0 is the model alone: no search, the same draws from the same seed
    again = HumanPlay(seed=5, config=HumanConfig(enabled=True, elo=800, calibrated=False))
    assert [plain.choose(board).move for _ in range(5)] == [
        again.choose(board).move for _ in range(5)
    ]
    assert plain.choose(board).losses == () and plain.choose(board).nodes == 0


def test_the_distribution_is_what_choose_draws_from() -> None:
    board = chess.Board(MATE_IN_ONE)
    config = HumanConfig(enabled=True, elo=800, calibrated=False, search_weight=1.0, search_depth=3)
    play = HumanPlay(seed=3, config=config)
    drawn = play.distribution(board)
    q, moves = drawn.probabilities, drawn.prediction.moves
    # beta > 0: only the model's 8 most probable moves keep mass, each shrunk by its loss
    assert np.isclose(q.sum(), 1.0) and (q > 0).sum() == 8
    assert set(np.flatnonzero(q > 0)) == set(range(8))
    losses = dict(drawn.losses)
    raw = drawn.prediction.probabilities[:8].astype(np.float64)
    expected = raw * np.exp(-np.array([losses[m] for m in moves[:8]]) / 100.0)
    assert np.allclose(q[:8], expected / expected.sum())
    # choose draws from it: a fresh engine with the same seed makes the draw a generator of
    # that seed makes from q
    rng = np.random.default_rng(3)
    fresh = HumanPlay(seed=3, config=config)
    assert fresh.choose(board).move == moves[int(rng.choice(len(q), p=q))]
    # searchmoves restricts it
    only = [moves[5], moves[6]]
    restricted = play.distribution(board, search_moves=only).probabilities
    assert set(np.flatnonzero(restricted > 0)) == {5, 6}


def test_search_weight_makes_costly_moves_rarer() -> None:
    # At temperature 3 the model spreads its moves; beta 2 must cut the mean loss.
    board = _board("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5")

    def mean_loss(beta: float) -> float:
        play = HumanPlay(
            seed=9,
            config=HumanConfig(
                enabled=True, elo=1000, calibrated=False, temperature=3.0,
                search_weight=beta, search_depth=4,
            ),
        )  # fmt: skip
        referee = HumanPlay(
            seed=0,
            config=HumanConfig(
                enabled=True, elo=1000, calibrated=False, search_weight=1e-9, search_depth=4
            ),
        )
        losses = dict(referee.choose(board).losses)
        moves = [play.choose(board).move for _ in range(60)]
        return float(np.mean([losses.get(m, 1000) for m in moves]))

    assert mean_loss(2.0) < 0.5 * mean_loss(0.0)


def _model_with_table(tmp_path, rows) -> str:
    import json
    from pathlib import Path

    from latentchess.models.chessformer_io import resolve_chessformer_path

    shipped = resolve_chessformer_path("human")
    model = tmp_path / "human"
    model.mkdir()
    for item in Path(shipped).iterdir():
        if item.name != "calibration.json":
            (model / item.name).symlink_to(item)
    (model / "calibration.json").write_text(
        json.dumps({"about": "test", "rows": rows}), encoding="utf-8"
    )
    return str(model)


def test_calibration_table_maps_uci_elo_to_model_rating_beta_and_depth(tmp_path) -> None:
    rows = [
        {"uci_elo": 1100, "model_elo": 1300, "search_weight": 0.0, "search_depth": 4},
        {"uci_elo": 2100, "model_elo": 1900, "search_weight": 4.0, "search_depth": 8},
    ]
    play = HumanPlay(_model_with_table(tmp_path, rows), config=HumanConfig(elo=1600))
    assert play.calibration is not None
    s = play.strength()
    assert (s.model_elo, s.search_weight, s.search_depth) == (1600, 2.0, 6)  # halfway
    play.replace(elo=900)  # below the table: the end row, the model's rating moved with it
    assert play.strength().model_elo == 1100 and play.strength().search_weight == 0.0
    play.replace(elo=2400)
    assert play.strength().model_elo == 2200 and play.strength().search_depth == 8
    assert play.ratings()[0] == 2200
    play.replace(calibrated=False)  # raw: UCI_Elo conditions the model, beta as set
    assert play.strength().model_elo == 2400 and play.strength().search_weight == 0.0
    play.replace(calibrated=True, elo=1600, enabled=True)
    assert "calibrated for UCI_Elo 1600" in play.info_string()
    assert "search weight 2.00 depth 6" in play.info_string()


def test_a_bad_calibration_table_names_the_file(tmp_path) -> None:
    from pathlib import Path

    from latentchess.engines.human import HumanCalibration

    bad = tmp_path / "calibration.json"
    bad.write_text('{"rows": [{"uci_elo": 1500}]}', encoding="utf-8")
    with pytest.raises(EngineError, match=r"calibration\.json: not a calibration table"):
        HumanCalibration.load(Path(bad))
    bad.write_text('{"rows": [{"uci_elo": 1, "model_elo": 1500, "search_weight": -1, '
                   '"search_depth": 4}]}', encoding="utf-8")  # fmt: skip
    with pytest.raises(EngineError, match="HumanSearchWeight"):
        HumanCalibration.load(Path(bad))


def test_strength_options_over_uci_spec_keys() -> None:
    engine = create_engine("ab:limit_strength=true,elo=1500,search_weight=2.5,search_depth=5")
    assert engine.human.config.search_weight == 2.5 and engine.human.config.search_depth == 5
    names = {option.name for option in engine.options()}
    assert {"HumanCalibrated", "HumanSearchWeight", "HumanSearchDepth"} <= names
    with pytest.raises(EngineError, match="HumanSearchWeight"):
        create_engine("ab:limit_strength=true,search_weight=-1")
