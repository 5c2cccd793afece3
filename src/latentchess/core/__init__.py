"""The native core: a C++ chess board (bitboards, legal move generation, perft, Zobrist keys,
77-token encoding), the alpha-beta search (:mod:`latentchess.core.alphabeta`) and the HCE and NNUE
evaluations, built as the pybind11 extension ``latentchess.core._native``.

Python stays the project's language; this package is the typed wrapper around the hot loop.
See ``src/latentchess/core/cpp/`` for the C++ sources (one concept per file, invariants at the top
of each) and the README section "Native core" for the build switches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

try:
    from latentchess.core import _native
except ImportError as error:  # pragma: no cover - only when the extension was not built
    raise ImportError(
        "latentchess.core._native is not built: run 'make setup' (or 'pip install -e .') in the "
        f"checkout to compile the native core ({error})"
    ) from error


if TYPE_CHECKING:  # numpy loads with the arrays the core returns, not with the module
    import numpy as np
    import numpy.typing as npt

from latentchess.core.board import DRAWN, MATED, NORMAL, Board, Expansion

__all__ = [
    "Board",
    "Expansion",
    "NORMAL",
    "MATED",
    "DRAWN",
    "tokenize_fens",
    "board_tokens",
    "perft",
]


def tokenize_fens(fens: Sequence[str]) -> npt.NDArray[np.uint8]:
    """``(N, 77)`` uint8 tokens of FEN strings, equal to ``encoding.tokenize_batch(fens)``.

    Raises:
        InvalidFenError: a FEN the tokenizer refuses.
    """
    return _native.tokenize_fens(list(fens))


def board_tokens(fens: Sequence[str]) -> npt.NDArray[np.uint8]:
    """``(N, 77)`` tokens of the boards the FENs set up, equal to ``fastboard.tokenize_boards``.

    Unlike :func:`tokenize_fens`, castling rights are cleaned and an en-passant square is kept only
    when an en-passant capture is legal (as ``chess.Board(fen).fen()`` writes them).

    Raises:
        InvalidFenError: a FEN the board refuses.
    """
    return _native.board_tokens(list(fens))


def perft(fen: str, depth: int) -> int:
    """Leaf count of the legal move tree of ``fen`` to ``depth``."""
    return Board(fen).perft(depth)
