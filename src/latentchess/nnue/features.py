"""NNUE input feature sets (Lombardo 2024, "Feature set analysis for chess NNUE networks").

The readable reference implementation: the native core's extractor must give the same indices.

Each position is encoded twice, once per *perspective*. From Black's perspective the board is
flipped vertically (rank -> 7 - rank) and the colours are swapped, so that in both encodings
``c = 0`` means "ours" (the perspective's pieces) and ``c = 1`` "theirs". ``role`` is 0..5 for
P N B R Q K; ``file`` and ``rank`` are 0..7 in the perspective's (flipped) board.

Blocks (a feature set is blocks joined by ``+``; each block's indices are shifted by the sizes of
the blocks before it, so ``ALL+H`` has 864 features, H's starting at 768):

========  ===========================================================================  ======
block     index of an active feature                                                   size
========  ===========================================================================  ======
ALL       ``(file * 8 + rank) * 12 + role * 2 + c`` per piece                            768
KA        ``bucket * 768 + ALL's index`` per piece, ``bucket`` = :func:`king_bucket`    3072
          of the perspective's own king (ALL in four king buckets)
KA9       as KA with nine king buckets (each inside one of KA's four)                    6912
H         ``file * 12 + role * 2 + c`` per piece (a piece of that kind on that file)       96
V         ``rank * 12 + role * 2 + c``                                                     96
D1        ``(file + rank) * 12 + role * 2 + c``                                           180
D2        ``(file + 7 - rank) * 12 + role * 2 + c``                                       180
PH        pairs of consecutive occupied squares along a *rank*, left to right:           1152
          ``rank * 144 + r1 * 24 + c1 * 12 + r2 * 2 + c2`` (r1, c1 = the left piece)
PV        pairs of consecutive occupied squares along a *file*, bottom to top:           1152
          ``file * 144 + r1 * 24 + c1 * 12 + r2 * 2 + c2`` (r1, c1 = the lower piece)
MB        ``square * 12 + role * 2 + c`` for every square in the union of the legal       768
          destinations of the (role, colour)'s pieces, ``square = file * 8 + rank``
MC        per (role, colour) the size of that union, capped at [8, 15, 16, 25, 25, 8]:    206
          ``MC_OFFSET[role] + c * (cap + 1) + min(count, cap)``
T         threats: one feature per (attacking piece, attacked piece) pair, see below       90048
TNK       T without the pairs that involve a king (as attacker or as attacked)            66640
========  ===========================================================================  ======

King buckets (KA, KA9, not in the thesis): Stockfish's HalfKA features give every square of the
perspective's own king its own copy of the piece-square weights; KA keeps four copies, enough for
the few million positions a CPU trains on: :func:`king_bucket` is ``(file >= 4) + 2 * (rank >= 1)``
in the perspective's board (queen side / king side, on its first rank / off it). KA9 splits those
four further (:data:`KING_BUCKET_LAYOUTS`): on the first rank a-d / e / f-h (long castling or the
queen side, the king at home, short castling), then a-d / e-h on the second rank, on the third and
fourth, and beyond. Every KA9 bucket lies inside one KA bucket, so a KA network starts a KA9 one
exactly as an ALL network starts a KA one, every copy equal to its parent
(:func:`latentchess.nnue.model.expand_king_buckets`).

Naming of the pairwise blocks: we name them by direction, as the thesis *slides* do (PH: a piece
"to the left of" another on a rank; PV: a piece "below" another on a file). The thesis's *code*
uses the two names the other way round (its PH walks files, its PV ranks); where a result is quoted
from the thesis's tables we map slides' PH -> our PH, slides' PV -> our PV.

Threats (T, TNK; not in the thesis: Stockfish's SFNNv10 and, without king pairs, SFNNv12): a
piece *attacks* the squares it could capture on if an enemy stood there (a pawn its two diagonal
squares forward, sliders up to and including the first occupied square; pins and the side to move
play no part), and every occupied square it attacks, whoever's piece stands there, gives a
feature. A feature is a *triple* (attacker kind ``ka = role * 2 + c``, its square ``s``, the
attacked square ``t``) with ``t`` in the attack set of a piece of kind ``ka`` on ``s`` on an
*empty* board, times the attacked piece's kind ``kt = role * 2 + c``: index ``triple * K + kt``
with K = 12 for T and 10 for TNK. Here, unlike ALL, squares are numbered ``rank * 8 + file`` in the
perspective's board, and triples are ordered by ``ka``, then ``s``, then ``t`` ascending
(:data:`THREAT_TRIPLES`); pawns stand on ranks 2-7 only, so their triples start there. T has
7,504 triples (3,752 per colour: pawns 84, knights 336, bishops 560, rooks 896, queens 1,456,
king 420), TNK the 6,664 without the king's, attacked kinds 0..9. A threat block is large and
non-local (a move changes the pairs of the moved and captured pieces and of every slider whose ray
it opens or closes), so it comes last in a set (``KA9+T``, ``KA9+TNK``); at most one.

Mobility (MB, MC): destinations of the moves a colour could make if it were its turn, moves that
leave its own king in check excluded; a pawn counts only its one-square push (promotions included)
and its captures (en passant only for the side to move, which owns the en-passant square);
castling counts as the king's move to its destination square. Features are binary: a
feature active for two reasons (two rooks on one file for H) appears once.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import chess
import numpy as np
import numpy.typing as npt

from latentchess.errors import LatentChessError

__all__ = [
    "BLOCK_SIZES",
    "MC_CAPS",
    "MC_OFFSET",
    "FeatureSet",
    "parse_feature_set",
    "block_features",
    "perspective_features",
    "position_features",
    "mirror_all_features",
    "king_bucket",
    "KING_BUCKET_LAYOUTS",
    "THREAT_BLOCKS",
    "THREAT_TRIPLES",
    "threat_pairs",
]

BLOCK_SIZES: dict[str, int] = {
    "ALL": 768,
    "KA": 4 * 768,
    "KA9": 9 * 768,
    "H": 96,
    "V": 96,
    "D1": 180,
    "D2": 180,
    "PH": 1152,
    "PV": 1152,
    "MB": 768,
    "MC": 206,
    "T": 7504 * 12,
    "TNK": 6664 * 10,
}
THREAT_BLOCKS: tuple[str, ...] = ("T", "TNK")
MC_CAPS: tuple[int, ...] = (8, 15, 16, 25, 25, 8)
MC_OFFSET: tuple[int, ...] = tuple(int(2 * sum(c + 1 for c in MC_CAPS[:r])) for r in range(6))
assert 2 * sum(c + 1 for c in MC_CAPS) == BLOCK_SIZES["MC"]


def _layout(rows: str) -> tuple[tuple[int, ...], ...]:
    """A king-bucket layout drawn rank 8 first, as a board is printed -> ``[file][rank]``."""
    ranks = [[int(c) for c in row.split()] for row in rows.strip().splitlines()][::-1]
    return tuple(tuple(ranks[rank][file] for rank in range(8)) for file in range(8))


# The king-bucketed blocks: ``[file][rank]`` of the perspective's own king -> its bucket.
KING_BUCKET_LAYOUTS: dict[str, tuple[tuple[int, ...], ...]] = {
    "KA": _layout(
        """
        2 2 2 2 3 3 3 3
        2 2 2 2 3 3 3 3
        2 2 2 2 3 3 3 3
        2 2 2 2 3 3 3 3
        2 2 2 2 3 3 3 3
        2 2 2 2 3 3 3 3
        2 2 2 2 3 3 3 3
        0 0 0 0 1 1 1 1
        """
    ),
    "KA9": _layout(
        """
        7 7 7 7 8 8 8 8
        7 7 7 7 8 8 8 8
        7 7 7 7 8 8 8 8
        7 7 7 7 8 8 8 8
        5 5 5 5 6 6 6 6
        5 5 5 5 6 6 6 6
        3 3 3 3 4 4 4 4
        0 0 0 0 1 2 2 2
        """
    ),
}
for _block, _table in KING_BUCKET_LAYOUTS.items():
    assert BLOCK_SIZES[_block] == (1 + max(map(max, _table))) * BLOCK_SIZES["ALL"]


def king_bucket(file: int, rank: int, block: str = "KA") -> int:
    """``block``'s bucket for the perspective's own king on (file, rank) of its own board."""
    return KING_BUCKET_LAYOUTS[block][file][rank]


def _empty_board_attacks(kind: int, square: int) -> int:
    """Attack set (bitboard) of a piece of ``kind`` (role * 2 + c) on an empty perspective board.

    Squares are python-chess's (``rank * 8 + file``); "ours" (c = 0) moves up the board, as White.
    """
    role, c = divmod(kind, 2)
    if role == 0:
        return chess.BB_PAWN_ATTACKS[chess.WHITE if c == 0 else chess.BLACK][square]
    piece = chess.Piece(role + 1, chess.WHITE)
    board = chess.BaseBoard.empty()
    board.set_piece_at(square, piece)
    return int(board.attacks_mask(square))


def _threat_triples(kinds: int) -> npt.NDArray[np.int32]:
    """``[ka, s, t]`` -> triple index (or -1) for attacker kinds ``0..kinds - 1``."""
    table = np.full((12, 64, 64), -1, dtype=np.int32)
    count = 0
    for kind in range(kinds):
        for square in range(64):
            if kind < 2 and chess.square_rank(square) in (0, 7):
                continue  # no pawn stands on a first or last rank
            for target in chess.scan_forward(_empty_board_attacks(kind, square)):
                table[kind, square, target] = count
                count += 1
    return table


# Threat block -> ([ka, s, t] -> triple index or -1, number of attacked kinds K).
THREAT_TRIPLES: dict[str, tuple[npt.NDArray[np.int32], int]] = {
    "T": (_threat_triples(12), 12),
    "TNK": (_threat_triples(10), 10),
}
for _block, (_triples, _kinds) in THREAT_TRIPLES.items():
    assert BLOCK_SIZES[_block] == (int(_triples.max()) + 1) * _kinds


def threat_pairs(board: chess.Board) -> list[tuple[chess.Square, chess.Square]]:
    """Every (attacker square, attacked square) pair of ``board``, kings included."""
    return [
        (square, target)
        for square in chess.scan_forward(board.occupied)
        for target in chess.scan_forward(board.attacks_mask(square) & board.occupied)
    ]


def _threat_block(board: chess.Board, perspective: chess.Color, block: str) -> set[int]:
    triples, kinds = THREAT_TRIPLES[block]
    flip = 0 if perspective == chess.WHITE else 56  # rank -> 7 - rank

    def kind(square: chess.Square) -> int:
        piece = board.piece_at(square)
        assert piece is not None
        return (piece.piece_type - 1) * 2 + (0 if piece.color == perspective else 1)

    active = set()
    for square, target in threat_pairs(board):
        ka, kt = kind(square), kind(target)
        if ka >= kinds or kt >= kinds:  # TNK: a king on either side of the pair
            continue
        triple = int(triples[ka, square ^ flip, target ^ flip])
        assert triple >= 0
        active.add(triple * kinds + kt)
    return active


# (perspective file, rank) -> (role, c) grid; role/c of -1 means empty.
Grid = npt.NDArray[np.int8]  # (8 files, 8 ranks): role * 2 + c, or -1


@dataclass(frozen=True, kw_only=True)
class FeatureSet:
    """A sum of blocks, e.g. ``ALL+H+V``.

    Attributes:
        blocks: the block names in order.
    """

    blocks: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.blocks:
            raise LatentChessError("a feature set needs at least one block")
        for block in self.blocks:
            if block not in BLOCK_SIZES:
                raise LatentChessError(
                    f"unknown feature block {block!r}; expected one of {sorted(BLOCK_SIZES)}"
                )
        if len(set(self.blocks)) != len(self.blocks):
            raise LatentChessError(f"feature set {self.name!r} repeats a block")
        threats = [i for i, b in enumerate(self.blocks) if b in THREAT_BLOCKS]
        if len(threats) > 1 or (threats and threats[0] != len(self.blocks) - 1):
            raise LatentChessError(
                f"feature set {self.name!r}: a threat block ({'/'.join(THREAT_BLOCKS)}) must "
                "come last, and only one (e.g. 'KA9+TNK')"
            )

    @property
    def name(self) -> str:
        return "+".join(self.blocks)

    @property
    def size(self) -> int:
        """Number of features N (sum of the block sizes)."""
        return sum(BLOCK_SIZES[b] for b in self.blocks)

    @property
    def offsets(self) -> tuple[int, ...]:
        """Running offset of each block."""
        out, total = [], 0
        for block in self.blocks:
            out.append(total)
            total += BLOCK_SIZES[block]
        return tuple(out)

    @property
    def max_active(self) -> int:
        """An upper bound on the active features of one perspective (for padded storage)."""
        bound = {
            "ALL": 32,
            "KA": 32,
            "KA9": 32,
            "H": 32,
            "V": 32,
            "D1": 32,
            "D2": 32,
            "PH": 31,
            "PV": 31,
        }
        bound |= {"MB": 768, "MC": 12}
        # Every piece attacks at most 8 occupied squares (one per direction or knight jump).
        bound |= {"T": 32 * 8, "TNK": 30 * 8}
        return sum(bound[b] for b in self.blocks)

    @property
    def threats(self) -> str | None:
        """The threat block of the set (its last), or ``None``."""
        return self.blocks[-1] if self.blocks[-1] in THREAT_BLOCKS else None

    @property
    def index_dtype(self) -> type[np.int16] | type[np.int32]:
        """The integer type of stored feature indices: int16 up to 32,767 features, else int32."""
        return np.int16 if self.size <= np.iinfo(np.int16).max else np.int32

    @property
    def local(self) -> bool:
        """Whether every block's features depend only on the pieces' own squares."""
        return all(b in ("ALL", "H", "V", "D1", "D2") for b in self.blocks)


def parse_feature_set(text: str) -> FeatureSet:
    """``"ALL+H+V"`` -> :class:`FeatureSet` (case-insensitive, spaces allowed)."""
    parts = [p.strip().upper() for p in text.split("+")]
    if not text.strip() or any(not p for p in parts):
        raise LatentChessError(f"invalid feature set {text!r}; expected blocks joined by '+'")
    return FeatureSet(blocks=tuple(parts))


def _grid(board: chess.Board, perspective: chess.Color) -> Grid:
    """The perspective's view of the board: flipped and colour-swapped for Black."""
    grid = np.full((8, 8), -1, dtype=np.int8)
    for square, piece in board.piece_map().items():
        file, rank = chess.square_file(square), chess.square_rank(square)
        if perspective == chess.BLACK:
            rank = 7 - rank
        c = 0 if piece.color == perspective else 1
        grid[file, rank] = (piece.piece_type - 1) * 2 + c
    return grid


