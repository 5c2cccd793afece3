"""The contrastive Chessformer encoder: 77 tokens -> 64 square tokens -> GAB trunk -> unit vector.

A drop-in for the SOLIS :class:`~latentchess.models.encoder.Encoder` (same input, same output),
so the SupCon trainer, the model files, the advantage axis, the calibration and the latent search
all work unchanged (``latentchess train --model-config gab-micro``; ``latent:model=DIR``).

Inside the network the ChessBench tokens become square tokens like the Chessformer's
(:mod:`latentchess.squares`, history 0), but in **White's frame**, not the mover's: the latent
axis scores positions from White's view, and a mover's-frame input cannot tell "White to move
and a queen up" from "Black to move and a queen up" (opposite labels); in that frame the encoder
collapsed to one point within ten SupCon steps. Per square: a one-hot of the 12 piece planes
(White's PNBRQK, then Black's), the side to move (1: White), and with ``side_features`` the
en-passant square, the castling rights K Q k q and the rule-50 counter / 100 (the repetition
feature is 0: tokens do not carry the game's history). Then the Chessformer's
post-norm blocks with their attention bias (:class:`~latentchess.models.chessformer.Block`), a
final LayerNorm, the mean over the 64 squares (or, with ``pool="attention"``, a softmax-weighted
mean from one learned query), a linear projection to ``dim`` (or with ``head="mlp"`` Linear, GELU,
Linear) and L2 normalisation. The post-norm trunk collapses under SGD at the SOLIS learning rates:
train it with ``--optimizer adamw --lr 0.001`` (``benchmarks/results/gab_encoder/gab_probes.md``).
The token conversion uses only gathers and comparisons, so the network exports to ONNX like the
SOLIS encoder.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from latentchess.encoding import VOCAB, VOCAB_SIZE
from latentchess.models.chessformer import Block
from latentchess.models.config import AnyEncoderConfig, GabEncoderConfig, SparseEncoderConfig
from latentchess.squares import PLANES, SIDE_FEATURES

__all__ = ["GabEncoder", "build_encoder", "token_square_features"]

_WHITE, _DOT = VOCAB.index("w"), VOCAB.index(".")
_PROJECTION_INIT_SCALE = 0.02
"""The projection's initial weights are scaled down so that every position starts near one
point (mean pairwise cosine about 0.99, like the SOLIS encoder's): from the default init (about
0.82) the SupCon loss starts above its collapsed value and the first steps collapsed the encoder
to a single point, where it stayed (probes on the shared data, lr 0.003-0.03, SGD and AdamW)."""
_FILE_A, _CASTLE = VOCAB.index("a"), [VOCAB.index(c) for c in "KQkq"]


def _code_table() -> Tensor:
    """Vocabulary index -> absolute piece code (0 empty, 1-6 White PNBRQK, 7-12 Black)."""
    table = torch.zeros(VOCAB_SIZE, dtype=torch.long)
    for offset, letters in ((1, "PNBRQK"), (7, "pnbrqk")):
        for i, letter in enumerate(letters):
            table[VOCAB.index(letter)] = offset + i
    return table


def _clock(tokens: Tensor) -> Tensor:
    """(B,) value of a right-padded 3-character decimal field (digits are vocabulary 0-9)."""
    d0, d1, d2 = tokens[:, 0], tokens[:, 1], tokens[:, 2]
    one, two = d1 == _DOT, d2 == _DOT
    return torch.where(one, d0, torch.where(two, d0 * 10 + d1, d0 * 100 + d1 * 10 + d2))


def token_square_features(tokens: Tensor, side: bool, *, frame: str = "mover") -> Tensor:
    """(B, 64, 12 [+ 7]) square features of (B, 77) tokens.

    ``frame="mover"``: exactly what :func:`squares.encode_board` gives with ``history=0`` (the
    repetition feature is 0). ``frame="white"``: the board as it stands (a1 = 0, White's pieces
    first, castling rights K Q k q), the frame of the latent axis (White's view).
    """
    if frame not in ("mover", "white"):
        raise ValueError(f"frame must be 'mover' or 'white', got {frame!r}")
    t = tokens.long()
    white = (t[:, 0] == _WHITE).unsqueeze(1)  # (B, 1)
    if frame == "white":  # features as if White were to move
        white = torch.ones_like(white)
    squares = torch.arange(64, device=t.device)
    mirror = (7 - squares // 8) * 8 + squares % 8  # s ^ 56
    codes = _code_table().to(t.device)[t[:, 1:65]]  # (B, 64) in FEN order: FEN i is square i^56
    swap = torch.tensor([0, *range(7, 13), *range(1, 7)], device=t.device)
    # White to move: board square s holds FEN entry s ^ 56; Black: the mirrored board with the
    # colours swapped holds, at s, the swapped code of board square s ^ 56, i.e. FEN entry s.
    mover = torch.where(white, codes[:, mirror], swap[codes])
    planes = torch.arange(1, PLANES + 1, device=t.device)
    onehot = (mover.unsqueeze(-1) == planes).float()  # (B, 64, 12)
    if not side:
        return onehot
    batch = t.shape[0]
    has_ep = t[:, 69] != _DOT
    file = (t[:, 69] - _FILE_A).clamp(0, 7)
    rank = (t[:, 70] - 1).clamp(0, 7)  # the digit tokens are their own values
    ep_square = torch.where(white[:, 0], rank * 8 + file, (7 - rank) * 8 + file)  # the frame's
    ep = ((squares.unsqueeze(0) == ep_square.unsqueeze(1)) & has_ep.unsqueeze(1)).float()
    castling = t[:, 65:69]
    rights = [(castling == code).any(dim=1).float() for code in _CASTLE]  # K Q k q
    mover_k = torch.where(white[:, 0], rights[0], rights[2])
    mover_q = torch.where(white[:, 0], rights[1], rights[3])
    them_k = torch.where(white[:, 0], rights[2], rights[0])
    them_q = torch.where(white[:, 0], rights[3], rights[1])
    rule50 = _clock(t[:, 71:74]).clamp(max=100).float() / 100.0
    zero = torch.zeros(batch, device=t.device)
    broadcast = torch.stack([mover_k, mover_q, them_k, them_q, rule50, zero], dim=1)  # (B, 6)
    extra = torch.cat([ep.unsqueeze(-1), broadcast.unsqueeze(1).expand(batch, 64, -1)], dim=-1)
    assert extra.shape[-1] == SIDE_FEATURES
    return torch.cat([onehot, extra], dim=-1)


class GabEncoder(nn.Module):
    """``(B, 77)`` tokens -> ``(B, dim)`` unit embeddings through a GAB trunk (module docstring).

    Args:
        config: the architecture.
    """

    def __init__(self, config: GabEncoderConfig) -> None:
        super().__init__()
        self.config = config
        trunk = config.trunk()
        d = trunk.d_model
        self.project = nn.Linear(trunk.input_features + 1, d)  # + the side to move
        self.square_embedding = (
            nn.Parameter(torch.zeros(64, d)) if trunk.absolute_embedding else None
        )
        self.gab_templates: nn.Parameter | None = None
        if trunk.position == "gab":
            self.gab_templates = nn.Parameter(torch.empty(64 * 64, trunk.gab_templates))
            nn.init.xavier_normal_(self.gab_templates)
        self.blocks = nn.ModuleList(Block(trunk) for _ in range(trunk.layers))
        self.final_norm = nn.LayerNorm(d)
        # attention pooling: one learned query, zero at first (so the pool starts as the mean)
        self.pool_query = nn.Parameter(torch.zeros(d)) if config.pool == "attention" else None
        self.hidden: nn.Linear | None = nn.Linear(d, d) if config.head == "mlp" else None
        self.projection = nn.Linear(d, config.dim)
        with torch.no_grad():  # start near one point, as the SOLIS encoder's CLS output does
            self.projection.weight.mul_(_PROJECTION_INIT_SCALE)

    def features(self, tokens: Tensor) -> Tensor:
        """(B, 64, features + 1) square features of the tokens in White's frame, and the side
        to move (1: White) broadcast to every square."""
        board = token_square_features(tokens, self.config.side_features, frame="white")
        turn = (tokens[:, 0].long() == _WHITE).float().view(-1, 1, 1).expand(-1, 64, 1)
        return torch.cat([board, turn], dim=-1)

    def trunk(self, tokens: Tensor) -> Tensor:
        """(B, 64, d) final square states."""
        # The weights' dtype (bfloat16 when a latent model runs at precision bf16).
        x = self.project(self.features(tokens).to(self.project.weight.dtype))
        if self.square_embedding is not None:
            x = x + self.square_embedding
        for block in self.blocks:
            x = block(x, self.gab_templates)
        return self.final_norm(x)

    def pool(self, states: Tensor) -> Tensor:
        """(B, 64, d) square states -> (B, d): their mean, or attention-weighted mean."""
        if self.pool_query is None:
            return states.mean(dim=1)
        weights = torch.softmax(states @ self.pool_query / states.shape[-1] ** 0.5, dim=1)
        return (weights.unsqueeze(-1) * states).sum(dim=1)

    def forward(self, tokens: Tensor) -> Tensor:
        """``(B, 77)`` token indices -> ``(B, dim)`` float32 unit vectors."""
        pooled = self.pool(self.trunk(tokens))
        if self.hidden is not None:
            pooled = F.gelu(self.hidden(pooled))
        z = self.projection(pooled)  # (B, dim)
        return F.normalize(z.float(), dim=-1)

    def onnx_exportable(self) -> GabEncoder:
        """A copy whose RMSNorms are spelt out (the ONNX exporter of opset 17 has no RMSNorm)."""
        import copy

        from latentchess.models.chessformer_export import _PlainRMSNorm

        plain = copy.deepcopy(self).eval()
        for block in plain.blocks:
            block.norm_attn = _PlainRMSNorm(block.norm_attn)
            block.norm_ffn = _PlainRMSNorm(block.norm_ffn)
        return plain

    def num_parameters(self) -> int:
        """Number of trainable parameters."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


def build_encoder(config: AnyEncoderConfig) -> nn.Module:
    """The encoder network of any family (SOLIS tokens, the GAB trunk, or sparse features)."""
    if isinstance(config, GabEncoderConfig):
        return GabEncoder(config)
    if isinstance(config, SparseEncoderConfig):
        from latentchess.models.sparse_encoder import SparseEncoder

        return SparseEncoder(config)
    from latentchess.models.encoder import Encoder

    return Encoder(config)
