"""The native core's build: a missing compiler gives one clear message; switches pick flags."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from latentchess.core.build_flags import compile_and_link_flags, cpu_flags

ROOT = Path(__file__).resolve().parents[1]


def test_missing_compiler_is_one_clear_message(tmp_path: Path) -> None:
    pytest.importorskip("pybind11")
    environment = {**os.environ, "CC": "/nonexistent/gcc", "CXX": "/nonexistent/g++"}
    done = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--build-temp", str(tmp_path),
         "--build-lib", str(tmp_path)],
        cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "latentchess: no C++ compiler found (looked for '/nonexistent/gcc')" in done.stderr
    assert "apt-get install g++" in done.stderr
    assert not list(tmp_path.rglob("*.so"))


def test_build_switches_choose_the_flags() -> None:
    compile_args, link_args = compile_and_link_flags({})
    assert "-march=native" in compile_args and "-O3" in compile_args and not link_args
    assert "-Wall" in compile_args and "-Werror" not in compile_args
    compile_args, _ = compile_and_link_flags(
        {"LATENTCHESS_CPU": "x86-64-v3", "LATENTCHESS_WERROR": "1"}
    )
    assert "-march=x86-64-v3" in compile_args and "-Werror" in compile_args
    compile_args, link_args = compile_and_link_flags({"LATENTCHESS_SANITIZE": "1"})
    assert "-fsanitize=address,undefined" in link_args and "-O3" not in compile_args
    assert "-march=native" not in cpu_flags({"LATENTCHESS_CPU": "portable"})
