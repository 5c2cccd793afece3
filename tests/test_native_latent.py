"""The sparse encoder and the latent search on the native core (latent_encoder.*, latent_search.*).

Tolerance. The core quantises the feature transformer to int16 (latent_encoder.h: scale 1024 when
the accumulators provably fit, as for sparse-64; the NNUE's 127 on request), so its axis scores
differ from PyTorch's float32 ones. Measured on 10,000 Lichess positions (held out: the sparse-64
run trains on the Stockfish/TCEC CSVs) with the 15k-step sparse-64 checkpoint and its mates axis:
max |score difference| 3.2e-3, 99th percentile 1.6e-3, mean 4.1e-4 at scale 1024 (at 127: max
3.0e-2, p99 1.3e-2, mean 3.4e-3). The test's random model must stay under
:data:`SCORE_TOLERANCE` (the trained model, when there, under :data:`TRAINED_TOLERANCE`).
Incremental (make/unmake) and refresh scores are equal bit for bit. The native search is compared
with the Python search given the same (native) scores: same move, value and PV, exactly.
"""

from __future__ import annotations

import gzip
import random
import threading
import time
from pathlib import Path

import chess
import chess.pgn
import numpy as np
import pytest
import torch

from latent_fixtures import random_sparse_model
from latentchess.core import _native as native
from latentchess.engines.latent import LatentEngine, declared_search
from latentchess.errors import EngineError, ModelFileError
from latentchess.models import LatentModel, save_model
from latentchess.models.config import SparseEncoderConfig
from latentchess.models.gab_encoder import build_encoder
from latentchess.search import MATE_VALUE, SearchConfig, Searcher
from latentchess.search.native import (
    NativeScorer,
    NativeSearcher,
    load_native_encoder,
    native_encoder,
)
from training_fixtures import MICRO

CONFIG = SparseEncoderConfig(name="sparse-native-test", l1=64, hidden=16, dim=16)
SCORE_TOLERANCE = 5e-3
"""Bound on |native - PyTorch| axis scores of the test's random model at the automatic scale
(1024; measured: max 2.4e-3, 99th percentile 1.2e-3, mean 3.6e-4 on the 10,000 positions)."""
NNUE_SCALE_TOLERANCE = 3e-2
"""The same at the NNUE's scale 127 (measured: max 2.35e-2)."""
TRAINED_TOLERANCE = 5e-3
"""The bound for the shipped sparse-64 model at scale 1024 (measured on the 15k-step checkpoint:
max 3.2e-3); proportionally more if its weights need a smaller scale."""
TRAINED = Path(__file__).resolve().parents[1] / "src" / "latentchess" / "weights" / "sparse-64"
LICHESS = Path(__file__).resolve().parents[2] / "shared" / "data" / "lichess-rated-games.pgn.gz"


def _model(seed: int = 0) -> LatentModel:
    return random_sparse_model(CONFIG, seed)


@pytest.fixture(scope="module")
def model() -> LatentModel:
    return _model()


@pytest.fixture(scope="module")
def encoder(model: LatentModel):  # type: ignore[no-untyped-def]
    return native_encoder(model)


