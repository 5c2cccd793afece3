"""The sparse contrastive encoder: 77 tokens -> NNUE features -> accumulators -> unit vector.

A drop-in for the SOLIS and GAB encoders (same ``(B, 77)`` token input, same ``(B, D)`` unit
output), so the SupCon trainer, the model files, the advantage axis, the calibration and the latent
search all work unchanged (``latentchess train supcon --model-config sparse-64``;
``latent:model=DIR``). It is an NNUE (:mod:`latentchess.nnue.model`) whose scalar head is replaced
by a D-dimensional, L2-normalised one, so that a CPU trains it at NNUE speed and the native core can
evaluate it incrementally.

Architecture (exact; a C++ implementation follows it). ``N`` = the feature set's size (768 for
``ALL``), ``L1`` = ``l1``, ``H`` = ``hidden``, ``D`` = ``dim``; names are the tensors of
``model.safetensors`` (float32)::

    white = features(board, WHITE)          # active indices in [0, N), latentchess.nnue.features
    black = features(board, BLACK)          # (the native core's nnue_features, perspective 0 / 1)
    acc_w = ft_bias + sum(ft.weight[i] for i in white)               # (L1,)  ft.weight: (N+1, L1)
    acc_b = ft_bias + sum(ft.weight[i] for i in black)               # (L1,)  ft_bias:   (L1,)
    x = clamp([acc_w, acc_b], 0, 1)         # (2*L1,)  ALWAYS White's accumulator first
    h = l2.weight @ x + l2.bias             # (H,)     l2.weight: (H, 2*L1), l2.bias: (H,)
    h = h + l2_stm                          # only when Black is to move; l2_stm: (H,)
    h = clamp(h, 0, 1)
    z = out.weight @ h + out.bias           # (D,)     out.weight: (D, H), out.bias: (D,)
    embedding = z / max(||z||_2, 1e-12)     # (D,) unit vector (torch.nn.functional.normalize)

Row ``N`` of ``ft.weight`` is the padding row (all zeros, never read). The accumulator is the
NNUE's (one shared feature transformer, one accumulator per perspective), so the core can keep it
incrementally and quantise it the NNUE's way (int16 at scale 127: ``clamp(acc, 0, 1)`` becomes
``clamp(acc_q, 0, 127) / 127``); the two dense layers stay float.

White orientation. The advantage axis scores positions from White's view (SOLIS: the mean
embedding of White's mates minus Black's), so the embedding must say who is better *for White*.
The NNUE concatenates side-to-move first, so its output is the mover's view; here the order is
fixed, White's accumulator first, and the side to move enters as a learned bias of the hidden
layer (``l2_stm``, added when Black is to move; equivalently a (2*L1+1)-th input "Black to move"
whose weight column is ``l2_stm``). Then "White is a queen up" has one representation whichever
side is to move, and the tempo is a learned shift. The alternative, mover-first plus a learned
flip of the output, needs a second output layer per side and a swap the core must mirror; the
fixed order is one ``if`` in C++ (add ``l2_stm``) and no swap. Nothing makes the score of a
colour-mirrored twin the exact negative (the stm bias breaks the symmetry, as the tempo does in
chess); :func:`mirror_features` states the symmetry that does hold by construction: the twin's
accumulators are the original's, swapped.

A shared feature transformer (``ft_from`` in the config). An encoder may use an NNUE's feature
transformer as it is: ``ft.weight`` and ``ft_bias`` are that network's (its int16 rows read back as
floats), frozen in training and left out of ``model.safetensors``, which then holds ``l2.*``,
``l2_stm`` and ``out.*`` alone; loading takes them from the NNUE again and refuses one whose
fingerprint (``ft_hash``) has changed since training. The encoder then costs the repository a few
kilobytes instead of a feature table, and its accumulator is the NNUE's own.

Features from tokens. The feature indices are computed from the 77 tokens inside the network, in
torch (gathers and comparisons, no Python per position) for the blocks that depend on the pieces
only (``ALL H V D1 D2 PH PV``); the mobility blocks (``MB MC``) need legal moves and are computed
per position on the host (the native core when built, else :mod:`latentchess.nnue.features`).
Each perspective's indices form a ``(B, K)`` tensor padded with ``N``; a feature active for two
reasons (two rooks on a file for ``H``) appears once, as in the reference.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from latentchess.encoding import VOCAB, VOCAB_SIZE, detokenize
from latentchess.errors import LatentChessError
from latentchess.models.config import SparseEncoderConfig
from latentchess.nnue.features import BLOCK_SIZES, FeatureSet

if TYPE_CHECKING:
    from latentchess.nnue.model import Nnue

__all__ = [
    "SHARED_FT",
    "SparseEncoder",
    "ft_fingerprint",
    "init_from_nnue",
    "mirror_features",
    "resolve_ft_source",
    "token_features",
]

SHARED_FT = ("ft.weight", "ft_bias")
"""The tensors of the feature transformer: taken from the NNUE named by ``ft_from`` when set."""

_WHITE = VOCAB.index("w")
_TORCH_BLOCKS = frozenset({"ALL", "H", "V", "D1", "D2", "PH", "PV"})


def _kind_table() -> Tensor:
    """Vocabulary index -> (role * 2 + colour) + 1 of a piece, White's colour 0; 0 for the rest."""
    table = torch.zeros(VOCAB_SIZE, dtype=torch.long)
    for colour, letters in enumerate(("PNBRQK", "pnbrqk")):
        for role, letter in enumerate(letters):
            table[VOCAB.index(letter)] = role * 2 + colour + 1
    return table


