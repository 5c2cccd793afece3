"""Chessformer: squares as tokens with a geometric attention bias (Maia-3 / Leela-CF).

See ``../shared/papers/chessformer-summary.md`` and issue 14. Top to bottom:

* input: 64 square tokens of :func:`latentchess.squares.encode_pieces` features (mover's frame,
  current + ``history`` previous boards, optional side features), each concatenated with the
  mover's and the opponent's skill embeddings, then one linear projection to ``d_model``;
* ``layers`` post-norm blocks ``x = RMSNorm(x + MHA(x)); x = RMSNorm(x + FFN(x))`` with an FFN
  ``d -> 2d -> d`` (GELU) and attention without biases, whose logits get a per-position geometric
  attention bias (:class:`GeometricBias`) before the softmax; a final LayerNorm;
* a from-to policy head (4352 logits, :mod:`latentchess.squares` vocabulary) and a WDL value
  head (mean-pool, LayerNorm, MLP, 3 logits: the mover's win, draw, loss).

Time control (``time_control``): a learned vector per band (:data:`latentchess.data.moves.
TIME_CONTROL_BANDS`: unknown, bullet, blitz, rapid, classical), zero-initialised, added to every
token after the projection; without a band (``speed=None``) the "unknown" row is.

Skill: a rating ``k`` is clamped to [0, 5000] and embedded as ``g * e_weak + (1 - g) * e_strong``
with ``g = (5000 - k) / 5000``; one pair of learned vectors serves both players.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from latentchess.squares import feature_size

__all__ = [
    "ChessformerConfig",
    "CHESSFORMER_CONFIGS",
    "POSITION_BIASES",
    "Chessformer",
    "GeometricBias",
    "get_chessformer_config",
]

POSITION_BIASES = ("gab", "relative", "absolute", "none")
ELO_MAX = 5000.0
SPEED_BANDS = 5
"""Rows of the time-control embedding: ``len(latentchess.data.moves.TIME_CONTROL_BANDS)``."""


@dataclass(frozen=True, kw_only=True)
class ChessformerConfig:
    """Architecture of a :class:`Chessformer`.

    Attributes:
        d_model: token width d.
        layers: transformer blocks L.
        heads: attention heads (head dim = d_model / heads).
        gab_per_square: GAB compression per square p (0: mean-pool the squares instead).
        gab_hidden: GAB intermediate width i.
        gab_templates: GAB template count g (columns of the shared 4096 x g matrix).
        head_dim: width of the policy's from/to projections and the value MLP's hidden layer.
        history: previous boards in the input (0: the current board only).
        side_features: add castling / en-passant / rule-50 / repetition features.
        elo_dim: width of each skill embedding (0: no skill conditioning).
        position: ``"gab"``, ``"relative"`` (learned 15x15 offsets per head), ``"absolute"``
            (a learned 64x64 bias per head) or ``"none"``.
        absolute_embedding: add a learned per-square embedding after the projection.
        policy_embedding: a dense d -> d layer (GELU) before the policy's from/to projections, as
            in Lc0's attention policy head. Maia-3's published parameter counts (3.15M, 5.23M,
            22.9M, 78.9M) exceed the network without it by exactly d^2 + d in all four sizes.
        dropout: dropout in attention and FFN.
        time_control: a zero-initialised embedding of the game's time-control band added to
            every token (``forward(..., speed=)``); False: no such input (every older model).
    """

    d_model: int = 64
    layers: int = 4
    heads: int = 4
    gab_per_square: int = 0
    gab_hidden: int = 32
    gab_templates: int = 32
    head_dim: int = 64
    history: int = 7
    side_features: bool = False
    elo_dim: int = 32
    position: str = "gab"
    absolute_embedding: bool = False
    policy_embedding: bool = True
    dropout: float = 0.0
    time_control: bool = False

    def __post_init__(self) -> None:
        for name in ("d_model", "layers", "heads", "gab_hidden", "gab_templates", "head_dim"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"ChessformerConfig.{name} must be a positive int, got {value!r}")
        for name in ("gab_per_square", "history", "elo_dim"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"ChessformerConfig.{name} must be an int >= 0, got {value!r}")
        if self.d_model % self.heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by heads {self.heads}")
        if self.position not in POSITION_BIASES:
            raise ValueError(
                f"unknown position bias {self.position!r}; choose from {list(POSITION_BIASES)}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout!r}")

    @property
    def input_features(self) -> int:
        """Board features per square (without the skill embeddings)."""
        return feature_size(self.history, self.side_features)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        if not self.time_control:  # configs of models without it read as they always did
            del out["time_control"]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChessformerConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown ChessformerConfig keys {sorted(unknown)!r}")
        return cls(**data)


def _maia3(d: int, heads: int, p: int, i: int, g: int) -> ChessformerConfig:
    return ChessformerConfig(
        d_model=d,
        layers=8,
        heads=heads,
        gab_per_square=p,
        gab_hidden=i,
        gab_templates=g,
        head_dim=d,
        history=7,
        elo_dim=128,
    )


CHESSFORMER_CONFIGS: dict[str, ChessformerConfig] = {
    # CPU sizes of this project.
    "cf-nano": ChessformerConfig(
        d_model=32, layers=2, heads=2, gab_hidden=16, gab_templates=16, head_dim=32, elo_dim=16
    ),
    "cf-mini": ChessformerConfig(layers=3, gab_templates=16),
    "cf-micro": ChessformerConfig(),
    "cf-small": ChessformerConfig(
        d_model=128, layers=6, heads=4, gab_hidden=64, gab_templates=64, head_dim=128, elo_dim=64
    ),
    # Maia-3's sizes (8 layers, head dim 32; 8 boards; 128-dim skill embeddings).
    "maia3-3m": _maia3(192, 6, 0, 64, 64),
    "maia3-5m": _maia3(256, 8, 0, 64, 64),
    "maia3-23m": _maia3(512, 16, 32, 128, 128),
    "maia3-79m": _maia3(1024, 32, 32, 128, 128),
}


def get_chessformer_config(name: str) -> ChessformerConfig:
    """The named configuration (``CHESSFORMER_CONFIGS``)."""
    if name not in CHESSFORMER_CONFIGS:
        raise ValueError(
            f"unknown Chessformer config {name!r}; choose from {sorted(CHESSFORMER_CONFIGS)}"
        )
    return CHESSFORMER_CONFIGS[name]


class GeometricBias(nn.Module):
    """Per-position attention bias (heads, 64, 64) from the layer's input tokens.

    Compress each square to ``p`` dims and flatten (or mean-pool the squares when ``p = 0``),
    Linear to ``i`` -> GELU -> LayerNorm -> Linear to ``heads * g`` -> GELU -> LayerNorm, reshape
    to (heads, g) and mix the columns of the model-wide (4096, g) template matrix.
    """

    def __init__(self, cfg: ChessformerConfig) -> None:
        super().__init__()
        p, i, g = cfg.gab_per_square, cfg.gab_hidden, cfg.gab_templates
        self.heads, self.templates = cfg.heads, g
        self.compress = nn.Linear(cfg.d_model, p) if p else None
        self.hidden = nn.Linear(64 * p if p else cfg.d_model, i)
        self.norm_hidden = nn.LayerNorm(i)
        self.mix = nn.Linear(i, cfg.heads * g)
        self.norm_mix = nn.LayerNorm(cfg.heads * g)

    def forward(self, x: Tensor, shared: Tensor) -> Tensor:
        batch = x.shape[0]
        # (B, 64 * p) compressed squares, or (B, d) mean-pooled
        y = self.compress(x).reshape(batch, -1) if self.compress is not None else x.mean(dim=1)
        y = self.norm_hidden(F.gelu(self.hidden(y)))  # (B, i)
        y = self.norm_mix(F.gelu(self.mix(y))).view(batch, self.heads, self.templates)  # (B, H, g)
        return torch.einsum("bhg,og->bho", y, shared).view(batch, self.heads, 64, 64)


def _relative_index() -> Tensor:
    """(64, 64) index of the (rank, file) offset of each square pair into 15 x 15 offsets."""
    sq = torch.arange(64)
    rank, file = sq // 8, sq % 8
    return (rank[:, None] - rank[None, :] + 7) * 15 + (file[:, None] - file[None, :] + 7)


class Block(nn.Module):
    """Post-norm transformer block; attention without biases, optional additive bias."""

    def __init__(self, cfg: ChessformerConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.heads = cfg.heads
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.ffn_in = nn.Linear(d, 2 * d)
        self.ffn_out = nn.Linear(2 * d, d)
        self.norm_attn = nn.RMSNorm(d)
        self.norm_ffn = nn.RMSNorm(d)
        self.dropout = cfg.dropout
        self.gab = GeometricBias(cfg) if cfg.position == "gab" else None
        self.static_bias: nn.Parameter | None = None
        if cfg.position == "relative":
            self.static_bias = nn.Parameter(torch.zeros(cfg.heads, 15 * 15))
            self.register_buffer("relative_index", _relative_index(), persistent=False)
        elif cfg.position == "absolute":
            self.static_bias = nn.Parameter(torch.zeros(cfg.heads, 64, 64))

    def bias(self, x: Tensor, shared: Tensor | None) -> Tensor | None:
        """The additive attention bias of this layer for input ``x``: (B or 1, H, 64, 64)."""
        if self.gab is not None:
            assert shared is not None
            return self.gab(x, shared)
        if self.static_bias is None:
            return None
        if self.static_bias.dim() == 2:  # relative: gather the (H, 64, 64) map from the offsets
            return self.static_bias[:, self.relative_index].unsqueeze(0)
        return self.static_bias.unsqueeze(0)

    def attention(self, x: Tensor, bias: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
        """Queries and keys (B, H, 64, h) and the attended values (B, 64, d)."""
        batch, tokens, d = x.shape
        q, k, v = self.qkv(x).view(batch, tokens, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, H, 64, h)
        weights = self.attention_weights(q, k, bias)  # (B, H, 64, 64)
        weights = F.dropout(weights, self.dropout, self.training)
        att = weights @ v  # (B, H, 64, h)
        return q, k, att.transpose(1, 2).reshape(batch, tokens, d)

    @staticmethod
    def attention_weights(q: Tensor, k: Tensor, bias: Tensor | None) -> Tensor:
        """Softmax of the scaled dot products plus the bias: (B, H, 64, 64)."""
        logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # (B, H, 64, 64)
        if bias is not None:
            logits = logits + bias.to(logits.dtype)
        return torch.softmax(logits, dim=-1)

    def forward(self, x: Tensor, shared: Tensor | None) -> Tensor:
        _, _, att = self.attention(x, self.bias(x, shared))
        x = self.norm_attn(x + F.dropout(self.out(att), self.dropout, self.training))
        ffn = self.ffn_out(F.dropout(F.gelu(self.ffn_in(x)), self.dropout, self.training))
        return self.norm_ffn(x + F.dropout(ffn, self.dropout, self.training))


class Chessformer(nn.Module):
    """The network: ``forward(features, self_elo, oppo_elo) -> (policy logits, WDL logits)``.

    Args:
        cfg: the architecture.
    """

    def __init__(self, cfg: ChessformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        if cfg.elo_dim:
            self.elo_weak = nn.Parameter(torch.randn(cfg.elo_dim) * 0.1)
            self.elo_strong = nn.Parameter(torch.randn(cfg.elo_dim) * 0.1)
        self.project = nn.Linear(cfg.input_features + 2 * cfg.elo_dim, d)
        self.square_embedding = nn.Parameter(torch.zeros(64, d)) if cfg.absolute_embedding else None
        # zero at the start: a fine-tuned older model begins exactly where it was
        self.speed_embedding = (
            nn.Parameter(torch.zeros(SPEED_BANDS, d)) if cfg.time_control else None
        )
        self.gab_templates: nn.Parameter | None = None
        if cfg.position == "gab":
            self.gab_templates = nn.Parameter(torch.empty(64 * 64, cfg.gab_templates))
            nn.init.xavier_normal_(self.gab_templates)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.final_norm = nn.LayerNorm(d)
        self.policy_embed = nn.Linear(d, d) if cfg.policy_embedding else None
        self.policy_from = nn.Linear(d, cfg.head_dim, bias=False)
        self.policy_to = nn.Linear(d, cfg.head_dim, bias=False)
        self.promotion = nn.Linear(cfg.head_dim, 4, bias=False)
        self.value_norm = nn.LayerNorm(d)
        self.value_hidden = nn.Linear(d, cfg.head_dim)
        self.value_out = nn.Linear(cfg.head_dim, 3)

    def skill(self, elo: Tensor) -> Tensor:
        """(B, elo_dim) embedding of ratings (B,), interpolated over [0, 5000]."""
        weak = ((ELO_MAX - elo.float().clamp(0.0, ELO_MAX)) / ELO_MAX).unsqueeze(1)  # (B, 1)
        return weak * self.elo_weak + (1.0 - weak) * self.elo_strong

    def embed(
        self, features: Tensor, self_elo: Tensor, oppo_elo: Tensor, speed: Tensor | None = None
    ) -> Tensor:
        """(B, 64, d) tokens entering the first block (``speed``: (B,) band indices; None:
        unknown)."""
        batch = features.shape[0]
        parts = [features]
        if self.cfg.elo_dim:
            for elo in (self_elo, oppo_elo):
                parts.append(self.skill(elo).unsqueeze(1).expand(batch, 64, -1))
        x = self.project(torch.cat(parts, dim=-1))  # (B, 64, d)
        if self.square_embedding is not None:
            x = x + self.square_embedding
        if self.speed_embedding is not None:  # no band given: row 0, "unknown"
            x = x + (
                self.speed_embedding[speed.long()].unsqueeze(1)  # (B, 1, d)
                if speed is not None
                else self.speed_embedding[0]
            )
        return x

    def trunk(
        self, features: Tensor, self_elo: Tensor, oppo_elo: Tensor, speed: Tensor | None = None
    ) -> Tensor:
        """(B, 64, d) final token states (after the final LayerNorm)."""
        x = self.embed(features, self_elo, oppo_elo, speed)
        for block in self.blocks:
            x = block(x, self.gab_templates)
        return self.final_norm(x)

    def heads_from_trunk(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Policy logits (B, 4352) and WDL logits (B, 3) from trunk states (B, 64, d)."""
        batch = x.shape[0]
        scale = math.sqrt(self.cfg.head_dim)
        p = F.gelu(self.policy_embed(x)) if self.policy_embed is not None else x  # (B, 64, d)
        sq_from, sq_to = self.policy_from(p), self.policy_to(p)  # (B, 64, h)
        scores = torch.einsum("bih,bjh->bij", sq_from, sq_to) / scale  # (B, 64, 64)
        # Promotions: the from-to score of rank 7 -> rank 8 plus a per-piece bias of the target.
        base = scores[:, 48:56, 56:64]  # (B, 8 from files, 8 to files)
        piece_bias = self.promotion(sq_to[:, 56:64]) / scale  # (B, 8 to files, 4)
        promotions = (base.unsqueeze(-1) + piece_bias.unsqueeze(1)).reshape(batch, 256)
        policy = torch.cat([scores.reshape(batch, 4096), promotions], dim=1)  # (B, 4352)
        pooled = self.value_norm(x.mean(dim=1))  # (B, d)
        value = self.value_out(F.gelu(self.value_hidden(pooled)))  # (B, 3)
        return policy, value

    def forward(
        self, features: Tensor, self_elo: Tensor, oppo_elo: Tensor, speed: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        return self.heads_from_trunk(self.trunk(features, self_elo, oppo_elo, speed))


def parameter_count(model: nn.Module) -> int:
    """Trainable parameters (the shared GAB matrix counted once)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
