"""The human model's training options (a-h mirror, time-control input, fine-tuning, mixed data)
and eval-human's per-speed report, per-game hits, paired differences and empty-protocol error,
each on tiny data made here."""

from __future__ import annotations

import json
import lzma
import random
from pathlib import Path

import chess
import chess.pgn
import numpy as np
import pytest
import torch

from chessformer_fixtures import random_game, train_config, write_rated_pgn
from latentchess.cli import main
from latentchess.data.moves import TIME_CONTROL_BANDS, read_pgn_moves, time_control_band
from latentchess.errors import LatentChessError
from latentchess.evaluation.human import paired_difference
from latentchess.models.chessformer import SPEED_BANDS, Chessformer, ChessformerConfig
from latentchess.models.chessformer_io import load_chessformer, save_chessformer
from latentchess.squares import POLICY_SIZE, board_pieces, encode_pieces, move_index
from latentchess.training.data import StepPrefetcher
from latentchess.training.distributed import DistContext
from latentchess.training.objectives.chessformer import (
    MIRROR_POLICY,
    ChessformerObjective,
    ChessformerTrainConfig,
    mirror_batch,
    mirror_eligible,
    mix_count,
    train_chessformer,
)

NANO = ChessformerConfig(
    d_model=16, layers=1, heads=2, gab_hidden=8, gab_templates=4, head_dim=16, elo_dim=4, history=2
)


def _config(data: Path, out: Path, **changes: object) -> ChessformerTrainConfig:
    settings: dict[str, object] = dict(model=NANO, steps=4, warmup=1, eval_every=0, log_every=1)
    settings.update(changes)
    model = settings.pop("model")
    return train_config(data, out, model, **settings)  # type: ignore[arg-type]


def _pgn(path: Path, tcs: list[str], plies: int = 40, seed: int = 1) -> Path:
    """Random rated games with the given TimeControl tags and a [%clk] of 100 s on each move."""
    rng = random.Random(seed)
    texts = []
    for index, tc in enumerate(tcs):
        game = random_game(rng, plies)
        game.headers.update(
            White=f"w{index}",
            Black=f"b{index}",
            WhiteElo=str(1200 + 50 * index),
            BlackElo="1500",
            TimeControl=tc,
            Site=f"https://lichess.org/g{index:04d}",
            Result="1/2-1/2",
        )
        for node in game.mainline():
            node.set_clock(100.0)
        texts.append(f"{game}\n\n")
    path.write_text("".join(texts))
    return path


@pytest.fixture(scope="module")
def speeds_pgn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("speeds")
    return _pgn(folder / "games.pgn", ["60+0", "180+2", "600+0", "1800+0", "180+0", "?"] * 2)


