"""Malformed input: report it with file and line, skip it and count it, or stop (``--strict``)."""

from __future__ import annotations

import sys
from pathlib import Path

from tqdm import tqdm

from latentchess.errors import DataFormatError

__all__ = ["ProblemLog", "note"]


def note(text: str) -> None:
    """Print a line for the user on stderr without breaking a running progress bar."""
    tqdm.write(text, file=sys.stderr)


class ProblemLog:
    """Collects problems found in input files.

    Args:
        strict: raise the first problem as :class:`DataFormatError` instead of skipping it.
        max_shown: problems printed to stderr; later ones are only counted.

    Attributes:
        count: problems skipped so far.
    """

    def __init__(self, *, strict: bool = False, max_shown: int = 20) -> None:
        self.strict = strict
        self.max_shown = max_shown
        self.count = 0

    def report(
        self,
        problem: str,
        *,
        path: str | Path,
        line: int | None = None,
        offset: int | None = None,
    ) -> None:
        """Report one bad record: raise if strict, else print (the first few) and count it."""
        error = DataFormatError(problem, path=path, line=line, offset=offset)
        if self.strict:
            raise error
        self.count += 1
        if self.count <= self.max_shown:
            note(f"skipped: {error}")
        elif self.count == self.max_shown + 1:
            note("skipped: (further problems are counted, not shown)")

    def summary(self) -> str:
        """``"no malformed records"`` or ``"skipped N malformed records"``."""
        if not self.count:
            return "no malformed records"
        return f"skipped {self.count} malformed record{'s' if self.count != 1 else ''}"
