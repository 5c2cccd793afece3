#!/usr/bin/env bash
# The NNUE on the engine's own games (issue 30): the shipped network fine-tuned on `data selfplay`
# records with the target blended from its search score and the game result (arms of lambda,
# learning rate and steps), and the accumulator width redone from scratch at this budget (L1 128,
# 256, 512, equal minutes); then held-out quality on positions no network saw (quiet positions of
# the rated Lichess games against Stockfish's static evaluation and a depth-9 search) and a match
# of every network against the shipped one at fixed nodes (an SPRT [0, 10] for the fine-tuned
# arms, which have its architecture and speed; a fixed count for the from-scratch widths).
#
#   bash benchmarks/nnue_selfplay.sh SELFPLAY_BIN OUT_DIR
#
# SELFPLAY_BIN: a .bin of `latentchess data selfplay` (a copy cut to whole records, so a run
# still writing the file can go on). Rerunning resumes: finished arms are skipped, trainings
# resume from their checkpoints and matches from their PGNs. Knobs (an empty list skips its part):
# FT_ARMS (LAMBDA:LR:STEPS each; "1:5e-4:500 0.75:5e-4:1500 1:1e-4:500"), SF_ARMS (LR:STEPS or
# LR:STEPS:OUTPUT_BUCKETS each, on Stockfish's static labels of the same positions; "1e-4:500
# 5e-4:500"; a bucketed arm starts with every bucket a copy of the shipped layers), L1S ("128 256
# 512"), SCRATCH_LAMBDA (1), SCRATCH_MINUTES (6), NODES (20000), MAX_GAMES (400), SCRATCH_GAMES
# (60), LABEL_SHARDS (Stockfish labelling processes at once; 1), SF_EXTRA_DATA (labelled
# directories the SF arms also train on, such as an earlier round's OUT/static; none; adds -plus
# to the run's and the feature cache's names),
# TRAIN_THREADS (1), DENSE_LR_SCALE (the dense layers' rate factor of the SF arms; 0.1, the
# shipped recipe; another value adds -d<value> to the run's name), SF_FEATURES (the SF arms'
# feature set; ALL, the shipped one; KA or KA9 starts every king bucket as the shipped network's
# bucket it lies in (ALL: one) and adds -f<set> to the run's name), MATCHES (0: stop after the loss table; 1).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$1
OUT=$2
FT_ARMS=${FT_ARMS-"1:5e-4:500 0.75:5e-4:1500 1:1e-4:500"}
SF_ARMS=${SF_ARMS-"1e-4:500 5e-4:500"}
L1S=${L1S-"128 256 512"}
SCRATCH_LAMBDA=${SCRATCH_LAMBDA:-1}
SCRATCH_MINUTES=${SCRATCH_MINUTES:-6}
NODES=${NODES:-20000}
MAX_GAMES=${MAX_GAMES:-400}
SCRATCH_GAMES=${SCRATCH_GAMES:-60}
LABEL_SHARDS=${LABEL_SHARDS:-1}
SF_EXTRA_DATA=${SF_EXTRA_DATA-}
TRAIN_THREADS=${TRAIN_THREADS:-1}
DENSE_LR_SCALE=${DENSE_LR_SCALE:-0.1}
SF_FEATURES=${SF_FEATURES:-ALL}
MATCHES=${MATCHES:-1}
LC=(.venv/bin/python -m latentchess)
SHIPPED=src/latentchess/weights/nnue-default
mkdir -p "$OUT"

# Every training: the shipped recipe's optimiser and architecture (L2 32, PSQT), the rate decayed
# by 0.9 per 10 M samples; every arm shares the data, split and seed. RUN then its own flags.
train() {
    local run=$1
    shift
    "${LC[@]}" train nnue --out "$run" --dense-lr-scale 0.1 "$@" --l2 32 --psqt --gamma 0.9 \
        --epoch-positions 10000000 --threads "$TRAIN_THREADS" --eval-every 100 --checkpoint-every 100 \
        --log-every 50 --no-progress > "$run.log" 2>&1
}

