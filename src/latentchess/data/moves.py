"""Move-prediction data for Chessformer: rated human games (PGN) and engine-labelled CSVs.

Both become one :class:`MoveData` of compact numpy arrays (saved as one ``.npz``): every board of
every game as 64 absolute piece codes (:func:`latentchess.squares.board_pieces`), and per position
the row of its board and of its game's first board (history rows are ``max(row - j, first)``),
the move played (policy index), the legal moves (ragged), side information, both players'
ratings, the mover's clock (a PGN ``[%clk]`` comment, when the game has them), and the value
target (the game's result from the mover's view, or an engine win probability).
Batches are built from these by :func:`batch_features`.

Splits are deterministic hashes: a game is held out when its hash (of its ``Site`` header, or of
its players, date and moves) falls below ``holdout_fraction``; a player is held out when the hash
of their name does. Training uses games held out by neither rule, so one run yields a by-game
and a by-player held-out set.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import re
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import chess
import chess.pgn
import numpy as np
import numpy.typing as npt

from latentchess.data.problems import ProblemLog
from latentchess.errors import DataFormatError
from latentchess.squares import SIDE_FEATURES, board_pieces, move_index
from latentchess.textfiles import open_text

__all__ = [
    "MoveData",
    "read_pgn_moves",
    "read_csv_moves",
    "read_csv_moves_parallel",
    "concatenate_moves",
    "batch_features",
    "hash_fraction",
    "TIME_CONTROL_BANDS",
    "time_control_band",
    "clock_band",
]

_FIELDS = (
    "pieces",
    "board_row",
    "first_row",
    "white",
    "move",
    "legal",
    "legal_offsets",
    "self_elo",
    "oppo_elo",
    "wdl",
    "score",
    "castling",
    "ep",
    "rule50",
    "repetition",
    "game",
    "mover",
    "game_heldout",
    "clock",
    "speed",
)
# Fields added later, with the value files without them load as: (dtype, fill).
_OPTIONAL: dict[str, tuple[Any, float]] = {"clock": (np.float32, np.nan), "speed": (np.int8, 0)}

TIME_CONTROL_BANDS = ("unknown", "bullet", "blitz", "rapid", "classical")
"""The time-control bands a position's ``speed`` indexes (0: unknown, e.g. engine data)."""
_BAND_OF_SPEED = {
    "ultrabullet": 1,
    "bullet": 1,
    "blitz": 2,
    "rapid": 3,
    "classical": 4,
    "correspondence": 4,
}


_TIME_CONTROL = re.compile(r"^(\d+)\+(\d+)$")


def lichess_speed(time_control: str) -> str | None:
    """Lichess's speed class of a ``TimeControl`` header (``"180+2"`` -> ``"blitz"``).

    Lichess classes a game by its estimated duration, base + 40 x increment seconds: under 30
    ultrabullet, under 180 bullet, under 480 blitz, under 1500 rapid, else classical; ``"-"`` is
    correspondence. Anything else (missing, ``"?"``) gives None.
    """
    if time_control.strip() == "-":
        return "correspondence"
    match = _TIME_CONTROL.match(time_control.strip())
    if match is None:
        return None
    return _speed_of_seconds(int(match.group(1)) + 40 * int(match.group(2)))


def _speed_of_seconds(seconds: float) -> str:
    for limit, name in ((30, "ultrabullet"), (180, "bullet"), (480, "blitz"), (1500, "rapid")):
        if seconds < limit:
            return name
    return "classical"


def time_control_band(time_control: str) -> int:
    """The index in :data:`TIME_CONTROL_BANDS` of a PGN ``TimeControl`` tag (Lichess's speed
    classes; ultrabullet counts as bullet, correspondence as classical; missing: 0)."""
    return _BAND_OF_SPEED.get(lichess_speed(time_control) or "", 0)