def _axis_block(grid: Grid, line_of: npt.NDArray[np.int64]) -> set[int]:
    files, ranks = np.nonzero(grid >= 0)
    return {int(line_of[f, r] * 12 + grid[f, r]) for f, r in zip(files, ranks, strict=True)}


_FILE = np.repeat(np.arange(8), 8).reshape(8, 8)  # [file, rank] -> file
_RANK = np.tile(np.arange(8), 8).reshape(8, 8)  # [file, rank] -> rank
_AXIS_LINES = {
    "ALL": _FILE * 8 + _RANK,
    "H": _FILE,
    "V": _RANK,
    "D1": _FILE + _RANK,
    "D2": _FILE + 7 - _RANK,
}


def _pairs(lines: Grid) -> set[int]:
    """Consecutive occupied squares of each row of ``lines`` (line, position along it)."""
    out = set()
    for line in range(8):
        kinds = [int(k) for k in lines[line] if k >= 0]
        for first, second in itertools.pairwise(kinds):
            r1, c1, r2, c2 = first >> 1, first & 1, second >> 1, second & 1
            out.add(line * 144 + r1 * 24 + c1 * 12 + r2 * 2 + c2)
    return out


def _destinations(board: chess.Board, color: chess.Color) -> dict[int, int]:
    """Union of legal destination squares (as a bitboard) per piece type, ``color`` to move."""
    probe = board.copy(stack=False)
    if probe.turn != color:
        probe.turn = color
        probe.ep_square = None  # the en-passant right belongs to the side that was to move
    out = {pt: 0 for pt in chess.PIECE_TYPES}
    for move in probe.generate_legal_moves():
        piece_type = probe.piece_type_at(move.from_square)
        assert piece_type is not None
        to_square = move.to_square
        if piece_type == chess.PAWN:
            distance = abs(move.to_square - move.from_square)
            if distance == 16:  # double push: not counted
                continue
        elif piece_type == chess.KING and probe.is_castling(move):  # Chess960: king takes rook
            file = 6 if probe.is_kingside_castling(move) else 2
            to_square = chess.square(file, chess.square_rank(move.from_square))
        out[piece_type] |= chess.BB_SQUARES[to_square]
    return out


