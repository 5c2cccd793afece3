"""A UCI session fed line by line from the test, its output collected (scripted transcripts)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from latentchess.uci.session import UciSession


class SessionTranscript:
    """Feeds lines to a session made by ``make_session(write)`` and collects what it writes."""

    def __init__(self, make_session: Callable[[Callable[[str], None]], UciSession]) -> None:
        self.lines: list[str] = []
        self.changed = threading.Condition()
        self.session = make_session(self._write)

    def _write(self, line: str) -> None:
        with self.changed:
            self.lines.append(line)
            self.changed.notify_all()

    def send(self, *lines: str) -> bool:
        alive = True
        for line in lines:
            alive = self.session.handle_line(line)
        return alive

    def wait_for(self, prefix: str, timeout: float = 20.0) -> str:
        """The first line starting with ``prefix`` (removed from ``lines``), waiting for it."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                found = [line for line in self.lines if line.startswith(prefix)]
                if found:
                    self.lines.remove(found[0])
                    return found[0]
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"no {prefix!r} in {self.lines}"
                self.changed.wait(remaining)

    def infos(self) -> list[str]:
        """The ``info string`` lines written so far."""
        return [line for line in self.lines if line.startswith("info string")]
