"""Batch hashing and tokenizing of python-chess boards, without FEN strings.

The search hashes every position it generates (thousands per move) and tokenizes every position it
embeds. Going through ``board.fen()`` costs ~100 µs a board in pure Python; here the per-board
Python work is reading twelve bitboards and a few flags, and the per-square work is done in numpy
for the whole batch at once.

* :func:`zobrist_hashes` equals :func:`chess.polyglot.zobrist_hash` board by board (Polyglot keys:
  pieces, castling rights, an en-passant file only when a pawn could capture, side to move; no
  clocks).
* :func:`cache_keys` extends that hash by the halfmove clock and fullmove number as the tokens
  write them (clamped to 999): a key for everything the model reads, so a score cache never hands
  a position the score of the same placement under other clocks.
* :func:`tokenize_boards` equals :func:`latentchess.encoding.tokenize_batch` on the same boards
  (en-passant square only when a legal capture exists, as in ``board.fen()``; clocks clamped to
  999).

Both are tested against the reference implementations on random games.
"""

from __future__ import annotations

from collections.abc import Sequence

import chess
import chess.polyglot
import numpy as np
import numpy.typing as npt

from latentchess.encoding import SEQUENCE_LENGTH, VOCAB

__all__ = ["bitboards", "zobrist_hashes", "cache_keys", "clock_cache_keys", "tokenize_boards"]

# Polyglot piece index: (piece_type - 1) * 2 + (1 for White, 0 for Black).
_PIECES = [(piece_type, color) for piece_type in chess.PIECE_TYPES for color in (False, True)]
_RANDOM = chess.polyglot.POLYGLOT_RANDOM_ARRAY
_ZOBRIST_PIECES = np.array(_RANDOM[:768], dtype=np.uint64).reshape(12, 64)  # (piece, square)
_CASTLING_KEYS = ((chess.BB_H1, _RANDOM[768]), (chess.BB_A1, _RANDOM[769]),
                  (chess.BB_H8, _RANDOM[770]), (chess.BB_A8, _RANDOM[771]))  # fmt: skip
_TURN_KEY = _RANDOM[780]
_CASTLING_SQUARES = (chess.BB_H1, chess.BB_A1, chess.BB_H8, chess.BB_A8)  # K, Q, k, q


def _byte_keys() -> npt.NDArray[np.uint64]:
    """``(12, 8, 256)``: XOR of the square keys of piece ``p`` for each set bit of byte ``i``."""
    table = np.zeros((12, 8, 256), dtype=np.uint64)
    for bit in range(8):
        has_bit = (np.arange(256) >> bit) & 1 == 1  # (256,)
        square_keys = _ZOBRIST_PIECES[:, bit::8]  # (12, 8): square 8 * i + bit
        table ^= np.where(has_bit[None, None, :], square_keys[:, :, None], np.uint64(0))
    return table


# Hashing looks up 12 x 8 bytes per board instead of XOR-ing 768 square keys.
_BYTE_KEYS = _byte_keys()
_PIECE_INDEX = np.arange(12).reshape(1, 12, 1)
_BYTE_INDEX = np.arange(8).reshape(1, 1, 8)

_INDEX = {char: index for index, char in enumerate(VOCAB)}
_DOT = _INDEX["."]
# Token of each square content: 0 = empty, 1..12 = the polyglot piece order above.
_SQUARE_TOKENS = np.array(
    [_DOT] + [_INDEX[chess.Piece(pt, color).symbol()] for pt, color in _PIECES], dtype=np.uint8
)
# Token position k (0..63, FEN order a8..h8, a7..h7, ...) shows board square k ^ 56.
_FEN_ORDER = np.arange(64) ^ 56
_PIECE_NUMBERS = np.arange(1, 13, dtype=np.uint8).reshape(1, 12, 1)
# Zobrist-style keys of the clock values the tokens can show (0..999 each), fixed by the seed so
# that keys are the same in every process.
_CLOCK_KEYS = np.random.default_rng(20_251_123).integers(
    0, np.iinfo(np.uint64).max, size=(2, 1000), dtype=np.uint64, endpoint=True
)  # (halfmove | fullmove, value)
_TAIL_CACHE: dict[tuple[bool, int, int | None, int, int], npt.NDArray[np.uint8]] = {}


