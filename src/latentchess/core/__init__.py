"""The native core: a C++ chess board (bitboards, legal move generation, perft, Zobrist keys,
77-token encoding), the alpha-beta search (:mod:`latentchess.core.alphabeta`) and the HCE and NNUE
evaluations, built as the pybind11 extension ``latentchess.core._native``.

Python stays the project's language; this package is the typed wrapper around the hot loop.
See ``src/latentchess/core/cpp/`` for the C++ sources (one concept per file, invariants at the top
of each) and the README section "Native core" for the build switches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

try:
    from latentchess.core import _native
except ImportError as error:  # only when the extension was not built (or cannot load here)
    # The package still imports, so that its pure-Python modules (``core.nnue``: where networks
    # live) serve training and export on a machine without a compiler; anything that needs the
    # board raises the error below when it is first touched.
    _MISSING: ImportError | None = ImportError(
        "latentchess.core._native is not built: run 'make setup' (or 'pip install -e .') in the "
        f"checkout to compile the native core ({error})"
    )
else:
    _MISSING = None

if TYPE_CHECKING:  # numpy loads with the arrays the core returns, not with the module
    import numpy as np
    import numpy.typing as npt

if _MISSING is None:
    from latentchess.core.board import DRAWN, MATED, NORMAL, Board, Expansion
else:

    def __getattr__(name: str) -> object:
        if name in __all__ or name == "_native":
            raise _MISSING from None
        raise AttributeError(f"module 'latentchess.core' has no attribute {name!r}")


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


def _native_or_raise() -> Any:
    """The extension module, or the clear error of a checkout whose core was not compiled."""
    if _MISSING is not None:
        raise _MISSING
    return _native


def tokenize_fens(fens: Sequence[str]) -> npt.NDArray[np.uint8]:
    """``(N, 77)`` uint8 tokens of FEN strings, equal to ``encoding.tokenize_batch(fens)``.

    Raises:
        InvalidFenError: a FEN the tokenizer refuses.
    """
    return _native_or_raise().tokenize_fens(list(fens))


def board_tokens(fens: Sequence[str]) -> npt.NDArray[np.uint8]:
    """``(N, 77)`` tokens of the boards the FENs set up, equal to ``fastboard.tokenize_boards``.

    Unlike :func:`tokenize_fens`, castling rights are cleaned and an en-passant square is kept only
    when an en-passant capture is legal (as ``chess.Board(fen).fen()`` writes them).

    Raises:
        InvalidFenError: a FEN the board refuses.
    """
    return _native_or_raise().board_tokens(list(fens))


def perft(fen: str, depth: int) -> int:
    """Leaf count of the legal move tree of ``fen`` to ``depth``."""
    _native_or_raise()
    return Board(fen).perft(depth)
