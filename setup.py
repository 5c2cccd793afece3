"""Build of the native core ``latentchess.core._native`` (C++17, pybind11, g++).

Everything else about the package is declared in pyproject.toml. Environment switches (read at
build time; see README "Native core"):

* ``LATENTCHESS_CPU``: ``native`` (default, ``-march=native``: optimised for the building CPU),
  ``portable`` (``-march=x86-64-v2`` on x86-64, the compiler's default elsewhere) or any
  ``-march`` value such as ``x86-64-v3`` (for wheels).
* ``LATENTCHESS_WERROR=1``: warnings are errors (``-Wall -Wextra`` are always on).
* ``LATENTCHESS_SANITIZE=1``: AddressSanitizer + UndefinedBehaviorSanitizer, ``-O1 -g``, asserts on.
* ``LATENTCHESS_DEBUG=1``: ``-O0 -g`` with asserts on.
* ``LATENTCHESS_BUILD_JOBS``: parallel compile jobs (default: all cores).
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
from pathlib import Path

from setuptools import setup

try:
    from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
except ImportError:  # pragma: no cover - only without the declared build dependency
    sys.exit("latentchess: building the native core needs pybind11 (pip install 'pybind11>=2.12')")

SOURCE_DIR = Path("src/latentchess/core/cpp")
SOURCES = sorted(str(path) for path in SOURCE_DIR.glob("*.cpp"))


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _cpu_flags() -> list[str]:
    cpu = os.environ.get("LATENTCHESS_CPU", "native").strip() or "native"
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    if cpu == "portable":
        return ["-march=x86-64-v2"] if x86 else []
    if (
        cpu == "native"
        and platform.machine().lower() in ("arm64", "aarch64")
        and sys.platform == "darwin"
    ):
        return ["-mcpu=native"]
    return [f"-march={cpu}"]


def _compile_flags() -> tuple[list[str], list[str]]:
    compile_args = ["-Wall", "-Wextra", *_cpu_flags()]
    link_args: list[str] = []
    if _flag("LATENTCHESS_WERROR"):
        compile_args.append("-Werror")
    if _flag("LATENTCHESS_SANITIZE"):
        sanitize = [
            "-fsanitize=address,undefined",
            "-fno-omit-frame-pointer",
            "-fno-sanitize-recover=all",
        ]
        compile_args += ["-O1", "-g", *sanitize]
        link_args += sanitize
    elif _flag("LATENTCHESS_DEBUG"):
        compile_args += ["-O0", "-g"]
    else:
        compile_args += ["-O3", "-DNDEBUG"]
    return compile_args, link_args


class BuildNative(build_ext):
    """build_ext that says clearly when there is no C++ compiler."""

    def build_extensions(self) -> None:
        compiler = getattr(self.compiler, "compiler_so", None) or ["c++"]
        if shutil.which(compiler[0]) is None:
            raise SystemExit(
                f"latentchess: no C++ compiler found (looked for {compiler[0]!r}). The native core "
                "needs g++ with C++17: install it (Debian/Ubuntu: 'apt-get install g++') or set "
                "CXX, then run the install again."
            )
        super().build_extensions()


ParallelCompile("LATENTCHESS_BUILD_JOBS", default=0).install()
_compile_args, _link_args = _compile_flags()

setup(
    ext_modules=[
        Pybind11Extension(
            "latentchess.core._native",
            SOURCES,
            cxx_std=17,
            include_dirs=[str(SOURCE_DIR)],
            extra_compile_args=_compile_args,
            extra_link_args=_link_args,
        )
    ],
    cmdclass={"build_ext": BuildNative},
)
