"""The UCI protocol as pure functions: input lines -> command dataclasses, positions, limits.

Nothing here does I/O or holds state, so each rule is tested on its own (see ``session.py`` for
the conversation).
"""

from __future__ import annotations

from dataclasses import dataclass

import chess
import chess.engine

from latentchess.search.base import MAX_DEPTH

__all__ = [
    "Command",
    "Uci",
    "IsReady",
    "UciNewGame",
    "Position",
    "Go",
    "Stop",
    "PonderHit",
    "Quit",
    "SetOption",
    "Debug",
    "Unknown",
    "PositionError",
    "parse_command",
    "build_position",
    "go_limit",
    "mate_depth",
    "format_info",
    "ENGINE_NAME",
    "ENGINE_AUTHOR",
]

ENGINE_NAME = "latentchess"
ENGINE_AUTHOR = "the latentchess authors"


# -- commands -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """Base class of parsed input lines."""


@dataclass(frozen=True)
class Uci(Command):
    """``uci``: identify and list options."""


@dataclass(frozen=True)
class IsReady(Command):
    """``isready``: answer ``readyok`` when ready."""


@dataclass(frozen=True)
class UciNewGame(Command):
    """``ucinewgame``: the next position is from another game."""


@dataclass(frozen=True)
class Position(Command):
    """``position startpos|fen FEN [moves m1 m2 ...]``.

    Attributes:
        fen: the FEN, or ``None`` for the standard starting position.
        moves: moves in UCI notation, played from there.
    """

    fen: str | None
    moves: tuple[str, ...] = ()


@dataclass(frozen=True)
class Go(Command):
    """``go`` and its parameters (times in milliseconds, as on the wire).

    Attributes:
        problems: parameters that were malformed and ignored.
    """

    depth: int | None = None
    nodes: int | None = None
    movetime: int | None = None
    wtime: int | None = None
    btime: int | None = None
    winc: int | None = None
    binc: int | None = None
    movestogo: int | None = None
    mate: int | None = None
    perft: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Stop(Command):
    """``stop``: finish searching and answer ``bestmove``."""


@dataclass(frozen=True)
class PonderHit(Command):
    """``ponderhit``: the opponent played the expected move."""


@dataclass(frozen=True)
class Quit(Command):
    """``quit``."""


@dataclass(frozen=True)
class SetOption(Command):
    """``setoption name NAME [value VALUE]`` (names may contain spaces)."""

    name: str
    value: str | None = None


@dataclass(frozen=True)
class Debug(Command):
    """``debug on|off``."""

    on: bool


@dataclass(frozen=True)
class Unknown(Command):
    """A line that is not a command we know, or a malformed one."""

    line: str
    problem: str


_GO_INT_PARAMS = (
    "depth",
    "nodes",
    "movetime",
    "wtime",
    "btime",
    "winc",
    "binc",
    "movestogo",
    "mate",
    "perft",
)
_GO_MAX = 2**31 - 1
"""Largest ``go`` value kept (a 24-day clock in ms); larger ones are clamped to it."""
_GO_WORDS = (*_GO_INT_PARAMS, "infinite", "ponder", "searchmoves")
_SIMPLE = {
    "uci": Uci(),
    "isready": IsReady(),
    "ucinewgame": UciNewGame(),
    "stop": Stop(),
    "ponderhit": PonderHit(),
    "quit": Quit(),
}
_KNOWN = {*_SIMPLE, "position", "go", "setoption", "debug", "register"}


def parse_command(line: str) -> Command | None:
    """Parse one input line; ``None`` for a blank line (and ``register``, which needs nothing)."""
    tokens = line.split()
    while tokens and tokens[0] not in _KNOWN:
        tokens = tokens[1:]  # UCI: skip unknown tokens and try the rest of the line
    if not tokens:
        if line.strip():
            return Unknown(line.strip(), "unknown command")
        return None
    name, args = tokens[0], tokens[1:]
    if name in _SIMPLE:
        return _SIMPLE[name]
    if name == "register":
        return None
    if name == "debug":
        if args[:1] in (["on"], ["off"]):
            return Debug(args[0] == "on")
        return Unknown(line.strip(), "expected 'debug on' or 'debug off'")
    if name == "setoption":
        return _parse_setoption(line.strip(), args)
    if name == "position":
        return _parse_position(line.strip(), args)
    return _parse_go(args)


