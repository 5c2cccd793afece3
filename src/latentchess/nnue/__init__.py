"""NNUE: feature sets, the network, its training and quantisation (Lombardo 2024)."""

from __future__ import annotations

__all__: list[str] = []
