"""Plain and compressed text files (latentchess.textfiles) and the readers that go through them."""

from __future__ import annotations

import gzip
import lzma
import sys
from pathlib import Path

import pytest

from latentchess.errors import DataFormatError
from latentchess.textfiles import (
    append_text,
    find_text,
    glob_text,
    open_text,
    read_text,
    recompress,
    strip_compression,
    write_text,
)

SUFFIXES = ["", ".gz", ".xz", ".zst"]
GAME = '[Event "e"]\n[White "a"]\n[Black "b"]\n[Result "{}"]\n\n1. e4 e5 {}\n\n'
TEXT = "héllo\nwörld\r\n" + "x" * 5000 + "\n"


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_appends_read_back_after_every_call(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / "sub" / f"notes.txt{suffix}"
    expected = ""
    for part in ("first\n", TEXT, "", "last\n"):
        append_text(path, part, sync=True)
        expected += part
        assert read_bytes_decoded(path) == expected.encode()
    with open_text(path) as handle:  # universal newlines, UTF-8
        assert handle.read() == expected.replace("\r\n", "\n")


def read_bytes_decoded(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".gz":
        return gzip.decompress(data)  # the standard tools read the concatenated members
    if path.suffix == ".xz":
        return lzma.decompress(data)
    if path.suffix == ".zst":
        import zstandard

        with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as r:
            return r.read()
    return data


@pytest.mark.parametrize("suffix", [".gz", ".xz", ".zst"])
def test_corrupt_or_truncated_data_names_the_file(tmp_path: Path, suffix: str) -> None:
    good = tmp_path / f"good.pgn{suffix}"
    append_text(good, GAME.format("1-0", "1-0"))
    append_text(good, GAME.format("0-1", "0-1"))
    data = good.read_bytes()
    truncated, flipped = tmp_path / f"cut.pgn{suffix}", tmp_path / f"bad.pgn{suffix}"
    truncated.write_bytes(data[:-7])
    middle = len(data) // 4 * 3
    flipped.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :])
    for broken in (truncated, flipped):
        with pytest.raises(DataFormatError, match="corrupt or truncated") as caught:
            read_text(broken)
        assert caught.value.path == str(broken)
    with pytest.raises(DataFormatError, match="cannot read") as caught:
        open_text(tmp_path / f"missing.pgn{suffix}")
    assert caught.value.path == str(tmp_path / f"missing.pgn{suffix}")


def test_an_empty_compressed_file_is_empty_text(tmp_path: Path) -> None:
    for suffix in (".gz", ".xz", ".zst"):
        path = tmp_path / f"empty.pgn{suffix}"
        path.touch()
        assert read_text(path) == ""


def test_zst_without_zstandard_says_which_package(tmp_path, monkeypatch) -> None:
    path = tmp_path / "games.pgn.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd")
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard -> ImportError
    with pytest.raises(DataFormatError, match="'zstandard' package"):
        open_text(path)
    with pytest.raises(DataFormatError, match="'zstandard' package"):
        append_text(path, "text")
    append_text(tmp_path / "plain.txt", "ok")  # plain and other formats need no package
    assert read_text(tmp_path / "plain.txt") == "ok"


def test_names_glob_and_find(tmp_path: Path) -> None:
    assert strip_compression("a/games.pgn.xz") == "games.pgn"
    assert strip_compression(Path("games.pgn")) == "games.pgn"
    assert strip_compression("GAMES.PGN.GZ") == "GAMES.PGN"
    for name in ("a.pgn", "b.pgn.gz", "c.pgn.xz", "d.pgn.zst", "e.json", "f.pgn.bz2"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in glob_text(tmp_path, "*.pgn")] == [
        "a.pgn",
        "b.pgn.gz",
        "c.pgn.xz",
        "d.pgn.zst",
    ]
    assert find_text(tmp_path / "c.pgn") == tmp_path / "c.pgn.xz"
    assert find_text(tmp_path / "a.pgn") == tmp_path / "a.pgn"
    assert find_text(tmp_path / "new.pgn") == tmp_path / "new.pgn"  # to be created
    (tmp_path / "a.pgn.xz").write_bytes(b"")
    with pytest.raises(DataFormatError, match="stored twice"):
        glob_text(tmp_path, "*.pgn")
    with pytest.raises(DataFormatError, match="stored twice"):
        find_text(tmp_path / "a.pgn")