def _perspective_grid(tokens: Tensor, black: bool) -> Tensor:
    """(B, 8 files, 8 ranks) of ``role * 2 + c`` (c = 0: the perspective's piece), -1 if empty.

    Black's perspective flips the ranks and swaps the colours, as in
    :mod:`latentchess.nnue.features`.
    """
    kinds = _kind_table().to(tokens.device)[tokens[:, 1:65].long()] - 1  # (B, 64), FEN order
    # FEN entry i is rank 7 - i // 8, file i % 8: (B, 8 FEN rows = ranks 8..1, 8 files)
    rows = kinds.view(-1, 8, 8)
    grid = rows.flip(1).transpose(1, 2)  # (B, 8 files, 8 ranks 1..8)
    if black:
        grid = grid.flip(2)  # rank -> 7 - rank
        grid = torch.where(grid >= 0, grid ^ 1, grid)  # swap colours: c -> 1 - c
    return grid.contiguous()


def _axis_lines(device: torch.device) -> dict[str, Tensor]:
    file = torch.arange(8, device=device).view(8, 1).expand(8, 8)  # [file, rank] -> file
    rank = torch.arange(8, device=device).view(1, 8).expand(8, 8)
    return {
        "ALL": file * 8 + rank,
        "H": file,
        "V": rank,
        "D1": file + rank,
        "D2": file + 7 - rank,
    }


def _pairs(lines: Tensor) -> Tensor:
    """(B, 8, 8) kinds along 8 lines -> (B, 64) pair features of consecutive occupied squares.

    Entry (line, j) is ``line * 144 + r1 * 24 + c1 * 12 + r2 * 2 + c2`` for the piece at j and the
    next occupied square after j along the line, or -1.
    """
    occupied = lines >= 0
    position = torch.arange(8, device=lines.device).expand_as(lines)
    sentinel = torch.where(occupied, position, torch.full_like(position, 8))
    # next occupied position strictly after j: suffix minimum of the sentinel, shifted by one
    suffix = sentinel.flip(-1).cummin(dim=-1).values.flip(-1)  # (B, 8, 8): min over k >= j
    after = torch.cat([suffix[..., 1:], torch.full_like(suffix[..., :1], 8)], dim=-1)
    second = lines.gather(-1, after.clamp(max=7))  # (B, 8, 8) kind of the next piece
    valid = occupied & (after < 8)
    line = torch.arange(8, device=lines.device).view(1, 8, 1)
    first = lines.clamp(min=0)
    index = line * 144 + (first >> 1) * 24 + (first & 1) * 12 + second.clamp(min=0)
    return torch.where(valid, index, torch.full_like(index, -1)).flatten(1)