def _mobility(board: chess.Board, perspective: chess.Color) -> dict[tuple[int, int], list[int]]:
    """(role, c) -> destination squares as ``file * 8 + rank`` in the perspective's board."""
    out = {}
    for color in chess.COLORS:
        c = 0 if color == perspective else 1
        for piece_type, bb in _destinations(board, color).items():
            squares = []
            for sq in chess.scan_forward(bb):
                file, rank = chess.square_file(sq), chess.square_rank(sq)
                if perspective == chess.BLACK:
                    rank = 7 - rank
                squares.append(file * 8 + rank)
            out[(piece_type - 1, c)] = squares
    return out


def block_features(board: chess.Board, perspective: chess.Color, block: str) -> list[int]:
    """Sorted active features of one block (indices local to the block)."""
    grid = _grid(board, perspective)
    if block in _AXIS_LINES:
        active = _axis_block(grid, _AXIS_LINES[block])
    elif block in KING_BUCKET_LAYOUTS:
        files, ranks = np.nonzero(grid == (chess.KING - 1) * 2)  # our king: role 5, c 0
        if len(files) != 1:
            raise LatentChessError(f"{block} needs one king per side: {board.fen()!r}")
        offset = king_bucket(int(files[0]), int(ranks[0]), block) * BLOCK_SIZES["ALL"]
        active = {offset + index for index in _axis_block(grid, _AXIS_LINES["ALL"])}
    elif block == "PH":
        active = _pairs(grid.T)  # rows = ranks, left (file a) to right
    elif block == "PV":
        active = _pairs(grid)  # rows = files, bottom (rank 1 of the perspective) to top
    elif block == "MB":
        mobility = _mobility(board, perspective)
        active = {sq * 12 + r * 2 + c for (r, c), sqs in mobility.items() for sq in sqs}
    elif block in THREAT_BLOCKS:
        active = _threat_block(board, perspective, block)
    elif block == "MC":
        mobility = _mobility(board, perspective)
        active = {
            MC_OFFSET[r] + c * (MC_CAPS[r] + 1) + min(len(sqs), MC_CAPS[r])
            for (r, c), sqs in mobility.items()
        }
    else:
        raise LatentChessError(f"unknown feature block {block!r}")
    return sorted(active)


