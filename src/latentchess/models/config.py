"""Encoder configurations as plain dataclasses, selectable by name (paper Table 1, CPU sizes)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from latentchess.encoding import SEQUENCE_LENGTH, VOCAB_SIZE

__all__ = ["EncoderConfig", "MODEL_CONFIGS", "get_config"]


@dataclass(frozen=True, kw_only=True)
class EncoderConfig:
    """Architecture of the SOLIS encoder.

    Attributes:
        name: registry name, informational.
        layers: transformer encoder layers (L).
        hidden: token/hidden width (H).
        heads: attention heads (N); must divide ``hidden``.
        mlp: feed-forward width (MLP size).
        dim: output embedding dimension (D), the unit sphere the search works on.
        dropout: dropout in attention and feed-forward blocks (0.1 in the paper).
        vocab_size: tokenizer vocabulary (31, ChessBench).
        seq_len: tokens per position (77); the CLS token makes the model see 78.
    """

    name: str = "custom"
    layers: int
    hidden: int
    heads: int
    mlp: int
    dim: int
    dropout: float = 0.1
    vocab_size: int = VOCAB_SIZE
    seq_len: int = SEQUENCE_LENGTH

    def __post_init__(self) -> None:
        for field in ("layers", "hidden", "heads", "mlp", "dim", "vocab_size", "seq_len"):
            value = getattr(self, field)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"EncoderConfig.{field} must be a positive int, got {value!r}")
        if self.hidden % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide hidden ({self.hidden})")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EncoderConfig:
        """Rebuild from :meth:`to_dict` output; unknown keys are an error, not silently dropped."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown EncoderConfig keys {sorted(unknown)!r}")
        return cls(**data)


MODEL_CONFIGS: dict[str, EncoderConfig] = {
    # CPU sizes: train in minutes to hours on a laptop-class CPU. "micro" is about 5x cheaper per
    # position than "tiny", for deep searches on slow CPUs.
    "micro": EncoderConfig(name="micro", layers=4, hidden=64, heads=4, mlp=128, dim=64),
    "tiny": EncoderConfig(name="tiny", layers=6, hidden=128, heads=8, mlp=256, dim=128),
    "mini": EncoderConfig(name="mini", layers=6, hidden=256, heads=8, mlp=512, dim=256),
    # Paper Table 1.
    "small": EncoderConfig(name="small", layers=6, hidden=512, heads=16, mlp=512, dim=512),
    "base": EncoderConfig(name="base", layers=6, hidden=1024, heads=16, mlp=1024, dim=1024),
}


def get_config(name: str) -> EncoderConfig:
    """Look up a named configuration."""
    try:
        return MODEL_CONFIGS[name]
    except KeyError:
        raise ValueError(
            f"unknown model config {name!r}; choose from {sorted(MODEL_CONFIGS)}"
        ) from None
