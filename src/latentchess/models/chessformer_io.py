"""Chessformer model directories and batched inference on python-chess boards.

A model directory holds ``model.safetensors`` (weights) and ``config.json``::

    {"format": "latentchess-chessformer", "format_version": 1, "encoding": "squares-v1",
     "chessformer": {...ChessformerConfig...}, "training": {...}, "metrics": {...}}

No pickle: loading an untrusted directory cannot run code. The network is rebuilt from the stored
config and every tensor must match it by name and shape.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess
import numpy as np
import numpy.typing as npt
import torch

from latentchess.errors import ModelFileError
from latentchess.models.chessformer import Chessformer, ChessformerConfig
from latentchess.provenance import git_commit as _git_commit
from latentchess.squares import (
    encode_board,
    index_move,
    legal_mask,
)

__all__ = [
    "CHESSFORMER_FORMAT",
    "ENCODING",
    "save_chessformer",
    "load_chessformer",
    "default_chessformer_path",
    "shipped_chessformer_path",
    "resolve_chessformer_path",
    "SHIPPED_MODELS",
    "ChessformerModel",
    "Prediction",
]

CHESSFORMER_FORMAT = "latentchess-chessformer"
ENCODING = "squares-v1"
_WEIGHTS, _CONFIG = "model.safetensors", "config.json"


SHIPPED_MODELS = {"human": "chessformer-human", "engine": "chessformer-engine"}
"""The Chessformers in the package, by name: ``human`` (rated Lichess games, skill-conditioned) and
``engine`` (Stockfish and TCEC best moves and win probabilities)."""


def default_chessformer_path() -> Path:
    """The shipped human-move model, ``latentchess/weights/chessformer-human``."""
    return shipped_chessformer_path("human")


def shipped_chessformer_path(name: str) -> Path:
    """The directory of a shipped model (:data:`SHIPPED_MODELS`)."""
    if name not in SHIPPED_MODELS:
        raise ModelFileError(
            f"no shipped Chessformer named {name!r}; shipped: {sorted(SHIPPED_MODELS)}"
        )
    return Path(__file__).resolve().parents[1] / "weights" / SHIPPED_MODELS[name]


def resolve_chessformer_path(spec: str | Path | None) -> Path:
    """A model directory from a name (``human``, ``engine``; ``default``/None: human) or a path.

    An existing directory of that name wins over a shipped model's name.
    """
    if spec is None or str(spec).lower() == "default":
        return default_chessformer_path()
    if str(spec).lower() in SHIPPED_MODELS and not Path(spec).is_dir():
        return shipped_chessformer_path(str(spec).lower())
    return Path(spec)


def save_chessformer(
    path: str | Path,
    model: Chessformer,
    metadata: dict[str, Any],
    *,
    dtype: torch.dtype | None = None,
) -> Path:
    """Write a model directory atomically (a temporary directory renamed into place).

    ``dtype`` (e.g. ``torch.float16``) stores the weights at that precision, for a smaller shipped
    file; loading always rebuilds a float32 network.
    """
    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        tensors = {
            k: (v if dtype is None or not v.is_floating_point() else v.to(dtype))
            .detach()
            .cpu()
            .contiguous()
            for k, v in model.state_dict().items()
        }
        save_file(tensors, str(tmp / _WEIGHTS))
        config = {
            "format": CHESSFORMER_FORMAT,
            "format_version": 1,
            "encoding": ENCODING,
            "chessformer": model.cfg.to_dict(),
            "git_commit": _git_commit(),
            **metadata,
        }
        (tmp / _CONFIG).write_text(json.dumps(config, indent=2) + "\n")
        tmp.chmod(0o755)  # mkdtemp makes it private; a model directory is for sharing
        for file in tmp.iterdir():
            file.chmod(0o644)
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return path


def load_chessformer(path: str | Path) -> tuple[Chessformer, dict[str, Any]]:
    """Rebuild a model from its directory; returns the network (eval mode) and its config dict.

    Raises:
        ModelFileError: missing files, another format, or weights that do not fit the config.
    """
    from safetensors.torch import load_file

    path = Path(path)
    config_path = path / _CONFIG
    try:
        config = json.loads(config_path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ModelFileError(f"cannot read {str(config_path)!r}: {error}") from error
    if config.get("format") != CHESSFORMER_FORMAT or config.get("encoding") != ENCODING:
        raise ModelFileError(
            f"{str(config_path)!r} is not a Chessformer model (format {config.get('format')!r}, "
            f"encoding {config.get('encoding')!r})"
        )
    try:
        cfg = ChessformerConfig.from_dict(config["chessformer"])
    except (KeyError, TypeError, ValueError) as error:
        raise ModelFileError(f"bad Chessformer config in {str(config_path)!r}: {error}") from error
    model = Chessformer(cfg)
    try:
        state = load_file(str(path / _WEIGHTS))
        model.load_state_dict(state, strict=True)
    except Exception as error:  # safetensors and torch raise many types
        raise ModelFileError(f"cannot load weights from {str(path)!r}: {error}") from error
    model.eval()
    return model, config


@dataclass(frozen=True)
class Prediction:
    """The model's output for one position.

    Attributes:
        moves: legal moves, most probable first.
        probabilities: their policy probabilities (same order).
        wdl: (win, draw, loss) probabilities of the side to move.
    """

    moves: tuple[chess.Move, ...]
    probabilities: npt.NDArray[np.float32]
    wdl: npt.NDArray[np.float32]

    @property
    def score(self) -> float:
        """Expected score of the side to move, win + draw / 2."""
        return float(self.wdl[0] + 0.5 * self.wdl[1])


class ChessformerModel:
    """A loaded Chessformer for python-chess boards (history from each board's move stack).

    Args:
        network: the network.
        config: the model directory's config dict (or ``{}``).
        device: where to run.
    """

    def __init__(
        self,
        network: Chessformer,
        config: dict[str, Any] | None = None,
        device: torch.device | str = "cpu",
    ) -> None:
        self.device = torch.device(device)
        self.network = network.to(self.device).eval()
        self.config = config or {}
        self.cfg = network.cfg
        self.directory: Path | None = None
        """The directory the model was loaded from (None: built in memory)."""

    @property
    def default_elo(self) -> float | None:
        """Both players' rating the model was trained for, when one rating fits all its data
        (a model of engine moves: ``default_elo`` in its config), else None."""
        value = self.config.get("default_elo")
        return None if value is None else float(value)

    @classmethod
    def load(cls, path: str | Path | None = None, device: str = "cpu") -> ChessformerModel:
        directory = resolve_chessformer_path(path)
        network, config = load_chessformer(directory)
        model = cls(network, config, device)
        model.directory = directory
        return model

    def features(self, boards: Sequence[chess.Board]) -> npt.NDArray[np.float32]:
        """(B, 64, features) inputs."""
        cfg = self.cfg
        return np.stack([encode_board(b, cfg.history, cfg.side_features) for b in boards])

    @torch.no_grad()
    def logits(
        self,
        boards: Sequence[chess.Board],
        self_elo: float | Sequence[float],
        oppo_elo: float | Sequence[float],
        speed: int | Sequence[int] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Raw (B, 4352) policy logits with illegal moves at -inf, and (B, 3) WDL logits.

        ``speed``: the game's time-control band (an index in
        :data:`latentchess.data.moves.TIME_CONTROL_BANDS`; None: unknown), read only by a model
        with the time-control input."""
        n = len(boards)
        features = torch.from_numpy(self.features(boards)).to(self.device)
        mine = torch.as_tensor(np.broadcast_to(np.asarray(self_elo, np.float32), (n,)).copy())
        theirs = torch.as_tensor(np.broadcast_to(np.asarray(oppo_elo, np.float32), (n,)).copy())
        bands = None
        if speed is not None and self.cfg.time_control:
            bands = torch.as_tensor(np.broadcast_to(np.asarray(speed, np.int64), (n,)).copy())
            bands = bands.to(self.device)
        policy, value = self.network(features, mine.to(self.device), theirs.to(self.device), bands)
        mask = torch.from_numpy(legal_mask(boards)).to(self.device)
        return policy.float().masked_fill(~mask, float("-inf")), value.float()

    def predict(
        self,
        boards: Sequence[chess.Board],
        self_elo: float | Sequence[float] = 1500.0,
        oppo_elo: float | Sequence[float] = 1500.0,
        *,
        temperature: float = 1.0,
        speed: int | Sequence[int] | None = None,
    ) -> list[Prediction]:
        """Policy over the legal moves and WDL for each board (boards must have a legal move);
        ``speed`` as in :meth:`logits`."""
        policy, value = self.logits(boards, self_elo, oppo_elo, speed)
        probs = torch.softmax(policy / max(temperature, 1e-6), dim=1).cpu().numpy()
        wdl = torch.softmax(value, dim=1).cpu().numpy()
        out = []
        for row, board in enumerate(boards):
            legal = np.flatnonzero(np.isfinite(policy[row].cpu().numpy()))
            order = legal[np.argsort(-probs[row, legal], kind="stable")]
            moves = tuple(index_move(int(i), board.turn) for i in order)
            out.append(Prediction(moves, probs[row, order].astype(np.float32), wdl[row]))
        return out
