"""Engines behind one interface: ours (latent search) and external UCI engines."""

from latentchess.engines.base import Analysis, Engine, MoveScore

__all__ = ["Analysis", "Engine", "MoveScore"]
