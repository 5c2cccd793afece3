"""The NNUE network (float, for training) and its quantisation for the native core.

Architecture (thesis; Stockfish's nnue-pytorch layout)::

    features (N, sparse) --EmbeddingBag(N, L1)+bias--> accumulator, one per perspective (shared)
    [acc(side to move), acc(other)] (2 * L1) -> clamp(0, 1) -> Linear(2 * L1, L2) -> clamp(0, 1)
                                              -> Linear(L2, 1) -> * OUTPUT_SCALE = centipawns

With ``output_buckets = B > 1`` the two dense layers come in B copies (Stockfish's "layer stacks"
since its 2021 networks) and a position uses copy :func:`output_bucket` of its piece count (kings
included): ``(pieces - 1) * B // 32``, so B = 8 gives Stockfish's ``(pieces - 1) / 4``. The
accumulator is shared by all copies, so a bucketed network costs the search no more than a plain
one. :func:`expand_output_buckets` turns a plain network into a bucketed one that computes the
same function (every copy starts as the plain layers), the start of a fine-tune.
:func:`expand_king_buckets` does the same for the input side: an ALL network becomes a KA network
(:mod:`latentchess.nnue.features`, king buckets) whose every king bucket starts as ALL's weights,
and a KA network a KA9 network whose every bucket starts as the KA bucket it lies in.

Training may set the feature tables ``sparse`` (:func:`latentchess.training.nnue.make_optimizer`):
the forward pass then reads the rows a batch uses through one gather, so the backward pass gives a
sparse gradient of those rows only, and the evaluation is the same to the bit.

With ``psqt=True`` (not in the thesis; Stockfish's feature transformer has the same term) a linear
piece-square sum per perspective, ``psqt(stm) - psqt(other)`` halved, is added to the output before
the scale. Without it every clamped layer bounds the output: our ALL network trained on static
labels rated a queen up, a queen and a rook up and a queen and two rooks up all +663 cp, so the
search could not tell them apart. The term starts at half the material values
(:data:`PSQT_INIT_FRACTION`) and is trained with the rest.

Quantisation (what the core runs):
    L1 weights and biases int16 at scale 127; accumulators int16; activations clamp(acc, 0, 127).
    L2 weights int8 at scale 64 (training clips them to +-127/64), bias int32 at scale 127 * 64;
    L2 output ``>> 6`` then clamp(0, 127). With B buckets the L2 rows are bucket-major (bucket
    b's unit j is row ``b * L2 + j``), and so are the output weights (B * L2) and biases (B).
    A threat block's rows (T, TNK: large, read at every move) are int8 at the same scale 127,
    ``ft.threat_weight`` (training clips them to +-1); ``ft.weight`` then holds the other blocks'
    rows, the features below the threat block's offset.
    Output weights int32 at scale ``OUTPUT_SCALE * 16 / 127``, bias at ``OUTPUT_SCALE * 16``;
    centipawns = (sum + bias) / 16 (Stockfish's serializer, which the thesis's code follows).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor, nn

from latentchess.errors import LatentChessError
from latentchess.nnue.features import (
    BLOCK_SIZES,
    KING_BUCKET_LAYOUTS,
    THREAT_BLOCKS,
    FeatureSet,
    parse_feature_set,
)

__all__ = [
    "OUTPUT_SCALE",
    "L1_SCALE",
    "L2_SCALE",
    "OUT_SHIFT",
    "NnueConfig",
    "Nnue",
    "output_bucket",
    "expand_output_buckets",
    "expand_king_buckets",
    "expand_network",
    "add_threat_block",
    "quantise",
    "quantised_forward",
]

BLOCK_ALL_SIZE = BLOCK_SIZES["ALL"]
OUTPUT_SCALE = 600.0  # network output * OUTPUT_SCALE = centipawns (nnue2score)
L1_SCALE = 127
L2_SCALE = 64
OUT_SHIFT = 16
L2_CLIP = 127.0 / L2_SCALE
THREAT_CLIP = 127.0 / L1_SCALE  # a threat block's first-layer weights: int8 at L1_SCALE
MAX_PIECES = 32


PIECE_BLOCKS = ("ALL", *KING_BUCKET_LAYOUTS)  # the blocks with one feature per piece


def _piece_block(features: FeatureSet) -> tuple[int, int] | None:
    """(offset, size) of the block with one feature per piece (ALL or a king block), or ``None``."""
    for block in PIECE_BLOCKS:
        if block in features.blocks:
            return features.offsets[features.blocks.index(block)], BLOCK_SIZES[block]
    return None


def _threat_start(features: FeatureSet) -> int | None:
    """The first feature of the set's threat block (its last block), or ``None``."""
    return features.offsets[-1] if features.threats is not None else None


