"""``latentchess bench``: a fixed-depth search over fixed positions, as Stockfish's ``bench``.

The total node count is a signature of the search: it changes when the search or the evaluation
changes and nowhere else (the search has no time- or CPU-dependent behaviour at fixed depth and
each position starts from an empty transposition table), so it must be the same on every run and
every build. ``Nodes/second`` is the speed of this machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import chess
import chess.engine

from latentchess.core.alphabeta import AlphaBeta

__all__ = ["BENCH_POSITIONS", "DEFAULT_BENCH_DEPTH", "BenchResult", "bench_boards", "run_bench"]

DEFAULT_BENCH_DEPTH = 11

# Openings and middlegames as move sequences from the start (so repetition history is exercised),
# then set-up positions by FEN (the standard perft suite's and endgames).
_LINES = (
    "",
    "e4 e5 Nf3 Nc6 Bb5 a6 Ba4 Nf6 O-O Be7 Re1 b5 Bb3 d6 c3 O-O h3",
    "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6 Be3 e5 Nb3 Be6 f3",
    "d4 Nf6 c4 e6 Nc3 Bb4 Qc2 O-O a3 Bxc3+ Qxc3 b6 Bg5 Bb7",
    "d4 d5 c4 e6 Nc3 Nf6 Bg5 Be7 e3 O-O Nf3 h6 Bh4 b6 cxd5 Nxd5",
    "e4 e6 d4 d5 Nc3 Bb4 e5 c5 a3 Bxc3+ bxc3 Ne7 Qg4 O-O",
    "e4 c6 d4 d5 e5 Bf5 Nf3 e6 Be2 Nd7 O-O Ne7 Nbd2 h6",
    "c4 e5 Nc3 Nf6 Nf3 Nc6 g3 d5 cxd5 Nxd5 Bg2 Nb6 O-O Be7",
    "Nf3 d5 g3 Nf6 Bg2 e6 O-O Be7 d3 O-O Nbd2 c5 e4 Nc6 Re1",
    "e4 e5 Nf3 Nc6 Bc4 Bc5 c3 Nf6 d4 exd4 cxd4 Bb4+ Bd2 Bxd2+ Nbxd2 d5",
    "d4 Nf6 c4 g6 Nc3 Bg7 e4 d6 Nf3 O-O Be2 e5 O-O Nc6 d5 Ne7",
    "e4 d5 exd5 Qxd5 Nc3 Qa5 d4 Nf6 Nf3 Bf5 Bc4 e6 Bd2 c6",
    "e4 e5 Nf3 Nc6 d4 exd4 Nxd4 Nf6 Nxc6 bxc6 e5 Qe7 Qe2 Nd5 c4",
    "d4 d5 Bf4 Nf6 e3 c5 c3 Nc6 Nd2 e6 Ngf3 Bd6 Bg3 O-O Bd3",
    "e4 c5 Nc3 Nc6 g3 g6 Bg2 Bg7 d3 d6 f4 e6 Nf3 Nge7 O-O O-O",
    "e4 e5 Nf3 Nf6 Nxe5 d6 Nf3 Nxe4 d4 d5 Bd3 Nc6 O-O Be7 c4",
    "d4 f5 g3 Nf6 Bg2 e6 Nf3 Be7 O-O O-O c4 d6 Nc3 Qe8",
    "e4 g6 d4 Bg7 Nc3 d6 Be3 a6 Qd2 b5 f3 Nd7 h4 h5",
    "e4 e5 Nf3 Nc6 Bb5 Nf6 O-O Nxe4 d4 Nd6 Bxc6 dxc6 dxe5 Nf5 Qxd8+ Kxd8",
    "c4 c5 Nc3 Nc6 g3 g6 Bg2 Bg7 Nf3 e6 O-O Nge7 d4 cxd4 Nxd4 d5",
)
_FENS = (
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
    "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1",
    "8/8/1p2k1p1/3p3p/1p1P1P1P/1P2PK2/8/8 w - - 0 1",
    "6k1/5p2/6p1/8/7p/8/6PP/6K1 b - - 0 1",
    "5rk1/1ppb3p/p1pb4/6q1/3P1p1r/2P1R2P/PP1BQ1P1/5RKN w - - 0 1",
    "r1bq1rk1/pp3ppp/2n1pn2/2pp4/1bPP4/2NBPN2/PP3PPP/R1BQ1RK1 w - - 0 8",
    "8/8/8/8/5kp1/P7/8/1K1N4 w - - 0 1",
    "3r2k1/p4ppp/1p6/8/8/1P3N2/P4PPP/3R2K1 w - - 0 25",
)

BENCH_POSITIONS: tuple[tuple[str, str], ...] = tuple(
    [(chess.STARTING_FEN, line) for line in _LINES] + [(fen, "") for fen in _FENS]
)
"""(FEN, space-separated SAN moves from it) for every bench position."""


def bench_boards() -> list[chess.Board]:
    """The bench positions as boards (move stacks included)."""
    boards = []
    for fen, line in BENCH_POSITIONS:
        board = chess.Board(fen)
        for san in line.split():
            board.push_san(san)
        boards.append(board)
    return boards


@dataclass(frozen=True, kw_only=True)
class BenchResult:
    """Totals of a bench run.

    Attributes:
        depth: search depth per position.
        positions: number of positions.
        nodes: nodes searched over all positions (the signature).
        time_s: wall time of the searches.
        moves: the best move found in each position (UCI).
    """

    depth: int
    positions: int
    nodes: int
    time_s: float
    moves: list[str]

    @property
    def nps(self) -> int:
        """Nodes per second."""
        return int(self.nodes / self.time_s) if self.time_s > 0 else 0


def run_bench(
    depth: int = DEFAULT_BENCH_DEPTH,
    *,
    evaluator: str = "hce",
    hash_mb: int = 16,
    parameters: Mapping[str, int] | None = None,
    progress: Callable[[int, chess.Board, int], None] | None = None,
) -> BenchResult:
    """Search every bench position to ``depth`` from an empty table; sum the nodes.

    Args:
        depth: plies per position.
        evaluator: evaluator of the engine.
        hash_mb: transposition table size (part of the signature: keep the default).
        parameters: search parameters by name (a tuned set has its own signature; the
            defaults give the search's).
        progress: called as ``progress(index, board, nodes)`` after each position.
    """
    engine = AlphaBeta(evaluator, hash_mb=hash_mb, parameters=parameters)
    total, elapsed, moves = 0, 0.0, []
    for index, board in enumerate(bench_boards()):
        engine.new_game()
        began = time.perf_counter()
        outcome = engine.search(board, chess.engine.Limit(depth=depth))
        elapsed += time.perf_counter() - began
        total += outcome.nodes
        moves.append(outcome.best_move.uci() if outcome.best_move else "0000")
        if progress is not None:
            progress(index, board, outcome.nodes)
    return BenchResult(
        depth=depth, positions=len(BENCH_POSITIONS), nodes=total, time_s=elapsed, moves=moves
    )
