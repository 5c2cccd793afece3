"""External engines (UCI or XBoard processes) behind the common Engine interface.

python-chess speaks the protocols; this module adds what matches and suites need on top: options
resolved case-insensitively against the engine's own declarations (an unknown name is an error
that lists the real ones), failures turned into :class:`~latentchess.errors.EngineError` naming the
engine and position, illegal moves raised as python-chess's :class:`chess.IllegalMoveError`, and a
watchdog that kills a process which overruns its clock, so a hung engine loses on time instead of
hanging the match.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import chess
import chess.engine

from latentchess.engines.base import Analysis, Engine, EngineOption, GoControl, MoveScore
from latentchess.errors import EngineError

__all__ = ["ExternalEngine", "find_executable", "Protocol", "OptionValue"]

Protocol = Literal["uci", "xboard"]
OptionValue = str | int | bool

# Debian installs games (engines) into /usr/games, which is not on every PATH.
_EXTRA_BIN_DIRS = ("/usr/games", "/usr/local/games")

# Grace beyond a move's own budget before the watchdog kills the process (seconds).
_KILL_GRACE_S = 2.0


class _DropChatter(logging.Filter):
    """XBoard engines (phalanx) echo settings that python-chess logs as warnings; pure noise."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("%s: Unexpected engine output")


_CHATTER_FILTER = _DropChatter()


def find_executable(name: str | Path) -> Path:
    """Locate an engine binary: an existing path, else ``PATH``, else ``/usr/games``.

    Raises:
        EngineError: when nothing executable is found.
    """
    path = Path(name).expanduser()
    if os.sep in str(name) or path.exists():
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise EngineError(f"engine executable {str(name)!r} does not exist or is not executable")
    search = os.pathsep.join([os.environ.get("PATH", ""), *_EXTRA_BIN_DIRS])
    found = shutil.which(str(name), path=search)
    if found is None:
        raise EngineError(
            f"engine {str(name)!r} not found on PATH or in {', '.join(_EXTRA_BIN_DIRS)} "
            "(install it, or give its full path)"
        )
    return Path(found)


