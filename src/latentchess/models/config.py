"""Encoder configurations as plain dataclasses, selectable by name (paper Table 1, CPU sizes)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from latentchess.encoding import SEQUENCE_LENGTH, VOCAB_SIZE

__all__ = [
    "EncoderConfig",
    "GabEncoderConfig",
    "SparseEncoderConfig",
    "AnyEncoderConfig",
    "MODEL_CONFIGS",
    "GAB_ENCODER_CONFIGS",
    "SPARSE_ENCODER_CONFIGS",
    "GAB_KIND",
    "SPARSE_KIND",
    "get_config",
    "encoder_config_class",
    "encoder_config_from_dict",
]

GAB_KIND = "chessformer-gab"
"""The ``kind`` of a :class:`GabEncoderConfig` in a model's ``config.json``."""
SPARSE_KIND = "sparse"
"""The ``kind`` of a :class:`SparseEncoderConfig` in a model's ``config.json``."""


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


@dataclass(frozen=True, kw_only=True)
class GabEncoderConfig:
    """The contrastive Chessformer encoder: a GAB trunk, mean-pooled, projected, L2-normalised.

    It reads the same 77 tokens as the SOLIS encoder (turned into 64 square tokens in the mover's
    frame inside the network, :mod:`latentchess.models.gab_encoder`), so it trains with the same
    SupCon trainer and plays as a latent model. The tokens carry no history: one board only.

    Attributes:
        name: registry name, informational.
        kind: always :data:`GAB_KIND` (tells the two encoder families apart in ``config.json``).
        d_model: square-token width d.
        layers: transformer blocks L.
        heads: attention heads.
        gab_per_square: GAB compression per square p (0: mean-pool).
        gab_hidden: GAB intermediate width i.
        gab_templates: GAB template count g.
        position: attention bias, as :class:`~latentchess.models.chessformer.ChessformerConfig`.
        side_features: castling / en-passant / rule-50 square features (repetition: always 0,
            the tokens do not say).
        absolute_embedding: a learned per-square embedding.
        dim: output embedding dimension D.
        dropout: dropout in attention and FFN.
        pool: how the 64 square states become one vector: ``mean`` (the issue's), or
            ``attention`` (softmax weights from one learned query; it starts as the mean).
        head: ``linear`` projection to ``dim``, or ``mlp`` (Linear, GELU, Linear: the usual
            contrastive projection head).
    """

    name: str = "gab-custom"
    kind: str = GAB_KIND
    d_model: int = 64
    layers: int = 4
    heads: int = 4
    gab_per_square: int = 0
    gab_hidden: int = 32
    gab_templates: int = 32
    position: str = "gab"
    side_features: bool = True
    absolute_embedding: bool = False
    dim: int = 64
    dropout: float = 0.0
    pool: str = "mean"
    head: str = "linear"

    def __post_init__(self) -> None:
        if self.pool not in ("mean", "attention"):
            raise ValueError(f"pool must be 'mean' or 'attention', got {self.pool!r}")
        if self.head not in ("linear", "mlp"):
            raise ValueError(f"head must be 'linear' or 'mlp', got {self.head!r}")
        if self.kind != GAB_KIND:
            raise ValueError(f"GabEncoderConfig.kind must be {GAB_KIND!r}, got {self.kind!r}")
        if not isinstance(self.dim, int) or isinstance(self.dim, bool) or self.dim < 1:
            raise ValueError(f"GabEncoderConfig.dim must be a positive int, got {self.dim!r}")
        self.trunk()  # validates the rest

    def trunk(self) -> Any:
        """The :class:`~latentchess.models.chessformer.ChessformerConfig` of the trunk."""
        from latentchess.models.chessformer import ChessformerConfig

        return ChessformerConfig(
            d_model=self.d_model,
            layers=self.layers,
            heads=self.heads,
            gab_per_square=self.gab_per_square,
            gab_hidden=self.gab_hidden,
            gab_templates=self.gab_templates,
            head_dim=self.d_model,
            history=0,
            side_features=self.side_features,
            elo_dim=0,
            position=self.position,
            absolute_embedding=self.absolute_embedding,
            dropout=self.dropout,
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GabEncoderConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown GabEncoderConfig keys {sorted(unknown)!r}")
        return cls(**data)


@dataclass(frozen=True, kw_only=True)
class SparseEncoderConfig:
    """The sparse contrastive encoder: NNUE features -> accumulators -> a small dense stack.

    Same input and output as the SOLIS encoder (77 tokens in, a unit vector out), so it trains
    with the SupCon trainer and plays as a latent model; the architecture is spelt out in
    :mod:`latentchess.models.sparse_encoder`.

    Attributes:
        name: registry name, informational.
        kind: always :data:`SPARSE_KIND`.
        feature_set: NNUE feature blocks joined by ``+`` (:mod:`latentchess.nnue.features`);
            ``ALL`` (768 piece-square features per perspective) by default.
        l1: accumulator width per perspective (a multiple of 8, as the NNUE's).
        hidden: width of the dense hidden layer.
        dim: output embedding dimension D.
        dropout: must be 0 (there is no dropout; the field lets ``--dropout`` keep one meaning).
        ft_from: an NNUE whose feature transformer this encoder uses unchanged (a shipped
            model's name under ``weights/``, or a model directory): its rows and bias are that
            network's, frozen in training and not stored in the encoder's weights file, which
            then holds the dense layers alone; ``None``: the encoder's own. The feature sets and
            widths must be the same.
        ft_hash: the fingerprint of that feature transformer when the encoder was trained
            (:func:`latentchess.models.sparse_encoder.ft_fingerprint`); loading refuses an NNUE
            that no longer matches it.
    """

    name: str = "sparse-custom"
    kind: str = SPARSE_KIND
    feature_set: str = "ALL"
    l1: int = 256
    hidden: int = 32
    dim: int = 64
    dropout: float = 0.0
    ft_from: str | None = None
    ft_hash: str | None = None

    def __post_init__(self) -> None:
        if self.kind != SPARSE_KIND:
            raise ValueError(f"SparseEncoderConfig.kind must be {SPARSE_KIND!r}, got {self.kind!r}")
        for field in ("l1", "hidden", "dim"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(
                    f"SparseEncoderConfig.{field} must be a positive int, got {value!r}"
                )
        if self.l1 % 8:
            raise ValueError(f"SparseEncoderConfig.l1 must be a multiple of 8, got {self.l1!r}")
        if self.dropout != 0.0:
            raise ValueError(f"the sparse encoder has no dropout; got dropout={self.dropout!r}")
        for field in ("ft_from", "ft_hash"):
            value = getattr(self, field)
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(
                    f"SparseEncoderConfig.{field} must be a non-empty string, got {value!r}"
                )
        if self.ft_hash is not None and self.ft_from is None:
            raise ValueError("SparseEncoderConfig.ft_hash needs ft_from (the NNUE it names)")
        _ = self.features  # validates the feature set

    @property
    def features(self) -> Any:
        """The :class:`~latentchess.nnue.features.FeatureSet` of ``feature_set``."""
        from latentchess.errors import LatentChessError
        from latentchess.nnue.features import parse_feature_set

        try:
            return parse_feature_set(self.feature_set)
        except LatentChessError as error:
            raise ValueError(str(error)) from None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SparseEncoderConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown SparseEncoderConfig keys {sorted(unknown)!r}")
        return cls(**data)


AnyEncoderConfig = EncoderConfig | GabEncoderConfig | SparseEncoderConfig

GAB_ENCODER_CONFIGS: dict[str, GabEncoderConfig] = {
    "gab-nano": GabEncoderConfig(
        name="gab-nano", d_model=32, layers=2, heads=2, gab_hidden=16, gab_templates=16, dim=32
    ),
    # About the cost per position of "micro" (the same width and depth, 64 instead of 78 tokens).
    "gab-micro": GabEncoderConfig(name="gab-micro", dim=64),
    "gab-tiny": GabEncoderConfig(
        name="gab-tiny", d_model=128, layers=6, heads=8, gab_hidden=64, gab_templates=64, dim=128
    ),
}
"""Contrastive GAB encoders (``latentchess train --model-config gab-micro``)."""


SPARSE_ENCODER_CONFIGS: dict[str, SparseEncoderConfig] = {
    f"sparse-{d}": SparseEncoderConfig(name=f"sparse-{d}", l1=256, hidden=32, dim=d)
    for d in (32, 64, 128)
}
"""Sparse (NNUE-feature) contrastive encoders, ``ALL`` features, accumulator 256, hidden 32
(``latentchess train supcon --model-config sparse-64 [--feature-set ALL+H+V]``)."""


def get_config(name: str) -> AnyEncoderConfig:
    """Look up a named configuration (a SOLIS encoder, a ``gab-*`` or a ``sparse-*`` one)."""
    if name in GAB_ENCODER_CONFIGS:
        return GAB_ENCODER_CONFIGS[name]
    if name in SPARSE_ENCODER_CONFIGS:
        return SPARSE_ENCODER_CONFIGS[name]
    try:
        return MODEL_CONFIGS[name]
    except KeyError:
        raise ValueError(
            f"unknown model config {name!r}; choose from "
            f"{sorted([*MODEL_CONFIGS, *GAB_ENCODER_CONFIGS, *SPARSE_ENCODER_CONFIGS])}"
        ) from None


def encoder_config_class(kind: object) -> type[AnyEncoderConfig]:
    """The config class of a stored config's ``kind`` (none: the SOLIS encoder)."""
    if kind == GAB_KIND:
        return GabEncoderConfig
    if kind == SPARSE_KIND:
        return SparseEncoderConfig
    return EncoderConfig


def encoder_config_from_dict(data: dict[str, Any]) -> AnyEncoderConfig:
    """A stored encoder config of the family its ``kind`` names."""
    return encoder_config_class(data.get("kind")).from_dict(data)
