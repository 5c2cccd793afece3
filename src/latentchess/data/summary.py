"""``data summary``: what a dataset holds, as a dataclass and as text for the terminal."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from latentchess.data.store import shard_paths
from latentchess.encoding import fen_key
from latentchess.errors import DataFormatError

__all__ = ["DatasetSummary", "summarize", "HISTOGRAM_BINS"]

HISTOGRAM_BINS = 10
PERSPECTIVE = (
    "win_prob_white is White's win probability (1.0 = White wins, 0.0 = Black wins); "
    "exactly 1.0 / 0.0 only for a forced mate"
)
_COLUMNS = ["fen", "win_prob_white", "mate_white", "depth", "nodes", "source", "game"]


@dataclass(kw_only=True)
class DatasetSummary:
    """Counts describing a dataset.

    Attributes:
        path: the dataset directory.
        shards: Parquet files.
        rows: rows.
        unique_positions: distinct :func:`fen_key` values (== rows in a clean dataset).
        sources: rows per ``source``.
        games: distinct (source, game) pairs.
        white_to_move: rows with White to move.
        histogram: row counts of ``win_prob_white`` in :data:`HISTOGRAM_BINS` equal bins of [0, 1].
        white_mates: rows labelled exactly 1.0 (White has a forced mate or has mated).
        black_mates: rows labelled exactly 0.0.
        checkmates: rows that are checkmate on the board (``mate_white == 0``).
        depth_counts: rows per label search depth (0: decided by the rules; -1: unknown).
        nodes_median: median nodes per searched label (None if unknown).
        nodes_mean: mean nodes per searched label (None if unknown).
    """

    path: Path
    shards: int = 0
    rows: int = 0
    unique_positions: int = 0
    sources: dict[str, int] = field(default_factory=dict)
    games: int = 0
    white_to_move: int = 0
    histogram: list[int] = field(default_factory=lambda: [0] * HISTOGRAM_BINS)
    white_mates: int = 0
    black_mates: int = 0
    checkmates: int = 0
    depth_counts: dict[int, int] = field(default_factory=dict)
    nodes_median: float | None = None
    nodes_mean: float | None = None

    def format(self, width: int = 40) -> str:
        """Multi-line text for the terminal, with the histogram drawn in ``#``."""
        lines = [f"dataset {self.path}: {self.rows} rows in {self.shards} shards"]
        lines.append(
            f"  unique positions: {self.unique_positions}"
            + ("" if self.unique_positions == self.rows else " (DUPLICATES PRESENT)")
        )
        lines.append(f"  label perspective: {PERSPECTIVE}")
        lines.append("  sources:")
        for source, count in sorted(self.sources.items()):
            lines.append(f"    {source}: {count}")
        lines.append(f"  games: {self.games}")
        black = self.rows - self.white_to_move
        lines.append(f"  side to move: White {self.white_to_move}, Black {black}")
        lines.append(
            f"  forced mates: White mates (p = 1.0) {self.white_mates}, Black mates (p = 0.0) "
            f"{self.black_mates}; checkmate positions {self.checkmates}"
        )
        depths = ", ".join(
            f"{'rules' if d == 0 else 'unknown' if d < 0 else d}: {n}"
            for d, n in sorted(self.depth_counts.items())
        )
        lines.append(f"  label depth (rows): {depths or '-'}")
        if self.nodes_median is not None and self.nodes_mean is not None:
            lines.append(
                f"  label nodes: median {self.nodes_median:.0f}, mean {self.nodes_mean:.0f}"
            )
        lines.append("  win_prob_white histogram:")
        peak = max(self.histogram) or 1
        for i, count in enumerate(self.histogram):
            lo, hi = i / HISTOGRAM_BINS, (i + 1) / HISTOGRAM_BINS
            bar = "#" * round(width * count / peak)
            close = "]" if i == HISTOGRAM_BINS - 1 else ")"
            lines.append(f"    [{lo:.1f}, {hi:.1f}{close} {count:>9} {bar}")
        return "\n".join(lines)


def summarize(directory: str | Path) -> DatasetSummary:
    """Summarise a dataset shard by shard (memory: one shard plus the set of position keys)."""
    directory = Path(directory)
    paths = shard_paths(directory)
    if not paths:
        raise DataFormatError("no Parquet shards found", path=directory)
    summary = DatasetSummary(path=directory, shards=len(paths))
    keys: set[str] = set()
    games: set[tuple[str, int]] = set()
    sources: Counter[str] = Counter()
    depths: Counter[int] = Counter()
    histogram = np.zeros(HISTOGRAM_BINS, dtype=np.int64)
    node_values: list[np.ndarray] = []
    for path in paths:
        try:
            table = pq.read_table(path, columns=_COLUMNS)
        except (OSError, ValueError) as error:
            raise DataFormatError(f"unreadable Parquet shard: {error}", path=path) from error
        fens = table.column("fen").to_pylist()
        keys.update(fen_key(fen) for fen in fens)
        summary.rows += len(fens)
        summary.white_to_move += sum(1 for fen in fens if fen.split(" ", 2)[1] == "w")
        p = table.column("win_prob_white").to_numpy()
        bins = np.minimum((p * HISTOGRAM_BINS).astype(np.int64), HISTOGRAM_BINS - 1)
        histogram += np.bincount(bins, minlength=HISTOGRAM_BINS)
        summary.white_mates += int((p == 1.0).sum())
        summary.black_mates += int((p == 0.0).sum())
        mate = table.column("mate_white").to_numpy(zero_copy_only=False)
        summary.checkmates += int(np.nansum(np.asarray(mate, dtype=float) == 0.0))
        depth = np.asarray(table.column("depth").to_numpy(zero_copy_only=False), dtype=float)
        values, counts = np.unique(
            np.nan_to_num(depth, nan=-1.0).astype(np.int64), return_counts=True
        )
        depths.update(dict(zip(values.tolist(), counts.tolist(), strict=True)))
        nodes = np.asarray(table.column("nodes").to_numpy(zero_copy_only=False), dtype=float)
        searched = nodes[np.isfinite(nodes) & (nodes > 0)]
        if searched.size:
            node_values.append(searched)
        source_column = table.column("source").to_pylist()
        sources.update(source_column)
        for source, game in zip(source_column, table.column("game").to_pylist(), strict=True):
            if game is not None:
                games.add((source, game))
    summary.unique_positions = len(keys)
    summary.sources = dict(sources)
    summary.games = len(games)
    summary.histogram = [int(n) for n in histogram]
    summary.depth_counts = dict(depths)
    if node_values:
        all_nodes = np.concatenate(node_values)
        summary.nodes_median = float(np.median(all_nodes))
        summary.nodes_mean = float(all_nodes.mean())
    return summary
