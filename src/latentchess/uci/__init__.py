"""The UCI protocol: ``latentchess uci`` speaks to GUIs, cutechess-cli and lichess-bot.

Pure functions (``protocol``) parse each input line into a command dataclass
(:func:`parse_command`) and turn a ``position`` command into a board (:func:`build_position`);
:class:`UciSession` (``session``) holds the state and reacts to commands; :func:`run` is the thin
loop that reads stdin and writes stdout (flushed after every line). The search runs in its own
thread, so ``stop``, ``isready`` and ``quit`` are answered at once.

Which engine answers: ``latentchess uci`` serves the engine ``--engine`` names, by default
:data:`~latentchess.engines.default.DEFAULT_ENGINE_SPEC` (``ab``); the ``Engine`` option changes it
mid-session. Every engine is served by the same :class:`UciSession` from the options it declares
(:meth:`~latentchess.engines.base.Engine.options`).

Behaviour worth knowing:

* Unknown or malformed input gets an ``info string`` and is otherwise ignored; unknown tokens
  before a command are skipped (``joho debug on`` is ``debug on``), as the protocol asks.
* A ``position`` with a bad FEN, a missing or extra king, the side not to move in check, pawns on
  the back rank, or an illegal move in its move list is refused with an ``info string`` naming the
  problem; the previous valid position stays current, so a following ``go`` answers a legal move
  for it (or ``bestmove 0000`` if no position was ever set). Inconsistent castling rights or an
  impossible en-passant square are repaired with a warning.
* ``go`` in a position without legal moves answers ``bestmove 0000``. If the engine cannot search
  (the latent model failed to load), ``go`` answers ``info string`` with the reason and a legal
  fallback move (a capture if any, else the first generated move) so that no game is forfeited;
  the engine keeps running and a later ``setoption`` (``Model``, ``Engine``) can fix it. Should
  the search itself fail, the first legal move is played.
* An engine may finish its set-up in the background (the latent model loads after start-up);
  ``isready`` answers ``readyok`` once it is ready (or failed), and time limits of a ``go`` count
  from when it arrived, so loading time is never taken from the engine's clock unnoticed.
* ``go ponder`` searches like ``go infinite``; ``ponderhit`` then gives the search the engine's
  own time budget for that ``go``'s clock (:meth:`~latentchess.engines.base.Engine.time_budget`),
  counted from the ponderhit.
"""

from latentchess.uci.protocol import (
    ENGINE_AUTHOR,
    ENGINE_NAME,
    Command,
    Debug,
    Go,
    IsReady,
    PonderHit,
    Position,
    PositionError,
    Quit,
    SetOption,
    Stop,
    Uci,
    UciNewGame,
    Unknown,
    build_position,
    format_info,
    go_limit,
    parse_command,
)
from latentchess.uci.session import ENGINE_OPTION, UciSession, run

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
    "ENGINE_NAME",
    "ENGINE_AUTHOR",
    "UciSession",
    "run",
    "format_info",
    "ENGINE_OPTION",
]
