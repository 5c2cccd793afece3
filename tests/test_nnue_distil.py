"""Static-evaluation labels (nnue label-static): real Stockfish, quiet positions, resume, cache."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import chess
import pytest

from latentchess.cli import main as cli_main
from latentchess.core import _native
from latentchess.nnue.dataset import build_cache, parse_source
from latentchess.nnue.distil import DistilConfig, StaticEvaluator, iter_fens, label_static
from latentchess.nnue.features import parse_feature_set

STOCKFISH = "/usr/games/stockfish"


def _positions(path: Path, count: int = 60, seed: int = 3) -> list[str]:
    """A CSV whose first column holds FENs of random games (the other columns do not matter)."""
    rng, fens = random.Random(seed), []
    board = chess.Board()
    while len(fens) < count:
        moves = list(board.legal_moves)
        if not moves or board.ply() > 40:
            board = chess.Board()
            continue
        board.push(rng.choice(moves))
        fens.append(board.fen())
    path.write_bytes(gzip.compress("".join(f"{f},0,,0.5,,9,\n" for f in fens).encode()))
    return fens


def _read_parts(out: Path) -> list[list[str]]:
    rows = []
    for part in sorted(out.glob("part-*.csv.gz")):
        text = gzip.decompress(part.read_bytes()).decode()
        rows += [line.split(",") for line in text.splitlines()]
    return rows


def test_static_evaluator_answers_in_white_view() -> None:
    with StaticEvaluator(STOCKFISH) as stockfish:
        # White a queen up: positive whoever is to move; in check: no static evaluation.
        up = stockfish.evaluate("4k3/8/8/8/8/8/8/3QK3 w - - 0 1")
        up_black = stockfish.evaluate("4k3/8/8/8/8/8/8/3QK3 b - - 0 1")
        checked = stockfish.evaluate("4k3/8/8/8/8/8/4Q3/4K3 b - - 0 1")
    assert up is not None and up > 500
    assert up_black is not None and up_black > 500
    assert checked is None


def test_label_static_writes_quiet_labelled_parts_and_resumes(tmp_path: Path) -> None:
    source = tmp_path / "fens.csv.gz"
    _positions(source, count=60)
    out = tmp_path / "static"
    cfg = DistilConfig(sources=(source,), out=out, chunk=20, progress=False, seed=1)
    counts = label_static(cfg)
    assert counts["kept"] + counts["not_quiet"] + counts["no_move"] == 60
    assert counts["kept"] > 10
    rows = _read_parts(out)
    assert len(rows) == counts["kept"]
    assert sorted(p.name for p in out.glob("part-*")) == [f"part-00000{i}.csv.gz" for i in range(3)]
    for fen, cp, mate, win, best, depth, gap in rows:
        position = _native.Position(fen)
        assert not position.in_check()
        for bits in position.legal_captures():  # no capture wins material by exchange
            assert not _native.see_at_least(position, _native.move_to_uci(bits), 1)
        assert mate == "" and best == "" and depth == "0" and gap == ""
        assert 0.0 < float(win) < 1.0 and (float(win) > 0.5) == (int(cp) > 0)
    # Resume: a lost part is made again, identically; the others are kept.
    first = sorted(out.glob("part-*"))[1]
    before = first.read_bytes()
    first.unlink()
    again = label_static(cfg)
    assert again["skipped_done"] == 2
    assert gzip.decompress(first.read_bytes()) == gzip.decompress(before)
    # Shards split the chunks: 0/2 takes chunks 0 and 2, 1/2 chunk 1.
    sharded = tmp_path / "sharded"
    for index in (0, 1):
        label_static(
            DistilConfig(
                sources=(source,), out=sharded, chunk=20, progress=False, seed=1, shard=(index, 2)
            )
        )
    assert _read_parts(sharded) == rows
    # A limit rounds up to whole chunks: no partial part a later run would take as done.
    limited = label_static(
        DistilConfig(
            sources=(source,), out=tmp_path / "limited", chunk=20, progress=False, seed=1, limit=25
        )
    )
    assert limited["kept"] + limited["not_quiet"] + limited["no_move"] == 40
    assert _read_parts(tmp_path / "limited") == rows[: limited["kept"]]


def test_static_labels_feed_the_feature_cache(tmp_path: Path) -> None:
    source = tmp_path / "fens.csv.gz"
    _positions(source, count=40)
    out = tmp_path / "static"
    assert cli_main(["nnue", "label-static", str(source), "--out", str(out), "--no-progress"]) == 0
    rows = _read_parts(out)
    fs = parse_feature_set("ALL")
    for native in (True, False):  # a directory source; rows without a best move are kept
        cache = build_cache(
            [parse_source(str(out))],
            tmp_path / f"cache-{native}",
            fs,
            progress=False,
            use_native=native,
        )
        assert len(cache) == len(rows)
        for i, (fen, cp, *_rest) in enumerate(rows):
            black = chess.Board(fen).turn == chess.BLACK
            assert cache.stm[i] == black
            assert cache.score[i] == pytest.approx(-float(cp) if black else float(cp))
    with pytest.raises(Exception, match="does not exist"):
        label_static(DistilConfig(sources=(tmp_path / "missing.csv",), out=out, progress=False))


def test_label_static_reads_selfplay_records(tmp_path: Path) -> None:
    """`data selfplay` .bin files (or a directory of them) are sources: each record's position,
    relabelled by Stockfish, the record's own score not kept."""
    from latentchess.data.packed_sfen import encode_score, pack_record, write_records

    fens = _positions(tmp_path / "positions.csv.gz", count=30, seed=5)
    records = []
    for fen in fens:
        board = chess.Board(fen)
        if board.is_game_over():
            continue
        records.append(pack_record(board, encode_score(12345), next(iter(board.legal_moves)), 0))
    games = tmp_path / "games"
    games.mkdir()
    write_records(games / "selfplay-s0of1.bin", records)
    from_file = tmp_path / "from-file"
    keep_all = DistilConfig(
        sources=(games / "selfplay-s0of1.bin",), out=from_file, progress=False, random_plies=(1.0,)
    )
    counts = label_static(keep_all)
    assert counts["kept"] + counts["not_quiet"] == len(records) and counts["kept"] > 5
    rows = _read_parts(from_file)
    wanted = {" ".join(fen.split()[:2]) for fen in fens}  # placement and side to move
    assert {" ".join(row[0].split()[:2]) for row in rows} <= wanted  # the records' own positions
    assert all(row[1] != "12345" for row in rows)  # Stockfish's label, not the record's score
    from_dir = tmp_path / "from-dir"
    label_static(DistilConfig(sources=(games,), out=from_dir, progress=False, random_plies=(1.0,)))
    assert _read_parts(from_dir) == rows
    # Records are numbered from 0, as read_records and its errors number them (lines from 1).
    numbered = [(path.name, number) for path, number, _ in iter_fens((games,))]
    assert numbered == [("selfplay-s0of1.bin", n) for n in range(len(records))]
    assert [n for _, n, _ in iter_fens((tmp_path / "positions.csv.gz",))][:2] == [1, 2]
    from latentchess.data.store import ShardWriter  # data label's Parquet: rows from 1

    ShardWriter(tmp_path / "labelled", prefix="label").write(
        [{"fen": fen, "win_prob_white": 0.5, "source": "test"} for fen in fens[:2]]
    )
    assert [(p.name, n, f) for p, n, f in iter_fens((tmp_path / "labelled",))] == [
        ("label-000000.parquet", 1, fens[0]),
        ("label-000000.parquet", 2, fens[1]),
    ]
    (tmp_path / "empty").mkdir()
    with pytest.raises(Exception, match=r"holds no \.bin, \.parquet or labelled CSV files"):
        label_static(DistilConfig(sources=(tmp_path / "empty",), out=tmp_path / "none"))