def _parse_setoption(line: str, args: list[str]) -> Command:
    if not args or args[0] != "name" or len(args) < 2:
        return Unknown(line, "expected 'setoption name <id> [value <x>]'")
    if "value" in args[1:]:
        split = args.index("value", 1)
        name, value = " ".join(args[1:split]), " ".join(args[split + 1 :])
        if not name:
            return Unknown(line, "option name is empty")
        return SetOption(name, value)
    return SetOption(" ".join(args[1:]))


def _parse_position(line: str, args: list[str]) -> Command:
    if not args:
        return Unknown(line, "expected 'position startpos|fen <fen> [moves ...]'")
    moves: list[str] = []
    if "moves" in args:
        split = args.index("moves")
        args, moves = args[:split], args[split + 1 :]
    if args == ["startpos"]:
        return Position(None, tuple(moves))
    if len(args) > 1 and args[0] == "fen":  # args is empty in 'position moves e2e4'
        return Position(" ".join(args[1:]), tuple(moves))
    return Unknown(line, f"expected 'startpos' or 'fen <fen>' after 'position', got {args!r}")


def _parse_go(args: list[str]) -> Go:
    values: dict[str, object] = {}
    problems: list[str] = []
    searchmoves: list[str] = []
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        if token in ("infinite", "ponder"):
            values[token] = True
        elif token in _GO_INT_PARAMS:
            raw = args[index] if index < len(args) else None
            index += 1
            try:
                number = int(raw) if raw is not None else None
            except ValueError:
                number = None
            if number is None:
                problems.append(f"ignored 'go {token}' with bad value {raw!r}")
            else:
                values[token] = min(max(number, 0), _GO_MAX)
        elif token == "searchmoves":
            while index < len(args) and args[index] not in _GO_WORDS:
                searchmoves.append(args[index])
                index += 1
        else:
            problems.append(f"ignored unknown 'go' parameter {token!r}")
    return Go(searchmoves=tuple(searchmoves), problems=tuple(problems), **values)  # type: ignore[arg-type]


# -- positions and limits -------------------------------------------------------------------------


class PositionError(ValueError):
    """A ``position`` command that cannot be accepted; the message names the problem."""


_FATAL = {
    chess.STATUS_NO_WHITE_KING: "no white king",
    chess.STATUS_NO_BLACK_KING: "no black king",
    chess.STATUS_TOO_MANY_KINGS: "too many kings",
    chess.STATUS_TOO_MANY_WHITE_PAWNS: "more than 8 white pawns",
    chess.STATUS_TOO_MANY_BLACK_PAWNS: "more than 8 black pawns",
    chess.STATUS_PAWNS_ON_BACKRANK: "pawns on the first or eighth rank",
    chess.STATUS_TOO_MANY_WHITE_PIECES: "more than 16 white pieces",
    chess.STATUS_TOO_MANY_BLACK_PIECES: "more than 16 black pieces",
    chess.STATUS_OPPOSITE_CHECK: "the side not to move is in check",
    chess.STATUS_EMPTY: "the board is empty",
}
_REPAIRED = {
    chess.STATUS_BAD_CASTLING_RIGHTS: "castling rights without king or rook on its square",
    chess.STATUS_INVALID_EP_SQUARE: "impossible en-passant square",
    chess.STATUS_TOO_MANY_CHECKERS: "more checkers than possible",
    chess.STATUS_IMPOSSIBLE_CHECK: "a check that no legal move could give",
}