def clock_band(base_s: float, increment_s: float = 0.0) -> int:
    """The index in :data:`TIME_CONTROL_BANDS` of a game of ``base_s`` seconds a side plus
    ``increment_s`` a move, by the rule of :func:`lichess_speed` (``clock_band(180, 2)`` is
    blitz: 180 + 40 x 2 = 260 seconds)."""
    return _BAND_OF_SPEED[_speed_of_seconds(max(base_s, 0.0) + 40 * max(increment_s, 0.0))]


@dataclass(frozen=True, kw_only=True)
class MoveData:
    """Positions with the move played. Arrays are indexed by position unless noted.

    Attributes:
        pieces: (boards, 64) int8 absolute piece codes of every board.
        board_row: int64 row of the position's board in ``pieces``.
        first_row: int64 row of its game's first board (history stops there).
        white: bool, White to move.
        move: int16 policy index of the move played (mover's frame).
        legal: int16 policy indices of the legal moves, all positions concatenated.
        legal_offsets: (positions + 1,) int64 slices of ``legal``.
        self_elo, oppo_elo: int16 ratings of the mover and the opponent.
        wdl: int8 result from the mover's view (0 win, 1 draw, 2 loss), -1 when unknown.
        score: float32 expected score of the mover (1, 0.5, 0 from the result, or the engine's
            win probability).
        castling: uint8 bits (mover K, mover Q, opponent K, opponent Q).
        ep: int8 en-passant target square in the mover's frame, -1 when none.
        rule50: int16 halfmove clock.
        repetition: bool, the position occurred before in the game.
        game: int32 game number in the file.
        mover: int32 index of the mover in ``players`` (-1 unknown).
        game_heldout: bool, the game is in the by-game held-out set.
        clock: float32 seconds left on the mover's clock after the move played (its PGN
            ``[%clk]`` comment, as Lichess exports it), NaN when the game has no clocks.
        speed: int8 time-control band of the game (:data:`TIME_CONTROL_BANDS`; 0 unknown).
        players: player names (``mover`` indexes them).
    """

    pieces: npt.NDArray[np.int8]
    board_row: npt.NDArray[np.int64]
    first_row: npt.NDArray[np.int64]
    white: npt.NDArray[np.bool_]
    move: npt.NDArray[np.int16]
    legal: npt.NDArray[np.int16]
    legal_offsets: npt.NDArray[np.int64]
    self_elo: npt.NDArray[np.int16]
    oppo_elo: npt.NDArray[np.int16]
    wdl: npt.NDArray[np.int8]
    score: npt.NDArray[np.float32]
    castling: npt.NDArray[np.uint8]
    ep: npt.NDArray[np.int8]
    rule50: npt.NDArray[np.int16]
    repetition: npt.NDArray[np.bool_]
    game: npt.NDArray[np.int32]
    mover: npt.NDArray[np.int32]
    game_heldout: npt.NDArray[np.bool_]
    clock: npt.NDArray[np.float32]
    speed: npt.NDArray[np.int8]
    players: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.move)

    def save(self, path: Path, *, compressed: bool = False) -> None:
        """Write all arrays to one ``.npz`` (atomically; ``compressed``: about 8x smaller)."""
        tmp = path.with_name(path.name + ".tmp.npz")
        arrays = {name: getattr(self, name) for name in _FIELDS}
        write = np.savez_compressed if compressed else np.savez
        write(tmp, players=np.array(self.players, dtype=object).astype(str), **arrays)
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> MoveData:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in _FIELDS if name in data or name not in _OPTIONAL}
            for name, (dtype, fill) in _OPTIONAL.items():
                if name not in arrays:
                    arrays[name] = np.full(len(arrays["move"]), fill, dtype=dtype)
            return cls(players=tuple(str(p) for p in data["players"]), **arrays)

    def player_heldout(self, fraction: float) -> npt.NDArray[np.bool_]:
        """(positions,) True where the mover is a held-out player (name hash < ``fraction``)."""
        held = np.array([hash_fraction("player:" + p) < fraction for p in self.players] + [False])
        return held[self.mover]  # mover -1 picks the trailing False

    def legal_mask(self, rows: npt.NDArray[np.int64], size: int) -> npt.NDArray[np.bool_]:
        """(len(rows), size) legal-move masks."""
        mask = np.zeros((len(rows), size), dtype=bool)
        starts, ends = self.legal_offsets[rows], self.legal_offsets[rows + 1]
        lengths = ends - starts
        flat = np.concatenate([self.legal[s:e] for s, e in zip(starts, ends, strict=True)])
        mask[np.repeat(np.arange(len(rows)), lengths), flat] = True
        return mask


