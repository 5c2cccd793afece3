"""Provenance recorded in models, checkpoints and results: the git commit of this checkout."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

__all__ = ["REPO_ROOT", "git_commit"]

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The checkout this package runs from (``src/latentchess`` -> repository root)."""


@functools.cache
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
