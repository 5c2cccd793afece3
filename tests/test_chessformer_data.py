"""Chessformer data and shipping: the parallel move cache, unfinished games, packed models."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import chess
import numpy as np
import pytest
import torch

from chessformer_fixtures import random_game, write_rated_pgn
from latentchess.cli import main
from latentchess.data.moves import (
    MoveData,
    concatenate_moves,
    read_csv_moves,
    read_csv_moves_parallel,
    read_pgn_moves,
)
from latentchess.engines.chessformer import ChessformerEngine
from latentchess.errors import ModelFileError
from latentchess.models.chessformer import Chessformer, get_chessformer_config
from latentchess.models.chessformer_io import (
    ChessformerModel,
    resolve_chessformer_path,
    save_chessformer,
    shipped_chessformer_path,
)
from latentchess.search.policy import DEFAULT_POLICY_ELO, load_policy
from latentchess.training.objectives.chessformer import ChessformerTrainConfig, train_chessformer

NANO = get_chessformer_config("cf-nano")


def _assert_same(a: MoveData, b: MoveData) -> None:
    assert a.players == b.players
    for field in dataclasses.fields(MoveData):
        if field.name == "players":
            continue
        x, y = getattr(a, field.name), getattr(b, field.name)
        assert x.dtype == y.dtype, field.name
        assert np.array_equal(x, y, equal_nan=field.name in ("score", "clock")), field.name


def _engine_csv(path: Path, rows: int) -> Path:
    """Engine-style rows (fen, cp, mate, win prob, best move, depth) from random games."""
    rng = random.Random(3)
    lines: list[str] = []
    while len(lines) < rows:
        board = chess.Board()
        for move in random_game(rng, 30).mainline_moves():
            lines.append(f"{board.fen()},{rng.randint(-300, 300)},,{rng.random():.4f},{move},9,")
            board.push(move)
    path.write_text("\n".join(lines[:rows]) + "\n")
    return path


def _train_config(data: Path, out: Path, **changes: object) -> ChessformerTrainConfig:
    base: dict[str, object] = dict(
        data=data, out=out, model=NANO, steps=3, batch_size=16, lr=3e-3, warmup=1,
        eval_every=0, eval_positions=32, checkpoint_every=3, log_every=1, progress=False,
        threads=1, device="cpu", holdout_fraction=0.2,
    )  # fmt: skip
    base.update(changes)
    return ChessformerTrainConfig(**base)  # type: ignore[arg-type]


def test_parallel_csv_read_equals_the_serial_read(tmp_path: Path) -> None:
    csv = _engine_csv(tmp_path / "sf.csv", 97)
    serial = read_csv_moves(csv)
    for workers in (1, 3, 5):
        _assert_same(read_csv_moves_parallel(csv, rows=97, workers=workers), serial)
    # skip_rows keeps the file's line numbers as game numbers.
    tail = read_csv_moves(csv, skip_rows=90)
    assert len(tail) == 7 and list(tail.game) == list(range(91, 98))


def test_concatenated_pgn_parts_equal_one_read(tmp_path: Path) -> None:
    pgn = write_rated_pgn(tmp_path / "g.pgn", games=10, plies=20)
    whole = read_pgn_moves(pgn, progress=False)
    parts = [
        read_pgn_moves(pgn, max_games=4, progress=False),
        read_pgn_moves(pgn, skip_games=4, progress=False),
    ]
    joined = concatenate_moves(parts)
    assert len(joined) == len(whole)
    for name in ("pieces", "board_row", "first_row", "move", "legal", "legal_offsets", "game"):
        assert np.array_equal(getattr(joined, name), getattr(whole, name)), name
    # Players are re-based: every position's mover name is the same in both.
    assert [joined.players[i] for i in joined.mover] == [whole.players[i] for i in whole.mover]
    with pytest.raises(ValueError, match="nothing"):
        concatenate_moves([])


def test_move_cache_command_writes_a_cache_that_trains(tmp_path: Path) -> None:
    a, b = _engine_csv(tmp_path / "a.csv", 40), _engine_csv(tmp_path / "b.csv", 30)
    out = tmp_path / "cache.npz"
    assert main(["data", "move-cache", str(a), str(b), "--workers", "2", "--out", str(out)]) == 0
    cache = MoveData.load(out)
    assert len(cache) == 70
    assert len(np.unique(cache.game)) == 70  # line numbers made distinct across the two files
    expected = concatenate_moves([read_csv_moves(a), read_csv_moves(b)])
    assert np.array_equal(cache.move, expected.move)
    result = train_chessformer(_train_config(out, tmp_path / "run"))
    assert result.step == 3 and np.isfinite(result.metrics["games_value_loss"])


def test_an_unfinished_game_trains_without_a_value_target(tmp_path: Path) -> None:
    pgn = write_rated_pgn(tmp_path / "g.pgn", games=8, plies=30)
    text = pgn.read_text().replace('[Result "1-0"]', '[Result "*"]').replace(" 1-0\n", " *\n")
    pgn.write_text(text)
    data = read_pgn_moves(pgn, progress=False)
    assert (data.wdl < 0).any() and np.isnan(data.score[data.wdl < 0]).all()
    result = train_chessformer(_train_config(pgn, tmp_path / "run", batch_size=64))
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    losses = [r["value_loss"] for r in records if r["kind"] == "train"]
    assert result.step == 3 and losses and all(np.isfinite(losses))


def test_pack_stores_float16_and_a_default_rating(tmp_path: Path) -> None:
    torch.manual_seed(5)
    src = save_chessformer(tmp_path / "src", Chessformer(NANO), {"training": {"steps": 1}})
    dst = tmp_path / "packed"
    assert main(["chessformer", "pack", str(src), str(dst), "--default-elo", "3000"]) == 0
    size = (dst / "model.safetensors").stat().st_size
    assert size < 0.6 * (src / "model.safetensors").stat().st_size
    full, half = ChessformerModel.load(src), ChessformerModel.load(dst)
    assert half.default_elo == 3000 and full.default_elo is None
    assert half.config["training"] == {"steps": 1}
    italian = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    boards = [chess.Board(), chess.Board(italian)]
    p_full, v_full = full.logits(boards, 1500, 1500)
    p_half, v_half = half.logits(boards, 1500, 1500)
    finite = torch.isfinite(p_full)
    assert torch.equal(finite, torch.isfinite(p_half))
    torch.testing.assert_close(p_half[finite], p_full[finite], atol=2e-2, rtol=0)
    torch.testing.assert_close(v_half, v_full, atol=2e-2, rtol=0)
    # Unset ratings follow the model's default; given ones win.
    assert ChessformerEngine(dst).self_elo == 3000 == ChessformerEngine(dst).oppo_elo
    assert ChessformerEngine(src).self_elo == 1900
    assert ChessformerEngine(dst, self_elo=1200).self_elo == 1200
    assert load_policy(str(dst)).elo == 3000 and load_policy(str(src)).elo == DEFAULT_POLICY_ELO


def test_shipped_models_resolve_by_name(tmp_path: Path) -> None:
    assert resolve_chessformer_path(None) == resolve_chessformer_path("human")
    assert resolve_chessformer_path("engine") == shipped_chessformer_path("engine")
    assert resolve_chessformer_path(tmp_path) == tmp_path
    with pytest.raises(ModelFileError, match="shipped"):
        shipped_chessformer_path("nope")
    engine = ChessformerModel.load("engine")
    assert engine.default_elo == 3000
    assert engine.config["metrics"]["games_top1"] > 0.35  # its card reports 0.421
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")  # Ra8 mates
    (prediction,) = engine.predict([board], 3000, 3000)
    assert prediction.moves[0] in board.legal_moves
