"""The evaluation subcommands end to end: match, elo, epd, puzzles, and their error reporting."""

from __future__ import annotations

import gzip
import json
import lzma
import os
import subprocess
import sys
import time
from pathlib import Path

import chess.pgn
import pytest

import latentchess
from evaluation_fixtures import require_stockfish
from latentchess.cli import main
from latentchess.errors import DataFormatError
from latentchess.textfiles import open_text, read_text

SRC = str(Path(latentchess.__file__).resolve().parents[1])
OPENINGS = '[Opening "Italian"]\n[ECO "C50"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 *\n'


def count_games(path) -> int:
    with open_text(path) as handle:
        return sum(1 for _ in iter(lambda: chess.pgn.read_headers(handle), None))


def test_match_then_elo(tmp_path, capsys) -> None:
    require_stockfish()
    openings = tmp_path / "openings.pgn"
    openings.write_text(OPENINGS, encoding="utf-8")
    pgn, out = tmp_path / "games.pgn", tmp_path / "match.json"
    argv = [
        "match", "stockfish:skill=0", "random:seed=1", "--games", "2", "--limit", "depth=1",
        "--limit2", "10ms", "--openings", str(openings), "--pgn", str(pgn), "--json", str(out),
        "--no-progress",
    ]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "stockfish:skill=0 vs random:seed=1" in printed and "terminations:" in printed
    summary = json.loads(out.read_text(encoding="utf-8"))
    assert sum(summary["score"].values()) == 2 and summary["game_count"] == 2
    assert "games" not in summary  # the PGN holds them; the JSON counts them
    assert sum(summary["terminations"].values()) == 2 and summary["plies"] > 0
    assert summary["limit2"] == "time=0.01"
    assert summary["command"].startswith("latentchess match stockfish:skill=0 random:seed=1")
    assert count_games(pgn) == 2
    assert main([*argv[:4], "3", *argv[5:]]) == 0  # resume: one more game only
    assert count_games(pgn) == 3

    fit_json = tmp_path / "fit.json"
    assert (
        main(["elo", str(pgn), "--anchor", "stockfish:skill=0=1500", "--json", str(fit_json)]) == 0
    )
    table = capsys.readouterr().out
    assert "stockfish:skill=0" in table and "anchor" in table
    fit = json.loads(fit_json.read_text(encoding="utf-8"))
    assert {r["name"] for r in fit["ratings"]} == {"stockfish:skill=0", "random:seed=1"}


def test_elo_fits_time_odds_from_pgn(tmp_path, capsys) -> None:
    # An engine that beats the anchor at equal time, less often when the anchor has 2x and 4x.
    results = {"anchor": "1-0 1-0 1-0 1/2-1/2", "anchor-2x": "1-0 1/2-1/2 0-1 1-0",
               "anchor-4x": "1/2-1/2 0-1 0-1 1-0"}  # fmt: skip
    games = []
    for opponent, line in results.items():
        for k, result in enumerate(line.split()):
            white, black = ("engine", opponent) if k % 2 == 0 else (opponent, "engine")
            if white != "engine":  # the engine's result, seen from White
                result = {"1-0": "0-1", "0-1": "1-0"}.get(result, result)
            games.append(f'[White "{white}"]\n[Black "{black}"]\n[Result "{result}"]\n\n{result}\n')
    pgn = tmp_path / "odds.pgn"
    pgn.write_text("\n".join(games), encoding="utf-8")
    fit_json = tmp_path / "fit.json"
    argv = ["elo", str(pgn), "--anchor", "anchor=2000", "--time-odds", "anchor-2x", "anchor", "2",
            "--time-odds", "anchor-4x", "anchor", "4", "--json", str(fit_json)]  # fmt: skip
    assert main(argv) == 0
    assert "Elo per doubling of time" in capsys.readouterr().out
    fit = json.loads(fit_json.read_text(encoding="utf-8"))
    assert fit["time_odds"] == {"anchor-2x": ["anchor", 2.0], "anchor-4x": ["anchor", 4.0]}
    slope = fit["time_slope"][0]
    ratings = {r["name"]: r["elo"] for r in fit["ratings"]}
    assert ratings["anchor-4x"] == pytest.approx(2000 + 2 * slope) and slope > 0
    assert ratings["engine"] > 2000
    assert main([*argv[:-2], "--time-odds", "anchor-2x", "anchor", "two"]) == 2
    assert "FACTOR must be a number" in capsys.readouterr().err


