"""``data selfplay`` with the real native engine at very low node counts: records that decode to
legal moves and agree with the game log, the quiet filter, adjudication, determinism, a killed
run resumed, disjoint shards, threads, and the path to training (self-play file -> feature cache
with game results -> NNUE steps with lambda)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import chess
import numpy as np
import pytest
import torch

from latentchess.core.alphabeta import AlphaBeta
from latentchess.data.packed_sfen import RECORD_SIZE, read_records
from latentchess.data.selfplay import SelfPlayConfig, play_game, selfplay
from latentchess.errors import LatentChessError
from latentchess.nnue.dataset import open_cache
from latentchess.training.nnue import NnueTrainConfig, score_loss
from latentchess.training.objectives.nnue import train_nnue

NODES = 150


def _config(**changes: object) -> SelfPlayConfig:
    settings: dict[str, object] = {"games": 3, "nodes": NODES, "max_plies": 160, **changes}
    return SelfPlayConfig(**settings)  # type: ignore[arg-type]


def _log(out: Path, stem: str = "selfplay-s0of1") -> list[dict[str, object]]:
    lines = (out / f"{stem}.games.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_games_are_recorded_as_legal_quiet_positions_with_their_results(tmp_path: Path) -> None:
    result = selfplay(_config(), tmp_path, progress=False)
    assert (result.games, result.new_games) == (3, 3)
    records = [record for _, record in read_records(result.path, check_moves=True)]
    assert len(records) == result.records > 50
    assert result.path.stat().st_size == RECORD_SIZE * len(records)
    games = _log(tmp_path)
    assert sorted(g["game"] for g in games) == [0, 1, 2]
    start = 0
    for game in games:  # a game's records are contiguous and carry its result
        mine = records[start : start + int(game["records"])]  # type: ignore[call-overload]
        start += len(mine)
        white = {"1-0": 1, "0-1": -1, "1/2-1/2": 0}[str(game["result"])]
        for record in mine:
            board = record.board()
            assert record.result == (white if board.turn == chess.WHITE else -white)
            assert not board.is_check() and not board.is_capture(record.move)
        plies = [record.ply for record in mine]
        assert plies == sorted(plies) and plies[0] >= 4  # after the opening's random plies
        assert game["termination"] in {
            "checkmate", "stalemate", "insufficient material", "fifty moves", "repetition",
            "resign", "adjudicated draw", "max plies",
        }  # fmt: skip
    assert start == len(records)


def test_a_game_is_a_pure_function_of_the_run_and_its_index() -> None:
    engine = AlphaBeta("nnue", hash_mb=4)
    config = _config(keep="all", openings=None, random_plies=6)
    first, again = play_game(engine, config, 5), play_game(engine, config, 5)
    assert first.records == again.records and first.opening == again.opening
    other = play_game(engine, config, 6)
    assert other.opening != first.opening
    # keep="all" records every searched position
    assert len(first.records) == first.searched


def test_an_opening_line_that_ends_the_game_is_cut_back() -> None:
    """eco.pgn's Blackburne Shilling gambit ends in mate: the game starts before the mate."""
    line = [
        "e2e4",
        "e7e5",
        "g1f3",
        "b8c6",
        "f1c4",
        "c6d4",
        "f3e5",
        "d8g5",
        "e5f7",
        "g5g2",
        "h1f1",
        "g2e4",
        "c4e2",
        "d4f3",
    ]
    board = chess.Board()
    for uci in line:
        board.push_uci(uci)
    assert board.is_checkmate()
    engine = AlphaBeta("nnue", hash_mb=4)
    for plies in (0, 2):
        game = play_game(engine, _config(random_plies=plies), 0, tuple(line))
        assert game.opening[: len(line) - 1] == tuple(line[:-1])
        assert game.searched > 0 and game.records


def test_adjudication_ends_games_early() -> None:
    engine = AlphaBeta("nnue", hash_mb=4)
    eager = _config(openings=None, resign_cp=0, resign_plies=2, draw_plies=0)
    game = play_game(engine, eager, 0)  # every score is "beyond 0" for one side or the other
    assert game.termination == "resign" and game.searched <= 4
    drawn = _config(openings=None, resign_plies=0, draw_cp=10_000, draw_plies=3, draw_min_ply=0)
    game = play_game(engine, drawn, 0)
    assert (game.termination, game.result, game.searched) == ("adjudicated draw", "1/2-1/2", 3)


