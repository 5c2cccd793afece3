#!/usr/bin/env bash
# The thesis's feature-set table at our scale: every feature set trained on the same
# static-evaluation labels for the same number of steps, then paired-opening matches against ALL
# at fixed nodes (evaluation quality) and at fixed time (its cost), and a PQR fine-tune of ALL.
# Resumable: rerunning skips finished trainings and matches and resumes the rest.
#
#   bash benchmarks/nnue_feature_study.sh [OUT_DIR]      (default runs/nnue-study)
#
# Knobs (environment): STEPS (training steps of 16,384 positions per set, default 500), GAMES (per
# match, default 40), NODES (default 20000), TIME (per move, default 50ms; "" for none), PQR_STEPS
# (default 60), PQR_LR (default 2e-5), PQR (0: no PQR networks), JOBS (trainings at once, one
# thread each, default 2), SETS (the feature sets, ALL first: the one every other set plays;
# default the thesis's nine and its pairwise and mobility rows). The networks are the thesis's
# (no psqt term), L1 256, L2 32. A set with a threat block (KA9+T, ALL+TNK, ...) trains with the
# sparse first-layer update, one process, as `train nnue` does by default.
#
#   SETS="ALL KA9 ALL+TNK KA9+TNK" PQR=0 TIME="" bash benchmarks/nnue_feature_study.sh runs/study-t
# Writes OUT_DIR/table.md, OUT_DIR/study.json and OUT_DIR/study.png (the last step).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/nnue-study}
STEPS=${STEPS:-500}
GAMES=${GAMES:-40}
NODES=${NODES:-20000}
TIME=${TIME-50ms}
PQR_STEPS=${PQR_STEPS:-60}
PQR_LR=${PQR_LR:-2e-5}
JOBS=${JOBS:-2}
PQR=${PQR:-1}
D=$(cd .. && pwd)/shared/data
SOURCES=("$D/tcec-engine-evals.csv.gz" "$D/sf15-selfplay-mpv1.csv.gz" "$D/sf15-d9-eco-selfplay.csv.gz")
LC=(.venv/bin/python -m latentchess)
read -r -a SETS <<<"${SETS:-ALL ALL+H+V ALL+D1+D2 ALL+H+V+D1+D2 H+V+D1+D2 H+V D1+D2 ALL+PV ALL+PH ALL+PH+PV ALL+MB ALL+MC}"
[ "${SETS[0]}" = ALL ] || { echo "SETS must start with ALL (every other set plays it)" >&2; exit 2; }
mkdir -p "$OUT"

# 1. Labels: pass s0 of benchmarks/nnue_distil.sh (same sources, seed and random plies), 2.9 M rows.
for i in 0 1; do
    "${LC[@]}" nnue label-static "${SOURCES[@]}" --out "$OUT/static-s0" --shard "$i/2" --seed 0 \
        --random-plies 0.5,0.3,0.2 --no-progress &
done
wait

