#!/usr/bin/env bash
# The main job, non-interactively: the default engine (ab) analyses a position next to a Stockfish
# referee and plays a short game against Stockfish (UCI_Elo 2000), printing moves and evaluations;
# then the shipped latent model's view of the position and the game. The game is written to
# demo-output/demo-game.pgn.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/latentchess demo --pgn demo-output/demo-game.pgn "$@"