def hash_fraction(text: str) -> float:
    """A deterministic number in [0, 1) from ``text`` (blake2b)."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


class _Builder:
    def __init__(self) -> None:
        self.lists: dict[str, list] = {name: [] for name in _FIELDS if name != "legal_offsets"}
        self.lists["legal"] = []
        self.legal_lengths: list[int] = []
        self.boards = 0
        self.player_ids: dict[str, int] = {}

    def player(self, name: str) -> int:
        return self.player_ids.setdefault(name, len(self.player_ids))

    def add_game(
        self,
        board: chess.Board,
        moves: list[chess.Move],
        *,
        elos: tuple[int, int],
        result: float | None,
        game: int,
        names: tuple[str | None, str | None],
        heldout: bool,
        scores: list[float] | None = None,
        clocks: list[float | None] | None = None,
        speed: int = 0,
    ) -> None:
        """Append every position of a game (``scores``: per-position White win probabilities;
        ``clocks``: the mover's seconds left after each move, None where unknown; ``speed``: the
        game's time-control band)."""
        first = self.boards
        seen: set[object] = set()
        ids = [self.player(n) if n else -1 for n in names]
        lists = self.lists
        for ply, move in enumerate(moves):
            white = board.turn == chess.WHITE
            lists["pieces"].append(board_pieces(board))
            key = board._transposition_key()
            us, them = board.turn, not board.turn
            bits = (
                board.has_kingside_castling_rights(us)
                | board.has_queenside_castling_rights(us) << 1
                | board.has_kingside_castling_rights(them) << 2
                | board.has_queenside_castling_rights(them) << 3
            )
            ep = -1
            if board.ep_square is not None and board.has_legal_en_passant():
                ep = board.ep_square if white else board.ep_square ^ 56
            legal = [move_index(m, board.turn) for m in board.legal_moves]
            lists["legal"].extend(legal)
            self.legal_lengths.append(len(legal))
            lists["board_row"].append(self.boards)
            lists["first_row"].append(first)
            lists["white"].append(white)
            lists["move"].append(move_index(move, board.turn))
            mine, theirs = (0, 1) if white else (1, 0)
            lists["self_elo"].append(elos[mine])
            lists["oppo_elo"].append(elos[theirs])
            if scores is not None:
                p = scores[ply] if white else 1.0 - scores[ply]
                lists["wdl"].append(-1)
                lists["score"].append(p)
            elif result is None:
                lists["wdl"].append(-1)
                lists["score"].append(float("nan"))
            else:
                p = result if white else 1.0 - result
                lists["wdl"].append(0 if p == 1.0 else 1 if p == 0.5 else 2)
                lists["score"].append(p)
            lists["castling"].append(bits)
            lists["ep"].append(ep)
            lists["rule50"].append(min(board.halfmove_clock, 32767))
            lists["repetition"].append(key in seen)
            lists["game"].append(game)
            lists["mover"].append(ids[mine])
            lists["game_heldout"].append(heldout)
            clock = clocks[ply] if clocks is not None else None
            lists["clock"].append(float("nan") if clock is None else clock)
            lists["speed"].append(speed)
            seen.add(key)
            self.boards += 1
            board.push(move)

    def build(self) -> MoveData:
        lists = self.lists
        offsets = np.zeros(len(self.legal_lengths) + 1, dtype=np.int64)
        np.cumsum(self.legal_lengths, out=offsets[1:])
        pieces = np.stack(lists["pieces"]) if lists["pieces"] else np.zeros((0, 64), np.int8)
        players = tuple(sorted(self.player_ids, key=self.player_ids.__getitem__))
        return MoveData(
            pieces=pieces.astype(np.int8),
            board_row=np.asarray(lists["board_row"], dtype=np.int64),
            first_row=np.asarray(lists["first_row"], dtype=np.int64),
            white=np.asarray(lists["white"], dtype=bool),
            move=np.asarray(lists["move"], dtype=np.int16),
            legal=np.asarray(lists["legal"], dtype=np.int16),
            legal_offsets=offsets,
            self_elo=np.asarray(lists["self_elo"], dtype=np.int16),
            oppo_elo=np.asarray(lists["oppo_elo"], dtype=np.int16),
            wdl=np.asarray(lists["wdl"], dtype=np.int8),
            score=np.asarray(lists["score"], dtype=np.float32),
            castling=np.asarray(lists["castling"], dtype=np.uint8),
            ep=np.asarray(lists["ep"], dtype=np.int8),
            rule50=np.asarray(lists["rule50"], dtype=np.int16),
            repetition=np.asarray(lists["repetition"], dtype=bool),
            game=np.asarray(lists["game"], dtype=np.int32),
            mover=np.asarray(lists["mover"], dtype=np.int32),
            game_heldout=np.asarray(lists["game_heldout"], dtype=bool),
            clock=np.asarray(lists["clock"], dtype=np.float32),
            speed=np.asarray(lists["speed"], dtype=np.int8),
            players=players,
        )


class _LineReader:
    """Feeds python-chess's PGN parser and remembers the line where each game began."""

    def __init__(self, handle: TextIO) -> None:
        self.handle, self.line, self.game_line = handle, 0, 0

    def readline(self) -> str:
        text = self.handle.readline()
        if text:
            self.line += 1
            if not self.game_line and text.strip():
                self.game_line = self.line
        return text


_RESULTS = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}