class ExternalEngine(Engine):
    """An engine process spoken to with UCI or XBoard.

    Args:
        command: executable path or argv list (``["gnuchess", "--uci"]``); the first element is
            looked up with :func:`find_executable`.
        protocol: ``"uci"`` or ``"xboard"``.
        options: engine options by name (matched case-insensitively against the engine's
            declarations); string values are converted to the declared type.
        name: display name (default: the engine's ``id name``).
        time_limits_only: refuse depth/nodes limits (engines like phalanx reject ``sd``).
        startup_timeout: seconds allowed for the handshake and ordinary commands.
        untimed_move_timeout: longest wait for a move under a depth/nodes limit before the
            process is killed; ``None`` waits forever.

    Raises:
        EngineError: when the process cannot be started or an option is unknown or invalid.
    """

    def __init__(
        self,
        command: str | Path | Sequence[str | Path],
        *,
        protocol: Protocol = "uci",
        options: Mapping[str, OptionValue] | None = None,
        name: str | None = None,
        time_limits_only: bool = False,
        startup_timeout: float = 20.0,
        untimed_move_timeout: float | None = 600.0,
    ) -> None:
        argv = [command] if isinstance(command, str | Path) else list(command)
        if not argv:
            raise EngineError("empty engine command")
        argv = [str(find_executable(argv[0])), *map(str, argv[1:])]
        if protocol not in ("uci", "xboard"):
            raise EngineError(f"unknown engine protocol {protocol!r} (expected 'uci' or 'xboard')")
        self.command = argv
        self.protocol: Protocol = protocol
        self.time_limits_only = time_limits_only
        self.untimed_move_timeout = untimed_move_timeout
        self.configured_options: dict[str, OptionValue] = {}
        self._game: object = object()
        logging.getLogger("chess.engine").addFilter(_CHATTER_FILTER)
        popen = (
            chess.engine.SimpleEngine.popen_uci
            if protocol == "uci"
            else chess.engine.SimpleEngine.popen_xboard
        )
        try:
            self._engine = popen(argv, timeout=startup_timeout, stderr=_devnull())
        except (OSError, chess.engine.EngineError, TimeoutError) as error:
            raise EngineError(f"cannot start engine {' '.join(argv)!r}: {error!r}") from error
        self._id_name = str(self._engine.id.get("name", Path(argv[0]).name))
        self.name: str = name or self._id_name
        try:
            if options:
                self.configure(options)
        except BaseException:
            self.close()
            raise

    # --- options -----------------------------------------------------------------------------

    @property
    def declared_options(self) -> Mapping[str, chess.engine.Option]:
        """Options the engine declared, by their exact names."""
        return self._engine.options

    def option(self, name: str) -> chess.engine.Option:
        """The declared option ``name`` (case-insensitive).

        Raises:
            EngineError: if the engine declares no such option; the message lists those it does.
        """
        for declared_name, option in self._engine.options.items():
            if declared_name.lower() == name.lower():
                return option
        available = ", ".join(sorted(self._engine.options)) or "none"
        raise EngineError(f"engine {self.name!r} has no option {name!r}; it declares: {available}")

    def configure(self, options: Mapping[str, OptionValue]) -> None:
        """Set options by (case-insensitive) name; strings are converted to the declared type."""
        resolved: dict[str, OptionValue] = {}
        for key, value in options.items():
            option = self.option(key)
            resolved[option.name] = _convert_option(self.name, option, value)
        try:
            self._engine.configure(resolved)
        except chess.engine.EngineError as error:
            raise EngineError(
                f"engine {self.name!r} rejected options {resolved!r}: {error}"
            ) from error
        self.configured_options.update(resolved)

    def options(self) -> list[EngineOption]:
        """The process's own declarations (those python-chess manages itself left out)."""
        return [
            EngineOption(option, lambda value, name=name: self.configure({name: value}), name)
            for name, option in self._engine.options.items()
            if not option.is_managed()
        ]

    def supports_chess960(self) -> bool:
        """Whether the process declares ``UCI_Chess960`` (python-chess then sets it per board)."""
        return any(name.lower() == "uci_chess960" for name in self._engine.options)

    def provenance(self) -> dict[str, str]:
        """The process's ``id name`` and command."""
        return {"id_name": self._id_name, "command": " ".join(self.command)}

    # --- the Engine interface ----------------------------------------------------------------

    def new_game(self) -> None:
        """Start a new game: the next search is preceded by ``ucinewgame`` / ``new``."""
        self._game = object()

    def play(self, board: chess.Board, limit: chess.engine.Limit) -> chess.Move:
        """Ask the process for a move within ``limit``.

        Raises:
            chess.IllegalMoveError: when the engine answers an illegal move.
            EngineError: when it crashes, times out, or answers no move.
        """
        self._check(board, limit)
        with self._watchdog(board.turn, limit):
            try:
                result = self._engine.play(board, limit, game=self._game)
            except chess.engine.EngineTerminatedError as error:
                raise EngineError(
                    f"engine {self.name!r} terminated while thinking on {board.fen()!r}: {error}"
                ) from error
            except chess.engine.EngineError as error:
                if isinstance(error.args[0] if error.args else None, ValueError):
                    raise chess.IllegalMoveError(
                        f"engine {self.name!r} sent an illegal move in {board.fen()!r}: {error}"
                    ) from error
                raise EngineError(
                    f"engine {self.name!r} failed on {board.fen()!r}: {error}"
                ) from error
            except TimeoutError as error:
                raise EngineError(
                    f"engine {self.name!r} did not answer in time on {board.fen()!r}"
                ) from error
        if result.move is None:
            raise EngineError(f"engine {self.name!r} returned no move for {board.fen()!r}")
        return result.move

    def go(
        self, board: chess.Board, limit: chess.engine.Limit, control: GoControl | None = None
    ) -> Analysis:
        """The move the process plays (a weakened engine plays another move than its PV's)."""
        del control  # the process answers its own go
        move = self.play(board, limit)
        return Analysis(best_move=move, pv=[move])

    def analyse(self, board: chess.Board, limit: chess.engine.Limit) -> Analysis:
        """Search ``board`` and report the principal variation and score."""
        self._check(board, limit)
        start = time.perf_counter()
        with self._watchdog(board.turn, limit):
            try:
                info = self._engine.analyse(board, limit, game=self._game)
            except (chess.engine.EngineError, TimeoutError) as error:
                raise EngineError(
                    f"engine {self.name!r} failed to analyse {board.fen()!r}: {error!r}"
                ) from error
        pv = list(info.get("pv", []))
        score = info.get("score")
        score_cp = mate = win_prob_white = None
        moves: list[MoveScore] = []
        if score is not None:
            score_cp = score.relative.score()
            mate = score.relative.mate()
            from latentchess.winprob import score_win_probability  # numpy: on use

            win_prob_white = score_win_probability(score.white())
            if pv:
                white_cp = score.white().score(mate_score=100_000)
                best = MoveScore(
                    move=pv[0], score=float(white_cp), rank=1, win_prob_white=win_prob_white
                )
                moves.append(best)
        return Analysis(
            best_move=pv[0] if pv else None,
            pv=pv,
            score_cp=score_cp,
            mate=mate,
            win_prob_white=win_prob_white,
            depth=int(info.get("depth", 0)),
            nodes=int(info.get("nodes", 0)),
            time_s=float(info.get("time", time.perf_counter() - start)),
            moves=moves,
        )

    def close(self) -> None:
        """Quit the process (killing it if it does not quit promptly)."""
        engine = getattr(self, "_engine", None)
        if engine is None:
            return
        try:
            engine.close()
        except Exception:  # a dead or hung process must not stop the caller
            self._kill()
        self._engine = None  # type: ignore[assignment]

    def __enter__(self) -> ExternalEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ExternalEngine({self.name!r}, command={self.command!r}, {self.protocol})"

    # --- internals ---------------------------------------------------------------------------

    def _check(self, board: chess.Board, limit: chess.engine.Limit) -> None:
        if self._engine is None:
            raise EngineError(f"engine {self.name!r} is closed")
        if board.is_game_over():
            raise EngineError(f"no move to search: the game is over in {board.fen()!r}")
        if self.time_limits_only and (limit.depth is not None or limit.nodes is not None):
            raise EngineError(f"engine {self.name!r} supports time limits only, got {limit!r}")

    def _budget(self, turn: chess.Color, limit: chess.engine.Limit) -> float | None:
        """Wall seconds after which the process is considered hung and killed."""
        clock = limit.white_clock if turn == chess.WHITE else limit.black_clock
        if clock is not None:
            return clock + _KILL_GRACE_S
        if limit.time is not None:
            return limit.time + _KILL_GRACE_S + 8.0
        return self.untimed_move_timeout

    def _watchdog(self, turn: chess.Color, limit: chess.engine.Limit) -> _Watchdog:
        return _Watchdog(self._budget(turn, limit), self._kill)

    def _kill(self) -> None:
        engine = getattr(self, "_engine", None)
        if engine is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(engine.transport.get_pid(), signal.SIGKILL)


