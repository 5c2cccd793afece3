#!/usr/bin/env bash
# Human move matching of the shipped human Chessformer in the field's four rating bands, on
# Lichess games whose players never appear in the training corpus (issue 31).
#   bash benchmarks/human_bands.sh [OUT [EVAL-HUMAN OPTIONS...]]   (OUT: benchmarks/results/human_bands)
# Runs `eval-human` twice under the Maia-3/Allie protocol (skip 10 plies, drop from the first
# ply where the mover's [%clk] is under 30 s, bands <1400/1400-1999/2000-2399/>=2400): blitz
# only (the published protocol) and every speed; then plots both next to the published figures.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-benchmarks/results/human_bands}"
shift || true  # the rest goes to eval-human (e.g. --sample-positions N)
lc="${LC:-.venv/bin/latentchess}"
games="${GAMES:-../shared/testsuites/lichess_2021-10_sample.pgn}"
train="${TRAIN:-../shared/data/lichess-rated-games.pgn.gz}"
mkdir -p "$out"
uptime | tee "$out/uptime.txt"
for speed in blitz any; do
    nice -n 19 $lc eval-human "$games" --exclude-players-of "$train" --time-control "$speed" \
        --json "$out/$speed.json" "$@" 2>"$out/$speed.log" | tee "$out/$speed.txt"
    uptime | tee -a "$out/uptime.txt"
done
$lc plot human-bands "$out/blitz.json" "$out/any.json" --label "ours, blitz (the protocol)" \
    --label "ours, every speed" --out "$out/human_bands.png"