def test_epd_and_puzzles(tmp_path, capsys) -> None:
    require_stockfish()
    suite = tmp_path / "suite.epd"
    suite.write_text(
        '1k1r4/pp1b1R2/3q2pp/4p3/2B5/4Q3/PPP2B2/2K5 b - - bm Qd1+; id "BK.01";\nthis is not epd\n',
        encoding="utf-8",
    )
    report = tmp_path / "epd.json"
    argv = ["epd", str(suite), "--engine", "stockfish", "--limit", "depth=6", "--no-progress"]
    assert main([*argv, "--json", str(report)]) == 0
    captured = capsys.readouterr()
    assert f"{suite}:2" in captured.err and "BK" in captured.out
    assert json.loads(report.read_text(encoding="utf-8"))["solved"] == 1
    assert main([*argv, "--strict"]) == 2
    assert f"{suite}:2" in capsys.readouterr().err

    puzzles = tmp_path / "puzzles.csv"
    puzzles.write_text(
        "PuzzleId,FEN,Moves,Rating,RatingDeviation,Popularity,NbPlays,Themes,GameUrl,OpeningTags\n"
        "CJi0b,6k1/p1p2ppp/1pqp2r1/3Q4/8/1P6/P1P2PPP/4RK2 b - - 8 22,c6d5 e1e8,400,116,81,1125,"
        "mate mateIn1,https://lichess.org/zhWsNjI8/black#44,\n",
        encoding="utf-8",
    )
    chart = tmp_path / "chart.png"
    argv = ["puzzles", "solve", str(puzzles), "--engine", "stockfish", "--limit", "depth=2"]
    assert main([*argv, "--plot", str(chart), "--no-progress"]) == 0
    assert "solved 1/1" in capsys.readouterr().out and chart.stat().st_size > 0


def test_errors_are_reported_clearly(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.pgn"
    bad.write_text("1. e4 e5 2. Ke3 *\n", encoding="utf-8")
    argv = ["match", "random", "random:seed=2", "--openings", str(bad), "--games", "2"]
    assert main([*argv, "--no-progress"]) == 2
    assert f"error: {bad}:1: bad PGN game" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["match", "nosuch", "random"])
    assert "unknown engine kind 'nosuch'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["match", "random", "random:seed=1", "--limit", "depth=fast"])
    assert "bad limit item 'depth=fast'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["match", "--list-engines"])
    assert "stockfish" in capsys.readouterr().out


def _cheap_match(openings, pgn, games: int, *extra: str) -> list[str]:
    """Stockfish at 20 nodes against a random mover: a game takes milliseconds."""
    return ["match", "stockfish:skill=0", "random:seed=1", "--games", str(games), "--limit",
            "nodes=20", "--max-plies", "80", "--openings", str(openings), "--pgn", str(pgn),
            "--no-progress", *extra]  # fmt: skip


