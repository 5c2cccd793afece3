"""Evaluation: matches against real engines, Elo fits, ladders, puzzles and EPD suites.

Modules: ``limits`` (per-side limit strings), ``openings`` (PGN/EPD/Polyglot/ECO openings),
``game`` (one game and its PGN record), ``match`` (concurrent, resumable matches), ``sprt``
(sequential tests over game pairs), ``spsa`` (tuning engine parameters by SPSA over game
pairs), ``elo`` (BayesElo fits), ``ladder`` (bracket search against
rated opponents), ``puzzles`` (Lichess-format puzzles), ``epd`` (bm/am and STS suites), ``workers``
(one engine per thread over many items), ``human`` (human move matching's protocol: plies,
clocks, speeds, bands, held-out players, intervals),
``attention`` (the Chessformer paper's attention analysis) and ``attribution`` (integrated
gradients of a Chessformer move over the squares).
Names below load on first use, so importing this package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> module that defines it; loaded lazily (PEP 562).
_LAZY: dict[str, str] = {
    "SideLimit": "latentchess.evaluation.limits",
    "parse_limit": "latentchess.evaluation.limits",
    "Opening": "latentchess.evaluation.openings",
    "load_openings": "latentchess.evaluation.openings",
    "eco_openings": "latentchess.evaluation.openings",
    "Player": "latentchess.evaluation.match",
    "Adjudication": "latentchess.evaluation.match",
    "MatchConfig": "latentchess.evaluation.match",
    "MatchResult": "latentchess.evaluation.match",
    "GameRecord": "latentchess.evaluation.match",
    "run_match": "latentchess.evaluation.match",
    "SprtConfig": "latentchess.evaluation.sprt",
    "SprtStatus": "latentchess.evaluation.sprt",
    "sprt_status": "latentchess.evaluation.sprt",
    "pentanomial_elo": "latentchess.evaluation.sprt",
    "SpsaParameter": "latentchess.evaluation.spsa",
    "SpsaConfig": "latentchess.evaluation.spsa",
    "SpsaState": "latentchess.evaluation.spsa",
    "run_spsa": "latentchess.evaluation.spsa",
    "match_objective": "latentchess.evaluation.spsa",
    "GameOutcome": "latentchess.evaluation.elo",
    "EloFit": "latentchess.evaluation.elo",
    "fit_bayeselo": "latentchess.evaluation.elo",
    "read_pgn_outcomes": "latentchess.evaluation.elo",
    "score_elo": "latentchess.evaluation.elo",
    "Rung": "latentchess.evaluation.ladder",
    "run_ladder": "latentchess.evaluation.ladder",
    "default_rungs": "latentchess.evaluation.ladder",
    "Puzzle": "latentchess.evaluation.puzzles",
    "read_puzzles": "latentchess.evaluation.puzzles",
    "run_puzzles": "latentchess.evaluation.puzzles",
    "make_puzzles": "latentchess.evaluation.puzzles",
    "read_epd": "latentchess.evaluation.epd",
    "HumanProtocol": "latentchess.evaluation.human",
    "lichess_speed": "latentchess.evaluation.human",
    "read_game_headers": "latentchess.evaluation.human",
    "training_players": "latentchess.evaluation.human",
    "protocol_mask": "latentchess.evaluation.human",
    "band_table": "latentchess.evaluation.human",
    "run_epd": "latentchess.evaluation.epd",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'latentchess.evaluation' has no attribute {name!r}")


__all__ = [*_LAZY]
