"""``data import-csv`` on the head of the project's shared labelled CSV."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

import numpy as np
import pytest

from latentchess.cli import main
from latentchess.data.csv_import import import_csv, parse_csv_row
from latentchess.data.store import read_dataset
from latentchess.encoding import fen_key
from latentchess.errors import DataFormatError

# The project's shared data lives beside the checkout (as in CI: <parent>/shared/).
SHARED_CSV = Path(__file__).resolve().parents[2] / "shared/data/sf15-d9-eco-selfplay.csv.gz"
HEAD = 400


@pytest.fixture(scope="module")
def head_lines() -> list[str]:
    if not SHARED_CSV.is_file():
        pytest.skip(f"the project's shared CSV is not beside this checkout: {SHARED_CSV}")
    lines = []
    with gzip.open(SHARED_CSV, "rt") as handle:
        for line in handle:
            lines.append(line.rstrip("\n"))
            if len(lines) == HEAD:
                break
    return lines


def _write(path: Path, lines: list[str]) -> Path:
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return path


def test_import_head_of_shared_csv(tmp_path: Path, head_lines: list[str]) -> None:
    path = _write(tmp_path / "head.csv.gz", head_lines)
    result = import_csv(path, tmp_path / "out", progress=False)
    rows = read_dataset(tmp_path / "out").to_pylist()
    assert result.rows == len(rows) == HEAD and result.malformed == 0
    assert {r["source"] for r in rows} == {"csv:head"}
    # Games: the README's rule, a new game where the fullmove number falls.
    fullmoves = [int(line.split(",")[0].split()[5]) for line in head_lines]
    expected_games = 1 + sum(b < a for a, b in itertools.pairwise(fullmoves))
    assert result.games == expected_games == len({r["game"] for r in rows})
    for line, row in zip(head_lines, rows, strict=True):
        fen, cp, mate, p, move, depth, _gap = line.split(",")
        assert row["fen"] == fen and row["best_move"] == (move or None)
        assert row["depth"] == int(depth)
        if mate:
            assert row["mate_white"] == int(mate) and row["win_prob_white"] in (0.0, 1.0)
        else:
            assert row["cp_white"] == int(cp)
            assert row["win_prob_white"] == pytest.approx(float(p), abs=1e-6)
            assert 0.0 < row["win_prob_white"] < 1.0
    assert len({fen_key(r["fen"]) for r in rows}) == HEAD
    again = import_csv(path, tmp_path / "out", progress=False)
    assert again.new_rows == 0 and again.rows == HEAD


def test_large_centipawn_scores_do_not_become_mate_labels() -> None:
    # Six printed decimals turn +4016 cp into "1.000000"; only a mate may be exactly 1.0.
    line = "3Q4/kp6/p7/3P4/4K3/P2PN1PP/8/4qR2 w - - 1 43,4016,,1.000000,f1e1,9,2890"
    row = parse_csv_row(line.split(","))
    assert 0.999 < row["win_prob_white"] < 1.0
    assert np.float32(row["win_prob_white"]) < 1.0


BAD_ROWS = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1,20,,0.5",  # too few columns
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNX w KQkq - 0 1,20,,0.518,e2e4,9,3",  # bad FEN
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1,abc,,0.518,e2e4,9,3",  # cp
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1,20,,0.9,e2e4,9,3",  # p vs cp
]


def test_malformed_rows_are_reported_with_line_and_skipped(
    tmp_path: Path, head_lines: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    lines = head_lines[:50] + BAD_ROWS + head_lines[50:100]
    path = _write(tmp_path / "bad.csv.gz", lines)
    result = import_csv(path, tmp_path / "out", progress=False)
    assert result.rows == 100 and result.malformed == len(BAD_ROWS)
    err = capsys.readouterr().err
    assert f"{path}:51: expected 7 columns, got 4" in err
    assert f"{path}:52: invalid FEN" in err
    assert f"{path}:53: cp_white 'abc' is not an integer" in err
    assert f"{path}:54: win_prob_white '0.9' does not match cp_white '20'" in err
    with pytest.raises(DataFormatError, match=rf"{path}:51: expected 7 columns"):
        import_csv(path, tmp_path / "strict", strict=True, progress=False)
    assert main(["data", "import-csv", str(path), "--out", str(tmp_path / "cli"), "--strict"]) == 2
