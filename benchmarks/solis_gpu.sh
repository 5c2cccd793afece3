#!/usr/bin/env bash
# Train a SOLIS encoder with the paper's recipe (SupCon, SGD momentum 0.9, delta 0.05, tau 0.07,
# five positives) on one GPU within a wall-clock budget, resumable in runs of a few minutes.
#
#   bash benchmarks/solis_gpu.sh CACHE OUT CONFIG MINUTES [extra `train supcon` args]
#
# CACHE: a training cache (`latentchess data build-cache`). The first call runs a 20-second probe
# of this machine's views/s for CONFIG and writes OUT/plan.json: the step count whose cosine
# schedule ends inside MINUTES (steps = rate x time / (batch x 6 views)), or TOTAL_STEPS when set
# (the paper: 400000). Every later call with the same OUT keeps that plan and resumes from
# OUT/main/checkpoints for another MINUTES, so a long schedule runs as a series of short leases.
# Knobs: BATCH (128, the paper's), LR (0.03), DEVICE (cuda), THREADS (4: several runs can share a
# machine's cores), TOTAL_STEPS, PROBE_MINUTES (0.35), LC (how to run latentchess; default
# `python3 -m latentchess`).
set -euo pipefail
cache=$1 out=$2 config=$3 minutes=$4
shift 4
batch=${BATCH:-128}
lr=${LR:-0.03}
lc=${LC:-python3 -m latentchess}
common=(--data "$cache" --model-config "$config" --batch-size "$batch" --lr "$lr"
        --device "${DEVICE:-cuda}" --threads "${THREADS:-4}" --no-progress)
mkdir -p "$out"

if [[ ! -f "$out/plan.json" ]]; then
    if [[ -n "${TOTAL_STEPS:-}" ]]; then
        steps=$TOTAL_STEPS
    else
        $lc train supcon "${common[@]}" --out "$out/probe" --steps 1000000 --max-minutes "${PROBE_MINUTES:-0.35}" \
            --eval-every 0 --eval-positions 1024 --axis-positions 256 --log-every 10 "$@" \
            >"$out/probe.log" 2>&1
        steps=$(python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if "views_per_s" in l]
rate, batch, minutes = rows[-1]["views_per_s"], int(sys.argv[2]), float(sys.argv[3])
print(max(200, int(rate * 60 * minutes / (batch * 6))))' "$out/probe/metrics.jsonl" "$batch" "$minutes")
    fi
    printf '{"steps": %d, "batch_size": %d, "lr": %s, "config": "%s"}\n' \
        "$steps" "$batch" "$lr" "$config" >"$out/plan.json.tmp"
    mv "$out/plan.json.tmp" "$out/plan.json"
fi
steps=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["steps"])' "$out/plan.json")
echo "plan: $steps steps of $batch anchors; this call: up to $minutes min"

$lc train supcon "${common[@]}" --out "$out/main" --steps "$steps" --warmup $((steps / 25)) \
    --max-minutes "$minutes" --eval-every $((steps / 4 > 0 ? steps / 4 : 1)) --eval-positions 8192 \
    --checkpoint-every 500 --log-every 50 "$@" 2>&1 | tee -a "$out/main.log"
