#!/usr/bin/env bash
# The latent planner under a clock (issue 28): ENGINE at TC against Stockfish 15.1 UCI_Elo 1350
# (its lowest rung) and the ladder's Skill-0 rung at 30 nodes (1338 [1264, 1413] on the same
# scale, benchmarks/results/human_play/calibration/elo.md), then one BayesElo fit with UCI_Elo
# 1350 anchored. Resumable.
#
#   ENGINE=latent:model=src/latentchess/weights/sparse-64,width=8,depth=64 \
#       bash benchmarks/latent_tc.sh benchmarks/results/latent_tc/sparse-64-w8
# Knobs: ENGINE, TC (default 10+0.1) or LIMIT (a match limit such as time=0.3: both sides get it;
# overrides TC), GAMES per rung (default 16), WORKERS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$1
ENGINE=${ENGINE:?an engine spec}
TC=${TC:-10+0.1}
LIMIT=${LIMIT:-tc=$TC}
GAMES=${GAMES:-16}
WORKERS=${WORKERS:-2}
LC=(.venv/bin/python -m latentchess)
mkdir -p "$OUT"
(while true; do echo "$(date +%s) $(cat /proc/loadavg)"; sleep 30; done) >>"$OUT/load_average.log" &
LOGGER=$!
trap 'kill $LOGGER 2>/dev/null' EXIT
"${LC[@]}" match "$ENGINE" "stockfish:elo=1350" --games "$GAMES" --limit "$LIMIT" \
    --workers "$WORKERS" --adjudicate --no-progress --pgn "$OUT/vs_sf1350.pgn" \
    --json "$OUT/vs_sf1350.json"
"${LC[@]}" match "$ENGINE" "stockfish:skill=0,name=sf-skill0-nodes30" --games "$GAMES" \
    --limit1 "$LIMIT" --limit2 nodes=30 --workers "$WORKERS" --adjudicate --no-progress \
    --pgn "$OUT/vs_skill0.pgn" --json "$OUT/vs_skill0.json"
"${LC[@]}" elo "$OUT"/*.pgn benchmarks/results/human_play/calibration/skill0-vs-sf1350.pgn.xz \
    --anchor stockfish:elo=1350=1350 --json "$OUT/elo.json"
