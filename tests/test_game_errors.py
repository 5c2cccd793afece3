"""benchmarks/game_errors.py: a blunder a real Stockfish refutes is found, with ply and clock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evaluation_fixtures import require_stockfish

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "game_errors.py"

# Black's 3...Nf6?? allows 4.Qxf7#: the decisive error, made with 4.5 s on Black's clock.
SCHOLARS_MATE = """[Event "t"]
[Round "7"]
[White "ab:threads=2"]
[Black "stockfish:elo=2850"]
[Result "1-0"]
[TimeControl "10+0.1"]

1. e4 { book } 1... e5 { book } 2. Qh5 { [%clk 0:00:09.500] } 2... Nc6 { [%clk 0:00:04.500] }
3. Bc4 { [%clk 0:00:09.000] } 3... Nf6 { [%clk 0:00:04.000] } 4. Qxf7# { [%clk 0:00:08.500] } 1-0
"""


def _run(tmp_path: Path, pgn: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(SCRIPT), str(pgn), "--nodes", "20000", "--workers", "1"]
    command += ["--stockfish", require_stockfish(), "--out", str(tmp_path / "out"), *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_the_losing_blunder_is_the_decisive_error(tmp_path: Path) -> None:
    pgn = tmp_path / "games.pgn"
    pgn.write_text(SCHOLARS_MATE)
    completed = _run(tmp_path, pgn)
    assert completed.returncode == 0, completed.stderr
    summary = json.loads((tmp_path / "out" / "game_errors.json").read_text())
    assert summary["games"] == 1
    assert summary["games_won_by_player"] == 1 and summary["games_lost_by_player"] == 0
    (decisive,) = summary["decisive_errors"]
    assert decisive["loser"] == "opponent"
    assert (decisive["round"], decisive["ply"], decisive["san"]) == (7, 5, "Nf6")
    assert decisive["clock"] == 4.5  # Black's clock before the move: its previous %clk
    assert decisive["error"] > 0.5  # from about level to mated
    opponent = summary["by_side"]["opponent"]["all"]
    assert opponent["moves"] == 2 and opponent["blunders"] >= 1
    assert summary["by_side"]["player"]["all"]["moves"] == 3  # book moves are not analysed
    assert (tmp_path / "out" / "game_errors.png").stat().st_size > 0
    # Resumed from the cache: the same answer without analysing again.
    again = _run(tmp_path, pgn)
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "out" / "game_errors.json").read_text())["decisive_errors"] == [
        decisive
    ]


def test_a_game_without_the_player_names_the_file_and_game(tmp_path: Path) -> None:
    pgn = tmp_path / "games.pgn"
    pgn.write_text(SCHOLARS_MATE)
    completed = _run(tmp_path, pgn, "--player", "nobody")
    assert completed.returncode != 0
    assert f"{pgn}: game 1: 'nobody' must name exactly one side" in completed.stderr
