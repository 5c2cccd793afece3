"""Two benchmark scripts on folders the test writes: the latent decomposition report (a match
record without per-game entries, its games read back from the compressed PGN beside it, paired
into a pentanomial) and the held-out loss curves of training runs' metrics."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from latentchess.textfiles import write_text

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _game(round_: int, white: str, black: str, result: str) -> str:
    return (
        f'[Event "latentchess match"]\n[Round "{round_}"]\n[White "{white}"]\n'
        f'[Black "{black}"]\n[Result "{result}"]\n\n1. e4 e5 2. Nf3 Nc6 {result}\n\n'
    )


def test_decomposition_report_reads_games_from_the_pgn(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    report = _script("latent_decomposition_report")
    me, other = "latent:eval=nnue", "latent"
    # two pairs: (win, draw) as White then Black = 1.5; (loss, loss) = 0
    games = [
        _game(1, me, other, "1-0"),
        _game(2, other, me, "1/2-1/2"),
        _game(3, me, other, "0-1"),
        _game(4, other, me, "1-0"),
    ]
    write_text(tmp_path / "latent-x.pgn.xz", "".join(games))
    record = {"engine1": me, "engine2": other, "limit1": "depth=6", "game_count": 4}
    write_text(tmp_path / "latent-x.json.xz", json.dumps(record))
    monkeypatch.setattr(sys, "argv", ["report", str(tmp_path)])
    report.main()
    (row,) = json.loads((tmp_path / "elo.json").read_text())
    assert (row["wins"], row["draws"], row["losses"]) == (1, 1, 2)
    assert row["pentanomial"] == [1, 0, 0, 1, 0]
    assert row["held_equal"].startswith("the search (SOLIS, width 8, qs)")
    assert row["pgn"] == "latent-x.pgn.xz"
    assert "`latent:eval=nnue` | `latent` (depth=6)" in capsys.readouterr().out


def test_heldout_curve_pairs_evaluations_with_positions_seen() -> None:
    plot = _script("plot_heldout_loss")
    lines = [
        {"kind": "start", "step": 0},
        {"kind": "train", "step": 50, "positions": 800},
        {"kind": "train", "step": 100, "positions": 1600},
        {"kind": "eval", "step": 100, "val_loss": 0.5},
        {"kind": "eval", "step": 150, "val_loss": 0.4},  # no train record: 16 a step
        {"kind": "final", "step": 150, "val_loss": 0.39},
    ]
    text = "\n".join(json.dumps(line) for line in lines) + '\n{"kind": "tr'  # torn last line
    xs, ys = plot.heldout_curve(text)
    assert xs == pytest.approx([1600e-6, 2400e-6, 2400e-6])
    assert ys == [0.5, 0.4, 0.39]
