#!/usr/bin/env bash
# One device call (issue 30's wider-network question on a lent GPU): the shipped NNUE recipe
# (ALL + psqt, L2 32, Adam 2e-3, dense layers x 0.1, lr x 0.9 per epoch of the training split,
# batch 16,384) trained from scratch on one feature cache by several arms side by side on one GPU,
# each within a wall-clock budget; models and logs packed into $OUT.
#
#   bash benchmarks/nnue_gpu_pack.sh runs/cache-s01 runs/gpu      (here: the pack, 41 MB)
#   bash benchmarks/nnue_width_gpu.sh                             (there, carry=["runs/gpu"])
#
# Arms: NAME:L1:STEPS (ARMS; default below). Knobs: G (the pack, runs/gpu), DEV (cuda), MINUTES
# (per arm), THREADS (torch threads per arm), BATCH (16,384), STOP_AT (the watchdog, seconds),
# LC (how to run latentchess). The device needs no compiled core: training reads the cache.
set -u
G=${G:-$PWD/runs/gpu}
R=${OUT:-runs/gpu-out}; W=${WORK:-runs/gpu-work}; L=$W/logs
mkdir -p "$W" "$R" "$L"
export PYTHONPATH=$G/site:$PWD/src PYTHONUNBUFFERED=1
DEV=${DEV:-cuda}; MIN=${MINUTES:-6}; THR=${THREADS:-3}; BATCH=${BATCH:-16384}
ARMS=${ARMS:-"g256:256:8232 g384:384:8232 g512:512:8232 g768:768:8232 g1024:1024:8232"}
LC=${LC:-python3 -m latentchess}
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
{ nvidia-smi; python3 -c 'import sys,torch,chess,safetensors;print(sys.version);print(torch.__version__,torch.cuda.is_available(),chess.__version__)'; nproc; lscpu | grep "Model name"; } > "$L/env.txt" 2>&1
mkdir -p "$W/cache"; xz -T0 -dc "$G/cache.tar.xz" | tar -x -C "$W/cache"
# The pack holds White's perspective only (the 64 MiB transfer limit); Black's is its mirror
# (latentchess.nnue.features.mirror_all_features, checked equal to the core's extraction on every
# row before packing).
python3 - "$W/cache" <<'P'
import sys, numpy as np
from latentchess.nnue.features import mirror_all_features
d = sys.argv[1]; w = np.load(f"{d}/white.npy")
np.save(f"{d}/features.npy", np.stack([w, mirror_all_features(w)], axis=1))
P
rm -f "$W/cache/white.npy"
el "cache unpacked" | tee -a "$L/summary.txt"; ls -la "$W/cache" >> "$L/summary.txt"

arm() {  # name l1 steps
  local name=$1 l1=$2 steps=$3 out=$W/$1
  $LC train nnue --data "$W/cache" --cache "$W/cache" --out "$out" --l1 "$l1" --l2 32 --psqt \
      --lr 2e-3 --gamma 0.9 --dense-lr-scale 0.1 --steps "$steps" --batch-size "$BATCH" --max-minutes "$MIN" \
      --threads "$THR" --device "$DEV" --eval-every 1000 --checkpoint-every 1000 --log-every 100 \
      --no-progress > "$L/$name.log" 2>&1
  el "$name: rc=$?" | tee -a "$L/summary.txt"
  cp "$out/metrics.jsonl" "$L/$name-metrics.jsonl" 2>/dev/null
  cp "$out/training.png" "$L/$name-training.png" 2>/dev/null
}
# watchdog: stop every training (SIGTERM: checkpoint + model) so that packing ends in time
( sleep "${STOP_AT:-440}"; el "watchdog: stopping" >> "$L/summary.txt"; pkill -TERM -f "latentchess train" ) &
WD=$!
PIDS=""
for a in $ARMS; do IFS=: read -r n l s <<< "$a"; arm "$n" "$l" "$s" & PIDS="$PIDS $!"; done
wait $PIDS
kill $WD 2>/dev/null
el "all done" | tee -a "$L/summary.txt"
# an arm the watchdog stopped has a checkpoint but no model: export the checkpoint's weights
for a in $ARMS; do n=${a%%:*}
  [ -f "$W/$n/model/config.json" ] || python3 -c 'import sys; from latentchess.training.nnue import export_checkpoint; export_checkpoint(sys.argv[1])' "$W/$n" >> "$L/summary.txt" 2>&1
done
tar -czf "$R/logs.tar.gz" -C "$W" logs
models=$(cd "$W" && for a in $ARMS; do [ -d "${a%%:*}/model" ] && echo "${a%%:*}/model"; done)
[ -n "$models" ] && tar -cf - -C "$W" $models | split -b 15000000 -d - "$R/models.tar.part"
ls -la "$R"; el "packed"
