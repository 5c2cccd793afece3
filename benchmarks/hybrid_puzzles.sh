#!/usr/bin/env bash
# Issue 12: the hybrid modes and their parts on the Lichess puzzles (dev half) and on STS, at the
# same time per move (default 100 ms), 2 engines' searches at once.
#
#   bash benchmarks/hybrid_puzzles.sh [OUT_DIR] [LIMIT] [EVERY]
#   (defaults: benchmarks/results/hybrid/nnue/puzzles, 100ms, 4: every 4th dev puzzle, 568 of
#   2,271 over the whole rating range; the file is sorted by rating)
#
# Writes OUT_DIR/puzzles-ENGINE.json and OUT_DIR/sts-ENGINE.json (ENGINE with ':,=' as '_').
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-benchmarks/results/hybrid/nnue/puzzles}
limit=${2:-100ms}
every=${3:-4}
ts=$(cd .. && pwd)/shared/testsuites
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$out"
sample=$(mktemp --suffix=.csv)
trap 'rm -f "$sample"' EXIT
awk -v every="$every" 'NR == 1 || (NR - 2) % every == 0' "$ts/lichess_puzzles_dev.csv" > "$sample"
for engine in ab hybrid:mode=order hybrid:mode=verify,k=3 latent:depth=4; do
    tag=$(echo "$engine" | tr ':,=' '___')
    [ -f "$out/puzzles-$tag.json" ] || .venv/bin/latentchess puzzles solve \
        "$sample" --engine "$engine" --limit "$limit" \
        --workers 2 --no-progress --json "$out/puzzles-$tag.json"
    [ -f "$out/sts-$tag.json" ] || .venv/bin/latentchess epd "$ts/STS1-STS15_LAN_v6.epd" \
        --engine "$engine" --limit "$limit" --workers 2 --no-progress --json "$out/sts-$tag.json"
done
