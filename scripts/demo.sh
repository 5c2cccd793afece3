#!/usr/bin/env bash
# The main job, non-interactively: load the shipped default model, analyse a position move by move
# next to a Stockfish referee, and play a short game against Stockfish (UCI_Elo 1350), printing
# moves and evaluations; the game is written to demo-output/demo-game.pgn.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/latentchess demo --pgn demo-output/demo-game.pgn "$@"
