"""benchmarks/ladder_report.py on a ladder folder the test writes: compressed PGNs, one fit per
scale (UCI_Elo rungs, engines with published CCRL ratings), the table and the fits' lines."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from latentchess.textfiles import append_text

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "ladder_report.py"
_spec = importlib.util.spec_from_file_location("ladder_report", SCRIPT)
assert _spec is not None and _spec.loader is not None
ladder_report = importlib.util.module_from_spec(_spec)
sys.modules["ladder_report"] = ladder_report
_spec.loader.exec_module(ladder_report)

STASH = "uci:runs/anchors/bin/stash,Threads=1,Hash=16"


def _game(white: str, black: str, result: str, termination: str) -> str:
    moves = (
        "1. e4 { [%emt 0:00:00.20] [%clk 0:00:09.90] } e5 { [%emt 0:00:00.40] [%clk 0:00:09.70] } "
        "2. Nf3 { [%emt 0:00:00.30] [%clk 0:00:09.70] } Nc6 { [%emt 0:00:00.50] "
        "[%clk 0:00:09.30] }"
    )
    return (
        f'[White "{white}"]\n[Black "{black}"]\n[Result "{result}"]\n'
        f'[Termination "{termination}"]\n\n{moves} {result}\n\n'
    )


def _fit(anchors: dict[str, float], elo: float) -> dict[str, object]:
    ratings = [
        {"name": n, "elo": e, "lower": e, "upper": e, "games": 2} for n, e in anchors.items()
    ]
    ratings.append({"name": "ab", "elo": elo, "lower": elo - 50, "upper": elo + 50, "games": 2})
    return {"ratings": ratings, "anchors": anchors, "draw_elo": [200.0], "advantage": [30.0]}


def test_a_ladder_on_two_scales(tmp_path: Path, capsys) -> None:
    append_text(tmp_path / "tc10+0.1_vs_stash.pgn.xz", _game("ab", STASH, "1-0", "normal"))
    append_text(
        tmp_path / "tc10+0.1_vs_stash.pgn.xz", _game(STASH, "ab", "1/2-1/2", "adjudication")
    )
    sf = "stockfish:elo=2850,Move Overhead=100"
    append_text(tmp_path / "tc10+0.1_vs_2850.pgn", _game(sf, "ab", "1-0", "normal"))
    append_text(tmp_path / "tc10+0.1_vs_2850.pgn", _game("ab", sf, "*", "unterminated"))
    (tmp_path / "tc10+0.1_ccrl_elo.json").write_text(json.dumps(_fit({STASH: 3398.0}, 3420.0)))
    (tmp_path / "tc10+0.1_elo.json").write_text(json.dumps(_fit({sf: 2850.0}, 2600.0)))

    assert ladder_report.main([str(tmp_path)]) == 0
    table = (tmp_path / "ladder.md").read_text(encoding="utf-8")
    assert capsys.readouterr().out == table + "\n"  # printed as written
    rows = {r["opponent"]: r for r in json.loads((tmp_path / "ladder.json").read_text())}
    stash, rung = rows[STASH], rows[sf]
    assert (stash["games"], stash["wins"], stash["draws"], stash["losses"]) == (2, 1, 1, 0)
    assert (rung["games"], rung["losses"]) == (1, 1)  # the unfinished game is not counted
    assert stash["terminations"] == {"normal": 1, "adjudication": 1}
    # ab's moves: 0.20 and 0.30 s as White, 0.40 and 0.50 s as Black; its lowest clock 9.30 s
    assert stash["median_s"] == 0.35 and stash["lowest_clock_s"] == 9.3
    assert f"anchored: `{STASH}` at 3398): **`ab` 3420 [3370, 3470]**" in table
    assert f"anchored: `{sf}` at 2850): **`ab` 2600 [2550, 2650]**" in table
