"""``build_cache`` / ``data build-cache``: Parquet dataset -> memory-mapped tokens, built once."""

from __future__ import annotations

from pathlib import Path

import chess
import numpy as np
import pytest

from latentchess.cli import main
from latentchess.data import build_cache, write_cache
from latentchess.data.store import ShardWriter
from latentchess.encoding import detokenize
from latentchess.errors import DataFormatError


def _positions(n: int, seed: int = 0) -> list[str]:
    """FENs along a random game (restarted when it ends), all distinct."""
    rng = np.random.default_rng(seed)
    board, fens = chess.Board(), []
    while len(fens) < n:
        if board.is_game_over():
            board = chess.Board()
        moves = list(board.legal_moves)
        board.push(moves[int(rng.integers(len(moves)))])
        if board.fen() not in fens:
            fens.append(board.fen())
    return fens


def _dataset(directory: Path, fens: list[str], shard_sizes: list[int]) -> list[float]:
    labels = [round((i * 0.37) % 1.0, 6) for i in range(len(fens))]
    writer, start = ShardWriter(directory, "part"), 0
    for size in shard_sizes:
        rows = [
            {"fen": fen, "win_prob_white": p, "source": "test"}
            for fen, p in zip(fens[start : start + size], labels[start : start + size], strict=True)
        ]
        writer.write(rows)
        start += size
    return labels


def test_round_trip_in_small_chunks(tmp_path: Path) -> None:
    fens = _positions(23)
    labels = _dataset(tmp_path / "data", fens, [10, 13])
    cache = build_cache(tmp_path / "data", tmp_path / "cache", chunk_rows=4, progress=False)
    assert len(cache) == 23 and cache.tokens.shape == (23, 77)
    assert [detokenize(row) for row in cache.tokens] == fens
    np.testing.assert_array_equal(cache.win_prob_white, np.asarray(labels, dtype=np.float32))
    assert cache.meta["source"] == str(tmp_path / "data")


def test_built_once_then_reused_until_the_dataset_changes(tmp_path: Path) -> None:
    fens = _positions(30)
    _dataset(tmp_path / "data", fens[:20], [20])
    first = build_cache(tmp_path / "data", tmp_path / "cache", progress=False)
    tokens_file = tmp_path / "cache" / "tokens.u8"
    stamp = tokens_file.stat().st_mtime_ns
    again = build_cache(tmp_path / "data", tmp_path / "cache", progress=False)
    assert len(again) == len(first) == 20
    assert tokens_file.stat().st_mtime_ns == stamp  # reused, not rewritten
    ShardWriter(tmp_path / "data", "part").write(
        [{"fen": fen, "win_prob_white": 0.5, "source": "test"} for fen in fens[20:]]
    )
    grown = build_cache(tmp_path / "data", tmp_path / "cache", progress=False)
    assert len(grown) == 30
    assert detokenize(grown.tokens[29]) == fens[29]


def test_incomplete_cache_is_rebuilt(tmp_path: Path) -> None:
    _dataset(tmp_path / "data", _positions(8), [8])
    build_cache(tmp_path / "data", tmp_path / "cache", progress=False)
    (tmp_path / "cache" / "tokens.u8").write_bytes(b"truncated")
    assert len(build_cache(tmp_path / "data", tmp_path / "cache", progress=False)) == 8


def test_bad_fen_is_named_by_shard_and_row(tmp_path: Path) -> None:
    fens = _positions(5)
    fens[3] = "not a fen"
    _dataset(tmp_path / "data", fens, [5])
    with pytest.raises(DataFormatError, match=r"part-000000\.parquet: row 3: invalid FEN"):
        build_cache(tmp_path / "data", tmp_path / "cache", chunk_rows=2, progress=False)
    with pytest.raises(DataFormatError, match="no Parquet shards"):
        build_cache(tmp_path / "empty", tmp_path / "cache2", progress=False)


def test_cli_build_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _dataset(tmp_path / "data", _positions(12), [5, 7])
    args = ["data", "build-cache", str(tmp_path / "data"), "--out", str(tmp_path / "cache")]
    assert main([*args, "--no-progress"]) == 0
    assert "build-cache: 12 positions" in capsys.readouterr().out


def test_float32_cast_makes_no_fake_forced_mates(tmp_path: Path) -> None:
    # Exact 1.0 / 0.0 select the advantage axis's forced mates; 1 - 1e-9 (about +5,600 cp) and
    # 1e-50 must not round onto them in the float32 cache, while exact values stay exact.
    fens = _positions(4)
    labels = [1.0 - 1e-9, 1e-50, 1.0, 0.0]
    rows = [
        {"fen": fen, "win_prob_white": p, "source": "test"}
        for fen, p in zip(fens, labels, strict=True)
    ]
    ShardWriter(tmp_path / "data", "part").write(rows)
    built = build_cache(tmp_path / "data", tmp_path / "cache", progress=False).win_prob_white
    written = write_cache(tmp_path / "direct", np.zeros((4, 77), np.uint8), labels).win_prob_white
    for cached in (np.asarray(built), np.asarray(written)):
        assert 0.0 < cached[1] < cached[0] < 1.0
        assert cached[2] == 1.0 and cached[3] == 0.0
