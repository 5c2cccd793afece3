"""ChessBench bags: container and record codings checked against bytes built here by hand from
the format description, error locations, and import into a dataset (grouping, perspective, resume).
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import chess
import pytest
import zstandard

from latentchess.data.bag import ZSTD_MAGIC
from latentchess.data.chessbench import (
    KINDS,
    ActionValue,
    BagReader,
    BehavioralCloning,
    StateValue,
    decode_action_value,
    decode_behavioral_cloning,
    decode_record,
    decode_state_value,
    detect_kind,
    encode_action_value,
    encode_behavioral_cloning,
    encode_state_value,
    encode_varint,
    import_chessbench,
    iter_chessbench,
    write_bag,
)
from latentchess.data.store import read_dataset
from latentchess.errors import DataFormatError, LatentChessError
from latentchess.winprob import centipawns, white_perspective


def positions(n: int) -> list[str]:
    """``n`` distinct legal FENs from a fixed line of play (White and Black to move alternate)."""
    board = chess.Board()
    fens = [board.fen()]
    while len(fens) < n:
        board.push(sorted(board.legal_moves, key=lambda m: m.uci())[len(fens) % 3])
        fens.append(board.fen())
    return fens


def hand_string(text: str) -> bytes:
    """A Beam nested string, spelt out: one-byte varint length (texts here are < 128 bytes)."""
    raw = text.encode()
    assert len(raw) < 128
    return bytes([len(raw)]) + raw


def hand_bag(records: list[bytes]) -> bytes:
    """Records concatenated, then their little-endian uint64 end offsets."""
    ends, total = [], 0
    for record in records:
        total += len(record)
        ends.append(total)
    return b"".join(records) + struct.pack(f"<{len(ends)}Q", *ends)


@pytest.fixture
def state_values(tmp_path: Path) -> tuple[Path, list[StateValue], list[bytes]]:
    values = [StateValue(fen, p) for fen, p in zip(positions(3), [0.5, 0.25, 0.875], strict=True)]
    records = [hand_string(v.fen) + struct.pack(">d", v.win_prob) for v in values]
    path = tmp_path / "state_value_data.bag"
    path.write_bytes(hand_bag(records))
    return path, values, records


# ---------------------------------------------------------------------------------------------
# Varints and record codings


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (16383, b"\xff\x7f"),
        (16384, b"\x80\x80\x01"),
        (2**63, b"\x80" * 9 + b"\x01"),
        (2**64 - 1, b"\xff" * 9 + b"\x01"),
    ],
)
def test_varint_vectors(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    if value <= 300:  # read back as the length of a state_value's FEN string
        record = encoded + b"x" * value + struct.pack(">d", 0.5)
        assert decode_record("state_value", record) == StateValue("x" * value, 0.5)


@pytest.mark.parametrize("value", [-1, 2**64])
def test_varint_out_of_range(value: int) -> None:
    with pytest.raises(ValueError, match=str(value)):
        encode_varint(value)


@pytest.mark.parametrize(
    ("kind", "data", "offset", "problem"),
    [
        ("state_value", b"", 0, "past the end"),
        ("state_value", b"\x80", 0, "past the end"),
        ("action_value", hand_string("ab") + b"\xff\xff", 3, "past the end"),
        ("state_value", b"\xff" * 10 + b"\x01", 0, "longer than 10 bytes"),
        ("state_value", b"\xff" * 9 + b"\x7f", 0, "64 bits"),
    ],
)
def test_corrupt_varint(kind: str, data: bytes, offset: int, problem: str) -> None:
    with pytest.raises(DataFormatError, match=problem) as info:
        decode_record(kind, data)  # type: ignore[arg-type]
    assert info.value.offset == offset


def test_codings_match_hand_bytes() -> None:
    fen = chess.STARTING_FEN
    assert encode_state_value(fen, 0.5) == hand_string(fen) + struct.pack(">d", 0.5)
    action = hand_string(fen) + hand_string("e2e4") + struct.pack(">d", 0.75)
    assert encode_action_value(fen, "e2e4", 0.75) == action
    assert encode_behavioral_cloning(fen, "g1f3") == hand_string(fen) + b"g1f3"
    assert decode_state_value(hand_string(fen) + struct.pack(">d", 0.5)) == StateValue(fen, 0.5)
    assert decode_action_value(action) == ActionValue(fen, "e2e4", 0.75)
    assert decode_behavioral_cloning(hand_string(fen) + b"g1f3") == BehavioralCloning(fen, "g1f3")
    long_fen = fen + " " * 200  # a length that needs a two-byte varint
    assert decode_state_value(encode_state_value(long_fen, 0.1)) == StateValue(long_fen, 0.1)
    assert encode_state_value(long_fen, 0.1)[:2] == encode_varint(len(long_fen))


@pytest.mark.parametrize(
    ("kind", "data", "problem", "position"),
    [
        ("state_value", b"\x05abc", "runs past the end", 0),
        ("state_value", hand_string("abc") + b"\x00" * 7, "8-byte double", 4),
        ("state_value", hand_string("abc") + b"\x00" * 9, "8-byte double", 4),
        ("state_value", b"\x02a\xff" + b"\x00" * 8, "not UTF-8", 2),
        ("action_value", hand_string("abc") + b"\x80", "varint runs past", 4),
        ("behavioral_cloning", hand_string("abc") + b"\xfe", "not UTF-8", 4),
    ],
)
def test_corrupt_records(kind: str, data: bytes, problem: str, position: int) -> None:
    with pytest.raises(DataFormatError, match=problem) as info:
        decode_record(kind, data)  # type: ignore[arg-type]
    assert info.value.offset == position


# ---------------------------------------------------------------------------------------------
# The container


def test_hand_built_bag_by_index_and_stream(state_values: tuple) -> None:
    path, values, records = state_values
    with BagReader(path) as reader:
        assert len(reader) == 3 and not reader.compressed
        assert [reader[i] for i in range(3)] == records
        assert [reader[i] for i in (-1, -2, -3)] == records[::-1]
        assert list(reader) == records
        assert [i for i, _ in reader.items(1)] == [1, 2]
        assert [decode_state_value(reader[i]) for i in range(3)] == values
        for bad in (3, -4):
            with pytest.raises(IndexError, match=str(bad)):
                reader[bad]
        second = reader.location(1)
        assert (second.start, second.end) == (len(records[0]), len(records[0]) + len(records[1]))
    assert list(iter_chessbench(path)) == values
    with pytest.raises(ValueError, match="closed"):
        reader[0]


def test_writer_reproduces_hand_bytes(tmp_path: Path, state_values: tuple) -> None:
    path, values, _ = state_values
    out = tmp_path / "again.bag"
    assert write_bag(out, (encode_state_value(v.fen, v.win_prob) for v in values)) == 3
    assert out.read_bytes() == path.read_bytes()


def test_empty_bags(tmp_path: Path) -> None:
    empty = tmp_path / "empty.bag"
    assert write_bag(empty, []) == 0
    assert empty.stat().st_size == 0
    with BagReader(empty) as reader:
        assert len(reader) == 0 and list(reader) == []
    one_empty = tmp_path / "one.bag"
    one_empty.write_bytes(struct.pack("<Q", 0))
    with BagReader(one_empty) as reader:
        assert list(reader) == [b""]
    for size in range(1, 8):
        (tmp_path / "short.bag").write_bytes(b"\x00" * size)
        with pytest.raises(DataFormatError, match="too short") as info:
            BagReader(tmp_path / "short.bag")
        assert info.value.offset == 0


def test_bagz(tmp_path: Path, state_values: tuple) -> None:
    _, values, records = state_values
    records = [*records, b""]  # an empty record is stored as zero bytes
    frames = [
        zstandard.ZstdCompressor().compress(records[0]),
        # a streaming-mode frame does not record its content size
        zstandard.ZstdCompressor(write_content_size=False).compress(records[1]),
        zstandard.ZstdCompressor(level=19).compress(records[2]),
        b"",
    ]
    hand = tmp_path / "state_value_data.bagz"
    hand.write_bytes(hand_bag(frames))
    with BagReader(hand) as reader:
        assert reader.compressed and list(reader) == records and reader[-2] == records[2]
    sniffed = tmp_path / "renamed.bag"  # no .bagz suffix: told by the zstd magic number
    sniffed.write_bytes(hand.read_bytes())
    with BagReader(sniffed) as reader:
        assert reader.compressed and list(reader) == records
    with BagReader(sniffed, compressed=False) as reader:
        assert list(reader) == frames
    written = tmp_path / "written.bagz"
    write_bag(written, records)
    with BagReader(written) as reader:
        assert list(reader) == records
    with BagReader(written, compressed=False) as raw:
        assert [r[:4] for r in raw] == [ZSTD_MAGIC] * 3 + [b""]
    three = tmp_path / "positions.bagz"
    write_bag(three, records[:3])
    assert list(iter_chessbench(three, kind="state_value")) == values


def test_truncated_in_the_index(state_values: tuple) -> None:
    path, _, _ = state_values
    data = path.read_bytes()
    path.write_bytes(data[:-4])
    with pytest.raises(DataFormatError, match="truncated") as info:
        BagReader(path)
    assert info.value.offset == len(data) - 4 - 8
    assert str(path) in str(info.value) and f"byte offset {len(data) - 12}" in str(info.value)


def test_truncated_in_a_record(state_values: tuple) -> None:
    path, _, records = state_values
    cut = len(records[0]) + len(records[1]) // 2
    path.write_bytes(path.read_bytes()[:cut])
    with pytest.raises(DataFormatError, match="beyond the records") as info:
        BagReader(path)
    assert info.value.offset == cut - 8


@pytest.mark.parametrize("bad_end", [13, 3])  # past the 12 record bytes; before its predecessor
def test_index_entry_pointing_outside(tmp_path: Path, bad_end: int) -> None:
    path = tmp_path / "broken.bag"
    path.write_bytes(b"aaaa" + b"bbbbbb" + b"cc" + struct.pack("<3Q", 4, bad_end, 12))
    with BagReader(path) as reader:
        assert len(reader) == 3 and reader[0] == b"aaaa"
        with pytest.raises(DataFormatError, match="corrupt index") as info:
            reader[1]
        assert info.value.offset == 12 + 8  # the second index entry
        with pytest.raises(DataFormatError, match="corrupt index") as info:
            list(reader)
        assert info.value.offset == 12 + 8


def test_corrupt_record_in_a_bag_names_index_and_offset(tmp_path: Path) -> None:
    good = encode_state_value(chess.STARTING_FEN, 0.5)
    corrupt = b"\xff" * 11  # varint never ends
    path = tmp_path / "state_value_data.bag"
    write_bag(path, [good, corrupt])
    with BagReader(path) as reader:
        with pytest.raises(DataFormatError, match="record 1") as info:
            decode_state_value(reader[1], reader.location(1))
        assert info.value.offset == len(good) and info.value.path == str(path)
    with pytest.raises(DataFormatError, match="record 1"):
        list(iter_chessbench(path))
    compressed = tmp_path / "state_value_data.bagz"
    frames = [zstandard.compress(good), zstandard.compress(corrupt), b"\x28\xb5\x2f\xfd junk"]
    compressed.write_bytes(hand_bag(frames))
    start = len(frames[0]) + len(frames[1])
    with BagReader(compressed) as reader:
        with pytest.raises(DataFormatError, match="decompressed record") as info:
            decode_state_value(reader[1], reader.location(1))
        assert info.value.offset == reader.location(1).start
        with pytest.raises(DataFormatError, match="zstd") as info:
            reader[2]
        assert info.value.offset == start


def test_detect_kind() -> None:
    assert detect_kind("/x/state_value_data.bag") == "state_value"
    assert detect_kind("action_value-00000-of-02148_data.bag") == "action_value"
    assert detect_kind(Path("behavioral_cloning_data.bagz")) == "behavioral_cloning"
    assert set(KINDS) == {"state_value", "action_value", "behavioral_cloning"}
    for name in ("games.bag", "state_value_action_value.bag"):
        with pytest.raises(DataFormatError, match=re.escape(repr(name))):
            detect_kind(name)


# ---------------------------------------------------------------------------------------------
# Import


def expected_row(fen: str, p_side_to_move: float) -> tuple[float, int | None]:
    p_white = white_perspective(p_side_to_move, chess.Board(fen).turn)
    return p_white, (round(centipawns(p_white)) if 0.0 < p_white < 1.0 else None)


def test_import_state_values(tmp_path: Path) -> None:
    fens = positions(6)
    values = [0.5, 0.7, 1.0, 0.0, 0.2, 0.9]
    records = [encode_state_value(f, p) for f, p in zip(fens, values, strict=True)]
    records.insert(2, encode_state_value("not a fen", 0.5))
    records.insert(4, b"\x7f")  # length past the end
    records.append(encode_state_value(fens[0], 1.5))  # probability out of range
    path = tmp_path / "state_value_data.bag"
    write_bag(path, records)

    with pytest.raises(DataFormatError, match="record 2") as info:
        import_chessbench([path], tmp_path / "strict", strict=True, progress=False)
    assert "not a fen" in str(info.value) and info.value.path == str(path)

    summary = import_chessbench([path], tmp_path / "ds", shard_rows=4, progress=False)
    assert (summary.records_read, summary.records_bad) == (9, 3)
    # records 8..9 hold no usable row, so that range leaves no shard
    assert (summary.rows_written, summary.shards_written, summary.files_read) == (6, 2, 1)
    assert len(summary.errors) == 3 and "record 4" in summary.errors[1]
    table = read_dataset(tmp_path / "ds").to_pylist()
    assert [row["fen"] for row in table] == fens
    for row, fen, p in zip(table, fens, values, strict=True):
        p_white, cp = expected_row(fen, p)
        assert row["win_prob_white"] == pytest.approx(p_white)
        assert row["cp_white"] == cp
        assert row["mate_white"] is None and row["best_move"] is None
        assert row["source"] == "chessbench:state_value_data.bag"
    assert {row["cp_white"] is None for row in table} == {True, False}


def test_import_action_values_groups_per_fen(tmp_path: Path) -> None:
    white, black = positions(2)  # White to move, then Black to move
    moves = {
        white: [("e2e4", 0.55), ("d2d4", 0.61), ("g1f3", 0.61), ("a2a3", 0.40)],
        black: [("e7e5", 0.48), ("c7c5", 0.52)],
    }
    records = [
        encode_action_value(white, *moves[white][0]),
        encode_action_value(black, *moves[black][0]),
        encode_action_value(white, *moves[white][1]),  # not adjacent to the other White records
        encode_action_value(black, "e7e9", 0.99),  # not a move: skipped, does not win
        encode_action_value(black, *moves[black][1]),
        encode_action_value(white, *moves[white][2]),  # ties the best: the first read stays
        encode_action_value(white, *moves[white][3]),
    ]
    path = tmp_path / "action_value-00000-of-00001_data.bag"
    write_bag(path, records)
    summary = import_chessbench([path], tmp_path / "ds", progress=False)
    assert (summary.rows_written, summary.records_read, summary.records_bad) == (2, 7, 1)
    rows = {row["fen"]: row for row in read_dataset(tmp_path / "ds").to_pylist()}
    assert set(rows) == {white, black}
    for fen, best_move in ((white, "d2d4"), (black, "c7c5")):
        best = max(p for _, p in moves[fen])
        p_white, cp = expected_row(fen, best)
        assert rows[fen]["best_move"] == best_move
        assert rows[fen]["win_prob_white"] == pytest.approx(p_white)
        assert rows[fen]["cp_white"] == cp
    assert rows[black]["win_prob_white"] == pytest.approx(1 - 0.52)


def test_near_certain_values_do_not_become_exact_mates_for_either_side(tmp_path: Path) -> None:
    # For Black to move, 1 - 1e-20 is exactly 1.0 in float64: a fake White mate for the axis.
    white, black, white2, black2 = positions(4)
    values = [(white, 1e-20), (black, 1e-20), (white2, 1.0), (black2, 1.0)]
    path = tmp_path / "state_value_data.bag"
    write_bag(path, [encode_state_value(fen, p) for fen, p in values])
    import_chessbench([path], tmp_path / "ds", progress=False)
    p_white = [row["win_prob_white"] for row in read_dataset(tmp_path / "ds").to_pylist()]
    assert 0.0 < p_white[0] < 1e-7 and 1.0 - 1e-7 < p_white[1] < 1.0  # mirror images
    assert p_white[0] == pytest.approx(1.0 - p_white[1], abs=0.0)
    assert p_white[2:] == [1.0, 0.0]  # the file's exact values stay exact


def test_behavioral_cloning_refused_but_readable(tmp_path: Path) -> None:
    path = tmp_path / "behavioral_cloning_data.bag"
    write_bag(path, [encode_behavioral_cloning(chess.STARTING_FEN, "e2e4")])
    with pytest.raises(DataFormatError, match="no win probabilities"):
        import_chessbench([path], tmp_path / "ds", progress=False)
    assert not (tmp_path / "ds").exists()
    assert list(iter_chessbench(path)) == [BehavioralCloning(chess.STARTING_FEN, "e2e4")]
    with pytest.raises(DataFormatError, match="kind"):
        import_chessbench([tmp_path / "games.bag"], tmp_path / "ds", progress=False)
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        write_bag(tmp_path / folder / "state_value_data.bag", [])
    twins = [tmp_path / "a" / "state_value_data.bag", tmp_path / "b" / "state_value_data.bag"]
    with pytest.raises(DataFormatError, match="share a name"):
        import_chessbench(twins, tmp_path / "ds", progress=False)


def test_import_resumes(tmp_path: Path) -> None:
    fens = positions(10)
    records = [encode_state_value(f, 0.1 * i + 0.05) for i, f in enumerate(fens)]
    records[7] = b"\x00"  # an empty FEN and no value: stops a strict run there
    state = tmp_path / "state_value_data.bagz"
    write_bag(state, records)
    out = tmp_path / "ds"

    first = import_chessbench([state], out, limit=3, shard_rows=2, progress=False)
    assert (first.records_read, first.rows_written, first.shards_written) == (3, 3, 2)
    with pytest.raises(DataFormatError, match="record 7"):
        import_chessbench([state], out, shard_rows=2, strict=True, progress=False)
    resumed = import_chessbench([state], out, shard_rows=2, progress=False)
    assert resumed.records_read == 10 - 7  # records 3..6 were written by the strict run
    assert (resumed.rows_written, resumed.records_bad) == (2, 1)
    again = import_chessbench([state], out, shard_rows=2, progress=False)
    assert (again.files_skipped, again.records_read, again.rows_written) == (1, 0, 0)
    imported = [row["fen"] for row in read_dataset(out).to_pylist()]
    assert sorted(imported) == sorted(f for i, f in enumerate(fens) if i != 7)

    action = tmp_path / "action_value_data.bag"
    write_bag(action, [encode_action_value(f, "a1a2", 0.5) for f in fens])
    actions = tmp_path / "actions"
    assert import_chessbench([action], actions, limit=4, progress=False).rows_written == 4
    assert import_chessbench([action], actions, limit=4, progress=False).files_skipped == 1
    with pytest.raises(LatentChessError, match="fresh directory"):
        import_chessbench([action], actions, progress=False)
    sources = [row["source"] for row in read_dataset(actions).to_pylist()]
    assert sources == ["chessbench:action_value_data.bag"] * 4
    # Into the dataset that holds these positions already: only the one its bad record missed.
    summary = import_chessbench([action], out, progress=False)
    assert (summary.rows_written, summary.records_duplicate) == (1, 9)
    rows = read_dataset(out).to_pylist()
    by_source = {row["source"]: [] for row in rows}
    for row in rows:
        by_source[row["source"]].append(row["fen"])
    assert by_source["chessbench:action_value_data.bag"] == [fens[7]]
    assert len(by_source["chessbench:state_value_data.bagz"]) == 9


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "my_positions.bag"
    write_bag(path, [encode_state_value(f, 0.5) for f in positions(5)])
    from latentchess.cli import build_parser
    from latentchess.data.chessbench import KINDS

    parser = build_parser()
    argv = ["data", "import-chessbench", str(path), "--out", str(tmp_path / "ds"), "--limit", "4"]
    args = parser.parse_args([*argv, "--kind", "state_value", "--strict"])
    assert all(parser.parse_args([*argv, "--kind", kind]).kind == kind for kind in KINDS)
    assert args.func(args) == 0
    captured = capsys.readouterr()
    assert "imported 4 rows" in captured.out
    assert "my_positions.bag" in captured.err and "rec/s" in captured.err  # the progress bar
    assert read_dataset(tmp_path / "ds").num_rows == 4
    args = parser.parse_args(argv)  # no --kind: the file name does not tell
    with pytest.raises(DataFormatError, match=re.escape("my_positions.bag")):
        args.func(args)
    with pytest.raises(SystemExit):
        parser.parse_args([*argv, "--kind", "games"])


def test_repeated_positions_are_imported_once(tmp_path: Path) -> None:
    """Failed before the fix: every record became a row, repeats included."""
    fens = positions(4)
    later = fens[1].rsplit(" ", 2)[0] + " 40 60"  # the same position with other clocks
    state = tmp_path / "state_value_data.bag"
    write_bag(
        state,
        [encode_state_value(fen, 0.5) for fen in (fens[0], fens[1], fens[0], later, fens[2])],
    )
    out = tmp_path / "ds"
    summary = import_chessbench([state], out, progress=False)
    assert (summary.rows_written, summary.records_duplicate) == (3, 2)
    assert [row["fen"] for row in read_dataset(out).to_pylist()] == fens[:3]
    # Action values of other files: only positions the dataset does not hold yet.
    action = tmp_path / "action_value-00000-of-00002_data.bag"
    write_bag(action, [encode_action_value(fen, "a1a2", 0.5) for fen in (fens[2], fens[3])])
    twin = tmp_path / "action_value-00001-of-00002_data.bag"
    write_bag(twin, [encode_action_value(fens[3], "a1a2", 0.5)])
    summary = import_chessbench([action, twin], out, progress=False)
    assert (summary.rows_written, summary.records_duplicate) == (1, 2)
    assert sorted(row["fen"] for row in read_dataset(out).to_pylist()) == sorted(fens)


_IMPORT_SCRIPT = """
import sys
from pathlib import Path
from latentchess.data.chessbench import import_chessbench
import_chessbench([Path(sys.argv[1])], Path(sys.argv[2]), shard_rows=200, progress=False)
"""


def test_killed_import_resumes_without_duplicates(tmp_path: Path) -> None:
    """Failed before the fix: a re-run wrote the positions of the killed run's last range again."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from latentchess.data.resume import prefix_shards

    fens = []
    for index in range(7_000):  # distinct positions: two kings and a rook on varying squares
        board = chess.Board(None)
        squares = (index % 64, index // 64 % 64, (index * 7 + 3) % 64)
        if len(set(squares)) < 3:
            continue
        board.set_piece_at(squares[0], chess.Piece(chess.KING, chess.WHITE))
        board.set_piece_at(squares[1], chess.Piece(chess.KING, chess.BLACK))
        board.set_piece_at(squares[2], chess.Piece(chess.ROOK, chess.WHITE))
        if board.is_valid():
            fens.append(board.fen())
    fens = list(dict.fromkeys(fens))
    path = tmp_path / "state_value_data.bag"
    write_bag(path, [encode_state_value(fen, 0.5) for fen in fens] * 3)  # each position 3 times
    out = tmp_path / "ds"
    process = subprocess.Popen([sys.executable, "-c", _IMPORT_SCRIPT, str(path), str(out)])
    try:
        deadline = time.monotonic() + 60
        while not prefix_shards(out, "chessbench_state_value_data") if out.is_dir() else True:
            assert process.poll() is None and time.monotonic() < deadline, "no shard written"
            time.sleep(0.01)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    assert process.returncode == -signal.SIGKILL  # killed mid-way, not finished
    killed = read_dataset(out).num_rows
    assert 0 < killed < len(fens)
    summary = import_chessbench([path], out, shard_rows=200, progress=False)
    assert summary.rows_written == len(fens) - killed
    imported = [row["fen"] for row in read_dataset(out).to_pylist()]
    assert sorted(imported) == sorted(fens)