# Fine-tuning the shipped network at a lower rate.
for arm in $FT_ARMS; do
    IFS=: read -r lam lr steps <<< "$arm"
    run="$OUT/ft-l$lam-lr$lr-s$steps"
    [ -f "$run/model/config.json" ] && continue
    train "$run" --data "$BIN" --cache "$OUT/cache" --init "$SHIPPED" --lambda "$lam" --l1 256 \
        --lr "$lr" --steps "$steps"
done

# The same positions, Stockfish's static evaluation as the label (the shipped network's teacher):
# does the loss come from the positions or from the engine's own scores?
if [ -n "$SF_ARMS" ]; then
    pids=()
    for ((shard = 0; shard < LABEL_SHARDS; shard++)); do
        "${LC[@]}" nnue label-static "$BIN" --out "$OUT/static" --random-plies 1 \
            --shard "$shard/$LABEL_SHARDS" --no-progress &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done  # a failed shard fails the script (set -e)
fi
sf_data=(--data "$OUT/static")
for extra in $SF_EXTRA_DATA; do sf_data+=(--data "$extra"); done
for arm in $SF_ARMS; do
    IFS=: read -r lr steps buckets <<< "$arm"
    buckets=${buckets:-1}
    run="$OUT/ft-sf-lr$lr-s$steps"
    [ "$buckets" = 1 ] || run="$run-b$buckets"  # output buckets, each starting as the shipped layers
    [ "$DENSE_LR_SCALE" = 0.1 ] || run="$run-d$DENSE_LR_SCALE"
    cache="$OUT/cache-static"  # one feature cache per feature set
    if [ "$SF_FEATURES" != ALL ]; then
        run="$run-f$SF_FEATURES"
        cache="$cache-$SF_FEATURES"
    fi
    if [ -n "$SF_EXTRA_DATA" ]; then  # other data: another run and cache (a cache knows its data)
        run="$run-plus"
        cache="$cache-plus"
    fi
    [ -f "$run/model/config.json" ] && continue
    train "$run" "${sf_data[@]}" --cache "$cache" --init "$SHIPPED" --l1 256 --lr "$lr" \
        --steps "$steps" --output-buckets "$buckets" --dense-lr-scale "$DENSE_LR_SCALE" \
        --features "$SF_FEATURES"
done

# From scratch, equal minutes: which accumulator width does this budget favour?
for l1 in $L1S; do
    run="$OUT/scratch-l1-$l1"
    [ -f "$run/model/config.json" ] && continue
    train "$run" --data "$BIN" --cache "$OUT/cache" --lambda "$SCRATCH_LAMBDA" --l1 "$l1" \
        --lr 2e-3 --steps 1000000 --max-minutes "$SCRATCH_MINUTES"
done

evals=(--eval "nnue:$SHIPPED")
for run in "$OUT"/ft-* "$OUT"/scratch-l1-*; do
    [ -f "$run/model/config.json" ] && evals+=(--eval "nnue:$run/model")
done
# Again whenever a network is newer than the last table.
newer=$(find "$OUT" -path "$OUT/*/model/config.json" -newer "$OUT/evalloss.json" 2>/dev/null || true)
if [ ! -f "$OUT/evalloss.json" ] || [ -n "$newer" ]; then
    .venv/bin/python benchmarks/bench_nnue.py evalloss "${evals[@]}" --positions 3000 \
        > "$OUT/evalloss.json.tmp"
    mv "$OUT/evalloss.json.tmp" "$OUT/evalloss.json"
fi

[ "$MATCHES" = 1 ] || exit 0
for run in "$OUT"/ft-* "$OUT"/scratch-l1-*; do
    [ -f "$run/model/config.json" ] || continue
    arm=$(basename "$run")
    [ -f "$OUT/$arm-vs-shipped-n$NODES.json" ] && continue  # done (an SPRT may have stopped it)
    games=(--sprt 0,10 --games "$MAX_GAMES")
    [[ $arm == scratch-* ]] && games=(--games "$SCRATCH_GAMES")
    "${LC[@]}" match "ab:eval=$run/model,name=$arm" "ab:eval=$SHIPPED,name=shipped" "${games[@]}" \
        --limit "nodes=$NODES" --workers 2 --pgn "$OUT/$arm-vs-shipped-n$NODES.pgn" \
        --json "$OUT/$arm-vs-shipped-n$NODES.json" --no-progress
done