def test_a_killed_run_resumes_and_keeps_every_finished_game(tmp_path: Path) -> None:
    straight = selfplay(_config(games=3), tmp_path / "a", progress=False)
    out = tmp_path / "b"
    selfplay(_config(games=2), out, progress=False)
    data, log = out / "selfplay-s0of1.bin", out / "selfplay-s0of1.games.jsonl"
    with open(data, "ab") as handle:  # a kill mid-write: a game's records without its log line
        handle.write(data.read_bytes()[: RECORD_SIZE * 3 + 11])
    with open(log, "a") as handle:
        handle.write('{"game": 2, "rec')  # and a log line cut short
    resumed = selfplay(_config(games=3), out, progress=False)
    assert (resumed.new_games, resumed.games) == (1, 3)
    assert sorted(g["game"] for g in _log(out)) == [0, 1, 2]
    assert data.read_bytes() == straight.path.read_bytes()
    with pytest.raises(LatentChessError, match=r"other settings.*nodes"):
        selfplay(_config(games=3, nodes=NODES + 1), out, progress=False)


def _records_by_game(out: Path, stem: str) -> dict[int, bytes]:
    data, offset, games = (out / f"{stem}.bin").read_bytes(), 0, {}
    for game in _log(out, stem):
        size = int(game["records"]) * RECORD_SIZE  # type: ignore[call-overload]
        games[int(game["game"])] = data[offset : offset + size]  # type: ignore[call-overload]
        offset += size
    assert offset == len(data)
    return games


def test_shards_are_disjoint_and_together_make_the_whole_run(tmp_path: Path) -> None:
    selfplay(_config(games=4), tmp_path / "whole", progress=False)
    for index in (0, 1):
        selfplay(_config(games=4, shard_index=index, num_shards=2), tmp_path, progress=False)
    whole = _records_by_game(tmp_path / "whole", "selfplay-s0of1")
    shards = [_records_by_game(tmp_path, f"selfplay-s{i}of2") for i in (0, 1)]
    assert sorted(shards[0]) == [0, 2] and sorted(shards[1]) == [1, 3]
    assert {**shards[0], **shards[1]} == whole
    # Two games at once (two threads, two engines) play the same games, in any order.
    selfplay(_config(games=4), tmp_path / "threads", workers=2, progress=False)
    assert _records_by_game(tmp_path / "threads", "selfplay-s0of1") == whole


def test_lambda_blends_the_game_result_into_the_target() -> None:
    out, score = torch.tensor([0.0, 0.0, 0.0]), torch.tensor([410.0, 410.0, 410.0])
    result = torch.tensor([1.0, 0.0, math.nan])
    p = 1 / (1 + math.exp(-1))
    wanted = [0.25 * p + 0.75, 0.25 * p, p]  # NaN: the score alone
    expected = sum(abs(0.5 - w) ** 2.6 for w in wanted) / 3
    assert float(score_loss(out, score, result, 0.25)) == pytest.approx(expected, rel=1e-5)
    assert float(score_loss(out, score, result, 1.0)) == pytest.approx(abs(0.5 - p) ** 2.6)


def test_selfplay_file_trains_the_nnue_with_lambda(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The documented path, as commands: data selfplay -> train nnue --data DIR --lambda 0.5."""
    from latentchess.cli import main

    sp, run = tmp_path / "sp", tmp_path / "run"
    flags = ["--games", "2", "--nodes", str(NODES), "--max-plies", "160", "--no-progress"]
    assert main(["data", "selfplay", "--out", str(sp), *flags]) == 0
    assert "records of 2 games" in capsys.readouterr().out
    assert main(["data", "show-bin", str(sp), "--check"]) == 0
    assert "all legal" in capsys.readouterr().out
    flags = ["--l1", "16", "--l2", "4", "--batch-size", "32", "--steps", "3", "--threads", "1"]
    flags += ["--device", "cpu", "--eval-every", "3", "--no-progress", "--lambda", "0.5"]
    assert main(["train", "nnue", "--data", str(sp), "--out", str(run), *flags]) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert summary["step"] == 3 and math.isfinite(summary["val_loss"])
    assert json.loads((run / "config.json").read_text())["score_lambda"] == 0.5
    cache = open_cache(run / "cache")  # the game results went into the feature cache
    records = [r for _, r in read_records(sp) if r.mate is None and abs(r.score) <= 5000]
    assert len(cache) == len(records) == cache.meta["rows_with_result"]
    assert cache.result is not None
    assert np.array_equal(cache.result, np.array([(1 + r.result) / 2 for r in records], "f4"))
    assert np.array_equal(cache.score, np.array([r.score for r in records], "f4"))
    with pytest.raises(LatentChessError, match="lambda must lie"):
        NnueTrainConfig(data=(str(sp),), out=tmp_path / "x", score_lambda=1.5)


def test_lambda_needs_data_with_game_results(tmp_path: Path) -> None:
    csv = tmp_path / "labels.csv"
    csv.write_text(f"{chess.STARTING_FEN},20,,0.52,e2e4,9,\n" * 4)
    cfg = NnueTrainConfig(data=(str(csv),), out=tmp_path / "run", score_lambda=0.7, steps=1,
                          device="cpu", progress=False)  # fmt: skip
    with pytest.raises(LatentChessError, match="holds none"):
        train_nnue(cfg)
