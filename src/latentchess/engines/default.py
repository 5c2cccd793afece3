"""Which engine ``latentchess`` uses when none is named: one constant, read everywhere.

``latentchess uci``, ``bestmove``, ``analyse``, ``play``, ``demo`` and the web board's first
opponent all start :data:`DEFAULT_ENGINE_SPEC` unless told otherwise (``--engine SPEC``, the UCI
``Engine`` option, the page's engine menu). The latent planner is ``--engine latent``.
"""

from __future__ import annotations

__all__ = ["DEFAULT_ENGINE_SPEC", "DEFAULT_EVALUATOR", "DEFAULT_MOVE_TIME_S"]

DEFAULT_ENGINE_SPEC = "ab"
"""The measured-strongest engine: alpha-beta on the native core with the shipped NNUE.

Measured on this project's Stockfish 15.1 ``UCI_Elo`` ladder (``benchmarks/results/ab_ladder/``)
with the hand-crafted evaluation: 1965 [1902, 2028] at 50 ms/move, 2187 [2058, 2316] and 2232
[2102, 2362] at 10+0.1; with the NNUE (:data:`DEFAULT_EVALUATOR`) 2629 [2543, 2715] at 10+0.1,
and 3377 [3335, 3419] on the CCRL Blitz scale against three CCRL-rated engines at 10+0.1
(``benchmarks/results/ccrl_ladder/``), and it beats the
hand-crafted evaluation at equal time (``benchmarks/results/nnue_distil/``). The latent planner
reached 1358 [1242, 1475] at 10+0.1 with the shipped sparse model
(``benchmarks/results/latent_tc/``), and no hybrid mode beat ``ab`` at equal time
(``benchmarks/results/hybrid/``; ``hybrid:mode=order``, the closest, -24 [-61, +13] at 10+0.1
with the GAB proposer, ``hybrid/nnue/gab-micro/``, -70 [-128, -17] with the sparse one,
``hybrid/nnue/sparse-64/``).
Change it only with a ladder that says so.
"""

DEFAULT_EVALUATOR = "nnue"
"""The static evaluation of ``ab`` (and of the hybrid's alpha-beta) when a spec names none: the
shipped NNUE (``weights/nnue-default``). Against the hand-crafted evaluation it scored +168
[87, 272] Elo at 40,000 nodes per move and +83 [12, 160] at 100 ms per move, 60 games each
(``benchmarks/results/nnue_distil/``). ``ab:eval=hce`` keeps the hand-crafted one."""

DEFAULT_MOVE_TIME_S = 1.0
"""Seconds per move an engine thinks when a caller gives no limit (``Engine.default_limit``)."""
