"""Exceptions raised by latentchess; every message quotes the bad input and what was expected."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "LatentChessError",
    "InvalidFenError",
    "DataFormatError",
    "ModelFileError",
    "EngineError",
]


class LatentChessError(Exception):
    """Base class of every error latentchess raises on purpose.

    Errors survive pickling (worker processes send them to their parent) with their message and
    every attribute (``path``, ``line``, ``offset``, ``fen``...), whatever the subclass's
    ``__init__`` signature: unpickling restores the state instead of calling ``__init__`` again.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), self.args, dict(self.__dict__)))


def _restore(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """Rebuild a pickled :class:`LatentChessError` without calling its ``__init__``."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class InvalidFenError(LatentChessError, ValueError):
    """A FEN string that cannot be parsed or tokenized."""

    def __init__(self, fen: str, problem: str) -> None:
        self.fen = fen
        self.problem = problem
        super().__init__(f"invalid FEN {fen!r}: {problem}")


class DataFormatError(LatentChessError, ValueError):
    """Malformed input data, located by file and line (text) or byte offset (binary)."""

    def __init__(
        self,
        problem: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        offset: int | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.offset = offset
        self.problem = problem
        where = self.path or "<input>"
        if line is not None:
            where += f":{line}"
        if offset is not None:
            where += f" at byte offset {offset}"
        super().__init__(f"{where}: {problem}")


class ModelFileError(LatentChessError):
    """A model directory or weights file that is missing, truncated or does not match its config."""


class EngineError(LatentChessError):
    """An engine (ours or an external UCI process) that failed or was misused."""