# 2. One network per feature set: same rows, same held-out split (seed 0), same steps. The
#    learning rate is ALL's (2e-3, measured best for it) times ALL's mean number of active features
#    over the set's: Adam moves every active row by about lr per step, so an accumulator moves by
#    about lr x (active features), and one lr for all sets over-drives the larger ones. Measured on
#    ALL+D1+D2 (3x ALL's active features), held-out loss at step 100: 0.0131 at lr 2e-3, 0.0026
#    at 1e-3, 0.0020 at 5e-4 (ALL at 2e-3: 0.0018).
active() {  # active FEATURE_SET -> mean active features per perspective on 2,000 labelled rows
    .venv/bin/python - "$1" "$OUT/static-s0" <<'PY'
import gzip, sys
from pathlib import Path
from latentchess.core.nnue import native_module
native = native_module()
with gzip.open(sorted(Path(sys.argv[2]).glob("part-*.csv.gz"))[0], "rt") as rows:
    fens = [line.split(",")[0] for _, line in zip(range(2001), rows)][1:]
total = sum(len(native.nnue_features(native.Position(f), p, sys.argv[1])) for f in fens for p in (0, 1))
print(total / (2 * len(fens)))
PY
}
BASE_ACTIVE=$(active ALL)
train() {  # train FEATURE_SET
    local run="$OUT/train-$1"
    [ -f "$run/model/config.json" ] && return
    local lr
    lr=$(.venv/bin/python -c "print(f'{2e-3 * $BASE_ACTIVE / $(active "$1"):.3g}')")
    "${LC[@]}" train nnue --data "$OUT/static-s0" --out "$run" --features "$1" --l1 256 --l2 32 \
        --lr "$lr" --gamma 0.85 --steps "$STEPS" --threads 1 --eval-every 100 --log-every 50 \
        --no-progress > "$OUT/train-$1.log" 2>&1
    rm -rf "$run/cache"  # up to 3 GB each; the network and its metrics stay
}
for ((j = 0; j < JOBS; j++)); do
    (for ((k = j; k < ${#SETS[@]}; k += JOBS)); do train "${SETS[k]}"; done) &
done
wait

# 3. PQR fine-tune of ALL (thesis: +141 +- 6 Elo over its target-score start). PQR needs each
#    position's best move, so it reads search-labelled rows: all of the Stockfish 15.1 depth-9
#    self-play file (193 K kept). 60 steps is about 5 passes; a first try with 100 K rows, 100
#    steps and lr 1e-4 (about 28 passes over 57 K) lost 319 Elo at fixed nodes.
if [ "$PQR" = 1 ] && [ ! -f "$OUT/pqr-ALL/model/config.json" ]; then
    "${LC[@]}" train nnue --data "$D/sf15-d9-eco-selfplay.csv.gz" --out "$OUT/pqr-ALL" \
        --loss pqr --init "$OUT/train-ALL/model" --lr "$PQR_LR" --steps "$PQR_STEPS" --threads 2 \
        --eval-every 20 --log-every 10 --no-progress > "$OUT/pqr-ALL.log" 2>&1
fi

# 3b. PQR from scratch (thesis: -235 against its target-score network): the same rows, ALL's
#     budget, learning rate and schedule (its epoch: ALL's 2,835,662 training rows), no start
#     network.
if [ "$PQR" = 1 ] && [ ! -f "$OUT/pqr-scratch-ALL/model/config.json" ]; then
    "${LC[@]}" train nnue --data "$D/sf15-d9-eco-selfplay.csv.gz" --cache "$OUT/pqr-ALL/cache" \
        --out "$OUT/pqr-scratch-ALL" --loss pqr --l1 256 --l2 32 --lr 2e-3 --gamma 0.85 \
        --epoch-positions 2835662 \
        --steps "$STEPS" --threads 1 --eval-every 100 --log-every 50 --no-progress \
        > "$OUT/pqr-scratch-ALL.log" 2>&1
fi

# 4. Each network against ALL, paired openings: first all at fixed nodes, then all at fixed time.
extra=()
[ "$PQR" = 1 ] && extra=(pqr pqr-scratch)
for limit in "nodes=$NODES" ${TIME:+"$TIME"}; do
    for name in "${SETS[@]:1}" "${extra[@]}"; do
        model="$OUT/train-$name/model"
        [ "$name" = pqr ] && model="$OUT/pqr-ALL/model"
        [ "$name" = pqr-scratch ] && model="$OUT/pqr-scratch-ALL/model"
        tag="$name-${limit//=/}"
        [ -f "$OUT/match-$tag.json" ] && continue
        "${LC[@]}" match "ab:eval=$model" "ab:eval=$OUT/train-ALL/model" --games "$GAMES" \
            --limit "$limit" --workers 2 --pgn "$OUT/match-$tag.pgn" --json "$OUT/match-$tag.json" \
            --no-progress
    done
done

# 5. Search speed of each network (nodes/s, interleaved in one process), the table, JSON and plot.
.venv/bin/python benchmarks/nnue_study_report.py "$OUT" --nodes "$NODES" --time "$TIME" --speed
