"""The latent search expands nodes on the native core with the same result as on python-chess."""

from __future__ import annotations

import chess
import numpy as np
import numpy.typing as npt
import pytest

from latentchess.batch_keys import zobrist_hashes
from latentchess.search import SearchConfig, Searcher, SearchResult, tree

POSITIONS = [
    chess.STARTING_FEN,
    "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",  # mate in one
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "7k/5Q2/8/6K1/8/8/8/8 w - - 0 1",  # stalemate traps
]


def fake_embedder(boards: list[chess.Board]) -> npt.NDArray[np.float64]:
    """A deterministic 'axis score' in [-1, 1] from the position's hash (ties are rare)."""
    keys = zobrist_hashes(boards).astype(np.float64)
    return np.cos(keys)


def run(
    fen: str, config: SearchConfig, native: bool, monkeypatch: pytest.MonkeyPatch
) -> SearchResult:
    monkeypatch.setattr(tree, "NATIVE_EXPANSION", native)
    board = chess.Board(fen)
    return Searcher(fake_embedder, config).search(board, iterate=False)


@pytest.mark.parametrize(
    "config",
    [
        SearchConfig(depth=4, width=3),
        SearchConfig(depth=3, width=3, alpha_beta=False, leaf_chunk=0),
        SearchConfig(mode="beam", depth=4, width=3),
    ],
)
def test_native_expansion_gives_the_same_search(
    config: SearchConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    for fen in POSITIONS:
        native = run(fen, config, True, monkeypatch)
        reference = run(fen, config, False, monkeypatch)
        assert native.move == reference.move, fen
        assert native.value == reference.value, fen
        assert native.pv == reference.pv, fen
        assert native.nodes == reference.nodes, fen
        assert [(m.move, m.static, m.value) for m in native.root_moves] == [
            (m.move, m.static, m.value) for m in reference.root_moves
        ], fen
