"""Stockfish's legacy ``.bin`` training-data format: 40-byte ``PackedSfenValue`` records.

One record per position, little-endian, no header, records back to back (so files concatenate:
``cat a.bin b.bin > ab.bin`` merges shards). The layout, as written by Stockfish's ``gensfen``
(tools branch) and read by nnue-pytorch's data loader::

    offset size type    field
    0      32   bytes   sfen: the position, a bit stream (below)
    32     2    int16   score: the search's score, side to move's view
    34     2    uint16  move: the search's best move (below)
    36     2    uint16  gamePly: ply of the position in its game (0 = the start position)
    38     1    int8    game_result: +1 side to move won, 0 draw, -1 side to move lost
    39     1    uint8   padding (0xFF, as nnue-pytorch's converter writes; ignored on reading)

The 256-bit position stream is written least significant bit first (bit ``k`` is bit ``k % 8`` of
byte ``k // 8``; an ``n``-bit field is written lowest bit first):

* 1 bit side to move (0 White, 1 Black); 6 bits White's king square; 6 bits Black's king square
  (squares 0 = a1 ... 63 = h8, as python-chess);
* the other 62 squares, rank 8 to rank 1, file a to h within a rank, kings' squares skipped: an
  empty square is the single bit ``0``; a piece is a 4-bit Huffman code (pawn ``0b0001``,
  knight ``0b0011``, bishop ``0b0101``, rook ``0b0111``, queen ``0b1001``) and 1 colour bit;
* 4 bits castling rights: White O-O, White O-O-O, Black O-O, Black O-O-O;
* 1 bit "en passant square follows", then 6 bits of it (written only when an en passant
  capture is legal, which is python-chess's FEN convention);
* 6 bits halfmove clock (low bits), 8 bits fullmove number (low), 8 bits fullmove number
  (high), 1 bit halfmove clock bit 6 (the last three are later, backwards-compatible additions);
* zero padding to 256 bits.

The move is Stockfish's 16-bit move: bits 0-5 the destination, 6-11 the origin, 12-13 the
promotion piece minus knight, 14-15 the kind (0 normal, 1 promotion, 2 en passant, 3 castling).
Castling is written king-takes-rook (``e1h1``), as Stockfish moves are; the reader gives
python-chess's ``e1g1``. Standard chess only (no Chess960 castling).

The score is ours in centipawns (the ``ab`` engine's UCI score); a mate is written as
Stockfish writes one, ``±(32000 - plies to mate)``, so ``|score| > 32000 - 256`` means a mate.
Stockfish's own files hold its internal units instead (about 2 per centipawn in recent
versions); nothing in this module rescales.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import chess

from latentchess.errors import DataFormatError

__all__ = [
    "RECORD_SIZE",
    "VALUE_MATE",
    "MATE_BOUND",
    "PackedRecord",
    "encode_score",
    "decode_score",
    "pack_position",
    "unpack_position",
    "encode_move",
    "decode_move",
    "pack_record",
    "unpack_record",
    "read_records",
    "count_records",
    "bin_files",
    "write_records",
]

RECORD_SIZE = 40
"""Bytes per record."""

VALUE_MATE = 32000
"""Stockfish's mate value: a mate in ``p`` plies scores ``VALUE_MATE - p``."""

MATE_BOUND = VALUE_MATE - 256
"""Scores beyond ``±MATE_BOUND`` are mates (Stockfish's ``MAX_PLY`` is below 256)."""

_TAIL = struct.Struct("<hHHbB")  # score, move, gamePly, game_result, padding
_PADDING = 0xFF

# Huffman codes of the non-king pieces, indexed by python-chess piece type, and back.
_CODES = {chess.PAWN: 0b0001, chess.KNIGHT: 0b0011, chess.BISHOP: 0b0101, chess.ROOK: 0b0111,
          chess.QUEEN: 0b1001}  # fmt: skip
_TYPES = {code: piece_type for piece_type, code in _CODES.items()}
_FEN_SYMBOLS = {(t, c): chess.Piece(t, c).symbol() for t in chess.PIECE_TYPES for c in chess.COLORS}
# Squares in stream order: rank 8 to 1, file a to h.
_STREAM_SQUARES = [chess.square(f, r) for r in range(7, -1, -1) for f in range(8)]
_CASTLING = (chess.BB_H1, chess.BB_A1, chess.BB_H8, chess.BB_A8)  # rook squares, stream order
_CASTLING_FEN = "KQkq"


