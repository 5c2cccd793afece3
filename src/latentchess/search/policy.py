"""A Chessformer policy head as the root-move prior of the latent and hybrid searches.

``latent:policy=human`` / ``hybrid:policy=engine`` / ``policy=DIR`` (``human``: the shipped
human-move model, ``engine``: the shipped model trained on engine moves, else a Chessformer model
directory). :class:`PolicyProposer` is a
:class:`~latentchess.search.hybrid.CandidateProposer`: every legal root move ranked by the
policy's probability (one forward pass per root position, cached for repeated calls on the same
position). Where a search has a candidate width, the policy's top ``width`` moves are the ones it
expands (:meth:`PolicyProposer.order`); a move that mates at once is always put first, so the
prior can never hide a mate in one.

The policy is conditioned on ratings: ``policy_elo`` (default 2200) for both players, since the
search wants the strong player's move.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import chess

from latentchess.errors import EngineError
from latentchess.search.hybrid import Candidate

__all__ = ["PolicyProposer", "DEFAULT_POLICY_ELO", "load_policy"]

DEFAULT_POLICY_ELO = 2200.0
"""Rating of both players the policy is asked for (a strong player's move)."""


def load_policy(spec: str | Path, *, elo: float | None = None) -> PolicyProposer:
    """A :class:`PolicyProposer` for ``human`` / ``engine`` (shipped models) or a model directory.

    Raises:
        EngineError: the directory is not a Chessformer model.
    """
    from latentchess.errors import ModelFileError
    from latentchess.models.chessformer_io import ChessformerModel

    try:
        model = ChessformerModel.load(spec)
    except ModelFileError as error:
        raise EngineError(f"policy={str(spec)!r}: {error}") from error
    if elo is None:  # a model of engine moves knows its rating; else a strong player's
        elo = model.default_elo if model.default_elo is not None else DEFAULT_POLICY_ELO
    return PolicyProposer(model, elo=elo)


def _mates_at_once(board: chess.Board, move: chess.Move) -> bool:
    board.push(move)
    try:
        return board.is_checkmate()
    finally:
        board.pop()


class PolicyProposer:
    """Root moves ranked by a Chessformer's policy (a :class:`CandidateProposer`).

    Args:
        model: a loaded :class:`~latentchess.models.chessformer_io.ChessformerModel`.
        elo: both players' rating given to the policy.
    """

    def __init__(self, model: Any, *, elo: float = DEFAULT_POLICY_ELO) -> None:
        if not 0 <= elo <= 5000:
            raise EngineError(f"policy_elo must lie in [0, 5000], got {elo!r}")
        self.model = model
        self.elo = float(elo)
        self._last: tuple[tuple[str, tuple[chess.Move, ...]], list[Candidate]] | None = None
        self.evaluations = 0
        """Forward passes run (for tests and reports)."""

    def propose(self, board: chess.Board, deadline: float | None = None) -> list[Candidate]:
        """Every legal move, the policy's favourite first (mates in one before everything).

        ``score`` is the policy probability (1.0 for a mate in one). ``deadline`` is not needed:
        one forward pass.
        """
        key = (board.fen(), tuple(board.move_stack[-8:]))
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        if not any(board.legal_moves):
            return []
        (prediction,) = self.model.predict([board], self.elo, self.elo)
        self.evaluations += 1
        probabilities = prediction.probabilities.tolist()
        scored = list(zip(prediction.moves, probabilities, strict=True))
        mates = [(m, 1.0) for m, _ in scored if _mates_at_once(board, m)]
        mate_moves = {m for m, _ in mates}
        ranked = mates + [(m, p) for m, p in scored if m not in mate_moves]
        candidates = [Candidate(move=m, score=p, rank=i) for i, (m, p) in enumerate(ranked)]
        self._last = (key, candidates)
        return candidates

    def order(self, board: chess.Board) -> list[chess.Move]:
        """The legal moves of ``board``, best first by the policy."""
        return [c.move for c in self.propose(board)]

    def new_game(self) -> None:
        """Forget the cached ranking."""
        self._last = None
