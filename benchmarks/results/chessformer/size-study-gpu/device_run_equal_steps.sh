#!/usr/bin/env bash
# Equal-steps size comparison: maia3-3m and maia3-5m side by side on one GPU, 2,000 AdamW steps of
# 1,024 each (the recipe of chessformer_gpu.sh, full cosine), then eval-human by band.
set -u
G=$(cd "$(dirname "$0")" && pwd); R=${OUT:-runs/gpu-out}; W=${WORK:-runs/gpu-work}; L=$W/logs
mkdir -p "$W" "$R" "$L"
export PYTHONPATH=$G/site:$PWD/src PYTHONUNBUFFERED=1
DEV=${DEV:-cuda}; STEPS=${STEPS:-2000}; LC=${LC:-python3 -m latentchess}
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
xz -dc "$G/cf-data.npz.xz" > "$W/cf-data.npz"; el unpacked
run() {
  local c=$1 out=$W/$1
  $LC train chessformer --data "$W/cf-data.npz" --out "$out" --model-config "$c" --batch-size 1024 \
      --lr 1e-3 --steps "$STEPS" --warmup $((STEPS / 20)) --max-minutes "${CAP:-3.6}" --eval-every 0 \
      --checkpoint-every 1000 --log-every 100 --device "$DEV" --no-progress > "$L/$c-eq.log" 2>&1
  el "$c trained rc=$?" | tee -a "$L/summary.txt"
  cp "$out/metrics.jsonl" "$L/$c-eq-metrics.jsonl"
  $LC eval-human "$G/lichess_2021-10_sample.pgn" --model "$out/model" \
      --exclude-players-of "$G/lichess-rated-games.pgn.gz" --time-control blitz --device "$DEV" \
      --no-progress --json "$L/$c-eq-bands-blitz.json" > "$L/$c-eq-bands.log" 2>&1
  el "$c bands rc=$?" | tee -a "$L/summary.txt"
}
run maia3-3m & P=$!; run maia3-5m & P="$P $!"; wait $P
tar -czf "$R/logs2.tar.gz" -C "$W" logs; el packed
