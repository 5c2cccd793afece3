"""Provenance recorded in models, checkpoints and results.

The git commit of this checkout, and which models (content hash and resolved precision) the
engines of a command ran: :func:`recording_models` collects what :func:`note_model` reports.
"""

from __future__ import annotations

import contextlib
import functools
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = ["REPO_ROOT", "git_commit", "note_model", "recording_models", "repo_relative"]

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The checkout this package runs from (``src/latentchess`` -> repository root)."""


@functools.cache
def repo_relative(path: str | Path) -> str:
    """A path as results record it: relative to the repository when it lies inside it."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(REPO_ROOT)) if resolved.is_relative_to(REPO_ROOT) else str(path)


def git_commit() -> str | None:
    """The checkout's HEAD commit, or ``None`` outside a git checkout (e.g. a wheel install)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) == 40 else None


_RECORDERS: list[list[dict[str, str]]] = []
_RECORDERS_LOCK = threading.Lock()


@contextlib.contextmanager
def recording_models() -> Iterator[list[dict[str, str]]]:
    """Collect the provenance of every model an engine built inside this block runs.

    Engines report through :func:`note_model` from any thread; the yielded list holds each
    distinct ``{"model", "model_sha256", "precision"}`` once, so a command can put what its
    results were computed with into its JSON.
    """
    seen: list[dict[str, str]] = []
    with _RECORDERS_LOCK:
        _RECORDERS.append(seen)
    try:
        yield seen
    finally:
        with _RECORDERS_LOCK:
            _RECORDERS.remove(seen)


def note_model(provenance: dict[str, str]) -> None:
    """Report a model an engine runs to every active :func:`recording_models` block.

    A ``"model"`` path inside this checkout is recorded relative to it, so results written by
    one machine name the same model on another.
    """
    provenance = dict(provenance)
    if "model" in provenance:
        path = Path(provenance["model"])
        if path.is_absolute() and path.is_relative_to(REPO_ROOT):
            provenance["model"] = str(path.relative_to(REPO_ROOT))
    with _RECORDERS_LOCK:
        for seen in _RECORDERS:
            if provenance not in seen:
                seen.append(dict(provenance))
