"""``data import-csv``: the project's labelled CSV (``../shared/data``) into a dataset.

Format (``../shared/data/README.md``): gzip or plain CSV, no header, columns
``fen,cp_white,mate_white,win_prob_white,best_move,depth,multipv_gap_cp``; exactly one of
``cp_white`` / ``mate_white`` is set. Rows keep generation order, so a new game starts where the
ply (from the FEN's move counters) does not increase; the README's "fullmove number falls" is the
same rule at move granularity.

The stored ``win_prob_white`` is recomputed from the score rather than copied: the CSV prints six
decimals, so a non-mate score above about 3,750 cp reads as exactly 1.000000 (and below -3,750 as
0.000000), which would make it a forced-mate anchor of the advantage axis. A CSV value that
disagrees with its score by more than rounding is reported as malformed.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess

from latentchess.data.problems import ProblemLog
from latentchess.data.resume import ResumableWriter
from latentchess.data.stockfish import cp_win_probability
from latentchess.encoding import tokenize
from latentchess.errors import DataFormatError, InvalidFenError
from latentchess.textfiles import open_text, strip_compression

__all__ = ["CSV_COLUMNS", "CsvImportResult", "import_csv"]

CSV_COLUMNS = (
    "fen",
    "cp_white",
    "mate_white",
    "win_prob_white",
    "best_move",
    "depth",
    "multipv_gap_cp",
)
_TOLERANCE = 1e-5  # six printed decimals round by at most 5e-7; allow for the writer's float32
_CHUNK_LINES = 20_000


@dataclass(frozen=True, kw_only=True)
class CsvImportResult:
    """What an import did.

    Attributes:
        out: the dataset directory.
        rows: rows of this file's import in the dataset.
        new_rows: rows added by this invocation.
        duplicates: rows skipped because the dataset already had the position.
        malformed: malformed rows skipped.
        games: games found in the file (new-game boundaries + 1).
        seconds: wall time.
    """

    out: Path
    rows: int
    new_rows: int
    duplicates: int
    malformed: int
    games: int
    seconds: float


def _optional_int(text: str, column: str) -> int | None:
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{column} {text!r} is not an integer") from None


def parse_csv_row(fields: list[str]) -> dict[str, Any]:
    """Check one CSV row and turn it into a dataset row (without source, game and ply).

    Raises:
        ValueError: the row is malformed (the message says which column and quotes it).
    """
    if len(fields) != len(CSV_COLUMNS):
        raise ValueError(f"expected {len(CSV_COLUMNS)} columns, got {len(fields)}")
    fen, cp_text, mate_text, p_text, move_text, depth_text, gap_text = fields
    try:
        tokenize(fen)
    except InvalidFenError as error:
        raise ValueError(str(error)) from None
    cp = _optional_int(cp_text, "cp_white")
    mate = _optional_int(mate_text, "mate_white")
    try:
        given = float(p_text)
    except ValueError:
        raise ValueError(f"win_prob_white {p_text!r} is not a number") from None
    if not 0.0 <= given <= 1.0:
        raise ValueError(f"win_prob_white {p_text!r} is outside [0, 1]")
    if (cp is None) == (mate is None):
        raise ValueError(
            f"expected exactly one of cp_white / mate_white, got {cp_text!r} / {mate_text!r}"
        )
    if mate is not None:
        p = 1.0 if mate > 0 else 0.0 if mate < 0 else given
        if p not in (0.0, 1.0) or abs(p - given) > _TOLERANCE:
            raise ValueError(f"win_prob_white {p_text!r} does not match mate_white {mate_text!r}")
    else:
        assert cp is not None
        p = cp_win_probability(cp)
        if abs(p - given) > _TOLERANCE:
            raise ValueError(f"win_prob_white {p_text!r} does not match cp_white {cp_text!r}")
    if move_text:
        try:
            chess.Move.from_uci(move_text)
        except ValueError:
            raise ValueError(f"best_move {move_text!r} is not a UCI move") from None
    return {
        "fen": fen,
        "win_prob_white": p,
        "cp_white": cp,
        "mate_white": mate,
        "best_move": move_text or None,
        "depth": _optional_int(depth_text, "depth"),
        "nodes": None,
        "multipv_gap_cp": _optional_int(gap_text, "multipv_gap_cp"),
    }


def _ply(fen: str) -> int:
    parts = fen.split()
    fullmove = int(parts[5]) if len(parts) > 5 and parts[5].isdigit() else 1
    return 2 * (max(fullmove, 1) - 1) + (1 if parts[1] == "b" else 0)


def import_csv(
    path: str | Path,
    out: str | Path,
    *,
    strict: bool = False,
    shard_rows: int = 100_000,
    progress: bool = True,
) -> CsvImportResult:
    """Import a labelled CSV into the dataset ``out`` (resumable; duplicates dropped).

    Args:
        path: the CSV (``.gz`` / ``.xz`` / ``.zst`` / plain).
        out: dataset directory; shards are named ``csv_<file stem>-<k>.parquet``.
        strict: stop at the first malformed row instead of skipping it.
        shard_rows: rows per Parquet shard.
        progress: show a progress bar on stderr.
    """
    from tqdm import tqdm

    started = time.monotonic()
    path = Path(path)
    if not path.is_file():
        raise DataFormatError("no such file", path=path)
    stem = strip_compression(path.name).removesuffix(".csv")
    source = f"csv:{stem}"
    identity = {"command": "import-csv", "input": path.name, "input_bytes": path.stat().st_size}
    prefix = "csv_" + (re.sub(r"[^A-Za-z0-9_.]", "_", stem) or "input")
    writer = ResumableWriter(out, prefix, identity, shard_rows=shard_rows)
    start_rows = writer.rows
    resume_line = writer.cursor  # lines already consumed by an earlier invocation
    reported = ProblemLog(strict=strict)
    silent = ProblemLog(max_shown=0)  # rows before the cursor were reported the first time
    duplicates = games = 0
    previous_ply: int | None = None
    pending: list[dict[str, Any]] = []
    total = None
    if progress:  # one quick pass for the ETA; decompressing is cheap next to parsing
        with open_text(path) as handle:
            total = sum(1 for _ in handle)
    bar = tqdm(
        total=total, unit="line", desc=f"import {path.name}", disable=not progress,
        dynamic_ncols=True,
    )  # fmt: skip
    try:
        with open_text(path) as handle:
            number = 0
            for number, line in enumerate(handle, start=1):
                problems = silent if number <= resume_line else reported
                text = line.rstrip("\r\n")
                if not text:
                    continue
                try:
                    row = parse_csv_row(text.split(","))
                except ValueError as error:
                    problems.report(str(error), path=path, line=number)
                    continue
                ply = _ply(row["fen"])
                if previous_ply is None or ply <= previous_ply:
                    games += 1
                previous_ply = ply
                if number <= resume_line:
                    continue
                if not writer.claim(row["fen"]):
                    duplicates += 1
                    continue
                pending.append({**row, "source": source, "game": games - 1, "ply": ply})
                if number % _CHUNK_LINES == 0:
                    writer.commit(pending, cursor=number)
                    bar.update(number - bar.n)
                    pending = []
            writer.commit(pending, cursor=max(number, resume_line))
            bar.update(number - bar.n)
    finally:
        writer.close()
        bar.close()
    return CsvImportResult(
        out=Path(out),
        rows=writer.rows,
        new_rows=writer.rows - start_rows,
        duplicates=duplicates,
        malformed=reported.count,
        games=games,
        seconds=time.monotonic() - started,
    )
