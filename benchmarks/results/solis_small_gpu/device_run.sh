#!/usr/bin/env bash
# One device call: SOLIS Small (paper recipe, two batch sizes) and two larger human Chessformers,
# trained side by side on one GPU, each within a wall-clock budget; results packed into $OUT.
# Knobs: DEV (cuda), SOLIS_MIN, CF_MIN, SOLIS_CFG (small), CF_CFGS ("maia3-5m maia3-23m"), LC.
set -u
G=$(cd "$(dirname "$0")" && pwd)
R=${OUT:-runs/gpu-out}; W=${WORK:-runs/gpu-work}; L=$W/logs
mkdir -p "$W" "$R" "$L"
export PYTHONPATH=$G/site:$PWD/src PYTHONUNBUFFERED=1
DEV=${DEV:-cuda}; SM=${SOLIS_MIN:-5.8}; CM=${CF_MIN:-5.0}
SCFG=${SOLIS_CFG:-small}; CFGS=${CF_CFGS:-maia3-5m maia3-23m}
LC=${LC:-python3 -m latentchess}
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
{ nvidia-smi; python3 -c 'import sys,torch,chess;print(sys.version);print(torch.__version__,torch.cuda.is_available(),chess.__version__)'; nproc; lscpu | grep "Model name"; } > "$L/env.txt" 2>&1
xz -dc "$G/solis-3m.tar.xz" | tar -x -C "$W" &
xz -dc "$G/cf-data.npz.xz" > "$W/cf-data.npz" &
wait; el "data unpacked"; ls -la "$W" "$W/solis-3m"

solis() {  # name batch lr
  local name=$1 batch=$2 lr=$3 out=$W/$1
  $LC train supcon --data "$W/solis-3m" --out "$out/probe" --model-config "$SCFG" --batch-size "$batch" \
      --lr "$lr" --steps 1000000 --max-minutes 0.35 --eval-every 0 --eval-positions 1024 \
      --axis-positions 256 --log-every 10 --device "$DEV" --no-progress > "$L/$name-probe.log" 2>&1
  local rate steps
  rate=$(python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if "views_per_s" in l]; print(r[-1]["views_per_s"])' "$out/probe/metrics.jsonl")
  steps=$(python3 -c "print(max(200, int($rate * 60 * $SM / ($batch * 6))))")
  el "$name: probe $rate views/s -> $steps steps of $batch in $SM min" | tee -a "$L/summary.txt"
  $LC train supcon --data "$W/solis-3m" --out "$out/main" --model-config "$SCFG" --batch-size "$batch" \
      --lr "$lr" --steps "$steps" --warmup $((steps / 25)) --max-minutes "$(python3 -c "print($SM * 1.15)")" \
      --eval-every $((steps / 4)) --eval-positions 8192 --checkpoint-every 1000 --log-every 50 \
      --device "$DEV" --no-progress > "$L/$name-main.log" 2>&1
  el "$name: done rc=$?" | tee -a "$L/summary.txt"
  cp "$out/main/metrics.jsonl" "$L/$name-metrics.jsonl" 2>/dev/null
  cp "$out/main/training.png" "$L/$name-training.png" 2>/dev/null
}
cf() {  # config
  local c=$1 out=$W/$1
  DEVICE=$DEV LC="$LC" bash benchmarks/chessformer_gpu.sh "$W/cf-data.npz" "$out" "$c" "$CM" > "$L/$c.log" 2>&1
  el "$c: trained rc=$?" | tee -a "$L/summary.txt"
  cp "$out/main/metrics.jsonl" "$L/$c-metrics.jsonl" 2>/dev/null; cp "$out/probe.log" "$L/$c-probe.log" 2>/dev/null; cp "$out/main.log" "$L/$c-main.log" 2>/dev/null
  $LC eval-human "$G/lichess_2021-10_sample.pgn" --model "$out/main/model" \
      --exclude-players-of "$G/lichess-rated-games.pgn.gz" --time-control blitz --device "$DEV" \
      --no-progress --json "$L/$c-bands-blitz.json" > "$L/$c-bands.log" 2>&1
  el "$c: bands rc=$?" | tee -a "$L/summary.txt"
}
# watchdog: at STOP_AT seconds stop every training (SIGTERM: checkpoint + model), so packing ends in time
( sleep "${STOP_AT:-550}"; el "watchdog: stopping" >> "$L/summary.txt"; pkill -TERM -f "latentchess (train|eval-human)" ) &
WD=$!
solis solis-b128 128 0.03 & PIDS=$!
solis solis-b512 512 0.06 & PIDS="$PIDS $!"
for c in $CFGS; do cf "$c" & PIDS="$PIDS $!"; done
wait $PIDS
kill $WD 2>/dev/null
el "all done" | tee -a "$L/summary.txt"
# pack: small logs in one tar; models (fp16) in a tar split into 15 MB parts
python3 - "$W" <<'P'
import sys, pathlib, torch
from safetensors.torch import load_file, save_file
for f in pathlib.Path(sys.argv[1]).glob("solis-b*/main/model/model.safetensors"):
    t = load_file(str(f)); save_file({k: v.half().contiguous() for k, v in t.items()}, str(f), metadata={"format": "pt"})
P
tar -czf "$R/logs.tar.gz" -C "$W" logs
models=$(cd "$W" && ls -d solis-b*/main/model maia3-5m/main/model 2>/dev/null)
[ -n "$models" ] && tar -cf - -C "$W" $models | split -b 15000000 -d - "$R/models.tar.part"
ls -la "$R"; el "packed"
