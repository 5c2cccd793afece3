"""``data generate``: real Stockfish self-play at a tiny depth, sharding, merge, kill and resume."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import chess
import chess.engine
import pytest

from latentchess.data.generate import GenerateConfig, generate
from latentchess.data.merge import merge_datasets
from latentchess.data.stockfish import find_stockfish
from latentchess.data.store import read_dataset, shard_paths
from latentchess.encoding import fen_key
from latentchess.errors import DataFormatError

DEPTH = 4


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    out = tmp_path_factory.mktemp("generated")
    config = GenerateConfig(positions=160, seed=7, depth=DEPTH)
    result = generate(config, out, workers=2, shard_rows=50, progress=False)
    assert result.rows == 160 and result.new_rows == 160
    assert result.labelled >= 160
    return out, read_dataset(out).to_pylist()


def test_rows_are_unique_and_labels_well_formed(generated: tuple[Path, list[dict]]) -> None:
    _, rows = generated
    assert len(rows) == 160
    assert len({fen_key(r["fen"]) for r in rows}) == 160
    for row in rows:
        board = chess.Board(row["fen"])
        assert board.is_valid()
        p = row["win_prob_white"]
        assert 0.0 <= p <= 1.0
        assert row["source"] == "generate"
        if row["mate_white"] is not None:
            assert p in (0.0, 1.0) and row["cp_white"] is None
            if row["mate_white"] == 0:
                assert board.is_checkmate() and row["depth"] == 0
                assert p == (1.0 if board.turn == chess.BLACK else 0.0)
            else:
                assert p == (1.0 if row["mate_white"] > 0 else 0.0)
        else:
            assert 0.0 < p < 1.0 and row["cp_white"] is not None
        if row["depth"]:
            assert row["depth"] >= DEPTH and row["nodes"] > 0
            assert chess.Move.from_uci(row["best_move"]) in board.legal_moves
    turns = {chess.Board(r["fen"]).turn for r in rows}
    assert turns == {chess.WHITE, chess.BLACK}
    by_game: dict[int, list[int]] = {}
    for row in rows:
        by_game.setdefault(row["game"], []).append(row["ply"])
    for plies in by_game.values():
        assert plies == sorted(plies)


def test_labels_are_whites_perspective(generated: tuple[Path, list[dict]]) -> None:
    _, rows = generated
    decided = [r for r in rows if r["cp_white"] is not None and abs(r["cp_white"]) > 150]
    black_to_move = [r for r in decided if " b " in r["fen"]][:4]
    white_to_move = [r for r in decided if " w " in r["fen"]][:2]
    assert black_to_move, "expected some clearly decided Black-to-move positions"
    with chess.engine.SimpleEngine.popen_uci(str(find_stockfish())) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        for row in black_to_move + white_to_move:
            info = engine.analyse(chess.Board(row["fen"]), chess.engine.Limit(depth=DEPTH))
            direct = info["score"].white().score(mate_score=100_000)
            # Hash contents differ from the game's, so scores may differ a little; signs may not.
            assert (direct > 0) == (row["cp_white"] > 0), (row, direct)


def test_a_game_is_played_out_to_mate_and_the_mate_is_labelled(tmp_path: Path) -> None:
    openings = tmp_path / "scholar.pgn"
    openings.write_text('[Event "x"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 *\n')
    config = GenerateConfig(
        positions=2,
        seed=0,
        depth=DEPTH,
        openings=openings,
        random_opening_plies=0,
        random_move_prob=0.0,
        temperatures=(1.0,),
    )
    generate(config, tmp_path / "out", workers=1, progress=False)
    rows = sorted(read_dataset(tmp_path / "out").to_pylist(), key=lambda r: r["ply"])
    assert [r["mate_white"] for r in rows] == [1, 0]
    assert [r["win_prob_white"] for r in rows] == [1.0, 1.0]
    assert rows[0]["best_move"] == "h5f7"
    assert chess.Board(rows[1]["fen"]).is_checkmate()


def test_shards_are_disjoint_and_merge_deduplicates(tmp_path: Path) -> None:
    parts = []
    for index in range(2):
        config = GenerateConfig(
            positions=100, seed=11, depth=DEPTH, shard_index=index, num_shards=2
        )
        out = tmp_path / f"shard{index}"
        result = generate(config, out, workers=1, progress=False)
        assert result.rows == 50
        rows = read_dataset(out).to_pylist()
        assert {r["game"] % 2 for r in rows} == {index}
        assert all(p.name.startswith(f"gen_s{index}of2-") for p in shard_paths(out))
        parts.append(rows)
    games0 = {r["game"] for r in parts[0]}
    games1 = {r["game"] for r in parts[1]}
    assert not games0 & games1
    shutil.copytree(tmp_path / "shard0", tmp_path / "shard0_copy")
    inputs = [tmp_path / "shard0", tmp_path / "shard1", tmp_path / "shard0_copy"]
    merged = merge_datasets(inputs, tmp_path / "merged", progress=False)
    keys = [fen_key(r["fen"]) for r in read_dataset(tmp_path / "merged").to_pylist()]
    distinct = {fen_key(r["fen"]) for r in parts[0] + parts[1]}
    assert len(keys) == len(set(keys)) == len(distinct) == merged.rows
    assert merged.duplicates >= 50
    again = merge_datasets(inputs, tmp_path / "merged", progress=False)  # resumes: nothing to do
    assert again.rows == merged.rows and again.duplicates == 0


def test_resuming_with_other_settings_is_refused(tmp_path: Path) -> None:
    generate(GenerateConfig(positions=10, seed=1, depth=DEPTH), tmp_path, workers=1, progress=False)
    with pytest.raises(DataFormatError, match="different settings"):
        generate(GenerateConfig(positions=20, seed=2, depth=DEPTH), tmp_path, workers=1)
    more = generate(GenerateConfig(positions=20, seed=1, depth=DEPTH), tmp_path, workers=1)
    assert more.rows == 20 and more.new_rows == 10


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_kill_9_then_rerun_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    out = tmp_path / "data"
    command = [
        sys.executable, "-m", "latentchess", "data", "generate", "--out", str(out),
        "--positions", "300", "--seed", "5", "--depth", str(DEPTH), "--workers", "2",
        "--shard-rows", "20", "--max-plies", "70", "--no-progress",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    try:
        while not (out.exists() and shard_paths(out)):
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "no shard landed within 60 s"
            time.sleep(0.02)
        helpers = _descendants(process.pid)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
    before = read_dataset(out).to_pylist()
    assert 0 < len(before) < 300, "the run must be cut short for this test to mean anything"
    # Workers and their Stockfish processes notice the dead parent and exit.
    deadline = time.monotonic() + 20
    while any(_alive(pid) for pid in helpers):
        assert time.monotonic() < deadline, f"orphans still running: {helpers}"
        time.sleep(0.1)
    finished = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    assert "300 rows" in finished.stdout
    after = read_dataset(out).to_pylist()
    keys = [fen_key(r["fen"]) for r in after]
    assert len(after) == 300
    assert len(set(keys)) == 300
    assert {r["fen"] for r in before} <= {r["fen"] for r in after}
    assert not list(out.glob(".*.tmp"))