def perspective_features(
    board: chess.Board, perspective: chess.Color, feature_set: FeatureSet
) -> npt.NDArray[np.int64]:
    """Sorted active feature indices of ``feature_set`` from ``perspective``'s view."""
    parts = [
        np.asarray(block_features(board, perspective, block), dtype=np.int64) + offset
        for block, offset in zip(feature_set.blocks, feature_set.offsets, strict=True)
    ]
    return np.concatenate(parts)


def position_features(
    board: chess.Board, feature_set: FeatureSet
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(White's perspective, Black's perspective) active features of ``board``."""
    return (
        perspective_features(board, chess.WHITE, feature_set),
        perspective_features(board, chess.BLACK, feature_set),
    )


def mirror_all_features(rows: npt.NDArray[np.integer]) -> npt.NDArray[np.int16]:
    """The other perspective's ALL features from one perspective's, for padded rows.

    ``rows`` is (..., width) of ALL indices, each row sorted with the padding value 768 last (a
    feature cache's layout). The other side's view of the same piece flips the rank and swaps
    ours and theirs, so its index is ``(file * 8 + 7 - rank) * 12 + role * 2 + 1 - c``; each row
    of the result is sorted again and the padding stays 768. Used where only one perspective is
    stored (``benchmarks/nnue_gpu_pack.sh`` packs White's, the device rebuilds Black's).
    """
    size = BLOCK_SIZES["ALL"]
    rows = np.asarray(rows)
    if rows.size and (rows.min() < 0 or rows.max() > size):
        raise LatentChessError(f"ALL feature indices must lie in 0..{size} (the padding)")
    index = np.arange(size)
    square, rest = index // 12, index % 12
    mirrored = (square // 8 * 8 + 7 - square % 8) * 12 + rest // 2 * 2 + 1 - rest % 2
    table = np.append(mirrored, size).astype(np.int16)
    return np.sort(table[rows], axis=-1)