@dataclass(frozen=True, kw_only=True)
class PackedRecord:
    """One decoded record.

    Attributes:
        fen: the position (python-chess's FEN: en passant square only when a capture is legal).
        score: the raw score, side to move's view: centipawns, or ``±(32000 - plies)`` for mates.
        move: the best move (python-chess conventions: castling ``e1g1``).
        ply: ``gamePly``, the position's ply within its game.
        result: +1 side to move won, 0 draw, -1 lost.
    """

    fen: str
    score: int
    move: chess.Move
    ply: int
    result: int

    @property
    def score_cp(self) -> int | None:
        """Centipawns from the side to move's view; ``None`` for a mate score."""
        return decode_score(self.score)[0]

    @property
    def mate(self) -> int | None:
        """Moves to mate (UCI convention: positive when the side to move mates), else ``None``."""
        return decode_score(self.score)[1]

    def board(self) -> chess.Board:
        """The position as a python-chess board."""
        return chess.Board(self.fen)


def encode_score(cp: int | None, mate: int | None = None) -> int:
    """A search score (centipawns, or UCI mate in moves) as the record's int16 score.

    Centipawns are clamped to ``±(MATE_BOUND - 1)``; mate in ``n`` moves (``n > 0``) is
    ``32000 - (2n - 1)`` plies, being mated in ``n`` (``n < 0``; ``0``: checkmated) is
    ``-(32000 - 2|n|)``.
    """
    if mate is not None:
        if mate > 0:
            return VALUE_MATE - min(2 * mate - 1, 255)
        return -(VALUE_MATE - min(-2 * mate, 255))
    if cp is None:
        raise ValueError("a score needs centipawns or a mate")
    return max(-(MATE_BOUND - 1), min(MATE_BOUND - 1, int(cp)))


