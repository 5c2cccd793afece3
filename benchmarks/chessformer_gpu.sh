#!/usr/bin/env bash
# Train a human-move Chessformer on one GPU within a wall-clock budget, then score it on games it
# never saw (the human-model recipe in models/README.md).
#
#   bash benchmarks/chessformer_gpu.sh DATA OUT CONFIG MINUTES [extra `train chessformer` args]
#
# DATA: a PGN or a MoveData .npz (see train chessformer). A 25-second probe run measures this
# machine's positions/s for CONFIG, so the main run's cosine schedule ends inside MINUTES (steps =
# rate x time / batch) instead of being cut off half-way. Then `eval-human` scores OUT/main/model
# on the games after the training games (EVAL_PGN, SKIP_GAMES, EVAL_GAMES).
# Knobs: BATCH (1024), LR (1e-3), DEVICE (cuda), LOADER_WORKERS (4: processes that make the
# batches while the GPU trains), LC (how to run latentchess; default `python3 -m latentchess`).
# Pretraining then fine-tuning is two calls: the first on engine moves (a CSV or .npz of them),
# the second on rated games with `--init-from OUT1/main/model` as an extra argument.
set -euo pipefail
data=$1 out=$2 config=$3 minutes=$4
shift 4
batch=${BATCH:-1024}
lr=${LR:-1e-3}
lc=${LC:-python3 -m latentchess}
mkdir -p "$out"

$lc train chessformer --data "$data" --out "$out/probe" --model-config "$config" \
    --batch-size "$batch" --lr "$lr" --steps 1000000 --max-minutes 0.4 --eval-every 0 \
    --final-positions 512 --log-every 20 --device "${DEVICE:-cuda}" --no-progress \
    --loader-workers "${LOADER_WORKERS:-4}" "$@" >"$out/probe.log" 2>&1
rate=$(python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if "positions_per_s" in l]
print(int(rows[-1]["positions_per_s"]))' "$out/probe/metrics.jsonl")
steps=$(python3 -c "print(max(200, int($rate * 60 * $minutes / $batch)))")
echo "probe: $rate positions/s at batch $batch -> $steps steps in $minutes min"

$lc train chessformer --data "$data" --out "$out/main" --model-config "$config" \
    --batch-size "$batch" --lr "$lr" --steps "$steps" --warmup $((steps / 20)) \
    --max-minutes "$(python3 -c "print($minutes * 1.3)")" --eval-every $((steps / 4)) \
    --eval-positions 8192 --checkpoint-every 1000 --log-every 100 --device "${DEVICE:-cuda}" --no-progress \
    --loader-workers "${LOADER_WORKERS:-4}" "$@" 2>&1 | tee "$out/main.log" | grep -v '"kind": "train"' || true
if [[ -n "${EVAL_PGN:-}" ]]; then
    $lc eval-human "$EVAL_PGN" --model "$out/main/model" --skip-games "${SKIP_GAMES:-0}" \
        --max-games "${EVAL_GAMES:-2000}" --device "${DEVICE:-cuda}" --no-progress \
        --skip-plies 0 --min-clock 0 --time-control any \
        --bands 800,1000,1200,1400,1600,1800,2000,2200,2400 --json "$out/human.json"
fi
