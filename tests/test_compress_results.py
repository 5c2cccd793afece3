"""benchmarks/compress_results.py on a small repository the test makes: files become .xz that
round-trip byte for byte, READMEs follow, git stages it on request, the budget holds."""

from __future__ import annotations

import gzip
import importlib.util
import lzma
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "compress_results.py"
_spec = importlib.util.spec_from_file_location("compress_results", SCRIPT)
assert _spec is not None and _spec.loader is not None
compress_results = importlib.util.module_from_spec(_spec)
sys.modules["compress_results"] = compress_results  # dataclasses look their module up
_spec.loader.exec_module(compress_results)

README = """# Runs

Games: [games.pgn](games.pgn), also `run/games.pgn`; the older games.pgn.xz and
old-games.pgn stay. Small: small.pgn. End of a sentence: games.pgn.
"""
README_AFTER = """# Runs

Games: [games.pgn.xz](games.pgn.xz), also `run/games.pgn.xz`; the older games.pgn.xz and
old-games.pgn stay. Small: small.pgn. End of a sentence: games.pgn.xz.
"""


def _git(repo: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args]
    return subprocess.run(command, cwd=repo, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q")
    run = tmp_path / "results" / "run"
    run.mkdir(parents=True)
    games = "".join(f'[Event "e"]\n[Round "{k}"]\n\n1. e4 e5 1/2-1/2\n\n' for k in range(400))
    (run / "games.pgn").write_text(games, encoding="utf-8")  # ~14 kB
    (run / "other.pgn").write_text(games[: len(games) // 2], encoding="utf-8")
    (run / "small.pgn").write_text('[Event "s"]\n\n*\n', encoding="utf-8")
    (run / "untracked.pgn").write_text(games, encoding="utf-8")
    (run / "README.md").write_text(README, encoding="utf-8")
    _git(tmp_path, "add", "results/run/games.pgn", "results/run/other.pgn",
         "results/run/small.pgn", "results/run/README.md")  # fmt: skip
    _git(tmp_path, "commit", "-q", "-m", "results")
    return tmp_path


def test_a_folder_is_compressed_checked_and_staged(repo: Path, capsys) -> None:
    run = repo / "results" / "run"
    original = (run / "games.pgn").read_bytes()
    assert compress_results.main([str(repo / "results"), "--min-bytes", "1000", "--git"]) == 0
    out = capsys.readouterr().out
    assert f"games.pgn: {len(original):,} -> " in out and "round trip checked" in out
    assert lzma.decompress((run / "games.pgn.xz").read_bytes()) == original
    assert not (run / "games.pgn").exists() and not (run / "other.pgn").exists()
    assert (run / "small.pgn").exists() and (run / "untracked.pgn").exists()  # small, untracked
    readme = (run / "README.md").read_text(encoding="utf-8")
    assert readme == README_AFTER
    staged = _git(repo, "diff", "--cached", "--name-status").split("\n")
    assert sorted(filter(None, staged)) == [
        "A\tresults/run/games.pgn.xz",
        "A\tresults/run/other.pgn.xz",
        "D\tresults/run/games.pgn",
        "D\tresults/run/other.pgn",
        "M\tresults/run/README.md",
    ]


def test_dry_run_and_budget(repo: Path, capsys) -> None:
    run = repo / "results" / "run"
    games, other = (run / "games.pgn").stat().st_size, (run / "other.pgn").stat().st_size
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    argv = [str(repo / "results"), "--min-bytes", "1000"]
    assert compress_results.main([*argv, "--dry-run"]) == 0
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before
    assert f"diff {games + other:,} bytes (dry run" in capsys.readouterr().out

    # Room for the larger file's removal but not its .xz too: it is left alone, the other done.
    assert compress_results.main([*argv, "--max-bytes", str(games + 10)]) == 0
    out = capsys.readouterr().out
    assert "games.pgn: skipped, its removal and its .xz would exceed the budget" in out
    assert (run / "games.pgn").exists() and not (run / "games.pgn.xz").exists()
    assert (run / "other.pgn.xz").exists() and not (run / "other.pgn").exists()
    assert _git(repo, "diff", "--cached", "--name-only") == ""  # no --git: index untouched
    cost = other + (run / "other.pgn.xz").stat().st_size
    assert f"1 file(s), diff {cost:,} bytes" in out


def test_a_named_file_is_compressed_whatever_its_size(repo: Path, capsys) -> None:
    small = repo / "results" / "run" / "small.pgn"
    text = small.read_bytes()
    assert compress_results.main([str(small), "--keep"]) == 0
    assert lzma.decompress(small.with_name("small.pgn.xz").read_bytes()) == text
    assert small.exists()  # --keep
    with pytest.raises(FileExistsError):
        compress_results.main([str(small)])
    with pytest.raises(SystemExit):
        compress_results.main([str(small.with_name("small.pgn.xz"))])  # compressed already


def test_recompress_stores_gzip_as_xz_and_leaves_it_alone_otherwise(repo: Path, capsys) -> None:
    run = repo / "results" / "run"
    original = (run / "games.pgn").read_bytes()
    (run / "zipped.pgn.gz").write_bytes(gzip.compress(original))
    (run / "README.md").write_text("See zipped.pgn.gz.\n", encoding="utf-8")
    _git(repo, "add", "results/run/zipped.pgn.gz", "results/run/README.md")
    _git(repo, "commit", "-q", "-m", "gz")
    argv = [str(repo / "results"), "--min-bytes", "1000", "--git"]
    with pytest.raises(SystemExit):  # named without --recompress: compressed already
        compress_results.main([str(run / "zipped.pgn.gz")])
    assert compress_results.main(argv) == 0  # without --recompress: the .gz stays
    assert (run / "zipped.pgn.gz").exists()
    assert compress_results.main([*argv, "--recompress"]) == 0
    assert not (run / "zipped.pgn.gz").exists()
    assert lzma.decompress((run / "zipped.pgn.xz").read_bytes()) == original
    assert (run / "README.md").read_text(encoding="utf-8") == "See zipped.pgn.xz.\n"
    staged = _git(repo, "diff", "--cached", "--name-status", "--", "results/run/zipped*")
    assert sorted(filter(None, staged.split("\n"))) == [
        "A\tresults/run/zipped.pgn.xz",
        "D\tresults/run/zipped.pgn.gz",
    ]
