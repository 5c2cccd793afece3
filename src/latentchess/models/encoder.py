"""The SOLIS encoder (paper section 3.2): tokens -> transformer -> CLS -> linear -> unit vector."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from latentchess.models.config import EncoderConfig

__all__ = ["Encoder", "Embedding"]

Embedding = Tensor
"""(B, D) float tensor, each row L2-normalised."""


class Encoder(nn.Module):
    """Transformer encoder mapping ``(B, 77)`` token indices to ``(B, D)`` unit embeddings.

    Token embedding into H dims, a learned CLS token prepended, a learned positional embedding for
    the 78 positions, L pre-norm transformer layers (GELU, dropout), the CLS output through a final
    LayerNorm and a linear projection to D dims, then L2 normalisation.
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.hidden)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, config.hidden))
        self.position_embedding = nn.Parameter(torch.zeros(1, config.seq_len + 1, config.hidden))
        layer = nn.TransformerEncoderLayer(
            d_model=config.hidden,
            nhead=config.heads,
            dim_feedforward=config.mlp,
            dropout=config.dropout,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.layers = nn.TransformerEncoder(
            layer, num_layers=config.layers, enable_nested_tensor=False
        )
        # nn.TransformerEncoder deep-copies one layer; draw every layer afresh so that they do not
        # all start as identical copies.
        for block in self.layers.layers:
            for module in block.modules():
                if module is not block and hasattr(module, "reset_parameters"):
                    module.reset_parameters()
            block.self_attn._reset_parameters()
        self.final_norm = nn.LayerNorm(config.hidden)
        self.projection = nn.Linear(config.hidden, config.dim)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.cls_token, std=0.02)
        nn.init.normal_(self.position_embedding, std=0.02)

    def forward(self, tokens: Tensor) -> Embedding:
        """Embed a batch of token sequences.

        Args:
            tokens: ``(B, 77)`` integer tensor of vocabulary indices.

        Returns:
            ``(B, D)`` float tensor of unit vectors.
        """
        batch = tokens.shape[0]
        x = self.token_embedding(tokens.long())  # (B, 77, H)
        cls = self.cls_token.expand(batch, -1, -1)  # (B, 1, H)
        x = torch.cat([cls, x], dim=1) + self.position_embedding  # (B, 78, H)
        x = self.layers(x)  # (B, 78, H)
        z = self.projection(self.final_norm(x[:, 0]))  # (B, D)
        return F.normalize(z.float(), dim=-1)

    def num_parameters(self) -> int:
        """Number of trainable parameters."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)
