"""Chessformer features beyond the model: ablation switches, Maia-style UCI options, the policy
prior of the latent and hybrid searches, square attribution, and the contrastive GAB encoder."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest
import torch

from latentchess.encoding import tokenize_batch
from latentchess.engines.registry import create_engine
from latentchess.models.chessformer import Chessformer, get_chessformer_config, parameter_count
from latentchess.models.chessformer_io import ChessformerModel, save_chessformer
from latentchess.squares import encode_board
from uci_fixtures import SessionTranscript

NANO = get_chessformer_config("cf-nano")
# After 1.e4 e5 2.Nf3 Nc6 3.Bc4: many sensible moves for Black.
ITALIAN = ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4")


@pytest.fixture(scope="module")
def nano_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(5)
    return save_chessformer(tmp_path_factory.mktemp("cfu") / "nano", Chessformer(NANO), {})


def _italian() -> chess.Board:
    board = chess.Board()
    for uci in ITALIAN:
        board.push_uci(uci)
    return board


# -- ablation switches ---------------------------------------------------------------------------


def test_each_ablation_switch_changes_exactly_its_parameters() -> None:
    def count(**changes: object) -> int:
        return parameter_count(Chessformer(dataclasses.replace(NANO, **changes)))  # type: ignore[arg-type]

    d, layers, heads, i, g = NANO.d_model, NANO.layers, NANO.heads, 16, 16
    assert (NANO.gab_hidden, NANO.gab_templates, NANO.gab_per_square) == (i, g, 0)
    gab_layer = (d * i + i) + 2 * i + (i * heads * g + heads * g) + 2 * heads * g
    none = count(position="none")
    assert count() - none == layers * gab_layer + 4096 * g  # one shared template matrix
    assert count(position="relative") - none == layers * heads * 15 * 15
    assert count(position="absolute") - none == layers * heads * 64 * 64
    assert count(history=31) - count(history=0) == 12 * 31 * d  # 32 boards against 1
    assert count(history=7) - count(history=0) == 12 * 7 * d
    assert count(side_features=True) - count() == 7 * d
    assert count(absolute_embedding=True) - count() == 64 * d


@pytest.mark.parametrize(
    "changes",
    [
        {"history": 0},
        {"history": 31},
        {"side_features": True},
        {"absolute_embedding": True},
        {"position": "absolute", "history": 0, "side_features": True},
    ],
)
def test_ablation_variants_run_forward_and_see_their_inputs(changes: dict[str, object]) -> None:
    torch.manual_seed(0)
    cfg = dataclasses.replace(NANO, **changes)  # type: ignore[arg-type]
    model = ChessformerModel(Chessformer(cfg))
    # Same position, reached by two move orders: only the history boards differ.
    one, other = chess.Board(), chess.Board()
    for uci in ("g1f3", "g8f6", "b1c3", "b8c6"):
        one.push_uci(uci)
    for uci in ("b1c3", "b8c6", "g1f3", "g8f6"):
        other.push_uci(uci)
    features = model.features([one, other])
    assert features.shape == (2, 64, cfg.input_features)
    policy, value = model.logits([one, other], 1500, 1500)
    assert policy.shape == (2, 4352) and value.shape == (2, 3)
    legal = one.legal_moves.count()
    assert torch.isfinite(policy).sum(dim=1).tolist() == [legal, legal]
    same = np.array_equal(features[0], features[1])
    assert same == (cfg.history == 0)  # history boards are inputs exactly when history > 0


# -- Maia-style UCI options ------------------------------------------------------------------


def test_chessformer_uci_options_and_value_head_score() -> None:
    from latentchess.uci.session import UciSession

    engine = create_engine("chessformer")  # the shipped human model
    transcript = SessionTranscript(
        lambda write: UciSession(write, spec="chessformer", engine=engine)
    )
    transcript.send("uci")
    transcript.wait_for("uciok")
    options = " | ".join(line for line in transcript.lines if line.startswith("option"))
    for expected in (
        "option name Elo type spin default 1900 min 0 max 5000",
        "option name SelfElo type spin",
        "option name OppoElo type spin",
        "option name Temperature type string default 0",
        "option name TopP type string default 1",
    ):
        assert expected in options
    transcript.send("setoption name Elo value 1234")
    assert (engine.self_elo, engine.oppo_elo) == (1234, 1234)
    transcript.send("setoption name OppoElo value 2000")
    assert (engine.self_elo, engine.oppo_elo) == (1234, 2000)
    bad = {
        "setoption name SelfElo value 9000": "'SelfElo' to be at most 5000",
        "setoption name Elo value strong": "expected integer for spin option 'Elo'",
        "setoption name Temperature value hot": "needs a number",
        "setoption name Temperature value nan": "must lie in [0, 100]",
        "setoption name TopP value 1.5": "must lie in (0, 1]",
        "setoption name CfMode value search": "invalid value for combo option 'CfMode'",
    }
    for command, message in bad.items():
        before = len(transcript.infos())
        assert transcript.send(command)  # the session lives on
        assert message in transcript.infos()[before], command
    assert (engine.self_elo, engine.oppo_elo, engine.temperature) == (1234, 2000, 0.0)
    transcript.send("setoption name Temperature value 0.7", "setoption name TopP value 0.9")
    transcript.send("position startpos moves e2e4", "go nodes 1")
    best = transcript.wait_for("bestmove").split()[1]
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(best) in board.legal_moves
    info = transcript.wait_for("info depth")
    found = re.search(r"score cp (-?\d+) wdl (\d+) (\d+) (\d+)", info)
    assert found, info
    (prediction,) = engine.model.predict([board], 1234, 2000)
    assert [int(x) for x in found.groups()[1:]] == [round(1000 * x) for x in prediction.wdl]
    settings = transcript.wait_for("info string chessformer")
    assert "selfelo 1234 oppoelo 2000 temperature 0.7 topp 0.9" in settings
    transcript.session.close()


# -- the game's time-control band ---------------------------------------------------------------


@pytest.fixture(scope="module")
def banded_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A nano model with the time-control input, its bands made distinct (a new one is zero)."""
    torch.manual_seed(6)
    network = Chessformer(dataclasses.replace(NANO, time_control=True))
    assert network.speed_embedding is not None
    with torch.no_grad():
        network.speed_embedding.normal_()
    return save_chessformer(tmp_path_factory.mktemp("cfb") / "banded", network, {})


