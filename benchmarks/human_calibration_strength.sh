#!/usr/bin/env bash
# Calibrating UCI_Elo (issue 31): ab:limit_strength=true against Stockfish 15.1 UCI_Elo rungs at
# 50 ms per move, every game from the initial position (the human engine answers in tens of
# milliseconds whatever the limit), as benchmarks/human_calibration.sh. Resumable.
#
#   bash benchmarks/human_calibration_strength.sh grid      # 1. the strength knob, uncalibrated
#   .venv/bin/python benchmarks/human_calibration_fit.py    # 2. fit the table -> calibration.json
#   ROUND=K bash benchmarks/human_calibration_strength.sh validate  # 3. the shipped table at R
#   .venv/bin/python benchmarks/human_calibration_fit.py --report   # 4. every round's result
# (then 2. again with round K's games in the fit, and round K+1 tests that table out of sample)
#
# grid: the model at rating R with beta = HumanSearchWeight (depth D) for a few (R, beta, D),
#       each against three rungs around its expected strength.
# validate: ab:limit_strength=true,elo=R (the shipped table, copied to validate-$ROUND/table.json
#       when the round starts) for R = 1100..2100, each against the two rungs nearest R (1350 is
#       Stockfish's lowest).
# Knobs: GAMES per pairing (default 10), WORKERS (default 2), OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
STAGE=${1:?grid or validate}
GAMES=${GAMES:-10}
WORKERS=${WORKERS:-2}
OUT=${OUT:-benchmarks/results/human_play/strength}
PY=(.venv/bin/python -m latentchess)
START=benchmarks/results/human_play/startpos.epd
ROUND=${ROUND:-1}
[ "$STAGE" = validate ] && STAGE=validate-$ROUND
mkdir -p "$OUT/$STAGE"

match() {  # ENGINE STOCKFISH_ELO FILE
  "${PY[@]}" match "$1" "stockfish:elo=$2" --games "$GAMES" --limit 50ms --openings "$START" \
    --workers "$WORKERS" --adjudicate --no-progress --event "human calibration ($STAGE)" \
    --pgn "$OUT/$STAGE/$3-vs-sf$2.pgn" --json "$OUT/$STAGE/$3-vs-sf$2.json"
}

case $STAGE in
grid)
  # R:beta:depth:rungs
  for setting in 1600:0.3:6:1350,1700,2100 1600:1:6:1350,1700,2100 1600:3:6:1350,1700,2100 \
    1600:10:6:1350,1700,2100 \
    2000:10:8:1700,2100,2500; do
    IFS=: read -r R B D RUNGS <<<"$setting"
    spec="ab:limit_strength=true,elo=$R,calibrated=false,search_weight=$B,search_depth=$D"
    for sf in ${RUNGS//,/ }; do
      match "$spec" "$sf" "elo$R-beta$B-depth$D"
    done
  done
  ;;
validate-*)
  table=src/latentchess/weights/chessformer-human/calibration.json
  [ -f "$OUT/$STAGE/table.json" ] || cp "$table" "$OUT/$STAGE/table.json"
  cmp -s "$table" "$OUT/$STAGE/table.json" || {
    echo "round $ROUND was played with another table ($OUT/$STAGE/table.json)" >&2
    exit 2
  }
  for pair in 1100:1350,1600 1400:1350,1600 1700:1500,1900 2000:1800,2200 2100:1900,2300; do
    R=${pair%%:*}
    for sf in $(echo "${pair##*:}" | tr , ' '); do
      match "ab:limit_strength=true,elo=$R" "$sf" "calibrated$R"
    done
  done
  ;;
*)
  echo "unknown stage $STAGE (grid, validate)" >&2
  exit 2
  ;;
esac
