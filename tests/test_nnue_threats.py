"""Threat blocks T and TNK: the reference's layout, the core's features, incremental updates,
the integer network and a short training run on them."""

from __future__ import annotations

import json
import os
import random
import signal
from pathlib import Path
from typing import Any

import chess
import numpy as np
import pytest
import torch

from latentchess.cli import main
from latentchess.core.nnue import load_network, native_module
from latentchess.errors import LatentChessError
from latentchess.nnue.features import (
    BLOCK_SIZES,
    THREAT_TRIPLES,
    block_features,
    parse_feature_set,
    position_features,
)
from latentchess.nnue.io import load_nnue, save_nnue
from latentchess.nnue.model import (
    Nnue,
    NnueConfig,
    add_threat_block,
    expand_network,
    quantise,
    quantised_forward,
)
from latentchess.training.checkpoint import CHECKPOINT_FILE, load_checkpoint
from latentchess.training.distributed import DistContext
from latentchess.training.nnue import NnueTrainConfig
from latentchess.training.objectives.nnue import NnueObjective, train_nnue
from training_fixtures import core_and_integer_reference, write_material_csv

# Many pieces attacking many (middlegames, a queen battery, promotions, castling, en passant).
DENSE = [
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
    "4k3/8/3q4/2QQQ3/3Q4/8/8/4K2r b - - 0 1",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "1n2k3/P7/8/8/8/8/7p/4K1N1 w - - 0 1",
]


def _bits(move: chess.Move) -> int:
    return move.from_square | (move.to_square << 6) | ((move.promotion or 0) << 12)


def _random_boards(seed: int, games: int = 6, plies: int = 70) -> list[chess.Board]:
    rng, out = random.Random(seed), []
    for _ in range(games):
        board = chess.Board()
        for _ in range(plies):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
            out.append(board.copy(stack=False))
    return out


def _pairs_by_attackers(board: chess.Board, no_king: bool) -> int:
    """Pairs counted the other way round: per occupied square, the pieces attacking it."""
    count = 0
    for target in chess.scan_forward(board.occupied):
        if no_king and board.piece_type_at(target) == chess.KING:
            continue
        for color in chess.COLORS:
            attackers = board.attackers(color, target)
            if no_king:
                attackers &= ~board.kings
            count += len(attackers)
    return count


def test_threat_layout_and_a_pair_count_the_other_way_round() -> None:
    assert BLOCK_SIZES["T"] == 7504 * 12 == 90048 and BLOCK_SIZES["TNK"] == 6664 * 10 == 66640
    triples, kinds = THREAT_TRIPLES["T"]
    # Squares rank * 8 + file: our pawn's first square is a2 (one target, b3), then b2 (a3, c3).
    assert (triples[0, chess.A2, chess.B3], triples[0, chess.B2, chess.A3]) == (0, 1)
    assert kinds == 12 and int(triples.max()) == 7503
    for board in [*_random_boards(5, games=3), *map(chess.Board, DENSE)]:
        for perspective in chess.COLORS:
            t = block_features(board, perspective, "T")
            tnk = block_features(board, perspective, "TNK")
            assert len(t) == _pairs_by_attackers(board, no_king=False)
            assert len(tnk) == _pairs_by_attackers(board, no_king=True)
            assert max(t, default=0) < BLOCK_SIZES["T"] and max(tnk, default=0) < 66640


def test_a_threat_block_comes_last_in_both_implementations() -> None:
    native = native_module()
    assert parse_feature_set("KA9+TNK").size == 6912 + 66640
    assert parse_feature_set("KA9+T").index_dtype == np.int32
    for bad in ("T+KA9", "T+TNK", "TNK+ALL+H"):
        with pytest.raises(LatentChessError, match="must come last"):
            parse_feature_set(bad)
        with pytest.raises(ValueError, match="must come last"):
            native.nnue_features(native.Position(chess.STARTING_FEN), 0, bad)


def test_core_threat_features_equal_the_reference() -> None:
    native = native_module()
    boards = [*_random_boards(11), *map(chess.Board, DENSE)]
    for name in ("T", "TNK", "KA9+T", "KA9+TNK"):
        fs = parse_feature_set(name)
        for board in boards:
            reference = position_features(board, fs)
            position = native.Position(board.fen())
            for perspective in (0, 1):
                ours = native.nnue_features(position, perspective, name)
                assert list(ours) == reference[perspective].tolist(), (name, board.fen())
    batch = native.nnue_features_batch([b.fen() for b in boards[:5]], "KA9+TNK", 272)
    assert batch.dtype == np.int32  # indices above 32,767
    first = position_features(boards[0], parse_feature_set("KA9+TNK"))[0]
    assert batch[0, 0, : len(first)].tolist() == first.tolist() and batch[0, 0, -1] == 73552