class _Watchdog:
    """Context manager that calls ``kill`` if the block runs longer than ``seconds``."""

    def __init__(self, seconds: float | None, kill: object) -> None:
        self._timer = None if seconds is None else threading.Timer(seconds, kill)  # type: ignore[arg-type]
        if self._timer is not None:
            self._timer.daemon = True

    def __enter__(self) -> None:
        if self._timer is not None:
            self._timer.start()

    def __exit__(self, *exc_info: object) -> None:
        if self._timer is not None:
            self._timer.cancel()


def _convert_option(engine: str, option: chess.engine.Option, value: OptionValue) -> OptionValue:
    """Convert a (usually string) value to the option's declared type, checking its range."""
    try:
        if option.type == "check":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ValueError("expected true or false")
            return text in ("true", "1", "yes", "on")
        if option.type == "spin":
            number = int(value)
            if option.min is not None and number < option.min:
                raise ValueError(f"below the minimum {option.min}")
            if option.max is not None and number > option.max:
                raise ValueError(f"above the maximum {option.max}")
            return number
        if option.type == "combo" and option.var and str(value) not in option.var:
            raise ValueError(f"expected one of {option.var}")
        if option.type == "button":
            return None  # type: ignore[return-value]
        return str(value)
    except ValueError as error:
        raise EngineError(
            f"bad value {value!r} for option {option.name!r} of engine {engine!r}: {error}"
        ) from error


def _devnull() -> int:
    """Engines' stderr is discarded: it would otherwise interleave with our progress bars."""
    return subprocess.DEVNULL
