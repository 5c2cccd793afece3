"""Models: encoder architecture, configurations, and model files (never imports training/search)."""

from latentchess.models.config import MODEL_CONFIGS, EncoderConfig, get_config
from latentchess.models.encoder import Embedding, Encoder
from latentchess.models.inference import LatentModel
from latentchess.models.io import default_model_path, load_model, read_model_config, save_model

__all__ = [
    "MODEL_CONFIGS",
    "EncoderConfig",
    "get_config",
    "Encoder",
    "Embedding",
    "LatentModel",
    "default_model_path",
    "load_model",
    "read_model_config",
    "save_model",
]
