"""The standard perft suite with its published node counts.

Positions 1-6 are the chessprogramming wiki's "Perft Results" (start position, "Kiwipete",
positions 3-6, position 4 also mirrored); the rest are Martin Sedlak's special cases posted on
TalkChess (illegal en passant, checks by castling or en passant, promotions, under-promotions);
the ``chess960-N`` positions are the first six of the chessprogramming wiki's "Chess960 Perft
Results" (Shredder-FEN castling, played with Chess960 rules), to depth 5.
Published depth -> node count; perft is bulk counted at depth 1.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["PerftCase", "PerftOutcome", "PERFT_SUITE", "cases_up_to", "run_suite", "format_divide"]


@dataclass(frozen=True, kw_only=True)
class PerftCase:
    """One suite position: its name, FEN, published ``{depth: nodes}`` and whether it is played
    with Chess960 rules."""

    name: str
    fen: str
    nodes: dict[int, int]
    chess960: bool = False


PERFT_SUITE: tuple[PerftCase, ...] = (
    PerftCase(
        name="start",
        fen="rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        nodes={1: 20, 2: 400, 3: 8_902, 4: 197_281, 5: 4_865_609, 6: 119_060_324},
    ),
    PerftCase(
        name="kiwipete",
        fen="r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        nodes={1: 48, 2: 2_039, 3: 97_862, 4: 4_085_603, 5: 193_690_690},
    ),
    PerftCase(
        name="position3",
        fen="8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
        nodes={1: 14, 2: 191, 3: 2_812, 4: 43_238, 5: 674_624, 6: 11_030_083, 7: 178_633_661},
    ),
    PerftCase(
        name="position4",
        fen="r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
        nodes={1: 6, 2: 264, 3: 9_467, 4: 422_333, 5: 15_833_292, 6: 706_045_033},
    ),
    PerftCase(
        name="position4-mirrored",
        fen="r2q1rk1/pP1p2pp/Q4n2/bbp1p3/Np6/1B3NBn/pPPP1PPP/R3K2R b KQ - 0 1",
        nodes={1: 6, 2: 264, 3: 9_467, 4: 422_333, 5: 15_833_292, 6: 706_045_033},
    ),
    PerftCase(
        name="position5",
        fen="rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
        nodes={1: 44, 2: 1_486, 3: 62_379, 4: 2_103_487, 5: 89_941_194},
    ),
    PerftCase(
        name="position6",
        fen="r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
        nodes={1: 46, 2: 2_079, 3: 89_890, 4: 3_894_594, 5: 164_075_551},
    ),
    PerftCase(name="illegal-ep-1", fen="3k4/3p4/8/K1P4r/8/8/8/8 b - - 0 1", nodes={6: 1_134_888}),
    PerftCase(name="illegal-ep-2", fen="8/8/4k3/8/2p5/8/B2P2K1/8 w - - 0 1", nodes={6: 1_015_133}),
    PerftCase(
        name="ep-gives-check", fen="8/8/1k6/2b5/2pP4/8/5K2/8 b - d3 0 1", nodes={6: 1_440_467}
    ),
    PerftCase(name="short-castle-check", fen="5k2/8/8/8/8/8/8/4K2R w K - 0 1", nodes={6: 661_072}),
    PerftCase(name="long-castle-check", fen="3k4/8/8/8/8/8/8/R3K3 w Q - 0 1", nodes={6: 803_711}),
    PerftCase(
        name="castling-rights",
        fen="r3k2r/1b4bq/8/8/8/8/7B/R3K2R w KQkq - 0 1",
        nodes={4: 1_274_206},
    ),
    PerftCase(
        name="castling-prevented",
        fen="r3k2r/8/3Q4/8/8/5q2/8/R3K2R b KQkq - 0 1",
        nodes={4: 1_720_476},
    ),
    PerftCase(
        name="promote-out-of-check", fen="2K2r2/4P3/8/8/8/8/8/3k4 w - - 0 1", nodes={6: 3_821_001}
    ),
    PerftCase(
        name="discovered-check", fen="8/8/1P2K3/8/2n5/1q6/8/5k2 b - - 0 1", nodes={5: 1_004_658}
    ),
    PerftCase(name="promote-give-check", fen="4k3/1P6/8/8/8/8/K7/8 w - - 0 1", nodes={6: 217_342}),
    PerftCase(name="under-promote-check", fen="8/P1k5/K7/8/8/8/8/8 w - - 0 1", nodes={6: 92_683}),
    PerftCase(name="self-stalemate", fen="K1k5/8/P7/8/8/8/8/8 w - - 0 1", nodes={6: 2_217}),
    PerftCase(name="stalemate-checkmate", fen="8/k1P5/8/1K6/8/8/8/8 w - - 0 1", nodes={7: 567_584}),
    PerftCase(name="double-check", fen="8/8/2k5/5q2/5n2/8/5K2/8 b - - 0 1", nodes={4: 23_527}),
    *(
        PerftCase(
            name=f"chess960-{index}", fen=fen, nodes=dict(enumerate(counts, 1)), chess960=True
        )
        for index, (fen, counts) in enumerate(
            [
                (
                    "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9",
                    (21, 528, 12_189, 326_672, 8_146_062),
                ),
                (
                    "2nnrbkr/p1qppppp/8/1ppb4/6PP/3PP3/PPP2P2/BQNNRBKR w HEhe - 1 9",
                    (21, 807, 18_002, 667_366, 16_253_601),
                ),
                (
                    "b1q1rrkb/pppppppp/3nn3/8/P7/1PPP4/4PPPP/BQNNRKRB w GE - 1 9",
                    (20, 479, 10_471, 273_318, 6_417_013),
                ),
                (
                    "qbbnnrkr/2pp2pp/p7/1p2pp2/8/P3PP2/1PPP1KPP/QBBNNR1R w hf - 0 9",
                    (22, 593, 13_440, 382_958, 9_183_776),
                ),
                (
                    "1nbbnrkr/p1p1ppp1/3p4/1p3P1p/3Pq2P/8/PPP1P1P1/QNBBNRKR w HFhf - 0 9",
                    (28, 1_120, 31_058, 1_171_749, 34_030_312),
                ),
                (
                    "qnbnr1kr/ppp1b1pp/4p3/3p1p2/8/2NPP3/PPP1BPPP/QNB1R1KR w HEhe - 1 9",
                    (29, 899, 26_578, 824_055, 24_851_983),
                ),
            ]
        )
    ),
)


def cases_up_to(max_nodes: int) -> list[tuple[PerftCase, int, int]]:
    """``(case, depth, nodes)`` for every published count of at most ``max_nodes`` nodes."""
    return [
        (case, depth, nodes)
        for case in PERFT_SUITE
        for depth, nodes in sorted(case.nodes.items())
        if nodes <= max_nodes
    ]


@dataclass(frozen=True, kw_only=True)
class PerftOutcome:
    """One suite count as run: the published and the computed nodes and the time taken."""

    name: str
    fen: str
    depth: int
    expected: int
    nodes: int
    seconds: float

    @property
    def ok(self) -> bool:
        """Whether the computed count equals the published one."""
        return self.nodes == self.expected


def run_suite(
    max_nodes: int, on_result: Callable[[PerftOutcome], None] | None = None
) -> list[PerftOutcome]:
    """Run every published count of at most ``max_nodes`` nodes on the native core.

    Args:
        max_nodes: the largest count to run (119,060,324 includes start-position depth 6).
        on_result: called after each count (progress printing).
    """
    from latentchess.core import Board

    outcomes = []
    for case, depth, expected in cases_up_to(max_nodes):
        began = time.perf_counter()
        nodes = Board(case.fen, chess960=case.chess960).perft(depth)
        outcome = PerftOutcome(
            name=case.name,
            fen=case.fen,
            depth=depth,
            expected=expected,
            nodes=nodes,
            seconds=time.perf_counter() - began,
        )
        outcomes.append(outcome)
        if on_result is not None:
            on_result(outcome)
    return outcomes


def format_divide(divide: dict[str, int]) -> list[str]:
    """Stockfish's ``go perft`` output lines: ``move: nodes`` ..., blank, ``Nodes searched: N``."""
    return [f"{move}: {nodes}" for move, nodes in divide.items()] + [
        "",
        f"Nodes searched: {sum(divide.values())}",
    ]
