"""Shard metadata, the resumable writer, and ``data summary`` (no Stockfish needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from latentchess.cli import main
from latentchess.data.resume import RUN_METADATA_KEY, ResumableWriter, prefix_shards
from latentchess.data.store import ShardWriter, read_dataset, read_shard_metadata
from latentchess.data.summary import summarize
from latentchess.errors import DataFormatError

START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
E4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
E4_LATER = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 4 9"  # same position key
MATED = "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1"
BLACK_WINS = "8/8/8/8/8/6k1/8/6qK w - - 0 1"


def _row(fen: str, p: float, **extra: object) -> dict[str, object]:
    return {"fen": fen, "win_prob_white": p, "source": "test", **extra}


def test_shard_metadata_round_trip(tmp_path: Path) -> None:
    path = ShardWriter(tmp_path, "x").write([_row(START, 0.5)], {"k": "v"})
    assert path is not None and read_shard_metadata(path) == {"k": "v"}
    assert len(read_dataset(tmp_path)) == 1


def test_writer_commits_in_order_and_resumes_from_the_cursor(tmp_path: Path) -> None:
    config = {"command": "test", "seed": 1, "limits": (1, 2)}
    writer = ResumableWriter(tmp_path, "run", config, shard_rows=2)
    assert writer.claim(START) and writer.claim(E4)
    assert not writer.claim(E4_LATER)  # same first four FEN fields
    writer.commit([_row(START, 0.5)], cursor=1)
    writer.commit([_row(E4, 0.52)], cursor=2)  # 2 rows buffered: a shard is written
    writer.commit([], cursor=3)  # buffered cursor only: lost if killed now, which is fine
    shards = prefix_shards(tmp_path, "run")
    assert len(shards) == 1
    stored = json.loads(read_shard_metadata(shards[0])[RUN_METADATA_KEY])
    assert stored["cursor"] == 2 and stored["config"]["limits"] == [1, 2]
    # "Killed" here: a new writer resumes from the last shard's cursor and knows its rows.
    resumed = ResumableWriter(tmp_path, "run", config, shard_rows=2)
    assert resumed.cursor == 2 and resumed.rows == 2 and not resumed.claim(E4)
    with pytest.raises(ValueError, match="backwards"):
        resumed.commit([], cursor=1)
    with pytest.raises(DataFormatError, match="different settings"):
        ResumableWriter(tmp_path, "run", {**config, "seed": 2})
    other = ResumableWriter(tmp_path, "other", {"command": "other"})  # another run, same dir
    assert other.cursor == 0 and not other.claim(START)


def test_writer_flushes_on_time(tmp_path: Path) -> None:
    writer = ResumableWriter(tmp_path, "run", {}, shard_rows=1000, flush_seconds=0.0)
    writer.claim(START)
    writer.commit([_row(START, 0.5)], cursor=1)
    assert len(prefix_shards(tmp_path, "run")) == 1


def test_prefixes_do_not_collide(tmp_path: Path) -> None:
    ShardWriter(tmp_path, "label_a_b").write([_row(START, 0.5)])
    assert prefix_shards(tmp_path, "label_a") == []
    with pytest.raises(ValueError, match="prefix"):
        ResumableWriter(tmp_path, "bad-prefix", {})


def test_summary_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    writer = ShardWriter(tmp_path, "part")
    writer.write([_row(START, 0.5, depth=9, nodes=100, game=0), _row(E4, 0.55, depth=9, nodes=300)])
    writer.write(
        [
            _row(MATED, 1.0, mate_white=0, depth=0, nodes=0, game=0),
            _row(BLACK_WINS, 0.0, mate_white=-1, depth=9, nodes=50, game=1),
        ]
    )
    summary = summarize(tmp_path)
    assert summary.rows == 4 and summary.shards == 2 and summary.unique_positions == 4
    assert summary.white_mates == 1 and summary.black_mates == 1 and summary.checkmates == 1
    assert summary.white_to_move == 2 and summary.games == 2
    assert summary.histogram == [1, 0, 0, 0, 0, 2, 0, 0, 0, 1]
    assert summary.depth_counts == {0: 1, 9: 3}
    assert summary.nodes_median == 100
    assert main(["data", "summary", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "4 rows in 2 shards" in text and "White's win probability" in text
    assert "White mates (p = 1.0) 1, Black mates (p = 0.0) 1" in text
    assert main(["data", "summary", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 4
    assert main(["data", "summary", str(tmp_path / "missing")]) == 2