@pytest.mark.parametrize("target", [".xz", ".gz", ".zst"])
def test_recompress_round_trips_byte_for_byte(tmp_path: Path, target: str) -> None:
    source = tmp_path / "appended.pgn.gz"  # appended game by game: many members
    for k in range(20):
        append_text(source, GAME.format("1-0", f"{k}. 1-0"))
    source.chmod(0o640)
    out = tmp_path / f"games.pgn{target}"
    size = recompress(source, out)
    assert size == out.stat().st_size < source.stat().st_size  # one stream: smaller
    assert read_bytes_decoded(out) == gzip.decompress(source.read_bytes())
    assert out.stat().st_mode & 0o777 == 0o640 and source.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([source.name, out.name])
    with pytest.raises(ValueError, match="another destination"):
        recompress(out, out)


def test_recompress_refuses_a_copy_that_differs(tmp_path: Path, monkeypatch) -> None:
    import latentchess.textfiles as textfiles

    source = tmp_path / "a.pgn"
    source.write_text(GAME.format("1-0", "1-0"), encoding="utf-8")
    monkeypatch.setattr(textfiles, "_same_bytes", lambda first, second: False)
    with pytest.raises(DataFormatError, match="does not decompress to the same bytes"):
        recompress(source, tmp_path / "a.pgn.xz")
    assert [p.name for p in tmp_path.iterdir()] == ["a.pgn"]  # no destination, no leftovers


# --- the readers that go through open_text ------------------------------------------------------


def _write(path: Path, text: str) -> Path:
    append_text(path, text)
    return path


@pytest.mark.parametrize("suffix", [".gz", ".xz"])
def test_pgn_readers_accept_compressed_files(tmp_path: Path, suffix: str) -> None:
    from latentchess.evaluation.elo import read_pgn_outcomes
    from latentchess.evaluation.human import read_game_headers
    from latentchess.evaluation.openings import load_openings
    from latentchess.plots.space import read_game

    games = _write(tmp_path / f"games.pgn{suffix}", GAME.format("1-0", "1-0") * 2)
    outcomes, skipped = read_pgn_outcomes([games])
    assert len(outcomes) == 2 and skipped == 0
    assert [h.white for h in read_game_headers(games)] == ["a", "a"]
    assert len(read_game(games, 1).boards) == 3  # the start and two moves
    openings = load_openings(games, 10)
    assert len(openings) == 2 and openings[0].moves == ("e2e4", "e7e5")


def test_bad_compressed_epd_and_pgn_name_file_and_line(tmp_path: Path) -> None:
    from latentchess.data.positions import read_positions
    from latentchess.data.problems import ProblemLog
    from latentchess.evaluation.epd import read_epd
    from latentchess.evaluation.openings import load_openings

    good = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - bm e4;\n"
    suite = _write(tmp_path / "sts1.epd.xz", good + "not a position\n")
    positions, problems = read_epd(suite)
    assert len(positions) == 1 and positions[0].theme == "sts1"
    assert (problems[0].path, problems[0].line) == (str(suite), 2)
    with pytest.raises(DataFormatError) as caught:
        load_openings(suite, 4)
    assert (caught.value.path, caught.value.line) == (str(suite), 2)

    fens = _write(tmp_path / "positions.epd.gz", good + "\nbad line\n")
    log = ProblemLog(max_shown=0)
    assert len(list(read_positions(fens, problems=log))) == 1 and log.count == 1
    with pytest.raises(DataFormatError) as caught:
        list(read_positions(fens, problems=ProblemLog(strict=True)))
    assert (caught.value.path, caught.value.line) == (str(fens), 3)

    pgn = _write(
        tmp_path / "games.pgn.xz", GAME.format("1-0", "1-0") + GAME.format("*", "2. Ke3 *")
    )
    with pytest.raises(DataFormatError) as caught:
        load_openings(pgn, 4)
    assert (caught.value.path, caught.value.line) == (str(pgn), 8)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_write_text_replaces_the_whole_file_compressed_by_its_name(
    tmp_path: Path, suffix: str
) -> None:
    path = tmp_path / "sub" / f"result.json{suffix}"
    assert write_text(path, "old\n" * 100) == path
    text = '{"elo": 12.5, "name": "wörld"}\n' * 300
    write_text(path, text)
    assert read_text(path) == text
    raw = path.read_bytes()
    opened = {"": lambda b: b, ".gz": gzip.decompress, ".xz": lzma.decompress}
    if suffix in opened:  # one stream in the format the name says, nothing left of the old text
        assert opened[suffix](raw) == text.encode("utf-8")
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