def _block(grid: Tensor, block: str) -> Tensor:
    """(B, 64) local indices of ``block`` (-1 where nothing is active), duplicates included."""
    if block == "PH":
        return _pairs(grid.transpose(1, 2))  # lines = ranks, left (file a) to right
    if block == "PV":
        return _pairs(grid)  # lines = files, bottom to top of the perspective
    line = _axis_lines(grid.device)[block]
    index = line * 12 + grid.clamp(min=0)
    return torch.where(grid >= 0, index, torch.full_like(index, -1)).flatten(1)


def _unique_padded(index: Tensor, pad: int) -> Tensor:
    """Rows of indices (-1: none) -> sorted, duplicates and -1 replaced by ``pad``, (B, K)."""
    index = torch.where(index < 0, torch.full_like(index, pad), index)
    ordered = index.sort(dim=1).values
    repeat = torch.zeros_like(ordered, dtype=torch.bool)
    repeat[:, 1:] = ordered[:, 1:] == ordered[:, :-1]
    return torch.where(repeat, torch.full_like(ordered, pad), ordered).sort(dim=1).values


def _host_features(tokens: Tensor, feature_set: FeatureSet) -> tuple[Tensor, Tensor]:
    """Any feature set, one position at a time: for MB, MC and the threat blocks.

    The native core when built; the Python reference for a position the core refuses (it
    checks piece counts against promotions, which a hand-made probe position may break).
    """
    import chess

    from latentchess.errors import InvalidFenError
    from latentchess.nnue.features import position_features

    try:
        from latentchess.core import _native as native
    except ImportError:  # pragma: no cover - the native core is part of the install
        native = None
    pad = feature_set.size
    rows: list[list[np.ndarray]] = []
    for row in tokens.cpu().numpy():
        fen = detokenize(row)
        position = None
        if native is not None:
            try:
                position = native.Position(fen)
            except InvalidFenError:
                position = None
        if position is not None:
            rows.append(
                [np.asarray(native.nnue_features(position, p, feature_set.name)) for p in (0, 1)]
            )
        else:
            rows.append(list(position_features(chess.Board(fen), feature_set)))
    width = max(1, *(len(f) for pair in rows for f in pair))
    out = np.full((2, len(rows), width), pad, dtype=np.int64)
    for b, pair in enumerate(rows):
        for p, feats in enumerate(pair):
            out[p, b, : len(feats)] = feats
    return torch.from_numpy(out[0]).to(tokens.device), torch.from_numpy(out[1]).to(tokens.device)


def _local_table(feature_set: FeatureSet, black: bool) -> Tensor:
    """(64 * VOCAB_SIZE, blocks) feature index of (FEN square, token) per local block; N if none.

    Every local block (``ALL H V D1 D2``) gives one feature per piece, a function of the piece's
    square and kind only: the features are then one gather from this table.
    """
    pad = feature_set.size
    table = torch.full((64, VOCAB_SIZE, len(feature_set.blocks)), pad, dtype=torch.long)
    kinds = _kind_table() - 1  # (VOCAB_SIZE,) role * 2 + colour (White 0), -1: not a piece
    lines = _axis_lines(torch.device("cpu"))
    for fen_square in range(64):
        file, rank = fen_square % 8, 7 - fen_square // 8
        if black:
            rank = 7 - rank
        for token in range(VOCAB_SIZE):
            kind = int(kinds[token])
            if kind < 0:
                continue
            if black:
                kind ^= 1  # Black's pieces are "ours" (c = 0)
            for b, (block, offset) in enumerate(
                zip(feature_set.blocks, feature_set.offsets, strict=True)
            ):
                table[fen_square, token, b] = offset + int(lines[block][file, rank]) * 12 + kind
    return table.view(64 * VOCAB_SIZE, -1)


