"""The package outside the checkout: a built wheel, installed into a fresh virtualenv, plays.

Slow: a wheel build and two engine start-ups (each imports torch).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import chess
import pytest

from latentchess.paths import DEFAULT_MODEL

REPO = Path(__file__).resolve().parents[1]
_NOT_SOURCES = shutil.ignore_patterns(
    ".venv", ".git", "build", "dist", "runs", "demo-output", "__pycache__", "*.egg-info", ".*cache"
)


@pytest.mark.slow
def test_wheel_installs_and_plays_from_any_directory(tmp_path: Path) -> None:
    # Build from a copy so the checkout gets no build/ or egg-info (and parallel runs do not race).
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=_NOT_SOURCES)
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), "."]
    done = subprocess.run(build, cwd=source, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = wheels.glob("latentchess-*.whl")  # pure or platform-specific: any name
    names = zipfile.ZipFile(wheel).namelist()
    # the default latent model, the NNUE whose transformer it uses, the transformer encoder
    for model in (DEFAULT_MODEL, "nnue-default", "gab-micro"):
        for shipped in ("model.safetensors", "config.json"):
            assert f"latentchess/weights/{model}/{shipped}" in names

    # A fresh venv; dependencies come from this venv's site-packages (no network, no index).
    fresh = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=False).create(fresh)
    python = fresh / "bin" / "python"
    fresh_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # A plain path line: this venv's packages become importable, but not its editable
    # latentchess (that needs the .pth hooks of this venv's site-packages, not processed here).
    (Path(fresh_site) / "project-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = [*pip, "--python", str(python), "install", "--no-deps", "--no-index", "-q"]
    done = subprocess.run([*install, str(wheel)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("LATENTCHESS_MODEL", "PYTHONPATH")}
    latentchess = str(fresh / "bin" / "latentchess")
    best = subprocess.run(
        [latentchess, "bestmove", "startpos", "--depth", "1"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert best.returncode == 0, best.stderr[-3000:]
    assert chess.Move.from_uci(best.stdout.split()[-1]) in chess.Board().legal_moves, best.stdout
    # The default engine (ab, the native core), then the latent planner with the shipped model
    # through the Engine option: both answer with a legal move.
    script = "uci\nisready\nposition startpos\ngo depth 1\n"
    script += "setoption name Engine value latent\nisready\ngo depth 1\nquit\n"
    uci = subprocess.run(
        [latentchess, "uci"],
        cwd=elsewhere,
        env=env,
        input=script,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert uci.returncode == 0, uci.stderr[-3000:]
    assert "id name latentchess ab" in uci.stdout, uci.stdout
    assert "ERROR" not in uci.stdout and " model_sha256=" in uci.stdout, uci.stdout
    assert f"weights/{DEFAULT_MODEL}" in uci.stdout  # the default latent model, from the wheel
    moves = [line.split()[1] for line in uci.stdout.splitlines() if line.startswith("bestmove")]
    assert len(moves) == 2, uci.stdout
    assert all(chess.Move.from_uci(move) in chess.Board().legal_moves for move in moves)