@pytest.mark.parametrize("suffix", [".pgn.gz", ".pgn.xz"])
def test_match_writes_and_resumes_a_compressed_pgn(tmp_path, capsys, suffix) -> None:
    require_stockfish()
    openings = tmp_path / "openings.pgn.gz"  # openings may be compressed too
    openings.write_bytes(gzip.compress(OPENINGS.encode()))
    pgn, out = tmp_path / f"games{suffix}", tmp_path / "match.json"
    assert main(_cheap_match(openings, pgn, 2, "--json", str(out))) == 0
    magic = {".pgn.gz": b"\x1f\x8b", ".pgn.xz": b"\xfd7zXZ\x00"}[suffix]
    assert pgn.read_bytes().startswith(magic) and count_games(pgn) == 2
    first = pgn.read_bytes()
    assert main(_cheap_match(openings, pgn, 3, "--json", str(out))) == 0  # resume: round 3 only
    assert pgn.read_bytes().startswith(first) and count_games(pgn) == 3
    summary = json.loads(out.read_text(encoding="utf-8"))
    assert summary["resumed_games"] == 2 and summary["game_count"] == 3
    assert main(_cheap_match(openings, pgn, 3)) == 0  # all played: the file is left alone
    assert count_games(pgn) == 3
    with open_text(pgn) as handle:
        rounds = [chess.pgn.read_game(handle).headers["Round"] for _ in range(3)]
    # two workers append games as they finish: rounds 1 and 2 in either order, then the resumed 3
    assert sorted(rounds[:2]) == ["1", "2"] and rounds[2] == "3"
    capsys.readouterr()
    assert main(["elo", str(pgn)]) == 0
    assert "stockfish:skill=0" in capsys.readouterr().out
    pgn.write_bytes(pgn.read_bytes()[:-9])  # a damaged file is refused, naming it
    assert main(_cheap_match(openings, pgn, 4)) == 2
    assert f"{pgn}: corrupt or truncated" in capsys.readouterr().err


def test_match_json_lists_games_without_a_pgn(tmp_path) -> None:
    require_stockfish()
    openings, out = tmp_path / "openings.pgn", tmp_path / "match.json"
    openings.write_text(OPENINGS, encoding="utf-8")
    argv = _cheap_match(openings, "-", 2, "--json", str(out))
    del argv[argv.index("--pgn") : argv.index("--pgn") + 2]
    assert main(argv) == 0
    summary = json.loads(out.read_text(encoding="utf-8"))
    assert [g["round"] for g in summary["games"]] == [1, 2] and summary["pgn"] is None
    assert sum(g["plies"] for g in summary["games"]) == summary["plies"]


def test_a_killed_match_leaves_a_readable_compressed_pgn(tmp_path) -> None:
    """Each game is one whole xz stream: after SIGKILL every finished game reads back, and a
    rerun completes the match."""
    require_stockfish()
    openings, pgn = tmp_path / "openings.pgn", tmp_path / "games.pgn.xz"
    openings.write_text(OPENINGS, encoding="utf-8")
    argv = _cheap_match(openings, pgn, 40)
    argv[argv.index("nodes=20")] = "nodes=400"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, "-m", "latentchess", *argv], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 120
    try:
        while _games_or_zero(pgn) < 2:
            assert process.poll() is None and time.monotonic() < deadline, "no games written"
            time.sleep(0.05)
    finally:
        process.kill()
        process.wait(timeout=30)
    written = count_games(pgn)  # no DataFormatError: the file ends on a whole stream
    assert 2 <= written < 40
    shorter = _cheap_match(openings, pgn, written + 2)
    shorter[shorter.index("nodes=20")] = "nodes=400"
    assert main(shorter) == 0
    assert count_games(pgn) == written + 2


def _games_or_zero(path) -> int:
    try:
        return count_games(path) if path.exists() else 0
    except DataFormatError:  # read while a game was being written: look again
        return 0


def test_match_writes_compressed_json_and_pgn_by_their_names(tmp_path: Path) -> None:
    pgn, record = tmp_path / "games.pgn.xz", tmp_path / "result.json.xz"
    argv = ["match", "random", "random:seed=2", "--games", "2", "--max-plies", "20",
            "--pgn", str(pgn), "--json", str(record), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    document = json.loads(lzma.decompress(record.read_bytes()))  # a real .xz, one stream
    assert document["game_count"] == 2 and document["pgn"] == str(pgn)
    assert read_text(pgn).count("[Event ") == 2
