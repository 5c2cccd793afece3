"""Resumable, deduplicating writes into a dataset: what makes ``kill -9`` and a rerun lose nothing.

A run (one ``data generate`` shard, one ``data label`` input file, one CSV import, one merge)
owns a shard name prefix in the dataset directory. It processes its input as a sequence of tasks
and commits rows strictly in task order; every shard it writes carries, in its Parquet footer, the
run's config and a *cursor*: the number of tasks whose rows are all in that shard or earlier ones.
Shards are written atomically (:class:`~latentchess.data.store.ShardWriter`), so after a crash the
newest shard's cursor says exactly where to continue; rows buffered after it were never written
and are simply made again. A rerun with a different config is refused rather than mixed in.

Positions are unique within a dataset directory by :func:`latentchess.encoding.fen_key`: the
writer loads the keys of every shard already there (of any run) and drops repeats.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from latentchess.data.store import ShardWriter, read_shard_metadata, shard_num_rows, shard_paths
from latentchess.encoding import fen_key
from latentchess.errors import DataFormatError

__all__ = ["ResumableWriter", "RUN_METADATA_KEY", "load_fen_keys", "prefix_shards"]

RUN_METADATA_KEY = "latentchess.run"
"""Parquet footer key of the JSON ``{"config": ..., "cursor": ...}`` a resumable run stores."""

_PREFIX_OK = re.compile(r"^[A-Za-z0-9_.]+$")


def prefix_shards(directory: str | Path, prefix: str) -> list[Path]:
    """The shards named ``<prefix>-<6 digits>.parquet`` in ``directory``, in order."""
    pattern = re.compile(rf"^{re.escape(prefix)}-\d{{6}}\.parquet$")
    return [path for path in shard_paths(directory) if pattern.match(path.name)]


def load_fen_keys(directory: str | Path) -> set[str]:
    """The :func:`fen_key` of every row of every shard in a dataset directory (empty if none)."""
    keys: set[str] = set()
    if not Path(directory).is_dir():
        return keys
    for path in shard_paths(directory):
        try:
            column = pq.read_table(path, columns=["fen"]).column("fen")
        except (OSError, ValueError) as error:
            raise DataFormatError(f"unreadable Parquet shard: {error}", path=path) from error
        keys.update(fen_key(fen) for fen in column.to_pylist())
    return keys


class ResumableWriter:
    """Commit rows of one run into a dataset, in task order, resumably and without duplicates.

    Args:
        directory: the dataset directory (created if missing).
        prefix: this run's shard prefix (letters, digits, ``_`` and ``.`` only).
        config: JSON-serialisable description of everything that determines the run's rows; a
            resumed run must pass an equal config.
        shard_rows: a shard is written once this many rows are buffered (see :meth:`commit`).
        flush_seconds: also write a shard when the oldest buffered row is this old, so a long
            run loses at most this much work when killed.
        seen: the dataset's fen keys when already loaded (:func:`load_fen_keys`), shared by
            writers that run one after another into the same directory; loaded when ``None``.

    Attributes:
        cursor: tasks committed so far (including buffered ones).
        rows: rows committed so far by this run (including buffered ones).
        seen: fen keys present in the dataset (all runs) or buffered.
    """

    def __init__(
        self,
        directory: str | Path,
        prefix: str,
        config: Mapping[str, Any],
        *,
        shard_rows: int = 10_000,
        flush_seconds: float = 300.0,
        seen: set[str] | None = None,
    ) -> None:
        if not _PREFIX_OK.match(prefix):
            raise ValueError(f"shard prefix must match {_PREFIX_OK.pattern}, got {prefix!r}")
        if shard_rows < 1:
            raise ValueError(f"shard_rows must be >= 1, got {shard_rows!r}")
        self.directory = Path(directory)
        self.prefix = prefix
        self.config = json.loads(json.dumps(dict(config)))  # normalised (tuples -> lists)
        self.shard_rows = shard_rows
        self.flush_seconds = flush_seconds
        self.cursor = 0
        self.rows = 0
        self.resumed_rows = 0
        existing = prefix_shards(self.directory, prefix) if self.directory.is_dir() else []
        if existing:
            self._check_resume(existing)
        self.seen = load_fen_keys(self.directory) if seen is None else seen
        self._writer = ShardWriter(self.directory, prefix)
        self._buffer: list[dict[str, Any]] = []
        self._buffer_since = time.monotonic()

    def _check_resume(self, existing: list[Path]) -> None:
        last = existing[-1]
        raw = read_shard_metadata(last).get(RUN_METADATA_KEY)
        if raw is None:
            raise DataFormatError(
                f"shard has no {RUN_METADATA_KEY!r} metadata, so this run cannot resume into it; "
                "use a new output directory",
                path=last,
            )
        stored = json.loads(raw)
        if stored.get("config") != self.config:
            raise DataFormatError(
                f"this directory holds a run with prefix {self.prefix!r} made with different "
                f"settings: {stored.get('config')!r}, not {self.config!r}; rerun with the same "
                "settings to resume, or use a new output directory",
                path=last,
            )
        self.cursor = int(stored["cursor"])
        self.rows = self.resumed_rows = sum(shard_num_rows(path) for path in existing)

    def claim(self, fen: str) -> bool:
        """Mark a position as taken; False if the dataset already has (or buffers) it."""
        key = fen_key(fen)
        if key in self.seen:
            return False
        self.seen.add(key)
        return True

    def commit(self, rows: Iterable[Mapping[str, Any]], cursor: int) -> None:
        """Buffer rows of finished tasks and advance the cursor; writes a shard when due.

        The rows must already be claimed (:meth:`claim`); ``cursor`` counts all tasks done.
        A shard is written once ``shard_rows`` rows are buffered, so it may exceed that by the
        rows of one commit: every shard then ends at a task boundary and its cursor is exact.
        """
        if cursor < self.cursor:
            raise ValueError(f"cursor went backwards: {cursor} < {self.cursor}")
        if not self._buffer:
            self._buffer_since = time.monotonic()
        before = len(self._buffer)
        self._buffer.extend(dict(row) for row in rows)
        self.rows += len(self._buffer) - before
        self.cursor = cursor
        if len(self._buffer) >= self.shard_rows or (
            self._buffer and time.monotonic() - self._buffer_since >= self.flush_seconds
        ):
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows as one shard with the current cursor (no-op when empty)."""
        if not self._buffer:
            return
        record = json.dumps({"config": self.config, "cursor": self.cursor}, sort_keys=True)
        self._writer.write(self._buffer, {RUN_METADATA_KEY: record})
        self._buffer = []

    def close(self) -> None:
        """Flush what is buffered."""
        self.flush()

    def message(self) -> str:
        """One line on how this run stands, for the end of a command."""
        return (
            f"{self.rows} rows in {self.directory} (prefix {self.prefix!r}, "
            f"{self.resumed_rows} from before this run)"
        )
