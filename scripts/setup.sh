#!/usr/bin/env bash
# Idempotent set-up: system packages (Stockfish, pgn-extract) when missing, a virtualenv in the
# checkout with the pinned CPU torch, and latentchess installed into it in editable mode.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
[ -x /usr/games/stockfish ] || command -v stockfish >/dev/null 2>&1 || need_apt+=(stockfish)
[ -f /usr/share/pgn-extract/eco.pgn ] || need_apt+=(pgn-extract)
# g++ compiles the native core (latentchess.core._native).
command -v "${CXX:-g++}" >/dev/null 2>&1 || command -v c++ >/dev/null 2>&1 || need_apt+=(g++)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "setup: installing ${need_apt[*]} with apt-get"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    "$PY" -m venv .venv
fi
stamp=.venv/.latentchess-installed
native_stamp=.venv/.latentchess-native-built
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "setup: installing torch==2.13.0 (CPU) and latentchess into .venv"
    .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
    # torch first and pinned exactly: an unpinned torch would pull a multi-GB CUDA build.
    .venv/bin/python -m pip install -q torch==2.13.0 2>&1 | grep -v '^WARNING: Location' || true
    .venv/bin/python -m pip install -q -e '.[dev]' 2>&1 | grep -v '^WARNING: Location' || true
    .venv/bin/python -c "import torch, latentchess; assert torch.__version__.startswith('2.13.0')"
    touch "$stamp"
    # pip built the native core too (pyproject.toml's build step); no second compile below.
    if ls src/latentchess/core/_native*.so >/dev/null 2>&1; then touch "$native_stamp"; fi
fi
# The native core (latentchess.core._native, C++ in src/latentchess/core/cpp): rebuilt in place
# whenever a C++ source or setup.py is newer than the last build (editable installs do not).
if [ ! -f "$native_stamp" ] || [ -n "$(find src/latentchess/core/cpp setup.py -newer "$native_stamp" -print -quit)" ] \
    || ! ls src/latentchess/core/_native*.so >/dev/null 2>&1; then
    bash scripts/build_native.sh
    touch "$native_stamp"
fi
# sunfish: an opponent for `latentchess match/ladder`; --no-deps because it pins chess==1.9.4
# (see pyproject.toml).
[ -x .venv/bin/sunfish-uci ] || .venv/bin/python -m pip install -q --no-deps 'sunfish>=2026.1,<2027' 2>&1 | grep -v '^WARNING: Location' || true
# Debian's Chromium for the web board's browser tests (Playwright drives it; no browser is ever
# downloaded). Optional: where it cannot be installed those tests skip and say why.
if [ ! -x /usr/bin/chromium ] && [ ! -f .venv/.chromium-unavailable ]; then
    echo "setup: installing chromium with apt-get (web board browser tests)"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium; } \
        || { echo "setup: could not install chromium; the browser tests will be skipped"
             touch .venv/.chromium-unavailable; }
fi
# Anchor engines with published (CCRL) ratings for `latentchess match`/`ladder`: Debian packages.
# Optional: a package that cannot be installed is reported and setup goes on (their tests skip).
anchors=()
for engine in gnuchess phalanx toga2 glaurung sjeng hoichess; do
    [ -x "/usr/games/$engine" ] || command -v "$engine" >/dev/null 2>&1 || anchors+=("$engine")
done
if [ ${#anchors[@]} -gt 0 ] && [ ! -f .venv/.anchors-tried ]; then
    echo "setup: installing anchor engines ${anchors[*]} with apt-get (optional)"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq >/dev/null 2>&1 || true
    for engine in "${anchors[@]}"; do
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$engine" >/dev/null 2>&1 \
            || echo "setup: could not install $engine (optional anchor); its tests will be skipped"
    done
    touch .venv/.anchors-tried
fi
