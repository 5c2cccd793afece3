"""A random sparse latent model for the native latent tests (no training: seconds to build)."""

from __future__ import annotations

import numpy as np
import torch

from latentchess.models import LatentModel
from latentchess.models.config import SparseEncoderConfig
from latentchess.models.sparse_encoder import SparseEncoder


def random_sparse_model(config: SparseEncoderConfig, seed: int) -> LatentModel:
    """A random sparse model, its feature transformer at a trained model's scale (std ~0.1)."""
    torch.manual_seed(seed)
    encoder = SparseEncoder(config)
    with torch.no_grad():
        encoder.ft.weight.mul_(6.0)
        encoder.ft.weight[config.features.size].zero_()
        encoder.l2_stm.normal_(0.0, 0.1)
    axis = np.random.default_rng(seed).normal(size=config.dim).astype(np.float32)
    return LatentModel(encoder, axis, precision="fp32")
