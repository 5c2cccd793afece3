"""Models: the SOLIS and GAB encoders, the Chessformer, configurations, model files, precision.

Never imports training or search. Names are loaded on first use (PEP 562), so importing this
package (e.g. for the command-line parser) does not import PyTorch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from latentchess.models.config import MODEL_CONFIGS, EncoderConfig, get_config
    from latentchess.models.encoder import Embedding, Encoder
    from latentchess.models.export import export_onnx
    from latentchess.models.inference import LatentModel
    from latentchess.models.io import (
        default_model_path,
        load_model,
        read_model_config,
        save_model,
    )

_LAZY: dict[str, str] = {
    "MODEL_CONFIGS": "latentchess.models.config",
    "EncoderConfig": "latentchess.models.config",
    "get_config": "latentchess.models.config",
    "Encoder": "latentchess.models.encoder",
    "Embedding": "latentchess.models.encoder",
    "export_onnx": "latentchess.models.export",
    "LatentModel": "latentchess.models.inference",
    "default_model_path": "latentchess.paths",
    "load_model": "latentchess.models.io",
    "read_model_config": "latentchess.models.io",
    "save_model": "latentchess.models.io",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'latentchess.models' has no attribute {name!r}")


__all__ = [
    "MODEL_CONFIGS",
    "Embedding",
    "Encoder",
    "EncoderConfig",
    "LatentModel",
    "default_model_path",
    "export_onnx",
    "get_config",
    "load_model",
    "read_model_config",
    "save_model",
]
