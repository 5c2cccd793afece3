"""Compiler flags of the native core from the build switches (read by setup.py at build time).

Standalone on purpose (standard library only, no package imports): setup.py loads this file by
path before the package is installed.

* ``LATENTCHESS_CPU``: ``native`` (default, ``-march=native``: optimised for the building CPU),
  ``portable`` (``-march=x86-64-v2`` on x86-64, the compiler's default elsewhere) or any
  ``-march`` value such as ``x86-64-v3`` (for wheels).
* ``LATENTCHESS_WERROR=1``: warnings are errors (``-Wall -Wextra`` are always on).
* ``LATENTCHESS_SANITIZE=1``: AddressSanitizer + UndefinedBehaviorSanitizer, ``-O1 -g``, asserts on.
* ``LATENTCHESS_DEBUG=1``: ``-O0 -g`` with asserts on.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping

__all__ = ["compile_and_link_flags", "cpu_flags"]

_SANITIZE = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all"]


def _on(environment: Mapping[str, str], name: str) -> bool:
    return environment.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def cpu_flags(environment: Mapping[str, str] | None = None) -> list[str]:
    """The ``-march`` (or ``-mcpu``) flags that ``LATENTCHESS_CPU`` asks for."""
    environment = os.environ if environment is None else environment
    cpu = environment.get("LATENTCHESS_CPU", "native").strip() or "native"
    machine = platform.machine().lower()
    if cpu == "portable":
        return ["-march=x86-64-v2"] if machine in ("x86_64", "amd64") else []
    if cpu == "native" and machine in ("arm64", "aarch64") and sys.platform == "darwin":
        return ["-mcpu=native"]
    return [f"-march={cpu}"]


def compile_and_link_flags(
    environment: Mapping[str, str] | None = None,
) -> tuple[list[str], list[str]]:
    """Extra compile and link arguments for the extension under the current switches."""
    environment = os.environ if environment is None else environment
    compile_args = ["-Wall", "-Wextra", *cpu_flags(environment)]
    link_args: list[str] = []
    if _on(environment, "LATENTCHESS_WERROR"):
        compile_args.append("-Werror")
    if _on(environment, "LATENTCHESS_SANITIZE"):
        compile_args += ["-O1", "-g", *_SANITIZE]
        link_args += _SANITIZE
    elif _on(environment, "LATENTCHESS_DEBUG"):
        compile_args += ["-O0", "-g"]
    else:
        compile_args += ["-O3", "-DNDEBUG"]
    return compile_args, link_args
