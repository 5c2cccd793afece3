"""Models: encoder architecture, configurations, and model files (never imports training/search)."""

from latentchess.models.config import MODEL_CONFIGS, EncoderConfig, get_config
from latentchess.models.encoder import Embedding, Encoder

__all__ = ["MODEL_CONFIGS", "EncoderConfig", "get_config", "Encoder", "Embedding"]
