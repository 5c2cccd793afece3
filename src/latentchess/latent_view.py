"""A 2-D view of a model's latent space, fitted once per model and cached on disk.

The view is a PCA of the unit embeddings of a fixed set of 2,000 Stockfish-labelled positions
(``resources/view_positions.csv.gz``, made by ``scripts/make_view_positions.py``). PCA rather than
UMAP (which ``latentchess plot umap`` uses for the paper's picture) because the web board needs:

* a fixed map that new positions are placed on exactly and at once (a linear map; UMAP's
  ``transform`` is an approximate optimisation per call);
* a quick start (importing UMAP and compiling its numba kernels alone takes many seconds);
* the advantage axis drawn as what it is, a direction: a linear map takes it to a 2-D vector.

The first component is signed so that the axis points right. The fitted view is cached per model
content (a SHA-256 of the weights, the axis and the position set) under
``$XDG_CACHE_HOME/latentchess/latent-view/`` (default ``~/.cache``), written atomically.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from latentchess.errors import DataFormatError

if TYPE_CHECKING:
    from latentchess.models.inference import LatentModel

__all__ = ["LatentView", "fit_latent_view", "load_latent_view", "cache_dir", "model_digest"]

FloatArray = npt.NDArray[np.float32]
VIEW_VERSION = 1
"""Bump when the fitting changes, so stale cache files are not used."""
_POSITIONS = "view_positions.csv.gz"


@dataclass(frozen=True, kw_only=True)
class LatentView:
    """A fitted linear 2-D projection of a model's embeddings.

    Attributes:
        mean: ``(D,)`` mean embedding of the reference positions.
        components: ``(2, D)`` orthonormal principal directions.
        points: ``(N, 2)`` the reference positions on the map.
        win_prob_white: ``(N,)`` their Stockfish White win probabilities.
        axis_2d: ``(2,)`` image of the unit advantage axis (its length is the share of the axis
            that lies in the plane; 1 would mean entirely).
        explained: ``(2,)`` fraction of the embeddings' variance along each component.
        digest: the cache key (model content and position set).
    """

    mean: FloatArray
    components: FloatArray
    points: FloatArray
    win_prob_white: FloatArray
    axis_2d: FloatArray
    explained: FloatArray
    digest: str

    def transform(self, embeddings: npt.ArrayLike) -> FloatArray:
        """Place ``(N, D)`` embeddings on the map: ``(N, 2)``."""
        array = np.asarray(embeddings, dtype=np.float32)
        return ((array - self.mean) @ self.components.T).astype(np.float32)  # (N, 2)


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/latentchess`` (default ``~/.cache/latentchess``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "latentchess"


def reference_positions() -> tuple[list[str], FloatArray]:
    """The fixed positions and their labels shipped with the package.

    Raises:
        DataFormatError: a malformed line (file:line).
    """
    data = resources.files("latentchess.resources").joinpath(_POSITIONS).read_bytes()
    fens: list[str] = []
    probs: list[float] = []
    text = gzip.decompress(data).decode("utf-8")
    for number, line in enumerate(text.splitlines(), 1):
        fen, sep, prob = line.rpartition(",")
        try:
            value = float(prob)
        except ValueError:
            value = float("nan")
        if not sep or not 0.0 <= value <= 1.0:
            raise DataFormatError(
                f"expected 'FEN,win_prob', got {line!r}", path=_POSITIONS, line=number
            )
        fens.append(fen)
        probs.append(value)
    return fens, np.asarray(probs, dtype=np.float32)


Positions = tuple[list[str], FloatArray]
"""Reference positions: FENs and their White win probabilities."""


def model_digest(model: LatentModel, positions: Positions | None = None) -> str:
    """SHA-256 of the model's content, the position set and the view version.

    The content of a model loaded from disk is its files (``model.safetensors``, ``config.json``),
    whatever precision it runs in; of an in-memory model, its float32 weights and axis.
    """
    digest = hashlib.sha256(f"latent-view-{VIEW_VERSION}".encode())
    if positions is None:
        digest.update(resources.files("latentchess.resources").joinpath(_POSITIONS).read_bytes())
    else:
        digest.update("\n".join(positions[0]).encode())
        digest.update(np.asarray(positions[1], dtype=np.float32).tobytes())
    names = ("model.safetensors", "config.json")
    files = [Path(model.path) / name for name in names] if model.path else []
    if files and all(f.is_file() for f in files):
        for file in files:
            digest.update(file.read_bytes())
        return digest.hexdigest()
    for name, tensor in sorted(model.encoder.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().float().cpu().contiguous().numpy().tobytes())
    digest.update(np.asarray(model.axis, dtype=np.float32).tobytes())
    return digest.hexdigest()


def fit_latent_view(model: LatentModel, positions: Positions | None = None) -> LatentView:
    """Embed the reference positions and fit the PCA (no cache).

    Args:
        model: the model.
        positions: reference positions (default: :func:`reference_positions`).
    """
    fens, probs = positions or reference_positions()
    if len(fens) < 3 or len(fens) != len(probs):
        raise ValueError(f"need >= 3 positions with one label each, got {len(fens)}/{len(probs)}")
    embeddings = model.embed(fens, batch_size=512)  # (N, D)
    mean = embeddings.mean(axis=0)
    centred = embeddings - mean
    _, singular, vt = np.linalg.svd(centred.astype(np.float64), full_matrices=False)
    components = vt[:2].astype(np.float32)  # (2, D)
    unit_axis = (model.axis / np.linalg.norm(model.axis)).astype(np.float32)
    axis_2d = components @ unit_axis  # (2,)
    if axis_2d[0] < 0:  # the axis points right
        components[0] = -components[0]
    if axis_2d[1] < 0:
        components[1] = -components[1]
    variance = singular**2
    return LatentView(
        mean=mean.astype(np.float32),
        components=components,
        points=(centred @ components.T).astype(np.float32),
        win_prob_white=probs,
        axis_2d=(components @ unit_axis).astype(np.float32),
        explained=(variance[:2] / variance.sum()).astype(np.float32),
        digest=model_digest(model, positions),
    )


def load_latent_view(
    model: LatentModel, *, directory: Path | None = None, positions: Positions | None = None
) -> LatentView:
    """The model's view from the cache, fitting and caching it on a miss (atomic write).

    Args:
        model: the model.
        directory: cache directory (default ``cache_dir() / "latent-view"``).
        positions: reference positions (default: the shipped 2,000).
    """
    directory = directory or cache_dir() / "latent-view"
    digest = model_digest(model, positions)
    path = directory / f"{digest[:32]}.npz"
    if path.is_file():
        try:
            with np.load(path) as stored:
                view = LatentView(
                    mean=stored["mean"],
                    components=stored["components"],
                    points=stored["points"],
                    win_prob_white=stored["win_prob_white"],
                    axis_2d=stored["axis_2d"],
                    explained=stored["explained"],
                    digest=str(stored["digest"]),
                )
            if view.digest == digest:
                return view
        except (OSError, KeyError, ValueError):
            pass  # a damaged cache file is refitted and replaced
    view = fit_latent_view(model, positions)
    directory.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    np.savez(
        buffer,
        mean=view.mean,
        components=view.components,
        points=view.points,
        win_prob_white=view.win_prob_white,
        axis_2d=view.axis_2d,
        explained=view.explained,
        digest=np.asarray(view.digest),
    )
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(buffer.getvalue())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return view