def build_position(
    command: Position,
    previous: tuple[Position, chess.Board] | None = None,
    *,
    chess960: bool = False,
) -> tuple[chess.Board, list[str]]:
    """The board a ``position`` command describes, and warnings about repaired details.

    Args:
        command: the ``position`` command.
        previous: the last accepted command and its board. When ``command`` has the same FEN and
            continues its move list (GUIs resend the whole game every move), only the new moves
            are checked and played: replaying a long game costs more than a bullet increment.
        chess960: (UCI ``UCI_Chess960``) a Chess960 board: the FEN's castling field may be X-FEN
            or Shredder-FEN and castling moves are king-takes-own-rook (``e1h1``), as python-chess
            reads them with ``chess960=True``. A previous board of the other mode is not reused.

    Raises:
        PositionError: bad FEN, a fatal board status (see the module docstring), or an illegal or
            malformed move in the move list.
    """
    played = 0
    if (
        previous is not None
        and previous[1].chess960 == chess960
        and previous[0].fen == command.fen
        and command.moves[: len(previous[0].moves)] == previous[0].moves
    ):
        board, warnings, played = previous[1].copy(), [], len(previous[0].moves)
    elif command.fen is None:
        board = chess.Board(chess960=chess960)
        warnings = []
    else:
        try:
            board = chess.Board(command.fen, chess960=chess960)
        except ValueError as error:
            raise PositionError(f"bad FEN {command.fen!r}: {error}") from None
        warnings = _check_status(board, command.fen)
    for number, uci in enumerate(command.moves[played:], played + 1):
        try:
            move = chess.Move.from_uci(uci)
        except ValueError:
            raise PositionError(f"move {number} {uci!r} is not a UCI move") from None
        if not move or not board.is_legal(move):
            raise PositionError(f"illegal move {number} {uci!r} in {board.fen()!r}")
        board.push(move)
    return board, warnings


def _check_status(board: chess.Board, fen: str | None) -> list[str]:
    status = board.status()
    fatal = [text for flag, text in _FATAL.items() if status & flag]
    if fatal:
        raise PositionError(f"invalid position {fen!r}: {', '.join(fatal)}")
    warnings = [f"{text} in {fen!r}" for flag, text in _REPAIRED.items() if status & flag]
    if status & chess.STATUS_BAD_CASTLING_RIGHTS:
        board.castling_rights = board.clean_castling_rights()
    if status & chess.STATUS_INVALID_EP_SQUARE:
        board.ep_square = None
    return warnings


def mate_depth(mate: int) -> int:
    """Plies to search for ``go mate N``: a mate in ``N`` moves is ``2N - 1`` plies deep."""
    return max(1, min(2 * mate - 1, MAX_DEPTH))


def go_limit(go: Go) -> chess.engine.Limit:
    """A ``go`` command's limits in python-chess terms (seconds).

    ``go mate N`` becomes a depth of ``2N - 1`` plies (the smaller one if ``depth`` is given too);
    the search ends as soon as it proves a mate (``mate`` is kept for engines that stop on it).
    """

    def seconds(ms: int | None) -> float | None:
        return None if ms is None else ms / 1000.0

    return chess.engine.Limit(
        time=seconds(go.movetime),
        depth=go.depth if go.mate is None else min(go.depth or MAX_DEPTH, mate_depth(go.mate)),
        nodes=go.nodes,
        mate=go.mate,
        white_clock=seconds(go.wtime),
        black_clock=seconds(go.btime),
        white_inc=seconds(go.winc),
        black_inc=seconds(go.binc),
        remaining_moves=go.movestogo,
    )


def format_info(info: chess.engine.InfoDict) -> str:
    """One ``info`` line from a python-chess :class:`~chess.engine.InfoDict`, in Stockfish's
    field order (``depth seldepth multipv score [bound] wdl nodes nps hashfull time pv``);
    an info with a ``string`` is an ``info string`` line."""
    if "string" in info:
        return "info string " + " ".join(str(info["string"]).split())
    parts = ["info"]
    for key in ("depth", "seldepth", "multipv"):
        if key in info:
            parts += [key, str(info[key])]  # type: ignore[literal-required]
    if "score" in info:
        score = info["score"].relative
        parts += ["score", f"mate {score.mate()}" if score.is_mate() else f"cp {score.score()}"]
        if info.get("lowerbound"):
            parts.append("lowerbound")
        elif info.get("upperbound"):
            parts.append("upperbound")
    if "wdl" in info:
        wdl = info["wdl"].relative
        parts += ["wdl", str(wdl.wins), str(wdl.draws), str(wdl.losses)]
    for key in ("nodes", "nps", "hashfull"):
        if key in info:
            parts += [key, str(int(info[key]))]  # type: ignore[literal-required]
    if "time" in info:
        parts += ["time", str(int(info["time"] * 1000))]
    if info.get("pv"):
        parts += ["pv", *(move.uci() for move in info["pv"])]
    return " ".join(parts)