def output_bucket(pieces: int, buckets: int) -> int:
    """The output-layer copy a position with ``pieces`` pieces (kings included) uses."""
    return min(buckets - 1, max(0, (pieces - 1) * buckets // MAX_PIECES))


@dataclass(frozen=True, kw_only=True)
class NnueConfig:
    """Network shape.

    Attributes:
        feature_set: e.g. ``"ALL"`` or ``"ALL+H+V"``.
        l1: accumulator width per perspective.
        l2: hidden width.
        psqt: add the linear piece-square term (see the module docstring).
        output_buckets: copies of the dense layers, chosen by piece count (1: one copy).
    """

    feature_set: str = "ALL"
    l1: int = 256
    l2: int = 32
    psqt: bool = False
    output_buckets: int = 1

    def __post_init__(self) -> None:
        features = parse_feature_set(self.feature_set)
        if self.l1 < 8 or self.l1 % 8 or self.l2 < 1:
            raise LatentChessError(f"bad sizes l1={self.l1!r} (multiple of 8) l2={self.l2!r}")
        if not 1 <= self.output_buckets <= MAX_PIECES:
            raise LatentChessError(
                f"output_buckets must be 1..{MAX_PIECES}, not {self.output_buckets!r}"
            )
        if self.output_buckets > 1 and _piece_block(features) is None:
            raise LatentChessError(
                f"output buckets count the pieces from one of the blocks {PIECE_BLOCKS}; "
                f"{self.feature_set!r} has none"
            )

    @property
    def features(self) -> FeatureSet:
        return parse_feature_set(self.feature_set)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NnueConfig:
        unknown = set(data) - {"feature_set", "l1", "l2", "psqt", "output_buckets"}
        if unknown:
            raise LatentChessError(f"unknown NNUE config keys {sorted(unknown)!r}")
        return cls(**data)


class Nnue(nn.Module):
    """Float NNUE; ``forward(white, black, stm) -> centipawns`` (side to move's view).

    ``white`` / ``black`` are (B, K) padded feature index tensors (pad = N).
    """

    def __init__(self, cfg: NnueConfig) -> None:
        super().__init__()
        self.cfg = cfg
        n = cfg.features.size
        self.ft = nn.EmbeddingBag(n + 1, cfg.l1, mode="sum", padding_idx=n)
        self.ft_bias = nn.Parameter(torch.zeros(cfg.l1))
        self.l2 = nn.Linear(2 * cfg.l1, cfg.l2 * cfg.output_buckets)  # bucket-major rows
        self.out = nn.Linear(cfg.l2, cfg.output_buckets)  # row b: bucket b's output
        with torch.no_grad():  # small first-layer weights: accumulators start inside (0, 1)
            self.ft.weight.normal_(0.0, 0.1 / np.sqrt(32))
            self.ft.weight[n].zero_()
            self.ft_bias.fill_(0.5)
            self.l2.weight.clamp_(-L2_CLIP, L2_CLIP)
        self.psqt: nn.EmbeddingBag | None = None
        if cfg.psqt:
            self.psqt = nn.EmbeddingBag(n + 1, 1, mode="sum", padding_idx=n)
            with torch.no_grad():
                self.psqt.weight.copy_(torch.from_numpy(material_init(cfg.features)).unsqueeze(1))

    def accumulate(self, features: Tensor) -> Tensor:
        """(B, K) padded indices -> (B, L1) accumulators (float)."""
        return self.ft(features.long()) + self.ft_bias

    def _sums(self, table: nn.EmbeddingBag, white: Tensor, black: Tensor) -> tuple[Tensor, Tensor]:
        """Each perspective's sum of ``table``'s rows, (B, D) twice.

        A table set ``sparse`` (a sparse first-layer update) is read through the rows the
        batch uses: gathered once (their gradient a sparse tensor of those rows, each once, the
        padding row never), then summed per position as the table itself would sum them.
        """
        if not table.sparse:
            return table(white.long()), table(black.long())
        both = torch.cat([white, black]).long()  # (2B, K)
        seen = torch.zeros(len(table.weight), dtype=torch.bool, device=both.device)
        seen[both] = True
        used = seen.nonzero().squeeze(1)  # sorted: the padding row, if used, last
        index = (torch.cumsum(seen, 0) - 1)[both]  # each feature's row among ``used``
        pad = self.cfg.features.size
        rows = nn.functional.embedding(used, table.weight, padding_idx=pad, sparse=True)
        last = len(used) - 1 if bool(seen[pad]) else None
        sums = nn.functional.embedding_bag(index, rows, mode="sum", padding_idx=last)
        return sums[: len(white)], sums[len(white) :]

    def buckets(self, white: Tensor) -> Tensor:
        """(B,) output bucket of each position, from its pieces (its ALL or king block)."""
        count = self.cfg.output_buckets
        if count == 1:
            return torch.zeros(white.shape[0], dtype=torch.long, device=white.device)
        block = _piece_block(self.cfg.features)
        assert block is not None  # NnueConfig checks it
        start, size = block
        pieces = ((white >= start) & (white < start + size)).sum(dim=1)
        return ((pieces - 1).clamp(min=0) * count // MAX_PIECES).clamp(max=count - 1).long()

    def hidden(self, white: Tensor, black: Tensor, stm: Tensor) -> Tensor:
        """The second layer (each position's bucket) before its clamp, (B, L2)."""
        acc_w, acc_b = (acc + self.ft_bias for acc in self._sums(self.ft, white, black))
        black_to_move = stm.bool().unsqueeze(1)  # (B, 1)
        first = torch.where(black_to_move, acc_b, acc_w)
        second = torch.where(black_to_move, acc_w, acc_b)
        z = self.l2(torch.cat([first, second], dim=1).clamp(0.0, 1.0))  # (B, buckets * L2)
        if self.cfg.output_buckets == 1:
            return z
        z = z.view(z.shape[0], self.cfg.output_buckets, self.cfg.l2)
        index = self.buckets(white).view(-1, 1, 1).expand(-1, 1, self.cfg.l2)
        return z.gather(1, index).squeeze(1)

    def live_units(self, white: Tensor, black: Tensor, stm: Tensor) -> int:
        """How many second-layer units lie inside (0, 1) for at least 0.1% of these positions.

        The others are constant (0 or 1) on them: dead weight the search still pays for.
        """
        z = self.hidden(white, black, stm)
        return int((((z > 0) & (z < 1)).float().mean(dim=0) >= 0.001).sum())

    def forward(self, white: Tensor, black: Tensor, stm: Tensor) -> Tensor:
        """Centipawns from the side to move's view, (B,)."""
        x = self.hidden(white, black, stm).clamp(0.0, 1.0)  # (B, L2)
        y = self.out(x)  # (B, buckets): every copy's output; keep the position's own
        y = y.gather(1, self.buckets(white).unsqueeze(1)).squeeze(1)  # (B,)
        if self.psqt is not None:
            psqt_w, psqt_b = (x.squeeze(1) for x in self._sums(self.psqt, white, black))
            ours = torch.where(stm.bool(), psqt_b, psqt_w)
            theirs = torch.where(stm.bool(), psqt_w, psqt_b)
            y = y + (ours - theirs) / 2
        return y * OUTPUT_SCALE

    @torch.no_grad()
    def clip_weights(self) -> None:
        """Keep the L2 weights (and a threat block's rows) representable as int8."""
        self.l2.weight.clamp_(-L2_CLIP, L2_CLIP)
        start = _threat_start(self.cfg.features)
        if start is not None:
            self.ft.weight[start : self.cfg.features.size].clamp_(-THREAT_CLIP, THREAT_CLIP)


MATERIAL_CP = (80.0, 230.0, 240.0, 370.0, 720.0, 0.0)
"""Piece values (P N B R Q K) in Stockfish 15.1's normalised centipawns (its internal middlegame /
endgame values divided by 361, roughly)."""

PSQT_INIT_FRACTION = 0.5
"""The psqt term starts at this fraction of :data:`MATERIAL_CP`. Measured (400 steps, lr 2e-3, the
static-label data): starting at full material the rest of the network got too weak a signal and
the loss stalled at 0.00137 (the material-only plateau); at half it learnt like the plain network
(held-out 0.00119 at step 300)."""


def material_init(features: FeatureSet) -> npt.NDArray[np.float32]:
    """(N + 1,) psqt start weights: +value for our pieces, -value for theirs (piece block)."""
    weights = np.zeros(features.size + 1, dtype=np.float32)
    block = _piece_block(features)
    if block is not None:
        offset, size = block
        index = np.arange(size) % BLOCK_ALL_SIZE  # king blocks: every bucket as ALL
        role, theirs = (index % 12) // 2, index % 2  # ALL: (file*8 + rank)*12 + role*2 + c
        values = np.asarray(MATERIAL_CP, dtype=np.float32)[role] * PSQT_INIT_FRACTION / OUTPUT_SCALE
        weights[offset : offset + size] = np.where(theirs == 1, -values, values)
    return weights


@torch.no_grad()
def expand_output_buckets(plain: Nnue, buckets: int) -> Nnue:
    """A network with ``buckets`` copies of ``plain``'s dense layers: the same function.

    The start of a bucketed fine-tune: every copy begins as the plain layers and the training
    lets each piece-count range drift on its own.
    """
    if plain.cfg.output_buckets != 1:
        raise LatentChessError(f"expand_output_buckets needs a plain network, not {plain.cfg}")
    cfg = NnueConfig(**{**plain.cfg.to_dict(), "output_buckets": buckets})
    net = Nnue(cfg)
    state = {k: v.clone() for k, v in plain.state_dict().items()}
    state["l2.weight"] = plain.l2.weight.repeat(buckets, 1)
    state["l2.bias"] = plain.l2.bias.repeat(buckets)
    state["out.weight"] = plain.out.weight.repeat(buckets, 1)
    state["out.bias"] = plain.out.bias.repeat(buckets)
    net.load_state_dict(state)
    return net


def _king_parents(old_block: str, new_block: str) -> list[int]:
    """Each of ``new_block``'s king buckets -> the bucket of ``old_block`` that holds it.

    ALL counts as one bucket holding every square. Raises :class:`LatentChessError` when a new
    bucket straddles two old ones (the layout is not a refinement: no exact start exists).
    """
    new_layout = KING_BUCKET_LAYOUTS[new_block]
    old_layout = KING_BUCKET_LAYOUTS.get(old_block, ((0,) * 8,) * 8)  # ALL: one bucket
    parents: dict[int, set[int]] = {}
    for file in range(8):
        for rank in range(8):
            parents.setdefault(new_layout[file][rank], set()).add(old_layout[file][rank])
    if any(len(p) != 1 for p in parents.values()):
        raise LatentChessError(
            f"{new_block}'s king buckets do not each lie inside one of {old_block}'s"
        )
    return [next(iter(parents[bucket])) for bucket in range(len(parents))]


@torch.no_grad()
def expand_king_buckets(plain: Nnue, block: str = "KA") -> Nnue:
    """``plain`` with its piece block (ALL or coarser king buckets) replaced by ``block``: the
    same function, every new king bucket a copy of the old bucket it lies in.

    The start of a king-bucketed fine-tune: a position's features pick one bucket per
    perspective, so the network begins as exactly ``plain`` and the training lets each king
    region's piece-square weights drift on their own.
    """
    old = plain.cfg.features
    pieces = [b for b in old.blocks if b in PIECE_BLOCKS]
    if block not in KING_BUCKET_LAYOUTS or not pieces or pieces[0] == block:
        raise LatentChessError(
            f"expand_king_buckets turns ALL or a coarser king block into one of "
            f"{sorted(KING_BUCKET_LAYOUTS)}, not {plain.cfg.feature_set!r} into {block!r}"
        )
    parents = _king_parents(pieces[0], block)
    blocks = tuple(block if b == pieces[0] else b for b in old.blocks)
    cfg = NnueConfig(**{**plain.cfg.to_dict(), "feature_set": "+".join(blocks)})
    new = cfg.features
    source = []  # new feature index -> old feature index
    for name, old_offset in zip(old.blocks, old.offsets, strict=True):
        local = np.arange(BLOCK_SIZES[name])
        if name == pieces[0]:
            piece = np.arange(BLOCK_ALL_SIZE)
            local = np.concatenate([parent * BLOCK_ALL_SIZE + piece for parent in parents])
        source.append(local + old_offset)
    index = torch.from_numpy(np.concatenate([*source, [old.size]]))  # the padding row last
    assert len(index) == new.size + 1
    net = Nnue(cfg)
    state = {k: v.clone() for k, v in plain.state_dict().items()}
    state["ft.weight"] = plain.ft.weight[index].clone()
    if plain.psqt is not None:
        state["psqt.weight"] = plain.psqt.weight[index].clone()
    net.load_state_dict(state)
    return net


def add_threat_block(plain: Nnue, block: str = "TNK") -> Nnue:
    """``plain`` with a threat block (T or TNK) appended, its weights zero: the same function.

    The start of a threat fine-tune from a piece-square network (and, left at zero, a network
    that searches exactly as ``plain`` while paying for the threat updates: a speed baseline).
    """
    if block not in THREAT_BLOCKS or plain.cfg.features.threats is not None:
        raise LatentChessError(
            f"add_threat_block appends one of {THREAT_BLOCKS} to a network without one, "
            f"not {block!r} to {plain.cfg.feature_set!r}"
        )
    cfg = NnueConfig(**{**plain.cfg.to_dict(), "feature_set": f"{plain.cfg.feature_set}+{block}"})
    old = plain.cfg.features.size
    net = Nnue(cfg)
    state = {k: v.clone() for k, v in plain.state_dict().items()}
    for name in ("ft.weight", "psqt.weight"):
        if name in state:
            grown = torch.zeros((cfg.features.size + 1, state[name].shape[1]))
            grown[:old] = state[name][:old]  # the old padding row (zero) moves to the end
            state[name] = grown
    net.load_state_dict(state)
    return net


@torch.no_grad()
def widen_accumulator(plain: Nnue, l1: int, *, seed: int = 0) -> Nnue:
    """``plain`` with ``l1`` accumulator units per perspective instead of its own: the same
    function (net2wider).

    The old units keep their weights; each new unit gets a freshly initialised feature-transformer
    column (as a new network's) and zero second-layer weights, so it changes no output until
    training gives it some: the start of a wider fine-tune at the same budget.
    """
    old = plain.cfg.l1
    if l1 <= old:
        raise LatentChessError(f"widen_accumulator grows L1 ({old}) to more units, not to {l1}")
    cfg = NnueConfig(**{**plain.cfg.to_dict(), "l1": l1})
    with torch.random.fork_rng(devices=[]):  # the caller's random stream is left as it was
        torch.manual_seed(seed)
        net = Nnue(cfg)
    state = {k: v.clone() for k, v in net.state_dict().items()}
    ours = plain.state_dict()
    state["ft.weight"][:, :old] = ours["ft.weight"]
    state["ft_bias"][:old] = ours["ft_bias"]
    weight = torch.zeros_like(state["l2.weight"])  # (buckets * L2, 2 * l1): [mover | other]
    weight[:, :old] = ours["l2.weight"][:, :old]
    weight[:, l1 : l1 + old] = ours["l2.weight"][:, old:]
    state["l2.weight"] = weight
    for name in ("l2.bias", "out.weight", "out.bias", "psqt.weight"):
        if name in ours:
            state[name] = ours[name].clone()
    net.load_state_dict(state)
    return net


def expand_network(start: Nnue, cfg: NnueConfig) -> Nnue:
    """``start`` grown to ``cfg`` by king and output buckets, a zero threat block and a wider
    accumulator, computing the same function.

    Raises :class:`LatentChessError` when ``cfg`` differs from ``start`` in anything else.
    """
    net = start
    kings = [b for b in cfg.features.blocks if b in KING_BUCKET_LAYOUTS]
    pieces = [b for b in net.cfg.features.blocks if b in PIECE_BLOCKS]
    if kings and pieces and pieces[0] != kings[0]:
        net = expand_king_buckets(net, kings[0])
    if net.cfg.output_buckets == 1 and cfg.output_buckets > 1:
        net = expand_output_buckets(net, cfg.output_buckets)
    threats = cfg.features.threats
    if threats is not None and net.cfg.features.threats is None:
        net = add_threat_block(net, threats)
    if cfg.l1 > net.cfg.l1:
        net = widen_accumulator(net, cfg.l1)
    if net.cfg != cfg:
        raise LatentChessError(f"a network of shape {start.cfg} cannot start one of shape {cfg}")
    return net


def quantise(model: Nnue) -> dict[str, npt.NDArray[Any]]:
    """Integer tensors the core runs (see the module docstring for the scales)."""
    n = model.cfg.features.size
    w1 = model.ft.weight.detach().cpu().numpy()[:n]  # (N, L1)
    b1 = model.ft_bias.detach().cpu().numpy()
    w2 = model.l2.weight.detach().cpu().numpy()  # (buckets * L2, 2 * L1)
    b2 = model.l2.bias.detach().cpu().numpy()
    w3 = model.out.weight.detach().cpu().numpy().reshape(-1)  # (buckets * L2,)
    b3 = model.out.bias.detach().cpu().numpy()  # (buckets,)
    out_w_scale = OUTPUT_SCALE * OUT_SHIFT / L1_SCALE
    extra: dict[str, npt.NDArray[Any]] = {}
    if model.psqt is not None:  # int32 in centipawns * OUT_SHIFT
        psqt = model.psqt.weight.detach().cpu().numpy()[:n, 0]
        extra["psqt.weight"] = np.round(psqt * OUTPUT_SCALE * OUT_SHIFT).astype(np.int32)
    start = _threat_start(model.cfg.features)
    if start is not None:  # the threat rows int8 (training keeps them in range)
        extra["ft.threat_weight"] = np.clip(np.round(w1[start:] * L1_SCALE), -127, 127).astype(
            np.int8
        )
        w1 = w1[:start]
    return extra | {
        "ft.weight": np.clip(np.round(w1 * L1_SCALE), -32767, 32767).astype(np.int16),
        "ft.bias": np.clip(np.round(b1 * L1_SCALE), -32767, 32767).astype(np.int16),
        "l2.weight": np.clip(np.round(w2 * L2_SCALE), -127, 127).astype(np.int8),
        "l2.bias": np.round(b2 * L1_SCALE * L2_SCALE).astype(np.int32),
        "out.weight": np.round(w3 * out_w_scale).astype(np.int32),
        "out.bias": np.round(b3 * OUTPUT_SCALE * OUT_SHIFT).astype(np.int32),
    }


def quantised_forward(
    q: dict[str, npt.NDArray[Any]],
    white: list[npt.NDArray[np.int64]],
    black: list[npt.NDArray[np.int64]],
    stm: npt.NDArray[np.integer[Any]],
    feature_set: str = "ALL",
) -> npt.NDArray[np.int64]:
    """Integer reference inference (what the core computes), centipawns per position.

    ``feature_set`` (the network's) is needed only by a bucketed network: the output bucket
    counts the pieces among the features of its ALL or king-bucketed block.
    """
    block = _piece_block(parse_feature_set(feature_set))
    start, size = block if block is not None else (0, BLOCK_ALL_SIZE)
    w1 = q["ft.weight"].astype(np.int32)
    if "ft.threat_weight" in q:  # a threat block's int8 rows follow the others
        w1 = np.concatenate([w1, q["ft.threat_weight"].astype(np.int32)])
    psqt = q.get("psqt.weight")
    buckets = len(q["out.bias"])
    l2 = len(q["out.weight"]) // buckets
    out = np.empty(len(stm), dtype=np.int64)
    for i in range(len(stm)):
        pieces = int(((white[i] >= start) & (white[i] < start + size)).sum())
        bucket = output_bucket(pieces, buckets)
        rows = slice(bucket * l2, (bucket + 1) * l2)
        acc_w = (q["ft.bias"].astype(np.int32) + w1[white[i]].sum(axis=0)).astype(np.int16)
        acc_b = (q["ft.bias"].astype(np.int32) + w1[black[i]].sum(axis=0)).astype(np.int16)
        first, second = (acc_b, acc_w) if stm[i] else (acc_w, acc_b)
        a1 = np.clip(np.concatenate([first, second]).astype(np.int32), 0, L1_SCALE)
        z2 = q["l2.weight"][rows].astype(np.int32) @ a1 + q["l2.bias"][rows]
        a2 = np.clip(z2 >> 6, 0, L1_SCALE)
        total = int(q["out.weight"][rows] @ a2 + int(q["out.bias"][bucket]))
        if psqt is not None:
            ours, theirs = (black[i], white[i]) if stm[i] else (white[i], black[i])
            total += (int(psqt[ours].sum()) - int(psqt[theirs].sum())) >> 1
        out[i] = total // OUT_SHIFT
    return out