def _elo(headers: chess.pgn.Headers, key: str) -> int | None:
    try:
        return int(headers.get(key, ""))
    except ValueError:
        return None


def _games(
    path: Path, problems: ProblemLog, skip: int = 0
) -> Iterator[tuple[int, int, chess.pgn.Game]]:
    with open_text(path) as handle:
        reader = _LineReader(handle)
        index = 0
        while index < skip and chess.pgn.skip_game(reader):  # type: ignore[arg-type]
            index += 1  # passed over without parsing the moves
        while True:
            reader.game_line = 0
            game = chess.pgn.read_game(reader)  # type: ignore[arg-type]
            if game is None:
                return
            index += 1
            if game.errors:
                problems.report(f"broken game: {game.errors[0]}", path=path, line=reader.game_line)
                continue
            yield index - 1, reader.game_line, game


def read_pgn_moves(
    path: str | Path,
    *,
    holdout_fraction: float = 0.05,
    max_games: int | None = None,
    skip_games: int = 0,
    default_elo: int | None = None,
    progress: bool = True,
    strict: bool = False,
) -> MoveData:
    """Every position of every rated game in a PGN (``.gz`` / ``.xz`` / ``.zst`` streamed).

    The first ``skip_games`` games of the file are passed over (e.g. those a model was trained
    on), then at most ``max_games`` usable games are read. Games without both ``WhiteElo`` and
    ``BlackElo`` are skipped (unless ``default_elo`` is set),
    as are variants and set-up positions; broken games are reported as ``file:line``.

    Raises:
        DataFormatError: no usable game in the file, or any problem with ``strict``.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError("no such file", path=path)
    problems = ProblemLog(strict=strict)
    builder = _Builder()
    started, count = time.monotonic(), 0
    for index, line, game in _games(path, problems, skip_games):
        if max_games is not None and count >= max_games:
            break
        headers = game.headers
        board = game.board()
        if board.uci_variant != "chess" or "FEN" in headers:
            problems.report("not a standard game from the initial position", path=path, line=line)
            continue
        elos = (_elo(headers, "WhiteElo"), _elo(headers, "BlackElo"))
        if None in elos:
            if default_elo is None:
                problems.report("no numeric WhiteElo/BlackElo", path=path, line=line)
                continue
            elos = tuple(default_elo if e is None else e for e in elos)  # type: ignore[assignment]
        moves = list(game.mainline_moves())
        if not moves:
            continue
        key = game_key(headers, moves)
        names = (headers.get("White"), headers.get("Black"))
        clocks = [node.clock() for node in game.mainline()]
        builder.add_game(
            board,
            moves,
            elos=(int(elos[0]), int(elos[1])),  # type: ignore[arg-type]
            result=_RESULTS.get(headers.get("Result", "*")),
            game=index,
            names=names,
            heldout=hash_fraction("game:" + key) < holdout_fraction,
            clocks=clocks,
            speed=time_control_band(headers.get("TimeControl", "?")),
        )
        count += 1
        if progress and count % 1000 == 0:
            rate = builder.boards / (time.monotonic() - started)
            print(
                f"{path.name}: {count} games, {builder.boards} positions ({rate:.0f}/s)",
                file=sys.stderr,
            )
    data = builder.build()
    if not len(data):
        raise DataFormatError(f"no rated games found ({problems.summary()})", path=path)
    return data


def read_csv_moves(
    path: str | Path,
    *,
    elo: int = 3000,
    holdout_fraction: float = 0.05,
    max_rows: int | None = None,
    skip_rows: int = 0,
    strict: bool = False,
) -> MoveData:
    """Engine-labelled positions: CSV rows ``fen, cp, mate, win_prob_white, best_move, ...``.

    The project's Stockfish CSVs (no header; see ``../shared/data/README.md``). Positions carry no
    history (the earliest-board rule repeats the current board); both ratings are ``elo``; the
    held-out rule hashes the FEN. The first ``skip_rows`` lines are passed over unparsed (one
    worker's share of a file, see :func:`read_csv_moves_parallel`); ``game`` is the line number.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError("no such file", path=path)
    problems = ProblemLog(strict=strict)
    builder = _Builder()
    with open_text(path) as handle:
        for _ in itertools.islice(handle, skip_rows):
            pass
        for line_no, row in enumerate(csv.reader(handle), start=skip_rows + 1):
            if max_rows is not None and len(builder.legal_lengths) >= max_rows:
                break
            if len(row) < 5:
                problems.report(f"expected >= 5 columns, got {row!r}", path=path, line=line_no)
                continue
            try:
                board = chess.Board(row[0])
                move = chess.Move.from_uci(row[4])
                p = float(row[3])
            except ValueError as error:
                problems.report(f"bad row {row!r}: {error}", path=path, line=line_no)
                continue
            if move not in board.legal_moves or not 0.0 <= p <= 1.0:
                problems.report(f"illegal move or probability in {row!r}", path=path, line=line_no)
                continue
            builder.add_game(
                board,
                [move],
                elos=(elo, elo),
                result=None,
                game=line_no,
                names=(None, None),
                heldout=hash_fraction("fen:" + " ".join(row[0].split()[:4])) < holdout_fraction,
                scores=[p],
            )
    data = builder.build()
    if not len(data):
        raise DataFormatError(f"no usable rows ({problems.summary()})", path=path)
    return data


def read_csv_moves_parallel(
    path: str | Path,
    *,
    rows: int,
    workers: int,
    elo: int = 3000,
    holdout_fraction: float = 0.05,
) -> MoveData:
    """:func:`read_csv_moves` of the first ``rows`` lines, split over ``workers`` processes.

    Equal to the serial read of the same lines (tested), ``workers`` times faster on as many
    cores: each process parses one contiguous block, and the blocks are concatenated in order.
    """
    if rows < 1 or workers < 1:
        raise ValueError(f"rows and workers must be positive, got {rows}, {workers}")
    share = -(-rows // workers)
    blocks = [(start, min(share, rows - start)) for start in range(0, rows, share)]
    kwargs = {"elo": elo, "holdout_fraction": holdout_fraction}
    if len(blocks) == 1:
        return read_csv_moves(path, max_rows=rows, **kwargs)  # type: ignore[arg-type]
    import concurrent.futures

    with concurrent.futures.ProcessPoolExecutor(len(blocks)) as pool:
        futures = [
            pool.submit(read_csv_moves, path, skip_rows=start, max_rows=count, **kwargs)
            for start, count in blocks
        ]
        return concatenate_moves([future.result() for future in futures])


def concatenate_moves(parts: list[MoveData]) -> MoveData:
    """One :class:`MoveData` holding ``parts`` in order (row indices and players re-based)."""
    if not parts:
        raise ValueError("nothing to concatenate")
    boards = np.cumsum([0] + [len(p.pieces) for p in parts[:-1]])
    legal = np.cumsum([0] + [len(p.legal) for p in parts[:-1]])
    players = np.cumsum([0] + [len(p.players) for p in parts[:-1]])
    arrays: dict[str, Any] = {}
    for name in _FIELDS:
        chunks = [getattr(p, name) for p in parts]
        dtype = chunks[0].dtype
        if name in ("board_row", "first_row"):
            chunks = [c + off for c, off in zip(chunks, boards, strict=True)]
        elif name == "legal_offsets":
            rest = zip(chunks[1:], legal[1:], strict=True)
            chunks = [chunks[0]] + [c[1:] + off for c, off in rest]
        elif name == "mover":
            chunks = [np.where(c >= 0, c + off, -1) for c, off in zip(chunks, players, strict=True)]
        arrays[name] = np.concatenate(chunks).astype(dtype, copy=False)
    names = tuple(name for p in parts for name in p.players)
    return MoveData(players=names, **arrays)


def batch_features(
    data: MoveData, rows: npt.NDArray[np.int64], *, history: int, side: bool
) -> npt.NDArray[np.float32]:
    """(len(rows), 64, features) model input of positions ``rows``."""
    from latentchess.squares import encode_pieces

    offsets = np.arange(history + 1)
    board_rows = np.maximum(data.board_row[rows, None] - offsets, data.first_row[rows, None])
    features = encode_pieces(data.pieces[board_rows], data.white[rows])  # (B, 64, 12 (H+1))
    if not side:
        return features
    extra = np.zeros((len(rows), 64, SIDE_FEATURES), dtype=np.float32)
    ep = data.ep[rows]
    has_ep = ep >= 0
    extra[np.nonzero(has_ep)[0], ep[has_ep], 0] = 1.0
    bits = data.castling[rows]
    for k in range(4):
        extra[:, :, 1 + k] = ((bits >> k) & 1)[:, None]
    extra[:, :, 5] = (np.minimum(data.rule50[rows], 100) / 100.0)[:, None]
    extra[:, :, 6] = data.repetition[rows][:, None]
    return np.concatenate([features, extra], axis=2)


def game_key(headers: Mapping[str, str], moves: Sequence[chess.Move]) -> str:
    """A game's identity for splits and duplicates: its Lichess URL (``Site``), else the players,
    the date and the moves."""
    key = headers.get("Site", "")
    if "lichess.org/" in key:
        return key
    return "|".join(
        [
            headers.get("White", ""),
            headers.get("Black", ""),
            headers.get("Date", ""),
            " ".join(m.uci() for m in moves),
        ]
    )