def token_features(tokens: Tensor, feature_set: FeatureSet) -> tuple[Tensor, Tensor]:
    """(White's, Black's) active feature indices of (B, 77) tokens, each (B, K) padded with N.

    Equal, as sets per row, to :func:`latentchess.nnue.features.position_features` (and the native
    core's ``nnue_features``).
    """
    if not set(feature_set.blocks) <= _TORCH_BLOCKS:
        return _host_features(tokens, feature_set)
    if feature_set.local:
        return _local_features(tokens, feature_set)
    pad = feature_set.size
    out = []
    for black in (False, True):
        grid = _perspective_grid(tokens, black)
        parts = []
        for block, offset in zip(feature_set.blocks, feature_set.offsets, strict=True):
            local = _block(grid, block)
            parts.append(torch.where(local >= 0, local + offset, local))
        index = torch.cat(parts, dim=1)  # (B, 64 * blocks)
        if feature_set.blocks == ("ALL",):  # one feature per occupied square: no duplicates
            out.append(torch.where(index < 0, torch.full_like(index, pad), index))
        else:
            out.append(_unique_padded(index, pad))
    return out[0], out[1]


_LOCAL_TABLES: dict[tuple[str, bool, str], Tensor] = {}


def _local_features(tokens: Tensor, feature_set: FeatureSet) -> tuple[Tensor, Tensor]:
    """:func:`token_features` of a local feature set: one table gather per perspective."""
    squares = torch.arange(64, device=tokens.device) * VOCAB_SIZE
    cell = tokens[:, 1:65].long() + squares  # (B, 64) row of (FEN square, token)
    out = []
    for black in (False, True):
        key = (feature_set.name, black, str(tokens.device))
        table = _LOCAL_TABLES.get(key)
        if table is None:
            table = _LOCAL_TABLES[key] = _local_table(feature_set, black).to(tokens.device)
        index = table[cell].flatten(1)  # (B, 64 * blocks)
        # ALL: one feature per piece, never twice; the coarser blocks repeat (two rooks, a file)
        unique = feature_set.blocks == ("ALL",)
        out.append(index if unique else _unique_padded(index, feature_set.size))
    return out[0], out[1]


def mirror_features(white: Tensor, black: Tensor) -> tuple[Tensor, Tensor]:
    """The features of the colour-mirrored twin (board flipped, colours and side swapped).

    Each perspective's features are defined in "ours / theirs" terms on the perspective's own
    board, so the twin's White features are the original's Black features and vice versa; its
    accumulators are the original's, swapped (the tests check it on boards).
    """
    return black, white


