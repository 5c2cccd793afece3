"""Engines behind one interface (:class:`Engine`), each named by a spec string.

Ours: ``latent`` (the SOLIS latent planner, ``latent.py``), ``ab`` (native alpha-beta, ``ab.py``;
the default, ``default.py``), ``hybrid`` (latent proposals validated by alpha-beta, ``hybrid.py``),
``chessformer`` (a policy/value network without search, ``chessformer.py``) and the baselines
``random`` / ``greedy`` (``baselines.py``); others: Stockfish, Sunfish and any UCI/xboard engine
(``external.py``). :func:`latentchess.engines.registry.create_engine` starts any of them.
"""

from latentchess.engines.base import Analysis, Engine, MoveScore

__all__ = ["Analysis", "Engine", "MoveScore"]
