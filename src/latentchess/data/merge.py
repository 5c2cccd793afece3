"""``data merge``: several datasets (e.g. the shards of a ``generate --shard I/N`` run) into one.

Rows are taken in input order (datasets as given, shards by name) and a position already taken
(by :func:`~latentchess.encoding.fen_key`) is dropped, so the first occurrence wins. The merge is
resumable like every writer here: its cursor counts input shards consumed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from latentchess.data.resume import ResumableWriter
from latentchess.data.store import shard_paths
from latentchess.errors import DataFormatError

__all__ = ["MergeResult", "merge_datasets"]


@dataclass(frozen=True, kw_only=True)
class MergeResult:
    """What a merge did.

    Attributes:
        out: the merged dataset directory.
        rows: rows the merge has written (this and earlier invocations).
        duplicates: rows dropped in this invocation because their position was already taken.
        seconds: wall time.
    """

    out: Path
    rows: int
    duplicates: int
    seconds: float


def merge_datasets(
    inputs: list[str | Path],
    out: str | Path,
    *,
    shard_rows: int = 100_000,
    progress: bool = True,
) -> MergeResult:
    """Merge datasets into ``out`` without duplicate positions.

    Args:
        inputs: dataset directories, in priority order.
        out: output dataset directory (must not be one of the inputs).
        shard_rows: rows per output shard (a shard ends at an input shard boundary).
        progress: show a progress bar on stderr.

    Raises:
        DataFormatError: an input has no shards, or ``out`` is an input.
    """
    from tqdm import tqdm

    started = time.monotonic()
    out = Path(out)
    shards: list[Path] = []
    for directory in inputs:
        if Path(directory).resolve() == out.resolve():
            raise DataFormatError("the merge output must not be one of its inputs", path=out)
        found = shard_paths(directory)
        if not found:
            raise DataFormatError("no Parquet shards found", path=directory)
        shards.extend(found)
    identity = {
        "command": "merge",
        "inputs": [[str(Path(p).resolve().parent), p.name, p.stat().st_size] for p in shards],
    }
    writer = ResumableWriter(out, "merged", identity, shard_rows=shard_rows)
    duplicates = 0
    bar = tqdm(
        total=len(shards), initial=writer.cursor, unit="shard", desc="merge",
        disable=not progress, dynamic_ncols=True,
    )  # fmt: skip
    try:
        for index in range(writer.cursor, len(shards)):
            rows = []
            for row in pq.read_table(shards[index]).to_pylist():
                if writer.claim(row["fen"]):
                    rows.append(row)
                else:
                    duplicates += 1
            writer.commit(rows, cursor=index + 1)
            bar.update(1)
    finally:
        writer.close()
        bar.close()
    return MergeResult(
        out=out, rows=writer.rows, duplicates=duplicates, seconds=time.monotonic() - started
    )
