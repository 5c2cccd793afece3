"""Stockfish labels: one position in, one :class:`Label` (White's win probability and more) out.

The :class:`Labeller` owns one Stockfish process (``Threads=1``, small hash) through
:class:`chess.engine.SimpleEngine`; use it in a ``with`` block. If Stockfish dies mid-search the
labeller starts a fresh process and retries the position, a bounded number of times.

Conventions of every label (and so of every dataset row):

* ``win_prob_white`` is White's win probability. A mate found for a side is exactly 1.0 / 0.0;
  a centipawn score goes through :func:`latentchess.winprob.win_probability` and is then kept
  strictly inside (0, 1) even in float32 (:func:`cp_win_probability`), so ``p == 1.0`` and
  ``p == 0.0`` select exactly the forced-mate positions the advantage axis is built from.
* A position that is over by the rules is labelled without asking Stockfish: checkmate is 0.0 or
  1.0 (``mate_white == 0``, depth 0), stalemate and insufficient material are 0.5.
* ``multipv_gap_cp`` is best minus second-best score from the side to move's view, with a mate in
  n scored ``MATE_SCORE_CP - n`` (as in the project's shared CSV), ``None`` with one legal move.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import chess
import chess.engine

from latentchess.errors import EngineError
from latentchess.winprob import win_probability

__all__ = [
    "STOCKFISH_ENV",
    "DEFAULT_LABEL_DEPTH",
    "MATE_SCORE_CP",
    "Label",
    "Labeller",
    "find_stockfish",
    "make_limit",
    "limit_to_dict",
    "cp_win_probability",
    "terminal_label",
    "label_from_infos",
]

STOCKFISH_ENV = "LATENTCHESS_STOCKFISH"
"""Environment variable naming the Stockfish binary (checked before /usr/games/stockfish, PATH)."""

DEFAULT_LABEL_DEPTH = 9
"""Default label limit. Measured by ``benchmarks/bench_labelling.py --sweep`` (200 positions of
the shared CSV, MultiPV 4, against a depth-16 reference; benchmarks/results/labelling.md): depth 9
puts 88% of labels within SupCon's positive margin (0.05) of the reference (p90 error 0.054),
against 82% at depth 8 (p90 0.068) and 90% at depth 10, while depth 8 -> 9 -> 10 roughly doubles
the cost per ply. Depth 9 is the shallowest depth whose 90th-percentile error reaches the margin
the training loss resolves, and it is the depth of the project's shared 332k-position CSV, so new
and imported data carry one label quality. ``data generate`` made about 8 positions/s per core at
depth 9 with MultiPV 4 on a busy shared 2-core machine (hash kept within a game)."""

MATE_SCORE_CP = 100_000
"""Centipawn value of a mate in 0 when mates must be compared with centipawns (gaps, sampling)."""

_P_EDGE = 2.0**-24  # 1 - 2**-24 is the largest float32 below 1.0
_INFO = chess.engine.INFO_BASIC | chess.engine.INFO_SCORE | chess.engine.INFO_PV


def cp_win_probability(cp_white: float) -> float:
    """White's win probability for a centipawn (non-mate) score, strictly inside (0, 1).

    :func:`latentchess.winprob.win_probability` rounds to exactly 1.0 above about 10,000 cp in
    float64, and float32 caches round above about 4,500 cp; both would pass for a forced mate.
    """
    p = float(win_probability(cp_white))
    return min(max(p, _P_EDGE), 1.0 - _P_EDGE)


def find_stockfish(binary: str | Path | None = None) -> Path:
    """Locate Stockfish: ``binary``, else $LATENTCHESS_STOCKFISH, /usr/games/stockfish, PATH.

    Raises:
        EngineError: if no executable is found (the message lists where it looked).
    """
    candidates: list[str] = []
    if binary is not None:
        candidates.append(str(binary))
    else:
        if os.environ.get(STOCKFISH_ENV):
            candidates.append(os.environ[STOCKFISH_ENV])
        candidates.append("/usr/games/stockfish")
        candidates.append("stockfish")
    for candidate in candidates:
        found = shutil.which(candidate)
        if found:
            return Path(found)
    raise EngineError(
        f"Stockfish not found (tried {', '.join(repr(c) for c in candidates)}); install it "
        f"(apt-get install stockfish) or set ${STOCKFISH_ENV} to the binary"
    )


def make_limit(*, depth: int | None = None, nodes: int | None = None) -> chess.engine.Limit:
    """A label limit: a depth or a node count (default :data:`DEFAULT_LABEL_DEPTH`)."""
    if depth is not None and nodes is not None:
        raise ValueError(f"give a depth or a node limit, not both (depth={depth}, nodes={nodes})")
    if depth is not None and depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth!r}")
    if nodes is not None and nodes < 1:
        raise ValueError(f"nodes must be >= 1, got {nodes!r}")
    if nodes is not None:
        return chess.engine.Limit(nodes=nodes)
    return chess.engine.Limit(depth=DEFAULT_LABEL_DEPTH if depth is None else depth)


def limit_to_dict(limit: chess.engine.Limit) -> dict[str, int]:
    """The depth/nodes of a limit as a dict (for run configs and metadata)."""
    return {k: int(v) for k, v in (("depth", limit.depth), ("nodes", limit.nodes)) if v is not None}


@dataclass(frozen=True, kw_only=True)
class Label:
    """Stockfish's verdict on one position.

    Attributes:
        win_prob_white: White's win probability; exactly 1.0 / 0.0 only for a forced mate.
        cp_white: centipawns from White's view; None when a mate was found.
        mate_white: moves to mate, + White mates, - Black mates, 0 for a checkmated position
            (``win_prob_white`` says who won); None when no mate was found.
        best_move: the best move; None when there is no legal move.
        depth: search depth reached; 0 for positions decided by the rules.
        nodes: nodes searched; 0 for positions decided by the rules.
        multipv_gap_cp: best minus second-best score, side to move's view (None: one line only).
        lines: the MultiPV lines as ``(move, score)``, best first, scores from the side to move's
            view; empty for positions decided by the rules.
    """

    win_prob_white: float
    cp_white: int | None
    mate_white: int | None
    best_move: chess.Move | None
    depth: int
    nodes: int
    multipv_gap_cp: int | None
    lines: tuple[tuple[chess.Move, chess.engine.Score], ...] = ()

    def row(
        self, fen: str, *, source: str, game: int | None = None, ply: int | None = None
    ) -> dict[str, Any]:
        """This label as a dataset row (see :data:`latentchess.data.store.SCHEMA`)."""
        return {
            "fen": fen,
            "win_prob_white": self.win_prob_white,
            "cp_white": self.cp_white,
            "mate_white": self.mate_white,
            "best_move": None if self.best_move is None else self.best_move.uci(),
            "depth": self.depth,
            "nodes": self.nodes,
            "multipv_gap_cp": self.multipv_gap_cp,
            "source": source,
            "game": game,
            "ply": ply,
        }


def terminal_label(board: chess.Board) -> Label | None:
    """The exact label of a position the rules decide (checkmate, stalemate, dead material)."""
    if board.is_checkmate():
        white_won = board.turn == chess.BLACK
        p = 1.0 if white_won else 0.0
        return Label(
            win_prob_white=p, cp_white=None, mate_white=0, best_move=None, depth=0, nodes=0,
            multipv_gap_cp=None,
        )  # fmt: skip
    if board.is_stalemate() or board.is_insufficient_material():
        best = None if board.is_stalemate() else next(iter(board.legal_moves), None)
        return Label(
            win_prob_white=0.5, cp_white=0, mate_white=None, best_move=best, depth=0, nodes=0,
            multipv_gap_cp=None,
        )  # fmt: skip
    return None


def _mover_cp(score: chess.engine.Score) -> int:
    value = score.score(mate_score=MATE_SCORE_CP)
    assert value is not None
    return value


def label_from_infos(board: chess.Board, infos: list[chess.engine.InfoDict]) -> Label:
    """Build a label from ``SimpleEngine.analyse(..., multipv=k)`` output (best line first)."""
    lines: list[tuple[chess.Move, chess.engine.Score]] = []
    for info in infos:
        pv = info.get("pv")
        score = info.get("score")
        if pv and score is not None:
            lines.append((pv[0], score.pov(board.turn)))
    if not lines:
        raise EngineError(f"Stockfish returned no scored line for {board.fen()!r}: {infos!r}")
    best_move, best = lines[0]
    white = best if board.turn == chess.WHITE else -best
    mate = white.mate()
    if mate is not None:
        cp_white, p = None, (1.0 if mate > 0 else 0.0)
        if mate == 0:  # Stockfish reports "mate 0" only when mated; keep the winner right
            p = 1.0 if board.turn == chess.BLACK else 0.0
    else:
        cp_white = white.score()
        assert cp_white is not None
        p = cp_win_probability(cp_white)
    gap = _mover_cp(best) - _mover_cp(lines[1][1]) if len(lines) > 1 else None
    first = infos[0]
    return Label(
        win_prob_white=p,
        cp_white=cp_white,
        mate_white=mate,
        best_move=best_move,
        depth=int(first.get("depth", 0)),
        nodes=int(first.get("nodes", 0)),
        multipv_gap_cp=gap,
        lines=tuple(lines),
    )


class Labeller:
    """One Stockfish process that labels positions; a context manager.

    Args:
        limit: search limit per position (see :func:`make_limit`).
        binary: Stockfish executable (default: :func:`find_stockfish`).
        hash_mb: transposition table size; small, since searches are short.
        multipv: lines searched per position by default (>= 2 gives ``multipv_gap_cp``).
        max_retries: restarts of a crashed Stockfish tolerated per position before
            :class:`EngineError` is raised.
    """

    def __init__(
        self,
        limit: chess.engine.Limit | None = None,
        *,
        binary: str | Path | None = None,
        hash_mb: int = 16,
        multipv: int = 1,
        max_retries: int = 3,
    ) -> None:
        if multipv < 1:
            raise ValueError(f"multipv must be >= 1, got {multipv!r}")
        self.limit = make_limit() if limit is None else limit
        self.binary = find_stockfish(binary)
        self.hash_mb = hash_mb
        self.multipv = multipv
        self.max_retries = max_retries
        self.restarts = 0
        self._engine: chess.engine.SimpleEngine | None = None

    def __enter__(self) -> Labeller:
        self._start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """Process id of the current Stockfish process (None when closed)."""
        return None if self._engine is None else self._engine.transport.get_pid()

    def _start(self) -> None:
        try:
            # setpgrp: a Ctrl-C in the terminal goes to our processes, which stop Stockfish.
            engine = chess.engine.SimpleEngine.popen_uci(str(self.binary), setpgrp=True)
        except (OSError, chess.engine.EngineError) as error:
            raise EngineError(f"cannot start Stockfish {str(self.binary)!r}: {error}") from error
        try:
            engine.configure({"Threads": 1, "Hash": self.hash_mb})
        except chess.engine.EngineError as error:
            engine.close()
            raise EngineError(
                f"Stockfish {str(self.binary)!r} rejected options: {error}"
            ) from error
        self._engine = engine

    def close(self) -> None:
        """Quit Stockfish (also done by the ``with`` block)."""
        engine, self._engine = self._engine, None
        if engine is not None:
            # A crashed engine may fail to quit cleanly; there is nothing left to close then.
            with contextlib.suppress(chess.engine.EngineError, TimeoutError, OSError):
                engine.close()

    def label(
        self, board: chess.Board, *, multipv: int | None = None, game: object = None
    ) -> Label:
        """Label a position (rules first, then Stockfish at :attr:`limit`).

        Args:
            board: the position; its move stack, if any, is sent to Stockfish too.
            multipv: lines to search (default :attr:`multipv`).
            game: identifies the game; Stockfish gets ``ucinewgame`` when it changes, which clears
                its hash so that a game's labels do not depend on the games before it.

        Raises:
            EngineError: Stockfish crashed on this position more than ``max_retries`` times.
        """
        exact = terminal_label(board)
        if exact is not None:
            return exact
        lines = self.multipv if multipv is None else multipv
        last_error: Exception | None = None
        for _attempt in range(self.max_retries + 1):
            if self._engine is None:
                self._start()
            assert self._engine is not None
            try:
                infos = self._engine.analyse(
                    board, self.limit, multipv=lines, game=game, info=_INFO
                )
                return label_from_infos(board, infos)
            except (
                chess.engine.EngineError,
                chess.engine.EngineTerminatedError,
                TimeoutError,
            ) as e:
                last_error = e
                self.restarts += 1
                self.close()
        raise EngineError(
            f"Stockfish failed {self.max_retries + 1} times on {board.fen()!r}: {last_error!r}"
        )