def _pairs(moves: object, scores: object) -> list[tuple[str, float]]:
    return [(m.uci(), float(p)) for m, p in zip(moves, scores, strict=True)]  # type: ignore[call-overload]


def _probabilities(
    engine: object, board: chess.Board, limit: chess.engine.Limit | None = None
) -> list[tuple[str, float]]:
    analysis = engine.analyse(board, limit)  # type: ignore[attr-defined]
    return _pairs([m.move for m in analysis.moves], [m.score for m in analysis.moves])


def _same(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    return [m for m, _ in a] == [m for m, _ in b] and np.allclose(
        [p for _, p in a], [p for _, p in b]
    )


def test_chessformer_band_from_spec_or_the_first_clock_of_a_game(
    banded_dir: Path, nano_dir: Path
) -> None:
    from latentchess.data.moves import clock_band

    # Lichess's rule: base + 40 x increment seconds (180+2: 260 s, blitz).
    assert [clock_band(*tc) for tc in ((60, 0), (120, 1), (180, 2), (600, 5), (1800, 0))] == [
        1, 1, 2, 3, 4
    ]  # fmt: skip
    board = _italian()  # Black to move
    model = ChessformerModel.load(banded_dir)
    by_band = []
    for band in range(5):
        (prediction,) = model.predict([board], 1500, 1500, speed=band)
        by_band.append(_pairs(prediction.moves, prediction.probabilities))
    assert not _same(by_band[0], by_band[2])  # the model reads the band
    spec = f"chessformer:model={banded_dir},elo=1500"
    fixed = create_engine(f"{spec},time_control=180+2")
    assert fixed.band() == 2 and _same(_probabilities(fixed, board), by_band[2])
    fast = chess.engine.Limit(white_clock=30, black_clock=30)
    assert _same(_probabilities(fixed, board, fast), by_band[2])  # a fixed band ignores clocks
    assert create_engine(f"{spec},time_control=Rapid").band() == 3
    with pytest.raises(Exception, match="time control must be auto"):
        create_engine(f"{spec},time_control=fast")
    auto = create_engine(spec)  # time_control=auto
    assert _same(_probabilities(auto, board), by_band[0])  # no clock yet: unknown
    # The mover's clock (Black: 600 s, rapid) is the game's; later clocks do not change it.
    first = chess.engine.Limit(white_clock=30, black_clock=600, black_inc=0)
    assert _same(_probabilities(auto, board, first), by_band[3])
    assert _same(_probabilities(auto, board, fast), by_band[3])
    auto.new_game()
    assert _same(_probabilities(auto, board, chess.engine.Limit(black_clock=120)), by_band[1])
    # A model without the input is unaffected by the band.
    plain = _probabilities(create_engine(f"chessformer:model={nano_dir}"), board)
    banded = create_engine(f"chessformer:model={nano_dir},time_control=blitz")
    assert _same(_probabilities(banded, board, fast), plain)
    assert "timecontrol" not in banded.info_string()


def test_chessformer_uci_band_from_the_first_go_until_ucinewgame(banded_dir: Path) -> None:
    from latentchess.uci.session import UciSession

    spec = f"chessformer:model={banded_dir}"
    engine = create_engine(spec)
    transcript = SessionTranscript(lambda write: UciSession(write, spec=spec, engine=engine))
    transcript.send("uci")
    transcript.wait_for("uciok")
    assert "option name TimeControl type string default auto" in transcript.lines

    def go(line: str, moves: str = "e2e4") -> str:
        transcript.send(f"position startpos moves {moves}", line)
        transcript.wait_for("bestmove")
        info = transcript.wait_for("info depth")
        band = transcript.wait_for("info string chessformer").split("timecontrol ")[1]
        board = chess.Board()
        for uci in moves.split():
            board.push_uci(uci)
        speed = ("unknown", "bullet", "blitz", "rapid", "classical").index(band)
        (prediction,) = engine.model.predict([board], 1900, 1900, speed=speed)
        wdl = " ".join(str(round(1000 * float(x))) for x in prediction.wdl)
        assert f"wdl {wdl} " in info  # the model was given that band
        return band

    transcript.send("ucinewgame")
    assert go("go wtime 180000 btime 180000 winc 2000 binc 2000") == "blitz"
    assert go("go wtime 20000 btime 20000", "e2e4 e7e5 g1f3") == "blitz"  # still the game's
    transcript.send("ucinewgame")
    assert go("go nodes 1") == "unknown"  # no clock: unknown until one comes
    assert go("go wtime 60000 btime 60000") == "bullet"
    transcript.send("setoption name TimeControl value classical")
    assert go("go wtime 60000 btime 60000") == "classical"
    transcript.send("setoption name TimeControl value 10+0.5")
    assert "option 'TimeControl' refused" in transcript.infos()[-1]
    assert engine.time_control == "classical"
    transcript.session.close()


# -- the policy prior of the latent and hybrid searches ------------------------------------------


def test_latent_policy_chooses_and_orders_the_root_moves(nano_dir: Path) -> None:
    from latentchess.engines.latent import LatentEngine

    engine = create_engine(f"latent:precision=fp32,depth=2,width=2,policy={nano_dir}")
    assert isinstance(engine, LatentEngine) and engine.policy is not None
    board = _italian()
    result = engine.search(board, chess.engine.Limit(depth=2))
    policy_order = engine.policy.order(board)
    assert [root.move for root in result.root_moves] == policy_order
    expanded = [root.move for root in result.root_moves if root.value is not None]
    assert expanded == policy_order[:2] and result.move in expanded
    # Without the prior the same search expands the two best-scored moves instead.
    plain = create_engine("latent:precision=fp32,depth=2,width=2")
    statics = plain.search(board, chess.engine.Limit(depth=2)).root_moves
    by_score = sorted(statics, key=lambda r: r.static)  # Black to move: lowest first
    assert [r.move for r in statics if r.value is not None] == [r.move for r in by_score[:2]]


def test_policy_puts_a_mate_in_one_first(nano_dir: Path) -> None:
    from latentchess.search.policy import load_policy

    policy = load_policy(nano_dir)
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    candidates = policy.propose(board, None)
    assert candidates[0].move == chess.Move.from_uci("a1a8") and candidates[0].score == 1.0
    assert [c.rank for c in candidates] == list(range(board.legal_moves.count()))
    assert policy.propose(board, None) is candidates and policy.evaluations == 1  # cached


@pytest.mark.parametrize("mode", ["verify", "order", "horizon"])
def test_hybrid_policy_proposes_the_candidates(nano_dir: Path, mode: str) -> None:
    engine = create_engine(f"hybrid:mode={mode},k=3,policy={nano_dir},policy_elo=2000")
    board = _italian()
    analysis = engine.analyse(board, chess.engine.Limit(depth=2))
    assert analysis.best_move in board.legal_moves
    policy_order = engine.proposer.order(board)
    if mode != "horizon":
        assert [c.move for c in engine.last_candidates] == policy_order
    engine.close()


def test_policy_option_errors_name_the_input(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="policy="):
        create_engine(f"latent:precision=fp32,policy={tmp_path / 'missing'}")
    with pytest.raises(Exception, match="policy_elo needs policy"):
        create_engine("hybrid:policy_elo=1500")


# -- square attribution ----------------------------------------------------------------------


def test_attribution_adds_up_to_the_logit_and_plots(tmp_path: Path, nano_dir: Path) -> None:
    from latentchess.cli import main
    from latentchess.evaluation.attribution import attribute_move

    model = ChessformerModel.load(nano_dir)
    board = _italian()  # Black to move: the squares are mapped back from the mirrored frame
    move = chess.Move.from_uci("g8f6")
    result = attribute_move(model, board, move, steps=128)
    assert result.squares.shape == (64,)
    assert abs(result.completeness_gap) < 0.02 * abs(result.logit - result.baseline_logit) + 1e-3
    # A square empty on the board and on every history board has no input features, hence no
    # attribution; the model's frame is mirrored (Black to move), the result is not.
    inputs = model.features([board])[0].sum(axis=1)  # (64,) in the model's frame
    empty = [sq for sq in chess.SQUARES if inputs[sq ^ 56] == 0]
    assert len(empty) > 16 and all(board.piece_at(sq) is None for sq in empty)
    assert np.abs(result.squares[empty]).max() == 0.0
    occupied = [sq for sq in chess.SQUARES if board.piece_at(sq) is not None]
    assert np.abs(result.squares[occupied]).min() > 0.0
    with pytest.raises(Exception, match="not legal"):
        attribute_move(model, board, chess.Move.from_uci("e2e4"))
    png = tmp_path / "attr.png"
    fen = board.fen()
    assert main(["plot", "attribution", fen, "--move", "g8f6", "--model", str(nano_dir),
                 "--steps", "16", "--out", str(png)]) == 0  # fmt: skip
    assert png.stat().st_size > 1000


# -- the contrastive GAB encoder -------------------------------------------------------------


def test_gab_encoder_reads_tokens_as_the_chessformer_reads_boards() -> None:
    from latentchess.models.config import get_config
    from latentchess.models.gab_encoder import GabEncoder, token_square_features
    from latentchess.squares import board_pieces

    boards = [chess.Board(), _italian()]
    boards += [
        chess.Board("r3k2r/pppq1ppp/8/3pP3/8/8/PPP2PPP/R3K2R w Kq d6 0 12"),  # en passant
        chess.Board("8/8/4k3/8/3P4/8/4K3/8 b - d3 57 80"),  # rule-50 57, Black
    ]
    tokens = torch.from_numpy(tokenize_batch(boards))
    ours = token_square_features(tokens, side=True).numpy()
    expected = np.stack([encode_board(b, history=0, side=True) for b in boards])
    assert np.array_equal(ours, expected)
    assert ours[2, :, 12].sum() == 1.0 and ours[3, 0, 17] == pytest.approx(0.57)
    # The encoder's own frame is White's (the latent axis's): pieces as they stand, plus the turn.
    white = token_square_features(tokens, side=False, frame="white").numpy()
    codes = np.stack([board_pieces(b) for b in boards])  # (B, 64), a1 = 0
    assert np.array_equal(white, (codes[..., None] == np.arange(1, 13)).astype(np.float32))
    encoder = GabEncoder(get_config("gab-nano"))  # type: ignore[arg-type]
    features = encoder.features(tokens)
    assert features[:, :, -1].tolist() == [[float(b.turn)] * 64 for b in boards]


def test_gab_encoder_exports_to_onnx(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    from latentchess.models.config import get_config
    from latentchess.models.export import check_onnx, export_onnx
    from latentchess.models.gab_encoder import build_encoder

    torch.manual_seed(0)
    tokens = tokenize_batch([chess.Board(), _italian()] * 3)
    nano = get_config("gab-nano")
    variant = dataclasses.replace(nano, pool="attention", head="mlp")
    for i, config in enumerate((nano, variant)):
        encoder = build_encoder(config)
        if i:  # a query that weights the squares unevenly
            torch.nn.init.normal_(encoder.pool_query, std=1.0)
        check = check_onnx(export_onnx(encoder, tmp_path / f"gab{i}.onnx"), encoder, tokens)
        assert check.max_abs_diff < 1e-5 and check.positions == 6


def test_gab_encoder_attention_pool_starts_as_the_mean_and_mlp_head_trains_with_adamw(
    tmp_path: Path,
) -> None:
    from latentchess.models.config import get_config
    from latentchess.models.gab_encoder import GabEncoder
    from latentchess.training.trainer import train
    from training_fixtures import micro_config, synthetic_cache

    nano = get_config("gab-nano")
    tokens = torch.from_numpy(tokenize_batch([chess.Board(), _italian()]))
    torch.manual_seed(0)
    mean = GabEncoder(nano)  # type: ignore[arg-type]
    attention = GabEncoder(dataclasses.replace(nano, pool="attention"))  # type: ignore[arg-type]
    attention.load_state_dict(mean.state_dict(), strict=False)  # all but the (zero) query
    states = mean.trunk(tokens)
    assert torch.allclose(attention.pool(states), states.mean(dim=1), atol=1e-6)
    assert torch.allclose(attention(tokens), mean(tokens), atol=1e-6)
    with pytest.raises(ValueError, match="pool"):
        dataclasses.replace(nano, pool="max")
    with pytest.raises(ValueError, match="head"):
        dataclasses.replace(nano, head="deep")

    synthetic_cache(tmp_path / "cache", rows=320)
    variant = dataclasses.replace(nano, pool="attention", head="mlp")
    cfg = dataclasses.replace(
        micro_config(tmp_path / "cache", tmp_path / "run", model=variant, steps=6),
        optimizer="adamw",
        lr=1e-3,
    )
    before = GabEncoder(variant)  # type: ignore[arg-type]
    result = train(cfg)
    assert result.step == 6 and np.isfinite(result.metrics["spearman"])
    from latentchess.models import load_model

    model = load_model(result.model_dir, precision="fp32")
    assert model.config.pool == "attention" and model.config.head == "mlp"
    assert set(model.encoder.state_dict()) == set(before.state_dict())
    assert float(model.encoder.pool_query.detach().abs().sum()) > 0  # the query learned


def test_gab_encoder_trains_with_supcon_and_plays_as_a_latent_model(tmp_path: Path) -> None:
    from latentchess.models import load_model
    from latentchess.models.config import get_config
    from latentchess.training.trainer import train
    from training_fixtures import micro_config, synthetic_cache

    synthetic_cache(tmp_path / "cache", rows=320)
    cfg = micro_config(tmp_path / "cache", tmp_path / "run", model=get_config("gab-nano"), steps=6)
    result = train(cfg)
    assert result.step == 6 and np.isfinite(result.metrics["spearman"])
    model = load_model(result.model_dir, precision="fp32")
    assert type(model.encoder).__name__ == "GabEncoder" and model.config.dim == 32
    half = load_model(result.model_dir, precision="bf16")  # bfloat16 weights, float features
    np.testing.assert_allclose(
        half.score([chess.Board()]), model.score([chess.Board()]), atol=0.05, rtol=0
    )
    engine = create_engine(f"latent:model={result.model_dir},precision=fp32,depth=2,width=2")
    board = chess.Board()
    move = engine.play(board, chess.engine.Limit(depth=2))
    assert move in board.legal_moves
    score = engine.analyse(board, chess.engine.Limit(depth=1)).score_cp
    assert score is not None