def bitboards(boards: Sequence[chess.Board]) -> npt.NDArray[np.uint64]:
    """The twelve piece bitboards of each board, in Polyglot piece order: ``(N, 12)`` uint64."""
    rows = []
    for board in boards:
        black, white = board.occupied_co
        pawns, knights, bishops = board.pawns, board.knights, board.bishops
        rooks, queens, kings = board.rooks, board.queens, board.kings
        rows.append(
            (
                pawns & black, pawns & white, knights & black, knights & white,
                bishops & black, bishops & white, rooks & black, rooks & white,
                queens & black, queens & white, kings & black, kings & white,
            )
        )  # fmt: skip
    return np.array(rows, dtype=np.uint64).reshape(len(rows), 12)


def _square_bits(boards_bb: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
    """``(N, 12)`` bitboards -> ``(N, 12, 64)`` occupancy; index ``s`` is square ``s`` (a1 = 0)."""
    n = boards_bb.shape[0]
    as_bytes = boards_bb.astype("<u8").view(np.uint8).reshape(n, 12, 8)  # (N, 12, 8)
    return np.unpackbits(as_bytes, axis=2, bitorder="little").view(np.bool_)  # (N, 12, 64)


def _flag_key(board: chess.Board) -> int:
    """Polyglot key of everything but the pieces: castling, en-passant file, side to move."""
    key = _TURN_KEY if board.turn else 0
    if board.castling_rights:
        rights = board.clean_castling_rights()
        for mask, value in _CASTLING_KEYS:
            if rights & mask:
                key ^= value
    ep = board.ep_square
    if ep:
        # As chess.polyglot: only when a pawn of the side to move stands ready to capture.
        mask = (
            chess.shift_down(chess.BB_SQUARES[ep])
            if board.turn
            else chess.shift_up(chess.BB_SQUARES[ep])
        )
        mask = chess.shift_left(mask) | chess.shift_right(mask)
        if mask & board.pawns & board.occupied_co[board.turn]:
            key ^= _RANDOM[772 + chess.square_file(ep)]
    return key


def zobrist_hashes(
    boards: Sequence[chess.Board], bb: npt.NDArray[np.uint64] | None = None
) -> npt.NDArray[np.uint64]:
    """Polyglot Zobrist hash of each board, ``(N,)`` uint64, equal to ``chess.polyglot``'s.

    Args:
        boards: the positions.
        bb: their :func:`bitboards`, if already computed.
    """
    if bb is None:
        bb = bitboards(boards)
    if len(boards) == 0:
        return np.zeros(0, dtype=np.uint64)
    as_bytes = bb.astype("<u8").view(np.uint8).reshape(len(boards), 12, 8)  # (N, 12, 8)
    piece_keys = _BYTE_KEYS[_PIECE_INDEX, _BYTE_INDEX, as_bytes]  # (N, 12, 8)
    keys = np.bitwise_xor.reduce(piece_keys.reshape(len(boards), -1), axis=1)  # (N,)
    flags = np.fromiter((_flag_key(b) for b in boards), dtype=np.uint64, count=len(boards))
    return keys ^ flags


def cache_keys(
    boards: Sequence[chess.Board], hashes: npt.NDArray[np.uint64] | None = None
) -> npt.NDArray[np.uint64]:
    """Key of everything the tokens show: Zobrist hash and both clocks, ``(N,)`` uint64.

    Two boards with equal keys have equal :func:`tokenize_boards` rows (up to a 64-bit
    collision); the converse can fail only for an en-passant square that Polyglot hashes but the
    tokens omit (a capture that exists but is illegal), which costs a cache miss, never a wrong hit.

    Args:
        boards: the positions.
        hashes: their :func:`zobrist_hashes`, if already computed.
    """
    if hashes is None:
        hashes = zobrist_hashes(boards)
    return clock_cache_keys(
        hashes, [b.halfmove_clock for b in boards], [b.fullmove_number for b in boards]
    )


def clock_cache_keys(
    hashes: Sequence[int] | npt.NDArray[np.uint64],
    halfmove_clocks: Sequence[int],
    fullmove_numbers: Sequence[int],
) -> npt.NDArray[np.uint64]:
    """:func:`cache_keys` from Zobrist hashes and clocks, without boards, ``(N,)`` uint64.

    For searches that already have each child's hash and clocks (the native core's expansion).
    """
    n = len(halfmove_clocks)
    # Clamped in Python, as the tokens are: a FEN may carry clocks beyond any fixed-width integer.
    halfmove = np.fromiter((min(h, 999) for h in halfmove_clocks), dtype=np.int64, count=n)
    fullmove = np.fromiter((min(max(f, 1), 999) for f in fullmove_numbers), dtype=np.int64, count=n)
    keys = np.asarray(hashes, dtype=np.uint64).reshape(n)
    return keys ^ _CLOCK_KEYS[0, halfmove] ^ _CLOCK_KEYS[1, fullmove]


def _tail(board: chess.Board) -> npt.NDArray[np.uint8]:
    """Tokens 0 and 65..76: side to move, castling, en passant, halfmove clock, fullmove number."""
    ep = board.ep_square
    if ep is not None and not board.has_legal_en_passant():
        ep = None
    rights = board.clean_castling_rights() if board.castling_rights else 0
    halfmove = min(board.halfmove_clock, 999)
    fullmove = min(max(board.fullmove_number, 1), 999)
    cache_key = (board.turn, rights, ep, halfmove, fullmove)
    tail = _TAIL_CACHE.get(cache_key)
    if tail is None:
        castling = "".join(
            char for char, mask in zip("KQkq", _CASTLING_SQUARES, strict=True) if rights & mask
        )
        text = (
            ("w" if board.turn else "b")
            + castling.ljust(4, ".")
            + ("" if ep is None else chess.SQUARE_NAMES[ep]).ljust(2, ".")
            + str(halfmove).ljust(3, ".")
            + str(fullmove).ljust(3, ".")
        )
        tail = np.array([_INDEX[c] for c in text], dtype=np.uint8)
        if len(_TAIL_CACHE) > 100_000:  # bounded: clocks make the key space large
            _TAIL_CACHE.clear()
        _TAIL_CACHE[cache_key] = tail
    return tail


def tokenize_boards(
    boards: Sequence[chess.Board], bb: npt.NDArray[np.uint64] | None = None
) -> npt.NDArray[np.uint8]:
    """Tokenize boards into ``(N, 77)`` uint8, equal to ``tokenize_batch(boards)``.

    Castling rights are written as ``KQkq`` letters (standard chess; Chess960 boards are not
    supported by the tokenizer either).

    Args:
        boards: the positions.
        bb: their :func:`bitboards`, if already computed.
    """
    n = len(boards)
    tokens = np.empty((n, SEQUENCE_LENGTH), dtype=np.uint8)
    if n == 0:
        return tokens
    if bb is None:
        bb = bitboards(boards)
    bits = _square_bits(bb)  # (N, 12, 64)
    content = (bits * _PIECE_NUMBERS).sum(axis=1, dtype=np.uint8)  # (N, 64): 0 empty, 1..12
    tokens[:, 1:65] = _SQUARE_TOKENS[content[:, _FEN_ORDER]]
    tails = np.stack([_tail(b) for b in boards])  # (N, 13)
    tokens[:, 0] = tails[:, 0]
    tokens[:, 65:] = tails[:, 1:]
    return tokens