def test_eval_human_that_keeps_nothing_names_the_filters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rapid = _pgn(tmp_path / "rapid.pgn", ["600+5"] * 3 + ["900+10"] * 2, plies=30)
    assert main(["eval-human", str(rapid), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "kept no position of the 5 games (150 positions)" in err
    assert "games of another speed than blitz: 5 games, 150 positions" in err
    assert "rapid 5 games / 150 positions" in err and "--time-control any" in err
    # every speed kept, but the skipped plies and the clock remove the rest
    flags = ["--time-control", "any", "--skip-plies", "20", "--min-clock", "120"]
    assert main(["eval-human", str(rapid), *flags, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "positions in first plies: 5 games, 100 positions (rapid 5 games / 100" in err
    assert "keep them with --skip-plies 0" in err
    assert "positions after low clock: 5 games, 50 positions" in err and "--min-clock 0" in err
    assert "another speed" not in err


def test_time_control_bands_of_games(speeds_pgn: Path, tmp_path: Path) -> None:
    assert len(TIME_CONTROL_BANDS) == SPEED_BANDS
    assert [time_control_band(t) for t in ("15+0", "60+0", "180+2", "600+0", "1800+0", "-")] == [
        1,
        1,
        2,
        3,
        4,
        4,
    ]
    assert time_control_band("?") == 0
    data = read_pgn_moves(speeds_pgn, progress=False)
    per_game = {int(g): int(data.speed[data.game == g][0]) for g in np.unique(data.game)}
    assert [per_game[g] for g in range(6)] == [1, 2, 3, 4, 2, 0]
    # move caches written before the band load it as unknown
    data.save(tmp_path / "new.npz")
    with np.load(tmp_path / "new.npz") as arrays:
        np.savez(tmp_path / "old.npz", **{k: arrays[k] for k in arrays.files if k != "speed"})
    old = type(data).load(tmp_path / "old.npz")
    assert old.speed.dtype == np.int8 and not old.speed.any()


def test_time_control_input_starts_at_zero_and_old_configs_load(tmp_path: Path) -> None:
    torch.manual_seed(0)
    old = Chessformer(NANO)
    assert "time_control" not in NANO.to_dict()  # configs of older models are unchanged
    assert ChessformerConfig.from_dict(NANO.to_dict()) == NANO
    new_cfg = ChessformerConfig(**{**NANO.to_dict(), "time_control": True})
    new = Chessformer(new_cfg)
    missing, unexpected = new.load_state_dict(old.state_dict(), strict=False)
    assert missing == ["speed_embedding"] and not unexpected
    features = torch.rand(3, 64, NANO.input_features)
    elo = torch.tensor([1200.0, 1500.0, 2000.0])
    speed = torch.tensor([1, 2, 4])
    with torch.no_grad():
        for a, b in zip(old(features, elo, elo), new(features, elo, elo, speed), strict=True):
            torch.testing.assert_close(a, b)
        new.speed_embedding.data[2] = 1.0  # a trained band changes only its games
        policy, _ = new(features, elo, elo, speed)
        plain, _ = old(features, elo, elo)
    assert torch.equal(policy[0], plain[0]) and not torch.allclose(policy[1], plain[1])
    with torch.no_grad():  # no band given is the band "unknown" (row 0), as engine data trains it
        new.speed_embedding.data[0] = 0.5
        unknown = new(features, elo, elo, torch.zeros(3, dtype=torch.long))[0]
        torch.testing.assert_close(new(features, elo, elo)[0], unknown)
    path = save_chessformer(tmp_path / "tc", new, {})
    loaded, config = load_chessformer(path)
    assert config["chessformer"]["time_control"] is True
    torch.testing.assert_close(loaded.speed_embedding, new.speed_embedding)


def _window_boards(game: chess.pgn.Game, history: int) -> list[list[chess.Board]]:
    """Per position: the current board and ``history`` previous ones (the first repeated)."""
    boards, out = [], []
    board = game.board()
    for move in game.mainline_moves():
        boards.append(board.copy(stack=False))
        out.append([boards[max(len(boards) - 1 - j, 0)] for j in range(history + 1)])
        board.push(move)
    return out


def test_mirror_matches_python_chess_flip_horizontal(tmp_path: Path) -> None:
    pgn = write_rated_pgn(tmp_path / "g.pgn", games=4, plies=120, seed=5)
    data = read_pgn_moves(pgn, progress=False)
    history = 2
    games = []
    with open(pgn) as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            games.append(game)
    windows = [w for game in games for w in _window_boards(game, history)]
    moves = [m for game in games for m in game.mainline_moves()]
    assert len(windows) == len(data)
    rows = np.arange(len(data))
    eligible = mirror_eligible(data, rows, history)
    no_rights = np.array([not any(b.castling_rights for b in w) for w in windows])
    assert np.array_equal(eligible, no_rights) and 10 < eligible.sum() < len(rows)
    assert np.array_equal(MIRROR_POLICY[MIRROR_POLICY], np.arange(POLICY_SIZE))

    from latentchess.data.moves import batch_features

    features = batch_features(data, rows, history=history, side=False)
    legal = data.legal_mask(rows, POLICY_SIZE)
    move = data.move.astype(np.int64)
    mirror_batch(features, legal, move, eligible)
    for row in np.flatnonzero(eligible):
        flipped = [b.transform(chess.flip_horizontal) for b in windows[row]]
        board = flipped[0]
        pieces = np.stack([board_pieces(b) for b in flipped])[None]
        expected = encode_pieces(pieces, np.array([board.turn]))[0]
        assert np.array_equal(features[row], expected), row
        m = moves[row]  # the a-h mirror of a square is s ^ 7, as flip_horizontal does it
        mirrored_move = chess.Move(m.from_square ^ 7, m.to_square ^ 7, m.promotion)
        assert mirrored_move in board.legal_moves
        assert move[row] == move_index(mirrored_move, board.turn)
        expected_legal = np.zeros(POLICY_SIZE, dtype=bool)
        expected_legal[[move_index(x, board.turn) for x in board.legal_moves]] = True
        assert np.array_equal(legal[row], expected_legal)
    untouched = ~eligible
    assert np.array_equal(move[untouched], data.move[untouched])


def test_mix_share_decays_linearly_step_by_step(tmp_path: Path, speeds_pgn: Path) -> None:
    assert [mix_count(0.5, s, 4, 32) for s in range(5)] == [16, 12, 8, 4, 0]
    engine = write_rated_pgn(tmp_path / "engine.pgn", games=6, plies=40, seed=9)
    mix = read_pgn_moves(engine, progress=False)
    mix.save(tmp_path / "mix.npz")
    cfg = _config(speeds_pgn, tmp_path / "run", steps=4, mix_data=tmp_path / "mix.npz")
    with pytest.raises(ValueError, match="mix_share"):
        _config(speeds_pgn, tmp_path / "x", mix_share=0.5)
    cfg = _config(
        speeds_pgn, tmp_path / "run", steps=4, mix_data=tmp_path / "mix.npz", mix_share=0.5
    )
    objective = ChessformerObjective(cfg, DistContext())
    seen = []
    for step in range(4):
        rows, mix_rows = objective.batch_rows(step)
        assert len(mix_rows) == [16, 12, 8, 4][step] and len(rows) + len(mix_rows) == 32
        assert not objective.mix.game_heldout[mix_rows].any()  # type: ignore[union-attr]
        seen.extend(mix_rows.tolist())
    assert len(set(seen)) == len(seen)  # one pass over the mix data without repeats
    result = train_chessformer(cfg)
    assert result.step == 4
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    shares = [r["mix_share"] for r in records if r["kind"] == "train"]
    assert shares == pytest.approx([0.5, 0.375, 0.25, 0.125])


def test_init_from_and_options_train(tmp_path: Path, speeds_pgn: Path) -> None:
    torch.manual_seed(3)
    start = save_chessformer(tmp_path / "start", Chessformer(NANO), {})
    # a tiny learning rate: the fine-tuned model is the start (plus a zero time-control input)
    cfg = _config(
        speeds_pgn,
        tmp_path / "ft",
        steps=1,
        lr=1e-12,
        init_from=start,
        mirror=0.5,
        model=ChessformerConfig(**{**NANO.to_dict(), "time_control": True}),
    )
    assert cfg.to_dict()["init_from"] == str(start) and "mix_data" not in cfg.to_dict()
    train_chessformer(cfg)
    tuned, config = load_chessformer(tmp_path / "ft" / "model")
    original, _ = load_chessformer(start)
    for name, value in original.state_dict().items():
        torch.testing.assert_close(tuned.state_dict()[name], value, atol=1e-6, rtol=0)
    assert config["training"]["mirror"] == 0.5
    other = ChessformerConfig(**{**NANO.to_dict(), "d_model": 32, "head_dim": 32})
    with pytest.raises(LatentChessError, match="another architecture"):
        train_chessformer(_config(speeds_pgn, tmp_path / "bad", init_from=start, model=other))
    # the CLI takes the architecture from --init-from
    out = tmp_path / "cli"
    argv = ["train", "chessformer", "--data", str(speeds_pgn), "--out", str(out)]
    argv += ["--init-from", str(start), "--time-control", "--mirror", "0.5", "--steps", "2"]
    argv += ["--batch-size", "16", "--eval-every", "0", "--no-progress", "--threads", "1"]
    argv += ["--holdout-fraction", "0.2", "--device", "cpu"]
    assert main(argv) == 0
    assert load_chessformer(out / "model")[0].cfg.d_model == NANO.d_model


def test_eval_human_reports_speeds_and_paired_differences(
    tmp_path: Path, speeds_pgn: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torch.manual_seed(4)
    cfg = ChessformerConfig(**{**NANO.to_dict(), "time_control": True})
    model = Chessformer(cfg)
    a = save_chessformer(tmp_path / "a", model, {})
    with torch.no_grad():
        model.speed_embedding.normal_()
    b = save_chessformer(tmp_path / "b", model, {})
    flags = ["--time-control", "any", "--skip-plies", "0", "--min-clock", "0", "--no-progress"]
    for name, path in (("a", a), ("b", b)):
        argv = ["eval-human", str(speeds_pgn), "--model", str(path), *flags]
        assert main([*argv, "--json", str(tmp_path / f"{name}.json")]) == 0
    out = capsys.readouterr().out
    assert "bullet" in out and "classical" in out and "unknown" in out
    results = [json.loads((tmp_path / f"{n}.json").read_text()) for n in ("a", "b")]
    speeds = results[0]["by_speed"]
    assert set(speeds) == {"unknown", "bullet", "blitz", "rapid", "classical"}
    assert speeds["blitz"]["games"] == 4
    assert sum(s["positions"] for s in speeds.values()) == results[0]["positions"]
    per_game = results[0]["per_game"]
    assert sum(per_game["positions"]) == results[0]["positions"]
    assert sum(per_game["hits"]) == round(results[0]["accuracy"] * results[0]["positions"])
    same = paired_difference(results[0], results[0])
    assert same["difference"] == 0 and same["ci95"] == [0.0, 0.0]
    # a result stored compressed is found under its plain name
    xz = tmp_path / "b.json.xz"
    xz.write_bytes(lzma.compress((tmp_path / "b.json").read_bytes()))
    (tmp_path / "b.json").unlink()
    diff = paired_difference(tmp_path / "a.json", tmp_path / "b.json", draws=500)
    assert diff["difference"] == pytest.approx(results[1]["accuracy"] - results[0]["accuracy"])
    assert diff["ci95"][0] <= diff["difference"] <= diff["ci95"][1]
    shorter = {**results[1], "per_game": {k: v[:-1] for k, v in per_game.items()}}
    with pytest.raises(ValueError, match="not paired"):
        paired_difference(results[0], shorter)


def test_loader_workers_make_the_same_batches_and_resume(tmp_path: Path, speeds_pgn: Path) -> None:
    engine = write_rated_pgn(tmp_path / "engine.pgn", games=6, plies=40, seed=9)
    read_pgn_moves(engine, progress=False).save(tmp_path / "mix.npz")
    options = dict(steps=6, mirror=0.5, mix_data=tmp_path / "mix.npz", mix_share=0.5)
    plain = _config(speeds_pgn, tmp_path / "plain", **options)
    objective = ChessformerObjective(plain, DistContext())
    with pytest.raises(ValueError, match="loader_workers"):
        _config(speeds_pgn, tmp_path / "x", loader_workers=-1)
    # the workers' batch of a step is the one the training process would make
    prefetcher = StepPrefetcher(objective.batch_arrays, 6, 2, prefetch=2)
    for step in (0, 1, 4, 2):  # out of order: the workers restart there
        made, own = prefetcher.get(step), objective.batch_arrays(step)
        assert made.keys() == own.keys()
        for key, value in own.items():
            assert np.array_equal(made[key].numpy(), value), (step, key)
    prefetcher.close()
    with pytest.raises(IndexError):
        prefetcher.get(6)
    train_chessformer(plain)
    # two workers, and a run stopped after 3 steps then resumed: the same weights, bit for bit
    train_chessformer(_config(speeds_pgn, tmp_path / "workers", **options, loader_workers=2))
    cut = _config(speeds_pgn, tmp_path / "resumed", **{**options, "steps": 6}, loader_workers=1)
    train_chessformer(cut, on_step=lambda step: _stop_after(step, 3))
    assert train_chessformer(cut).resumed_from == 3
    expected = load_chessformer(tmp_path / "plain" / "model")[0].state_dict()
    for run in ("workers", "resumed"):
        weights = load_chessformer(tmp_path / run / "model")[0].state_dict()
        for name, value in expected.items():
            assert torch.equal(weights[name], value), (run, name)


def _stop_after(step: int, last: int) -> None:
    if step == last:
        import os
        import signal

        os.kill(os.getpid(), signal.SIGTERM)
