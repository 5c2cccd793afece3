"""Data: Stockfish labelling, generation, importers, Parquet storage and the training cache.

Modules: :mod:`~latentchess.data.stockfish` (the labeller), :mod:`~latentchess.data.generate`,
:mod:`~latentchess.data.label`, :mod:`~latentchess.data.csv_import`,
:mod:`~latentchess.data.chessbench` (importers), :mod:`~latentchess.data.merge`,
:mod:`~latentchess.data.summary`, :mod:`~latentchess.data.store` (Parquet shards),
:mod:`~latentchess.data.resume` (resumable writes), :mod:`~latentchess.data.cache` (training cache),
:mod:`~latentchess.data.selfplay` (games of ``ab`` against itself) in
:mod:`~latentchess.data.packed_sfen` records (Stockfish's ``.bin`` format).
Names below are loaded on first use, so importing this package stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

from latentchess.data.cache import TrainingCache, build_cache, write_cache

_LAZY: dict[str, str] = {
    "Label": "latentchess.data.stockfish",
    "Labeller": "latentchess.data.stockfish",
    "find_stockfish": "latentchess.data.stockfish",
    "make_limit": "latentchess.data.stockfish",
    "GenerateConfig": "latentchess.data.generate",
    "GenerateResult": "latentchess.data.generate",
    "generate": "latentchess.data.generate",
    "label_file": "latentchess.data.label",
    "LabelResult": "latentchess.data.label",
    "read_positions": "latentchess.data.positions",
    "import_csv": "latentchess.data.csv_import",
    "merge_datasets": "latentchess.data.merge",
    "summarize": "latentchess.data.summary",
    "DatasetSummary": "latentchess.data.summary",
    "read_dataset": "latentchess.data.store",
    "iter_records": "latentchess.data.store",
    "ShardWriter": "latentchess.data.store",
    "SCHEMA": "latentchess.data.store",
    "SelfPlayConfig": "latentchess.data.selfplay",
    "selfplay": "latentchess.data.selfplay",
    "PackedRecord": "latentchess.data.packed_sfen",
    "read_records": "latentchess.data.packed_sfen",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'latentchess.data' has no attribute {name!r}")


__all__ = ["TrainingCache", "build_cache", "write_cache", *_LAZY]
