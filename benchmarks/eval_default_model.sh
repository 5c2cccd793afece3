#!/usr/bin/env bash
# Quick strength probes of the shipped default model (models/default) on this machine; results in
# benchmarks/results/default_model/. Not the full ladder (see models/README.md for what is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
out=benchmarks/results/default_model
ts=../shared/testsuites
mkdir -p "$out"
lc=.venv/bin/latentchess
# 1. Lichess puzzles (first 400 of the dev set), depth 4 width 3, minimax.
$lc puzzles solve "$ts/lichess_puzzles_dev.csv" --engine latent:depth=4,width=3 --limit depth=4 \
    --max 400 --workers 2 --no-progress --json "$out/puzzles_d4.json" --plot "$out/puzzles_d4.png"
# 2. Bratko-Kopec and 100 ECM positions at depth 4.
$lc epd "$ts/bratko-kopec.epd" "$ts/ECM.epd" --engine latent:depth=4,width=3 --limit depth=4 \
    --max 100 --workers 2 --no-progress --json "$out/epd_d4.json"
# 3. Equal time per move against Sunfish: 1 s per move each, 8 games (4 openings x 2 colours).
$lc match latent sunfish --limit 1s --games 8 --workers 2 --max-plies 200 --no-progress \
    --pgn "$out/vs_sunfish_1s.pgn" --json "$out/vs_sunfish_1s.json"
# 4. Depth 6 width 3 (the default) against Stockfish 15.1 UCI_Elo 1350 at 50 ms per move.
$lc match latent:depth=6,width=3 stockfish:elo=1350 --limit1 depth=6 --limit2 50ms --games 8 \
    --workers 2 --max-plies 200 --no-progress --pgn "$out/vs_sf1350.pgn" --json "$out/vs_sf1350.json"
