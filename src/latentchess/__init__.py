"""latentchess: a chess-AI workbench around engines that plan in a learned embedding space.

Only the error types are imported eagerly; every other public name (the tokenizer, win
probabilities, models, engines...) is imported on first use (PEP 562), so ``import latentchess``
and ``latentchess uci`` start fast.
"""

from __future__ import annotations

import importlib
from typing import Any

from latentchess.errors import (
    DataFormatError,
    EngineError,
    InvalidFenError,
    LatentChessError,
    ModelFileError,
)

__version__ = "0.1.0"

# name -> module that defines it; loaded lazily (PEP 562).
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        (
            "SEQUENCE_LENGTH",
            "TOKENIZER_VERSION",
            "VOCAB",
            "VOCAB_SIZE",
            "detokenize",
            "fen_key",
            "tokenize",
            "tokenize_batch",
        ),
        "latentchess.encoding",
    ),
    **dict.fromkeys(
        (
            "centipawns",
            "score_win_probability",
            "side_to_move_perspective",
            "white_perspective",
            "win_probability",
        ),
        "latentchess.winprob",
    ),
    "EncoderConfig": "latentchess.models",
    "Encoder": "latentchess.models",
    "MODEL_CONFIGS": "latentchess.models",
    "LatentModel": "latentchess.models",
    "load_model": "latentchess.models",
    "save_model": "latentchess.models",
    "default_model_path": "latentchess.models",
    "TrainingCache": "latentchess.data.cache",
    "TrainConfig": "latentchess.training.config",
    "TrainResult": "latentchess.training.trainer",
    "train": "latentchess.training.trainer",
    "Engine": "latentchess.engines.base",
    "Analysis": "latentchess.engines.base",
    "LatentEngine": "latentchess.engines.latent",
    "SearchConfig": "latentchess.search",
    "SearchResult": "latentchess.search",
    "Searcher": "latentchess.search",
    "create_engine": "latentchess.engines.registry",
    "run_match": "latentchess.evaluation.match",
    "fit_bayeselo": "latentchess.evaluation.elo",
    "explain_move": "latentchess.explain",
    "MoveExplanation": "latentchess.explain",
    "load_latent_view": "latentchess.latent_view",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'latentchess' has no attribute {name!r}")


__all__ = [
    "DataFormatError",
    "EngineError",
    "InvalidFenError",
    "LatentChessError",
    "ModelFileError",
    *_LAZY,
]