def decode_score(score: int) -> tuple[int | None, int | None]:
    """``(centipawns, None)`` or ``(None, mate in moves)`` of a record's score."""
    if score > MATE_BOUND:
        return None, (VALUE_MATE - score + 1) // 2
    if score < -MATE_BOUND:
        return None, -((VALUE_MATE + score) // 2)
    return score, None


def pack_position(board: chess.Board) -> bytes:
    """The 32-byte packed position of ``board`` (standard chess, one king a side).

    Raises:
        ValueError: a board the format cannot hold (no or several kings of a colour, Chess960
            castling rights, a halfmove clock above 127, a fullmove number above 65535).
    """
    kings = [board.pieces(chess.KING, color) for color in (chess.WHITE, chess.BLACK)]
    if any(len(k) != 1 for k in kings):
        raise ValueError(f"the format needs one king a side: {board.fen()!r}")
    rights = board.clean_castling_rights()  # as the FEN says: only rights with king and rook
    if rights & ~chess.BB_CORNERS or board.chess960:
        raise ValueError(f"only standard castling rights fit the format: {board.fen()!r}")
    if not 0 <= board.halfmove_clock <= 127 or not 1 <= board.fullmove_number <= 65535:
        raise ValueError(f"halfmove clock or fullmove number out of range: {board.fen()!r}")
    bits = 0 if board.turn == chess.WHITE else 1
    bits |= kings[0].pop() << 1 | kings[1].pop() << 7
    cursor = 13
    for square in _STREAM_SQUARES:
        piece = board.piece_at(square)
        if piece is None:
            cursor += 1  # the single bit 0
        elif piece.piece_type != chess.KING:
            code = _CODES[piece.piece_type] | (0 if piece.color == chess.WHITE else 1) << 4
            bits |= code << cursor
            cursor += 5
    for rook in _CASTLING:
        if rights & rook:
            bits |= 1 << cursor
        cursor += 1
    if board.has_legal_en_passant():
        assert board.ep_square is not None
        bits |= (1 | board.ep_square << 1) << cursor
        cursor += 7
    else:
        cursor += 1
    clock, fullmove = board.halfmove_clock, board.fullmove_number
    bits |= (clock & 63) << cursor | (fullmove & 255) << (cursor + 6)
    bits |= (fullmove >> 8) << (cursor + 14) | (clock >> 6) << (cursor + 22)
    cursor += 23
    assert cursor <= 256, cursor  # at most 30 non-king pieces: 229 bits
    return bits.to_bytes(32, "little")


def unpack_position(data: bytes) -> str:
    """The FEN of a 32-byte packed position.

    Raises:
        ValueError: a stream that is not a position (a bad piece code, the stream running past
            256 bits, kings on one square, more than 32 pieces, pawns on a back rank, an en
            passant square off the third or sixth rank).
    """
    if len(data) != 32:
        raise ValueError(f"a packed position has 32 bytes, got {len(data)}")
    bits = int.from_bytes(data, "little")
    turn = bits & 1
    white_king, black_king = (bits >> 1) & 63, (bits >> 7) & 63
    if white_king == black_king:
        raise ValueError(f"both kings on {chess.square_name(white_king)}")
    board: list[str | None] = [None] * 64
    board[white_king], board[black_king] = "K", "k"
    cursor, pieces = 13, 2
    for square in _STREAM_SQUARES:
        if square in (white_king, black_king):
            continue
        if not (bits >> cursor) & 1:
            cursor += 1
            continue
        code = (bits >> cursor) & 15
        piece_type = _TYPES.get(code)
        if piece_type is None:
            raise ValueError(f"bad piece code {code:#06b} at bit {cursor}")
        color = chess.BLACK if (bits >> (cursor + 4)) & 1 else chess.WHITE
        if piece_type == chess.PAWN and chess.square_rank(square) in (0, 7):
            raise ValueError(f"a pawn on {chess.square_name(square)}")
        board[square] = _FEN_SYMBOLS[piece_type, color]
        cursor += 5
        pieces += 1
    if pieces > 32:
        raise ValueError(f"{pieces} pieces on the board")
    if cursor > 256 - 21:  # castling 4, en passant flag 1, clock and fullmove 16
        raise ValueError(f"the board runs to bit {cursor} of 256")
    castling = "".join(_CASTLING_FEN[i] for i in range(4) if (bits >> (cursor + i)) & 1) or "-"
    cursor += 4
    ep = "-"
    if (bits >> cursor) & 1:
        ep_square = (bits >> (cursor + 1)) & 63
        if chess.square_rank(ep_square) not in (2, 5):
            raise ValueError(f"en passant square {chess.square_name(ep_square)}")
        ep = chess.square_name(ep_square)
        cursor += 7
    else:
        cursor += 1
    clock = (bits >> cursor) & 63
    fullmove = (bits >> (cursor + 6)) & 255 | ((bits >> (cursor + 14)) & 255) << 8
    clock |= ((bits >> (cursor + 22)) & 1) << 6
    rows = []
    for rank in range(7, -1, -1):
        row, empty = "", 0
        for file in range(8):
            symbol = board[rank * 8 + file]
            if symbol is None:
                empty += 1
                continue
            row += (str(empty) if empty else "") + symbol
            empty = 0
        rows.append(row + (str(empty) if empty else ""))
    side = "b" if turn else "w"
    return f"{'/'.join(rows)} {side} {castling} {ep} {clock} {max(fullmove, 1)}"


def encode_move(board: chess.Board, move: chess.Move) -> int:
    """Stockfish's 16-bit encoding of ``move`` (legal in ``board``)."""
    kind, promotion, to_square = 0, 0, move.to_square
    if move.promotion is not None:
        kind, promotion = 1, move.promotion - chess.KNIGHT
    elif board.is_en_passant(move):
        kind = 2
    elif board.is_castling(move):
        kind = 3
        rook_file = 7 if board.is_kingside_castling(move) else 0
        to_square = chess.square(rook_file, chess.square_rank(move.from_square))
    return to_square | move.from_square << 6 | promotion << 12 | kind << 14


def decode_move(bits: int) -> chess.Move:
    """The python-chess move of Stockfish's 16-bit move (castling as ``e1g1``)."""
    to_square, from_square = bits & 63, (bits >> 6) & 63
    kind = bits >> 14
    if kind == 1:
        return chess.Move(from_square, to_square, chess.KNIGHT + ((bits >> 12) & 3))
    if kind == 3:  # king takes rook -> the king's destination
        file = 6 if chess.square_file(to_square) > chess.square_file(from_square) else 2
        to_square = chess.square(file, chess.square_rank(from_square))
    return chess.Move(from_square, to_square)


def pack_record(board: chess.Board, score: int, move: chess.Move, result: int) -> bytes:
    """One 40-byte record: ``board``'s position, a raw score (see :func:`encode_score`), its
    best move, and the game's result from the side to move's view (+1, 0, -1).

    ``gamePly`` is ``board.ply()`` (from the fullmove number and the side to move).
    """
    if result not in (-1, 0, 1):
        raise ValueError(f"result must be -1, 0 or 1, got {result!r}")
    if not -VALUE_MATE <= score <= VALUE_MATE:
        raise ValueError(f"score {score!r} outside ±{VALUE_MATE}")
    tail = _TAIL.pack(score, encode_move(board, move), min(board.ply(), 65535), result, _PADDING)
    return pack_position(board) + tail


def unpack_record(data: bytes) -> PackedRecord:
    """Decode one 40-byte record.

    Raises:
        ValueError: a record that is not one (see :func:`unpack_position`; a result outside
            -1..1).
    """
    if len(data) != RECORD_SIZE:
        raise ValueError(f"a record has {RECORD_SIZE} bytes, got {len(data)}")
    fen = unpack_position(data[:32])
    score, move_bits, ply, result, _ = _TAIL.unpack_from(data, 32)
    if result not in (-1, 0, 1):
        raise ValueError(f"game result {result!r} (expected -1, 0 or 1)")
    return PackedRecord(fen=fen, score=score, move=decode_move(move_bits), ply=ply, result=result)


def bin_files(path: str | Path) -> list[Path]:
    """``path`` itself, or the ``*.bin`` files of a directory in name order."""
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix == ".bin" and p.is_file())
    return [path]