@pytest.fixture(scope="module", params=["KA9+T", "KA9+TNK", "TNK"])
def threat_network(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Path:
    """A small random network (psqt term randomised) on a threat feature set."""
    torch.manual_seed(2)
    net = Nnue(NnueConfig(feature_set=request.param, l1=16, l2=8, psqt=True))
    with torch.no_grad():
        net.out.weight.mul_(10.0)
        net.ft.weight[:-1].mul_(4.0)
        assert net.psqt is not None
        net.psqt.weight[:-1].add_(torch.randn_like(net.psqt.weight[:-1]) * 0.05)
    return save_nnue(tmp_path_factory.mktemp("threats") / "net", net, {"note": "test network"})


def _same(probe: object) -> bool:
    incremental, refreshed = probe.accumulator(), probe.refreshed()  # type: ignore[attr-defined]
    return all(np.array_equal(a, b) for a, b in zip(incremental, refreshed, strict=True))


def test_every_legal_move_and_random_games_update_as_a_refresh(threat_network: Path) -> None:
    native, network = native_module(), load_network(threat_network)
    for fen in [chess.STARTING_FEN, *DENSE]:
        board = chess.Board(fen)
        probe = native.NnueProbe(network, native.Position(fen))
        for move in board.legal_moves:  # each move's pairs: moved, captured, opened, closed
            probe.push(_bits(move))
            assert _same(probe), (fen, move.uci())
            probe.pop()
        assert _same(probe)
    rng = random.Random(4)
    for fen in [chess.STARTING_FEN, *DENSE]:
        board = chess.Board(fen)
        probe = native.NnueProbe(network, native.Position(fen))
        for ply in range(40):
            moves = list(board.legal_moves)
            if not moves:
                break
            move = rng.choice(moves)
            probe.push(_bits(move))
            board.push(move)
            if ply % 5 == 2:  # null moves as the search makes them
                probe.push_null()
                assert _same(probe)
                probe.pop_null()
            assert _same(probe), board.fen()
            assert probe.evaluate() == probe.refreshed_evaluate()
        while board.move_stack:
            probe.pop()
            board.pop()
        assert _same(probe)


def test_moves_not_evaluated_are_applied_when_a_later_ply_is(threat_network: Path) -> None:
    """Threat rows are applied lazily: several plies (null moves among them) made unread, some
    taken back, others made, then one read: still a refresh."""
    native, network = native_module(), load_network(threat_network)
    rng = random.Random(6)
    for fen in DENSE:
        board = chess.Board(fen)
        probe = native.NnueProbe(network, native.Position(fen))
        for step in range(12):
            for _ in range(rng.randrange(1, 5)):
                moves = list(board.legal_moves)
                if not moves:
                    break
                move = rng.choice(moves)
                probe.push(_bits(move))
                board.push(move)
                if rng.random() < 0.2 and not board.is_check():
                    probe.push_null()
                    probe.pop_null()
            for _ in range(rng.randrange(0, min(3, len(board.move_stack)) + 1)):
                probe.pop()
                board.pop()
            if step % 2:
                assert _same(probe), board.fen()
        assert probe.evaluate() == probe.refreshed_evaluate()


def test_chess960_castling_updates_the_threats_as_a_refresh(threat_network: Path) -> None:
    native, network = native_module(), load_network(threat_network)
    # King and rook swap squares or land on each other's: both castlings from each side.
    for fen in (
        "1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R2K1R1 w GBgb - 0 1",
        "rk2r3/pppppppp/8/8/8/8/PPPPPPPP/RK2R3 b EAea - 0 1",
    ):
        board = chess.Board(fen, chess960=True)
        probe = native.NnueProbe(network, native.Position(fen, True))
        castles = [m for m in board.legal_moves if board.is_castling(m)]
        assert castles
        for move in castles:
            probe.push(_bits(move))
            assert _same(probe), (fen, move.uci())
            probe.pop()


def test_the_core_evaluates_as_the_integer_reference(threat_network: Path) -> None:
    boards = [*_random_boards(8, games=2, plies=50), *map(chess.Board, DENSE)]
    ours, reference = core_and_integer_reference(threat_network, boards)
    assert ours == reference.tolist() and np.abs(reference).max() > 20


def test_a_threat_network_trains_and_exports_what_the_core_evaluates(tmp_path: Path) -> None:
    csv = tmp_path / "pos.csv.gz"
    write_material_csv(csv, games=6)
    result = train_nnue(
        NnueTrainConfig(
            data=(str(csv),),
            out=tmp_path / "run",
            network=NnueConfig(feature_set="KA9+TNK", l1=16, l2=4, psqt=True),
            steps=4,
            batch_size=32,
            checkpoint_every=4,
            log_every=1,
            threads=1,
            device="cpu",
            progress=False,
            holdout_fraction=0.1,
        )
    )
    assert result.model_dir is not None
    cache = np.load(tmp_path / "run" / "cache" / "features.npy", mmap_mode="r")
    assert cache.dtype == np.int32 and cache.shape[2] == 32 + 240  # sparse rows, int32 indices
    model = load_nnue(result.model_dir)
    fs = model.network.cfg.features
    threat_rows = model.network.ft.weight.detach()[fs.offsets[-1] : fs.size]
    assert model.quantised["ft.threat_weight"].dtype == np.int8  # int8 rows, clipped in training
    assert model.quantised["ft.threat_weight"].shape == (66640, 16)
    assert model.quantised["ft.weight"].shape == (6912, 16) and threat_rows.abs().max() <= 1.0
    boards = [*_random_boards(9, games=2, plies=40), *map(chess.Board, DENSE)]
    feats = [position_features(b, fs) for b in boards]
    stm = np.array([0 if b.turn else 1 for b in boards])
    integer = quantised_forward(
        model.quantised, [f[0] for f in feats], [f[1] for f in feats], stm, fs.name
    )
    native = native_module()
    network = load_network(result.model_dir)
    assert network.feature_set == "KA9+TNK"
    assert [network.evaluate(native.Position(b.fen())) for b in boards] == integer.tolist()
    width = max(len(f[p]) for f in feats for p in (0, 1))

    def padded(p: int) -> torch.Tensor:
        rows = [np.pad(f[p], (0, width - len(f[p])), constant_values=fs.size) for f in feats]
        return torch.from_numpy(np.stack(rows))

    with torch.no_grad():
        floats = model.network(padded(0), padded(1), torch.from_numpy(stm)).numpy()
    # Rounding of ~100 weights per perspective and the floor of the output: a few centipawns.
    assert np.abs(floats - integer).mean() < 5 and np.abs(floats - integer).max() < 20


def test_a_zero_threat_block_keeps_the_function_and_a_lean_file_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torch.manual_seed(3)
    plain = Nnue(NnueConfig(feature_set="KA9", l1=16, l2=4, psqt=True, output_buckets=2))
    with torch.no_grad():
        plain.out.weight.mul_(10.0)
    grown = expand_network(plain, NnueConfig(**{**plain.cfg.to_dict(), "feature_set": "KA9+T"}))
    assert grown.cfg.feature_set == "KA9+T"
    with pytest.raises(LatentChessError, match="add_threat_block"):
        add_threat_block(grown, "TNK")
    full = save_nnue(tmp_path / "full", grown, {})
    lean = save_nnue(tmp_path / "lean", grown, {}, lean=True)
    size = (lean / "model.safetensors").stat().st_size
    assert size < (full / "model.safetensors").stat().st_size / 2
    loaded = load_nnue(lean)  # float weights rebuilt from the integers: the same integers again
    for name, value in quantise(grown).items():
        assert np.array_equal(loaded.quantised[name], value)
        assert np.array_equal(quantise(loaded.network)[name], value), name
    assert main(["nnue", "info", str(lean)]) == 0  # each block with its offset and size
    info = json.loads(capsys.readouterr().out)["nnue"]
    assert info["blocks"] == [
        {"block": "KA9", "offset": 0, "size": 6912},
        {"block": "T", "offset": 6912, "size": 90048},
    ]
    native = native_module()
    small, big = (load_network(save_nnue(tmp_path / "plain", plain, {})), load_network(lean))
    for board in [*_random_boards(12, games=2, plies=40), *map(chess.Board, DENSE)]:
        position = native.Position(board.fen())
        assert small.evaluate(position) == big.evaluate(position)


def _threat_run(csv: Path, out: Path, **overrides: Any) -> NnueTrainConfig:
    settings: dict[str, Any] = {
        "data": (str(csv),),
        "out": out,
        "network": NnueConfig(feature_set="KA9+TNK", l1=16, l2=4, psqt=True),
        "steps": 4,
        "batch_size": 32,
        "lr": 1e-2,
        "gamma": 0.5,
        "epoch_positions": 50,  # the rate decays inside the run: the scheduler is resumed too
        "dense_lr_scale": 0.5,  # and two dense groups beside the tables
        "eval_every": 0,
        "checkpoint_every": 100,
        "log_every": 1,
        "threads": 1,
        "device": "cpu",
        "progress": False,
        "holdout_fraction": 0.1,
    }
    return NnueTrainConfig(**(settings | overrides))


def _equal_state(a: Any, b: Any) -> bool:
    """Nested checkpoint contents equal, tensors bit for bit."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(_equal_state(a[k], b[k]) for k in a)
        )
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal_state(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_a_sparse_update_moves_only_the_rows_its_batches_touch_and_resumes_exactly(
    tmp_path: Path,
) -> None:
    csv = tmp_path / "pos.csv.gz"
    write_material_csv(csv, games=6)
    cfg = _threat_run(csv, tmp_path / "a")
    assert cfg.sparse_update and not _threat_run(csv, tmp_path, sparse_features=False).sparse_update
    objective = NnueObjective(cfg, DistContext())  # the run's data and initial weights
    start = objective.net.ft.weight.detach().clone()
    rows = np.concatenate([objective._batch_rows(step) for step in range(cfg.steps)])
    touched = np.zeros(len(start), dtype=bool)
    touched[np.asarray(objective.cache.features[rows]).reshape(-1)] = True
    touched[-1] = False  # the padding row
    straight = train_nnue(cfg)
    assert straight.step == 4
    state = load_checkpoint(tmp_path / "a" / "checkpoints" / CHECKPOINT_FILE)
    moved = (state["model"]["ft.weight"] != start).any(dim=1).numpy()
    threats = slice(cfg.network.features.offsets[-1], cfg.network.features.size)
    assert moved[threats].sum() > 0 and not (moved & ~touched).any()  # only touched rows
    assert touched[threats].sum() < (threats.stop - threats.start) / 10
    assert set(state["optimizer"]) == {"sparse", "dense"}

    def interrupt(step: int) -> None:
        if step == 2:
            os.kill(os.getpid(), signal.SIGINT)

    resumed = _threat_run(csv, tmp_path / "b")
    assert train_nnue(resumed, on_step=interrupt).stop_reason == "signal"
    again = train_nnue(resumed)
    assert again.resumed_from == 2 and again.step == 4
    other = load_checkpoint(tmp_path / "b" / "checkpoints" / CHECKPOINT_FILE)
    for key in ("model", "optimizer", "scheduler"):
        assert _equal_state(state[key], other[key]), key
    assert straight.metrics == again.metrics
    # A dense checkpoint of the same set (written before the option existed) does not resume.
    old = {k: v for k, v in cfg.to_dict().items() if k != "sparse_features"}
    assert cfg.resume_differences(old) == ["sparse_features: False -> True"]
    plain = _threat_run(csv, tmp_path, network=NnueConfig(feature_set="KA9", l1=16, l2=4))
    assert (
        not plain.sparse_update
        and plain.resume_differences(
            {k: v for k, v in plain.to_dict().items() if k != "sparse_features"}
        )
        == []
    )
    with pytest.raises(LatentChessError, match="one process"):
        NnueObjective(cfg, DistContext(rank=0, world_size=2))


def test_a_lean_export_evaluates_in_the_core_as_the_full_one(tmp_path: Path) -> None:
    csv = tmp_path / "pos.csv.gz"
    write_material_csv(csv, games=6)
    train_nnue(_threat_run(csv, tmp_path / "run", steps=2))
    run = str(tmp_path / "run")
    assert main(["nnue", "export", run, "--to", str(tmp_path / "full")]) == 0
    assert main(["nnue", "export", run, "--to", str(tmp_path / "lean"), "--lean"]) == 0
    full, lean = (tmp_path / name / "model.safetensors" for name in ("full", "lean"))
    assert lean.stat().st_size < full.stat().st_size / 2
    quantised = load_nnue(tmp_path / "full").quantised
    assert all(
        np.array_equal(v, load_nnue(tmp_path / "lean").quantised[k]) for k, v in quantised.items()
    )
    native = native_module()
    a, b = load_network(tmp_path / "full"), load_network(tmp_path / "lean")
    for board in [*_random_boards(5, games=2, plies=40), *map(chess.Board, DENSE)]:
        position = native.Position(board.fen())
        assert a.evaluate(position) == b.evaluate(position)
