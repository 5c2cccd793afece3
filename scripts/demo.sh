#!/usr/bin/env bash
# The main job, non-interactively. Until a default model ships: generate and label a few hundred
# positions with real Stockfish, then show what was made.
set -euo pipefail
cd "$(dirname "$0")/.."
out=demo-output
.venv/bin/latentchess data generate --out "$out/data" --positions 300 --seed 1
.venv/bin/latentchess data summary "$out/data"