def count_records(path: str | Path) -> int:
    """Complete records in a ``.bin`` file (a truncated tail is not counted)."""
    return Path(path).stat().st_size // RECORD_SIZE


def read_records(
    path: str | Path, *, check_moves: bool = False, chunk_records: int = 4096
) -> Iterator[tuple[int, PackedRecord]]:
    """Stream ``(record number, record)`` of a ``.bin`` file or a directory of them (numbers
    count from 0 within each file).

    Args:
        path: a ``.bin`` file, or a directory of them.
        check_moves: also check that each best move is legal in its position (python-chess;
            slower).
        chunk_records: records read at a time.

    Raises:
        DataFormatError: naming the file, the record and its byte offset: a record that does not
            decode, an illegal move, or a file whose size is not a multiple of 40 bytes (a
            truncated last record; reported once the complete ones have been read).
    """
    for file in bin_files(path):
        yield from _read_file(file, check_moves, chunk_records)


def _read_file(
    file: Path, check_moves: bool, chunk_records: int
) -> Iterator[tuple[int, PackedRecord]]:
    try:
        handle = open(file, "rb")  # noqa: SIM115 (closed by the with below)
    except OSError as error:
        raise DataFormatError(f"cannot read: {error.strerror}", path=file) from error
    with handle:
        index = 0
        while True:
            chunk = handle.read(RECORD_SIZE * chunk_records)
            whole = len(chunk) - len(chunk) % RECORD_SIZE
            for start in range(0, whole, RECORD_SIZE):
                data = chunk[start : start + RECORD_SIZE]
                try:
                    record = unpack_record(data)
                    if check_moves and not record.board().is_legal(record.move):
                        raise ValueError(f"illegal move {record.move.uci()!r} in {record.fen!r}")
                except ValueError as error:
                    raise DataFormatError(
                        f"record {index}: {error}", path=file, offset=index * RECORD_SIZE
                    ) from error
                yield index, record
                index += 1
            if whole != len(chunk):
                raise DataFormatError(
                    f"record {index} is truncated: {len(chunk) - whole} of {RECORD_SIZE} bytes "
                    "(the file's size is not a multiple of 40)",
                    path=file,
                    offset=index * RECORD_SIZE,
                )
            if len(chunk) < RECORD_SIZE * chunk_records:
                return


def write_records(path: str | Path, records: Iterable[bytes]) -> int:
    """Append packed records to ``path``, flushed and synced; returns the count written."""
    data = b"".join(records)
    if len(data) % RECORD_SIZE:
        raise ValueError(f"{len(data)} bytes is not a whole number of records")
    with open(path, "ab") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return len(data) // RECORD_SIZE