class SparseEncoder(nn.Module):
    """``(B, 77)`` tokens -> ``(B, dim)`` unit embeddings through NNUE accumulators (module doc).

    Args:
        config: the architecture.
    """

    def __init__(self, config: SparseEncoderConfig) -> None:
        super().__init__()
        self.config = config
        self.feature_set = config.features
        n = self.feature_set.size
        self.ft = nn.EmbeddingBag(n + 1, config.l1, mode="sum", padding_idx=n)
        self.ft_bias = nn.Parameter(torch.zeros(config.l1))
        self.l2 = nn.Linear(2 * config.l1, config.hidden)
        self.l2_stm = nn.Parameter(torch.zeros(config.hidden))
        self.out = nn.Linear(config.hidden, config.dim)
        self._padded_sum = False
        with torch.no_grad():  # the NNUE's start: accumulators inside (0, 1)
            self.ft.weight.normal_(0.0, 0.1 / np.sqrt(32))
            self.ft.weight[n].zero_()
            self.ft_bias.fill_(0.5)
            # A zero output bias: with torch's default one (about +-0.18 per coordinate) every
            # position started at nearly the same point, the bias's direction, and SupCon did not
            # move off it in 600 steps under SGD or AdamW (spearman about 0); from zero, AdamW at
            # 1e-3 reached held-out spearman 0.80 in 500 steps (benchmarks/results/sparse_encoder).
            self.out.bias.zero_()
        if config.ft_from is not None:  # the NNUE's transformer, attached by attach_shared_ft
            self.ft.weight.requires_grad_(False)
            self.ft_bias.requires_grad_(False)

    def stored_state_dict(self) -> dict[str, Tensor]:
        """The tensors a model file holds: all of them, or without :data:`SHARED_FT` when the
        feature transformer is an NNUE's (``ft_from``)."""
        state = self.state_dict()
        if self.config.ft_from is not None:
            for name in SHARED_FT:
                del state[name]
        return state

    def attach_shared_ft(self, base: Path | None = None) -> str:
        """Copy the feature transformer of the NNUE named by ``ft_from`` into this encoder.

        Args:
            base: where a relative ``ft_from`` path is looked for first (a model's directory).

        Returns:
            its fingerprint; the config's ``ft_hash`` is set to it when it was unset (training).

        Raises:
            LatentChessError: no ``ft_from``, an NNUE that does not load, features or widths that
                differ, or a fingerprint other than the config's ``ft_hash``.
        """
        from latentchess.nnue.io import load_nnue

        config = self.config
        if config.ft_from is None:
            raise LatentChessError(f"encoder {config.name!r} has its own feature transformer")
        source = resolve_ft_source(config.ft_from, base)
        try:
            nnue = load_nnue(source).network
        except (OSError, ValueError, LatentChessError) as error:
            raise LatentChessError(
                f"encoder {config.name!r} uses the feature transformer of the NNUE "
                f"{config.ft_from!r} ({str(source)!r}), which does not load: {error}"
            ) from error
        if nnue.cfg.features.name != self.feature_set.name:
            raise LatentChessError(
                f"encoder {config.name!r} has features {self.feature_set.name!r}; the NNUE "
                f"{config.ft_from!r} whose transformer it uses has {nnue.cfg.features.name!r}"
            )
        init_from_nnue(self, nnue)
        fingerprint = ft_fingerprint(self.ft.weight, self.ft_bias)
        if config.ft_hash is None:
            import dataclasses

            self.config = dataclasses.replace(config, ft_hash=fingerprint)
        elif config.ft_hash != fingerprint:
            raise LatentChessError(
                f"encoder {config.name!r} was trained on the feature transformer of the NNUE "
                f"{config.ft_from!r} with fingerprint {config.ft_hash}; {str(source)!r} now has "
                f"{fingerprint} (the network was retrained or replaced): retrain the encoder "
                "on it, or restore that network"
            )
        return fingerprint

    def features(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        """(White's, Black's) padded active feature indices, (B, K) each."""
        return token_features(tokens.long(), self.feature_set)

    def accumulators(self, tokens: Tensor) -> Tensor:
        """(B, 2 * l1) accumulators before the clamp: White's perspective first."""
        white, black = self.features(tokens)
        batch = white.shape[0]
        if self._padded_sum:  # ONNX: a gather and a sum (the padding row is zero)
            rows = self.ft.weight[torch.cat([white, black], dim=0)]  # (2B, K, L1)
            acc = rows.sum(dim=1) + self.ft_bias
            return torch.cat([acc[:batch], acc[batch:]], dim=1)
        # One bag per (perspective, position), padding dropped: about half the lookups of the
        # padded (B, K) form for ALL, and one kernel call for both perspectives.
        index = torch.cat([white, black], dim=0)  # (2B, K)
        active = index != self.feature_set.size
        counts = active.sum(dim=1)  # (2B,)
        offsets = torch.cumsum(counts, dim=0) - counts
        acc = self.ft(index[active], offsets) + self.ft_bias  # (2B, L1)
        return torch.cat([acc[:batch], acc[batch:]], dim=1)  # (B, 2 * L1)

    def onnx_exportable(self) -> SparseEncoder:
        """A copy that sums gathered rows instead of calling EmbeddingBag with offsets (which
        the ONNX exporter cannot trace); the same numbers, the padding row being zero."""
        import copy

        plain = copy.deepcopy(self).eval()
        with torch.no_grad():
            plain.ft.weight[self.feature_set.size].zero_()
        plain._padded_sum = True
        return plain

    def forward(self, tokens: Tensor) -> Tensor:
        """``(B, 77)`` token indices -> ``(B, dim)`` float32 unit vectors (White's view)."""
        x = self.accumulators(tokens).clamp(0.0, 1.0)  # (B, 2 * L1)
        black_to_move = (tokens[:, 0].long() != _WHITE).unsqueeze(1)  # (B, 1)
        h = self.l2(x) + black_to_move.to(x.dtype) * self.l2_stm  # (B, H)
        z = self.out(h.clamp(0.0, 1.0))  # (B, D)
        return F.normalize(z.float(), dim=-1)

    def num_parameters(self) -> int:
        """Number of trainable parameters (the padding row included)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


def resolve_ft_source(ref: str, base: Path | None = None) -> Path:
    """The NNUE directory that ``ft_from`` names: a shipped model's name (``nnue-default``),
    else a path, relative to ``base`` when it exists there, else to the working directory."""
    from latentchess.paths import SHIPPED_WEIGHTS

    shipped = SHIPPED_WEIGHTS / ref
    if "/" not in ref and shipped.is_dir():
        return shipped
    path = Path(ref).expanduser()
    if base is not None and not path.is_absolute() and (base / path).is_dir():
        return base / path
    return path


def ft_fingerprint(weight: Tensor, bias: Tensor) -> str:
    """16 hex digits of SHA-256 over a feature transformer's float32 rows and bias."""
    import hashlib

    digest = hashlib.sha256()
    for tensor in (weight, bias):
        digest.update(tensor.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def init_from_nnue(encoder: SparseEncoder, nnue: Nnue) -> tuple[str, ...]:
    """Start ``encoder``'s feature transformer from an NNUE's.

    The NNUE's accumulator is the encoder's (the same ``EmbeddingBag`` rows, bias and clamp to
    (0, 1)), so the rows of every block the two feature sets share are copied, with the bias;
    the encoder's other blocks (e.g. a threat block the NNUE lacks) keep their initialisation.

    Returns:
        the blocks copied.

    Raises:
        LatentChessError: the widths differ, or the sets share no block.
    """
    theirs = nnue.cfg.features
    ours = encoder.feature_set
    if nnue.cfg.l1 != encoder.config.l1:
        raise LatentChessError(
            f"init_from_nnue: the NNUE's L1 is {nnue.cfg.l1}, the encoder's {encoder.config.l1}"
        )
    shared = [b for b in ours.blocks if b in theirs.blocks]
    if not shared:
        raise LatentChessError(
            f"init_from_nnue: the NNUE's features {theirs.name!r} share no block with the "
            f"encoder's {ours.name!r}"
        )
    from_offsets = dict(zip(theirs.blocks, theirs.offsets, strict=True))
    to_offsets = dict(zip(ours.blocks, ours.offsets, strict=True))
    with torch.no_grad():
        for block in shared:
            size = BLOCK_SIZES[block]
            source = nnue.ft.weight[from_offsets[block] : from_offsets[block] + size]
            encoder.ft.weight[to_offsets[block] : to_offsets[block] + size] = source
        encoder.ft_bias.copy_(nnue.ft_bias)
    return tuple(shared)
