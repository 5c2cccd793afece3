"""latentchess: a chess-AI workbench around engines that plan in a learned embedding space.

The light core (tokenizer, win probabilities, errors) is imported eagerly; everything that needs
PyTorch is imported on first use, so ``import latentchess`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any

from latentchess.encoding import (
    SEQUENCE_LENGTH,
    TOKENIZER_VERSION,
    VOCAB,
    VOCAB_SIZE,
    detokenize,
    fen_key,
    tokenize,
    tokenize_batch,
)
from latentchess.errors import (
    DataFormatError,
    EngineError,
    InvalidFenError,
    LatentChessError,
    ModelFileError,
)
from latentchess.winprob import (
    centipawns,
    score_win_probability,
    side_to_move_perspective,
    white_perspective,
    win_probability,
)

__version__ = "0.1.0"

# name -> module that defines it; loaded lazily (PEP 562).
_LAZY: dict[str, str] = {
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
    "SEQUENCE_LENGTH",
    "TOKENIZER_VERSION",
    "VOCAB",
    "VOCAB_SIZE",
    "DataFormatError",
    "EngineError",
    "InvalidFenError",
    "LatentChessError",
    "ModelFileError",
    "centipawns",
    "detokenize",
    "fen_key",
    "score_win_probability",
    "side_to_move_perspective",
    "tokenize",
    "tokenize_batch",
    "white_perspective",
    "win_probability",
    *_LAZY,
]
