#!/usr/bin/env bash
# Compile the native core (latentchess.core._native) in place for the editable install in .venv.
# Build switches (LATENTCHESS_CPU, LATENTCHESS_WERROR, LATENTCHESS_SANITIZE, LATENTCHESS_DEBUG)
# are documented in README "Native core" (setup.py always recompiles everything).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v "${CXX:-g++}" >/dev/null 2>&1 && ! command -v c++ >/dev/null 2>&1; then
    echo "setup: no C++ compiler found: the native core needs g++ (C++17)." >&2
    echo "       Install it (Debian/Ubuntu: apt-get install g++) and run 'make setup' again." >&2
    exit 1
fi
.venv/bin/python -c "import pybind11" 2>/dev/null \
    || .venv/bin/python -m pip install -q 'pybind11>=2.12' 2>&1 | grep -v '^WARNING: Location' || true
echo "setup: compiling the native core (latentchess.core._native)"
start=$(date +%s)
rm -f src/latentchess/core/_native*.so
.venv/bin/python setup.py -q build_ext --inplace --build-temp build/native
echo "setup: native core built in $(( $(date +%s) - start )) s"
