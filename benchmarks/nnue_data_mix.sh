#!/usr/bin/env bash
# Which data trains the best NNUE (issue 15): the static labels of benchmarks/nnue_distil.sh split
# by the source of their positions -- TCEC engine games (balanced, deep) against our Stockfish
# self-play (lopsided: random moves make blunders) -- against both together, same recipe and
# budget; then held-out quality on positions no network saw (quiet positions of the rated Lichess
# games, scored by Stockfish's static evaluation and a depth-9 search) and games at fixed nodes.
#
#   bash benchmarks/nnue_data_mix.sh LABELS_DIR OUT_DIR
#
# LABELS_DIR holds static-s0/ and static-s1/ from benchmarks/nnue_distil.sh. label-static writes
# one part per 50,000 input positions in source order, so parts 0-47 are the 2,411,537 TCEC
# positions' (part 48 mixes the two sources and is left out of both arms) and parts 49-109 the
# self-play files'. Knobs: STEPS (default 500), GAMES (default 40), NODES (default 40000).
set -euo pipefail
cd "$(dirname "$0")/.."
LABELS=$1
OUT=$2
STEPS=${STEPS:-500}
GAMES=${GAMES:-40}
NODES=${NODES:-40000}
LC=(.venv/bin/python -m latentchess)
mkdir -p "$OUT/tcec" "$OUT/selfplay"
for pass in s0 s1; do
    for i in $(seq 0 109); do
        part=$(printf 'part-%06d.csv.gz' "$i")
        arm=tcec
        [ "$i" -eq 48 ] && continue
        [ "$i" -gt 48 ] && arm=selfplay
        ln -sf "$(realpath "$LABELS/static-$pass/$part")" "$OUT/$arm/$pass-$part"
    done
done

# Same recipe as the shipped network, one schedule for all arms (an epoch = the whole set's rows).
for arm in all tcec selfplay; do
    [ -f "$OUT/run-$arm/model/config.json" ] && continue
    data=(--data "$OUT/$arm")
    [ "$arm" = all ] && data=(--data "$LABELS/static-s0" --data "$LABELS/static-s1")
    "${LC[@]}" train nnue "${data[@]}" --cache "$OUT/cache-$arm" --out "$OUT/run-$arm" --l1 256 \
        --l2 32 --psqt --lr 2e-3 --gamma 0.85 --dense-lr-scale 0.1 --epoch-positions 5186548 \
        --steps "$STEPS" --threads 1 --eval-every 100 --log-every 50 --no-progress \
        > "$OUT/run-$arm.log" 2>&1
    rm -rf "$OUT/cache-$arm"
done

.venv/bin/python benchmarks/bench_nnue.py evalloss --eval hce --eval "nnue:$OUT/run-all/model" \
    --eval "nnue:$OUT/run-tcec/model" --eval "nnue:$OUT/run-selfplay/model" --positions 3000 \
    > "$OUT/evalloss.log"
for arm in selfplay tcec; do
    "${LC[@]}" match "ab:eval=$OUT/run-$arm/model" "ab:eval=$OUT/run-all/model" --games "$GAMES" \
        --limit "nodes=$NODES" --workers 2 --pgn "$OUT/$arm-vs-all-n${NODES}.pgn" \
        --json "$OUT/$arm-vs-all-n${NODES}.json" --no-progress
done
