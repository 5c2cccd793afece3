"""Data: Stockfish labelling, generation, importers, Parquet storage and the training cache."""

from latentchess.data.cache import TrainingCache, write_cache

__all__ = ["TrainingCache", "write_cache"]
