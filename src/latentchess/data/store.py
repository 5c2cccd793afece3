"""Labelled positions on disk: a dataset is a directory of Parquet shards with one schema.

Every writer in the package (generation, labelling, importers) goes through :class:`ShardWriter`,
which writes each shard to a temporary name and renames it into place, so a killed run leaves
only complete shards behind. Readers see the union of ``*.parquet`` files in the directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from latentchess.errors import DataFormatError

__all__ = [
    "SCHEMA",
    "ShardWriter",
    "shard_paths",
    "read_dataset",
    "iter_records",
    "read_shard_metadata",
    "shard_num_rows",
]

SCHEMA = pa.schema(
    [
        pa.field("fen", pa.string(), nullable=False),
        pa.field("win_prob_white", pa.float64(), nullable=False),
        pa.field("cp_white", pa.int32()),  # null when a mate was found
        pa.field("mate_white", pa.int32()),  # + White mates in n, - Black mates; null otherwise
        pa.field("best_move", pa.string()),  # UCI; null when the label has none (imports)
        pa.field("depth", pa.int16()),  # label search depth, if known
        pa.field("nodes", pa.int64()),  # label node count, if known
        pa.field("multipv_gap_cp", pa.int32()),  # best minus second best, mover's view
        pa.field("source", pa.string(), nullable=False),  # e.g. "generate", "label:games.pgn"
        pa.field("game", pa.int64()),  # game index within the source, if any
        pa.field("ply", pa.int32()),  # ply within that game, if any
    ]
)
"""Columns of every shard. Only ``fen``, ``win_prob_white`` and ``source`` are required."""


def shard_paths(directory: str | Path) -> list[Path]:
    """The complete shards of a dataset, in name order."""
    return sorted(Path(directory).glob("*.parquet"))


class ShardWriter:
    """Writes a dataset's shards atomically: ``<prefix>-<index:06d>.parquet``.

    Args:
        directory: dataset directory (created if missing).
        prefix: shard name prefix; writers of different runs or shards use different prefixes.
    """

    def __init__(self, directory: str | Path, prefix: str = "part") -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        existing = sorted(self.directory.glob(f"{prefix}-*.parquet"))
        self.next_index = int(existing[-1].stem.rsplit("-", 1)[1]) + 1 if existing else 0
        for stale in self.directory.glob(f".{prefix}-*.tmp"):
            stale.unlink()

    def write(
        self, records: Iterable[Mapping[str, Any]], metadata: Mapping[str, str] | None = None
    ) -> Path | None:
        """Write one shard from row dicts (missing optional columns become null).

        Args:
            records: the rows.
            metadata: optional Parquet key-value metadata stored in the shard's footer (resumable
                writers keep their progress cursor there; read it with :func:`read_shard_metadata`).
        """
        rows = list(records)
        if not rows:
            return None
        columns = {f.name: [row.get(f.name) for row in rows] for f in SCHEMA}
        table = pa.table(columns, schema=SCHEMA)
        if metadata:
            table = table.replace_schema_metadata(dict(metadata))
        name = f"{self.prefix}-{self.next_index:06d}.parquet"
        tmp = self.directory / f".{name}.tmp"
        pq.write_table(table, tmp, compression="zstd")
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, self.directory / name)
        self.next_index += 1
        return self.directory / name


def read_shard_metadata(path: str | Path) -> dict[str, str]:
    """The key-value metadata a shard was written with (reads only the footer)."""
    try:
        raw = pq.read_schema(path).metadata or {}
    except (pa.ArrowInvalid, OSError) as error:
        raise DataFormatError(f"unreadable Parquet shard: {error}", path=path) from error
    return {key.decode(): value.decode() for key, value in raw.items() if key != b"ARROW:schema"}


def shard_num_rows(path: str | Path) -> int:
    """Row count of one shard (reads only the footer)."""
    try:
        return int(pq.read_metadata(path).num_rows)
    except (pa.ArrowInvalid, OSError) as error:
        raise DataFormatError(f"unreadable Parquet shard: {error}", path=path) from error


def read_dataset(directory: str | Path, columns: list[str] | None = None) -> pa.Table:
    """Read all shards of a dataset into one table."""
    paths = shard_paths(directory)
    if not paths:
        raise DataFormatError("no Parquet shards found", path=directory)
    tables = []
    for path in paths:
        try:
            tables.append(pq.read_table(path, columns=columns))
        except (pa.ArrowInvalid, OSError) as error:
            raise DataFormatError(f"unreadable Parquet shard: {error}", path=path) from error
    return pa.concat_tables(tables, promote_options="default")


def iter_records(directory: str | Path) -> Iterator[dict[str, Any]]:
    """Stream a dataset's rows as dicts, shard by shard."""
    for path in shard_paths(directory):
        yield from pq.read_table(path).to_pylist()