def _playout_boards(count: int, seed: int, max_plies: int = 150) -> list[chess.Board]:
    """Boards of random games (castling, en passant, promotions), with their move stacks."""
    rng, boards = random.Random(seed), []
    while len(boards) < count:
        board = chess.Board()
        for _ in range(rng.randrange(0, max_plies)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        boards.append(board)
    return boards


def _line_fens(board: chess.Board) -> list[str]:
    """The FEN after each move of ``board``'s move stack, from the start."""
    replay, fens = chess.Board(), []
    for move in board.move_stack:
        replay.push(move)
        fens.append(replay.fen())
    return fens


def _positions(count: int) -> tuple[list[str], str]:
    """``count`` FENs of real games (the shared Lichess file), or of seeded random playouts."""
    if LICHESS.is_file():
        fens: list[str] = []
        with gzip.open(LICHESS, "rt", encoding="utf-8", errors="replace") as handle:
            while len(fens) < count and (game := chess.pgn.read_game(handle)) is not None:
                board = game.board()
                for move in game.mainline_moves():
                    board.push(move)
                    fens.append(board.fen())
        if len(fens) >= count:
            return fens[:count], "lichess"
    fens = [fen for board in _playout_boards(count // 60 + 1, seed=11) for fen in _line_fens(board)]
    rng = random.Random(12)
    while len(fens) < count:
        fens.extend(b.fen() for b in _playout_boards(100, seed=rng.randrange(1 << 30)))
    return fens[:count], "playouts"


# -- the encoder -------------------------------------------------------------------------------


def test_scores_equal_pytorch_within_tolerance_on_10000_positions(
    model: LatentModel, encoder
) -> None:  # type: ignore[no-untyped-def]
    fens, source = _positions(10_000)
    reference = model.score(fens)
    scores = encoder.score_fens(fens)
    difference = np.abs(reference - scores)
    assert difference.max() < SCORE_TOLERANCE, (source, float(difference.max()))
    assert difference.mean() < SCORE_TOLERANCE / 5, (source, float(difference.mean()))
    embeddings = encoder.embed_fens(fens[:500])
    assert np.allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-5)
    assert np.abs(embeddings - model.embed(fens[:500])).max() < 2 * SCORE_TOLERANCE
    assert encoder.accumulator_scale == 1024
    nnue_scale = native_encoder(model, accumulator_scale=127)
    difference = np.abs(reference[:2000] - nnue_scale.score_fens(fens[:2000]))
    assert difference.max() < NNUE_SCALE_TOLERANCE


def test_the_shipped_model_within_its_tolerance() -> None:
    from latentchess.models import load_model

    model = load_model(TRAINED, precision="fp32")
    encoder = load_native_encoder(TRAINED)
    fens, source = _positions(10_000)
    difference = np.abs(model.score(fens) - encoder.score_fens(fens))
    bound = TRAINED_TOLERANCE * 1024 / encoder.accumulator_scale
    assert difference.max() < bound, (source, encoder.accumulator_scale, float(difference.max()))


def test_incremental_equals_refresh_exactly_along_game_lines(encoder) -> None:  # type: ignore[no-untyped-def]
    for board in _playout_boards(40, seed=5, max_plies=200):
        moves = [
            move.from_square | move.to_square << 6 | (move.promotion or 0) << 12
            for move in board.move_stack
        ]
        line = encoder.line_scores(native.Position(chess.STARTING_FEN), moves)
        refresh = line["refresh"]
        assert np.array_equal(line["incremental"], refresh)
        assert np.array_equal(line["undone"], refresh[-2::-1])


def test_children_in_python_chess_order_incremental_equals_refresh(
    model: LatentModel, encoder
) -> None:  # type: ignore[no-untyped-def]
    boards = _playout_boards(60, seed=9)
    boards += [chess.Board("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")]
    boards += [chess.Board("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1")]  # en passant, checks
    boards += [chess.Board("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3")]
    boards += [chess.Board("n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1")]  # promotions
    for board in boards:
        position = native.Position(board.fen())
        bits, incremental = encoder.score_children(position)
        assert [chess.Move.from_uci(native.move_to_uci(b)) for b in bits] == list(
            board.legal_moves
        ), board.fen()
        _, refresh = encoder.score_children(position, incremental=False)
        assert np.array_equal(incremental, refresh)
    board = boards[0]
    children = []
    for move in board.legal_moves:
        child = board.copy(stack=False)
        child.push(move)
        children.append(child.fen())
    _, scores = encoder.score_children(native.Position(board.fen()))
    assert np.abs(scores - model.score(children)).max() < SCORE_TOLERANCE


def _threat_model(largest: float) -> LatentModel:
    """A random ``KA9+TNK`` model whose threat rows reach ``largest`` in absolute value."""
    model = random_sparse_model(
        SparseEncoderConfig(
            name="sparse-threats-test", feature_set="KA9+TNK", l1=64, hidden=16, dim=16
        ),
        seed=3,
    )
    ft = model.encoder.ft.weight
    start = model.encoder.feature_set.offsets[-1]
    with torch.no_grad():
        rows = ft[start:-1]
        rows.mul_(largest / float(rows.abs().max()))
    return model


def test_a_threat_block_encoder_equals_pytorch_and_updates_incrementally() -> None:
    model = _threat_model(0.06)
    encoder = native_encoder(model)
    assert encoder.feature_set == "KA9+TNK"
    assert encoder.accumulator_scale == 256  # 256 pairs a perspective enter the int16 bound
    boards = _playout_boards(20, seed=21, max_plies=160)
    fens = []
    for board in boards:
        fens += _line_fens(board)
        moves = [
            m.from_square | m.to_square << 6 | (m.promotion or 0) << 12 for m in board.move_stack
        ]
        line = encoder.line_scores(native.Position(chess.STARTING_FEN), moves)
        assert np.array_equal(line["incremental"], line["refresh"])
        assert np.array_equal(line["undone"], line["refresh"][-2::-1])
    difference = np.abs(model.score(fens) - encoder.score_fens(fens))
    assert difference.max() < SCORE_TOLERANCE * 1024 / encoder.accumulator_scale, difference.max()
    # the threat rows are read: the same model with a zero threat block scores otherwise
    without = native_encoder(_threat_model(0.0))
    assert not np.array_equal(without.score_fens(fens[:50]), encoder.score_fens(fens[:50]))


def test_threat_weights_beyond_the_int8_rows_are_refused() -> None:
    assert native_encoder(_threat_model(0.9)).accumulator_scale == 127
    with pytest.raises(ValueError, match="threat-block weight"):
        native_encoder(_threat_model(1.5))


def test_loads_from_a_model_directory_and_refuses_bad_files(
    tmp_path: Path, model: LatentModel, encoder
) -> None:  # type: ignore[no-untyped-def]
    directory = save_model(tmp_path / "sparse", model.encoder, axis=model.axis)
    loaded = load_native_encoder(directory)
    fens = [b.fen() for b in _playout_boards(50, seed=2)]
    assert np.array_equal(loaded.score_fens(fens), encoder.score_fens(fens))
    assert (loaded.l1, loaded.hidden, loaded.dim, loaded.feature_set) == (64, 16, 16, "ALL")
    weights = directory / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(ModelFileError, match="safetensors"):
        load_native_encoder(directory)
    transformer = save_model(tmp_path / "gab", build_encoder(MICRO), axis=np.ones(MICRO.dim))
    with pytest.raises(ModelFileError, match="sparse"):
        load_native_encoder(transformer)
    with pytest.raises(ValueError, match=r"ft\.weight"):
        native.LatentEncoder(
            "ALL", np.zeros((3, 64)), *(np.zeros(n) for n in (64, 16 * 128, 16, 16, 256, 16, 16))
        )


# -- the search --------------------------------------------------------------------------------


def _search_boards() -> list[chess.Board]:
    boards = [b for b in _playout_boards(24, seed=3, max_plies=90) if any(b.legal_moves)]
    repeat = chess.Board()
    for uci in ("g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"):
        repeat.push_uci(uci)  # ...f6g8 would be the start position's third occurrence
    return [*boards, repeat]


@pytest.mark.parametrize("mode", ["minimax", "beam"])
def test_native_search_equals_the_python_search(mode: str, encoder) -> None:  # type: ignore[no-untyped-def]
    """Same scores (the core's) in both: the same move, value and PV at depths 1 to 3."""
    for depth in (1, 2, 3):
        config = SearchConfig(mode=mode, depth=depth, width=3, draw_score=0.05)
        for board in _search_boards():
            python = Searcher(NativeScorer(encoder), config).search(board)
            result = NativeSearcher(encoder, config).search(board)
            assert (result.move, result.value, result.pv) == (
                python.move,
                python.value,
                python.pv,
            ), (mode, depth, board.fen())
            assert result.depth == depth and result.completed
            if mode == "minimax":
                statics = {r.move: r.static for r in python.root_moves}
                assert {r.move: r.static for r in result.root_moves} == statics
    repeat = _search_boards()[-1]
    statics = {r.move: r.static for r in NativeSearcher(encoder, config).search(repeat).root_moves}
    assert statics[chess.Move.from_uci("f6g8")] == 0.05  # threefold: the draw score


def test_native_search_without_alpha_beta_and_wider(encoder) -> None:  # type: ignore[no-untyped-def]
    for config in (
        SearchConfig(depth=3, width=4, alpha_beta=False),
        SearchConfig(depth=3, width=5, leaf_chunk=0),
    ):
        for board in _search_boards()[:8]:
            python = Searcher(NativeScorer(encoder), config).search(board)
            result = NativeSearcher(encoder, config).search(board)
            assert (result.move, result.value) == (python.move, python.value)


def test_moves_agree_with_the_pytorch_search_within_the_tolerance(
    model: LatentModel, encoder
) -> None:  # type: ignore[no-untyped-def]
    """With PyTorch's scores the value moves by quantisation only (close calls may flip)."""
    config = SearchConfig(depth=2, width=3)
    same = 0
    boards = _search_boards()[:16]
    for board in boards:
        python = Searcher(lambda bs: model.score([b.fen() for b in bs]), config).search(board)
        result = NativeSearcher(encoder, config).search(board)
        same += result.move == python.move
        assert abs(result.value - python.value) < 2 * SCORE_TOLERANCE
    assert same >= len(boards) * 3 // 4


def test_mate_in_one_and_stalemate_avoidance(encoder) -> None:  # type: ignore[no-untyped-def]
    mate = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    for depth in (1, 2, 3):
        for mode in ("minimax", "beam"):
            result = NativeSearcher(encoder, SearchConfig(mode=mode, depth=depth)).search(mate)
            assert result.move == chess.Move.from_uci("a1a8")
            assert result.value == MATE_VALUE - 1
    black = chess.Board("r5k1/8/8/8/8/8/5PPP/6K1 b - - 0 1")
    result = NativeSearcher(encoder, SearchConfig(depth=3)).search(black)
    assert (result.move, result.value) == (chess.Move.from_uci("a8a1"), -(MATE_VALUE - 1))
    # Qb6 stalemates; with the draw worst for White every search avoids it.
    stalemate = chess.Board("k7/8/8/1Q6/8/8/8/7K w - - 0 1")
    for depth in (1, 2, 3):
        config = SearchConfig(depth=depth, draw_score=-1.0)
        result = NativeSearcher(encoder, config).search(stalemate)
        assert result.move != chess.Move.from_uci("b5b6")
        statics = {r.move: r.static for r in result.root_moves}
        assert statics[chess.Move.from_uci("b5b6")] == -1.0
    mated = NativeSearcher(encoder).search(chess.Board("R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1"))
    assert mated.move is None and mated.value == MATE_VALUE


def test_stop_deadline_and_node_limit(encoder) -> None:  # type: ignore[no-untyped-def]
    searcher = NativeSearcher(encoder, SearchConfig(width=8))
    stop = threading.Event()
    fired: list[float] = []

    def fire() -> None:
        fired.append(time.monotonic())
        stop.set()

    timer = threading.Timer(0.2, fire)
    timer.start()
    result = searcher.search(chess.Board(), depth=64, stop=stop)
    latency = time.monotonic() - fired[0]  # measured: 0.3-0.6 ms at load ~8 on 2 cores
    assert latency < 0.05, latency
    assert result.move is not None and not result.completed and result.depth >= 2
    began = time.monotonic()
    result = searcher.search(
        chess.Board(), depth=64, deadline=began + 0.3, soft_deadline=began + 0.15
    )
    assert time.monotonic() - began < 0.35 and result.move is not None
    result = searcher.search(chess.Board(), depth=64, max_nodes=5000)
    assert result.nodes <= 5000 and result.depth >= 1
    seen: list[int] = []
    searcher.search(chess.Board(), depth=4, on_iteration=lambda r: seen.append(r.depth))
    assert seen == [1, 2, 3, 4]


# -- the engine --------------------------------------------------------------------------------


def test_engine_uses_the_native_core_for_sparse_models(model: LatentModel) -> None:
    engine = LatentEngine.from_options(model, depth=3)
    assert engine.native and isinstance(engine.searcher, NativeSearcher)
    python = LatentEngine.from_options(model, depth=3, native="false")
    assert not python.native and isinstance(python.searcher, Searcher)
    board = chess.Board()
    board.push_uci("e2e4")
    limit = chess.engine.Limit(depth=3)
    assert engine.play(board, limit) in board.legal_moves
    # The scorer is the native one too (the same scores the native search sees).
    assert np.array_equal(
        engine.score_boards([board]), native_encoder(model).score_fens([board.fen()])
    )
    analysis = engine.analyse(board, chess.engine.Limit(time=0.2))  # how deep: the machine's load
    assert analysis.best_move in board.legal_moves and analysis.depth >= 1
    option = next(o for o in engine.options() if o.option.name == "Native")
    assert (option.option.default, option.key) == ("auto", "native")
    option.on_change("false")
    assert not engine.native and isinstance(engine.searcher, Searcher)
    option.on_change("auto")
    assert engine.native
    transformer = LatentModel(build_encoder(MICRO), np.ones(MICRO.dim), precision="fp32")
    assert not LatentEngine.from_options(transformer).native
    with pytest.raises(EngineError, match="native=true"):
        LatentEngine.from_options(transformer, native="true")
    with pytest.raises(EngineError, match="native"):
        LatentEngine.from_options(model, native="maybe")


def test_a_model_declares_its_search_and_options_override_it(
    tmp_path: Path, model: LatentModel
) -> None:
    import json

    directory = save_model(tmp_path / "declared", model.encoder, axis=model.axis)
    config = directory / "config.json"
    document = json.loads(config.read_text())
    document["search"] = {"width": 5, "depth": 4, "measured": "a note the engine ignores"}
    config.write_text(json.dumps(document))
    assert declared_search(directory) == SearchConfig(width=5, depth=4)
    engine = LatentEngine.from_options(str(directory))
    assert (engine.config.width, engine.config.depth) == (5, 4)
    assert LatentEngine.from_options(str(directory), width="2").config.width == 2
    # no block, or no model directory: the SearchConfig defaults
    plain = save_model(tmp_path / "plain", model.encoder, axis=model.axis)
    assert declared_search(plain) == SearchConfig() == declared_search(tmp_path / "nothing")
    document["search"] = {"width": 0}
    config.write_text(json.dumps(document))
    with pytest.raises(EngineError, match="width"):
        LatentEngine.from_options(str(directory))
    # the shipped default (the sparse encoder) declares width 8, where it measured strongest
    assert declared_search(None).width == 8 == declared_search(TRAINED).width


def test_a_clock_or_a_time_limit_deepens_past_the_configured_depth(model: LatentModel) -> None:
    engine = LatentEngine.from_options(model, depth=1, width=2)
    board = chess.Board()
    assert engine.analyse(board, chess.engine.Limit()).depth == 1  # nothing else: the depth
    assert engine.analyse(board, chess.engine.Limit(time=1.0)).depth > 1
    clock = chess.engine.Limit(white_clock=10.0, black_clock=10.0, white_inc=0.1)
    assert engine.analyse(board, clock).depth > 1
    assert engine.analyse(board, chess.engine.Limit(nodes=20_000)).depth > 1
    assert engine.analyse(board, chess.engine.Limit(depth=2, time=5.0)).depth == 2


def test_a_new_model_brings_its_declared_search_but_keeps_what_the_user_set(
    tmp_path: Path, model: LatentModel
) -> None:
    import json

    declared = save_model(tmp_path / "declared", model.encoder, axis=model.axis)
    document = json.loads((declared / "config.json").read_text())
    document["search"] = {"width": 6, "depth": 3}
    (declared / "config.json").write_text(json.dumps(document))
    plain = save_model(tmp_path / "plain", model.encoder, axis=model.axis)

    engine = LatentEngine.from_options(str(declared))
    engine.ready()
    engine.set_option("Model", str(plain))  # no declaration: SearchConfig's defaults
    engine.ready()
    assert (engine.config.width, engine.config.depth) == (3, 6)
    engine.set_option("Width", "4")  # the user's choice survives the next model
    engine.set_option("Model", str(declared))
    engine.ready()
    assert (engine.config.width, engine.config.depth) == (4, 3)
    assert engine.searcher.config.width == 4
    board = chess.Board()
    assert engine.play(board, chess.engine.Limit(depth=2)) in board.legal_moves
    spec = LatentEngine.from_options(str(plain), depth="2")  # spec keys count as chosen
    spec.set_option("Model", str(declared))
    spec.ready()
    assert (spec.config.width, spec.config.depth) == (6, 2)


def test_a_core_older_than_the_sources_says_to_rebuild_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A core built before an option existed (here: before ``qs`` and ``revise``) refuses the
    shipped model's declared search with the fix, and a match stops on it instead of abandoning
    every game."""
    from latentchess.engines.registry import create_engine
    from latentchess.evaluation.limits import parse_limit
    from latentchess.evaluation.match import MatchConfig, Player, run_match
    from latentchess.evaluation.openings import Opening
    from latentchess.search import native as native_search

    # the option names come from the real core's pybind11 signature
    assert {"encoder", "width", "qs", "revise"} <= native_search._keywords(native.LatentSearch)
    current = native.LatentSearch

    def older(  # type: ignore[no-untyped-def]
        encoder, *, mode="minimax", width=3, alpha_beta=True, leaf_cutoffs=True, draw_score=0.0
    ):
        return current(
            encoder,
            mode=mode,
            width=width,
            alpha_beta=alpha_beta,
            leaf_cutoffs=leaf_cutoffs,
            draw_score=draw_score,
        )

    monkeypatch.setattr(native, "LatentSearch", older)
    assert declared_search(None).qs
    with pytest.raises(EngineError) as caught:
        create_engine("latent:native=true")
    message = str(caught.value)
    assert "native core is older than the Python sources" in message
    assert "no option partial, qs, reduce, revise;" in message and "make setup" in message
    assert "scripts/build_native.sh" in message
    latent = Player.from_spec("latent:native=true", parse_limit("depth=1"))
    rand = Player.from_spec("random", parse_limit("depth=1"))
    pgn = tmp_path / "old-core.pgn"
    config = MatchConfig(games=2, workers=1, progress=False, max_plies=20)
    with pytest.raises(EngineError, match="make setup"):
        run_match(latent, rand, [Opening(name="start")], config, pgn_path=pgn)
    assert not pgn.exists() or "abandoned" not in pgn.read_text()
