"""benchmarks/paired_games.py: runs from the same openings are compared game by game."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import chess
import chess.pgn

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "paired_games.py"
BOOKS = [["e2e4", "e7e5"], ["d2d4", "d7d5"], ["c2c4", "e7e5"], ["g1f3", "d7d5"]]


def _write_run(path: Path, results: list[str], *, books: list[list[str]] = BOOKS) -> None:
    """One run: round r opens with books[r % len], the player White in odd rounds."""
    with path.open("w", encoding="utf-8") as handle:
        for index, result in enumerate(results):
            game = chess.pgn.Game()
            round_number = index + 1
            player_white = round_number % 2 == 1
            game.headers["Round"] = str(round_number)
            game.headers["White"] = "ab:threads=2" if player_white else "stockfish:elo=2850"
            game.headers["Black"] = "stockfish:elo=2850" if player_white else "ab:threads=2"
            game.headers["Result"] = result
            node: chess.pgn.GameNode = game
            for uci in books[index % len(books)]:
                node = node.add_variation(chess.Move.from_uci(uci), comment="book")
            node.add_variation(chess.Move.from_uci("b1c3" if node.board().turn else "b8c6"))
            print(game, file=handle, end="\n\n")


def _run(tmp_path: Path, *pgns: Path, player: str = "ab") -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(SCRIPT), *map(str, pgns), "--player", player]
    command += ["--out", str(tmp_path / "out")]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_the_paired_difference_and_its_interval(tmp_path: Path) -> None:
    # The player (White in odd rounds): baseline 1, 0.5, 0.5, 0 -> run 1, 1, 0.5, 0.5 and an
    # unfinished fifth round in the run only.
    baseline, run = tmp_path / "base.pgn", tmp_path / "run.pgn"
    _write_run(baseline, ["1-0", "1/2-1/2", "1/2-1/2", "1-0"])
    _write_run(run, ["1-0", "0-1", "1/2-1/2", "1/2-1/2", "*"])
    completed = _run(tmp_path, baseline, run)
    assert completed.returncode == 0, completed.stderr
    (comparison,) = json.loads((tmp_path / "out" / "paired.json").read_text())["comparisons"]
    # Differences per game: 0, +0.5, 0, +0.5 -> mean 0.25, sample sd 0.2887, se 0.1443.
    assert comparison["games"] == 4 and comparison["unpaired"] == 0
    assert comparison["baseline_score"] == 0.5 and comparison["score"] == 0.75
    assert abs(comparison["difference"] - 0.25) < 1e-9
    assert abs(comparison["difference_upper"] - (0.25 + 1.959964 * 0.5 / 2 / 3**0.5)) < 1e-4
    assert (comparison["better"], comparison["worse"], comparison["same"]) == (2, 0, 2)
    assert abs(comparison["elo_difference"] - 190.85) < 0.1  # elo(0.75) - elo(0.5)
    assert f"| {tmp_path.name}/run.pgn | 4 | 75.0% | 50.0% | +0.250 [" in completed.stdout


def test_runs_from_other_openings_are_refused(tmp_path: Path) -> None:
    baseline, run = tmp_path / "base.pgn", tmp_path / "run.pgn"
    _write_run(baseline, ["1-0", "0-1"])
    _write_run(run, ["1-0", "0-1"], books=[["e2e4", "e7e5"], ["e2e4", "c7c5"]])
    completed = _run(tmp_path, baseline, run)
    assert completed.returncode == 2
    assert "round 2 is another game in" in completed.stderr
    assert "d2d4 d7d5" in completed.stderr and "e2e4 c7c5" in completed.stderr


def test_a_pgn_without_the_player_names_file_and_game(tmp_path: Path) -> None:
    baseline = tmp_path / "base.pgn"
    _write_run(baseline, ["1-0", "0-1"])
    completed = _run(tmp_path, baseline, baseline, player="lc0")
    assert completed.returncode == 2
    assert f"{baseline}: game 1: 'lc0' must name exactly one side" in completed.stderr
