"""Build of the native core ``latentchess.core._native`` (C++17, pybind11, g++).

Everything else about the package is declared in pyproject.toml. The build switches
(``LATENTCHESS_CPU``, ``LATENTCHESS_WERROR``, ``LATENTCHESS_SANITIZE``, ``LATENTCHESS_DEBUG``) are
read by src/latentchess/core/build_flags.py (see README "Native core");
``LATENTCHESS_BUILD_JOBS`` sets the parallel compile jobs (default: all cores).
"""

from __future__ import annotations

import importlib.util
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


def _build_flags():  # type: ignore[no-untyped-def]
    """src/latentchess/core/build_flags.py, loaded by path (the package is not installed yet)."""
    path = Path(__file__).resolve().parent / "src/latentchess/core/build_flags.py"
    spec = importlib.util.spec_from_file_location("latentchess_build_flags", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildNative(build_ext):
    """build_ext that always recompiles and says clearly when there is no C++ compiler.

    Always: setuptools would otherwise reuse a build/ output whose flags (LATENTCHESS_CPU...) or
    headers differ, e.g. put a -march=native library into a portable wheel.
    """

    def finalize_options(self) -> None:
        super().finalize_options()
        self.force = True

    def build_extensions(self) -> None:
        compiler = getattr(self.compiler, "compiler_so", None) or ["c++"]
        if shutil.which(compiler[0]) is None:
            raise SystemExit(
                f"latentchess: no C++ compiler found (looked for {compiler[0]!r}). The native core "
                "needs g++ with C++17: install it (Debian/Ubuntu: 'apt-get install g++') or point "
                "CC and CXX at one, then run the install again."
            )
        super().build_extensions()


ParallelCompile("LATENTCHESS_BUILD_JOBS", default=0).install()
_compile_args, _link_args = _build_flags().compile_and_link_flags()

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
