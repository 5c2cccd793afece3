"""Embedding-guided search (paper section 3.4): choose moves by alignment with the advantage axis.

The static score of a position is the cosine of its embedding with the advantage axis, from
White's view (+1 White wins, -1 Black wins). White prefers high scores and Black low ones, whatever
the side to move at the root. Two modes:

``minimax`` (default; what the SOLIS reference code actually does)
    Depth-limited minimax. Every node scores all its legal children in one batch, expands only the
    ``width`` best of them for the side to move, and backs values up; the root plays the move with
    the best backed-up value. Alpha-beta cutoffs among the expanded children (searched best-first)
    return the same move and value as the plain pruned minimax (``alpha_beta=False``) while
    embedding far fewer positions. With ``frontier_batch`` a node two plies above the horizon
    scores the children of all its expanded children in one batch (bigger forward passes, at the
    price of a few positions a cutoff would have spared).

``beam`` (the paper's literal description, kept for the ablation)
    Level by level: score the children of every kept position in one batch and keep the ``width``
    best overall for the side to move at that level; play the root move whose line reached the best
    final score. Global top-k lets the opponent's best replies come from our worst moves, which is
    why it is not the default.

Game-theoretic terminals are exact and never embedded: a checkmate scores ``+-(MATE_VALUE - ply)``
(faster mates preferred, slower defeats preferred), and stalemate, insufficient material, the
50-move rule and threefold repetition (counting the game's history before the root) score
``SearchConfig.draw_score`` (the axis score of a draw, 0 unless the caller calibrates it), never
a win for either side. Terminal children take part in every node's top-k like any other child, so a
mate among a node's children is always found even when the static scores would prune it.

Static scores are kept in an :class:`EmbeddingCache` keyed by everything the model reads: the
Polyglot Zobrist hash (pieces, castling rights, the en-passant file, the side to move) extended by
the halfmove clock and the move number (:func:`latentchess.batch_keys.cache_keys`), so a position
reached with other clocks is scored afresh, as the tokens differ. Repetitions and move hints use
the plain Zobrist hash.

Modules: ``base`` (settings, results, value scale), ``cache`` (the embedding cache), ``tree`` (one
fixed-depth search: child generation, minimax with cutoffs, beam), ``searcher`` (iterative
deepening under time, node and stop limits), ``hybrid`` (the seams where the latent scorer meets
the native alpha-beta: ``BatchScorer``, ``CandidateProposer``, ply-1 move orders and the
latent-leaf horizon search; imported on its own, as it needs the native core), ``policy`` (a
Chessformer policy as the root-move prior of the latent and hybrid searches, ``policy=human``).
The native alpha-beta search is not here: it is C++ (:mod:`latentchess.core.alphabeta`).
"""

import importlib
from typing import TYPE_CHECKING, Any

from latentchess.search.base import (
    MATE_VALUE,
    MAX_DEPTH,
    MODES,
    RootMove,
    Scorer,
    SearchConfig,
    SearchResult,
    is_mate_value,
    mate_in,
    pov_score,
)

if TYPE_CHECKING:
    from latentchess.search.cache import EmbeddingCache
    from latentchess.search.searcher import Searcher

# The searcher needs the native core (move generation, keys): loaded on first use (PEP 562), so
# the settings and value scale above stay light (the UCI parsers import MAX_DEPTH).
_LAZY = {"EmbeddingCache": "latentchess.search.cache", "Searcher": "latentchess.search.searcher"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'latentchess.search' has no attribute {name!r}")


__all__ = [
    "MATE_VALUE",
    "MAX_DEPTH",
    "MODES",
    "Scorer",
    "SearchConfig",
    "SearchResult",
    "RootMove",
    "EmbeddingCache",
    "Searcher",
    "is_mate_value",
    "mate_in",
    "pov_score",
]
