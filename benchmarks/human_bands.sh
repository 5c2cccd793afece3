#!/usr/bin/env bash
# Human move matching of the shipped human Chessformer in the field's four rating bands, on
# Lichess games whose players never appear in the training corpus (issue 31).
#   bash benchmarks/human_bands.sh [OUT]     (OUT default: benchmarks/results/human_bands)
# `eval-human` under the Maia-3/Allie protocol (skip 10 plies, drop from the first ply where the
# mover's [%clk] is under 30 s, bands <1400/1400-1999/2000-2399/>=2400): blitz only (the
# published protocol; every kept position) and every speed (ANY_SAMPLE positions drawn at random
# when set, to bound the CPU time); then both are plotted next to the published figures.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-benchmarks/results/human_bands}"
lc="${LC:-.venv/bin/latentchess}"
games="${GAMES:-../shared/testsuites/lichess_2021-10_sample.pgn}"
train="${TRAIN:-../shared/data/lichess-rated-games.pgn.gz}"
mkdir -p "$out"
run() {  # NAME, then eval-human options
    local name="$1"
    shift
    uptime | tee -a "$out/uptime.txt"
    nice -n 19 $lc eval-human "$games" --exclude-players-of "$train" --json "$out/$name.json" \
        "$@" 2>"$out/$name.log" | tee "$out/$name.txt"
}
run blitz --time-control blitz
run any --time-control any ${ANY_SAMPLE:+--sample-positions "$ANY_SAMPLE"}
uptime | tee -a "$out/uptime.txt"
$lc plot human-bands "$out/blitz.json" "$out/any.json" --label "ours: blitz (the protocol)" \
    --label "ours: every speed" --out "$out/human_bands.png"
