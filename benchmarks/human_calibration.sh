#!/usr/bin/env bash
# Calibration of ab's UCI_LimitStrength: ab:limit_strength=true,elo=R (the human Chessformer at
# rating R, temperature 1, top-p 1) against Stockfish 15.1, every game from the initial position
# (no book: each side's own moves from move 1), one worker, 50 ms per move for Stockfish (the
# human engine answers at once whatever the limit).
#
#   bash benchmarks/human_calibration.sh [GAMES] [OUT]     # ANCHOR_GAMES=30 by default
#   .venv/bin/python benchmarks/human_calibration_report.py [OUT]
#
# 1. R = 1200, 1600, 2000 (verification off) against Stockfish UCI_Elo 1350, 1600, 2000;
# 2. the same three against Stockfish Skill Level 0 at 30 nodes (the ladder's rung below
#    UCI_Elo 1350), that rung against UCI_Elo 1350 (to place it), and R = 1600 with
#    verification on against both.
# GAMES per match of step 2, ANCHOR_GAMES per match of step 1 (where the scores are near 0, so
# more games there tell little). Resumable: each match appends to its PGN and resumes from it.
set -euo pipefail
GAMES=${1:-40}
ANCHOR_GAMES=${ANCHOR_GAMES:-30}
OUT=${2:-benchmarks/results/human_play/calibration}
PY=${PY:-.venv/bin/latentchess}
mkdir -p "$OUT"
START=benchmarks/results/human_play/startpos.epd
SKILL0="stockfish:skill=0,name=sf-skill0-nodes30"

match() {  # GAMES ENGINE1 ENGINE2 FILE [extra match flags]
  local games=$1 one=$2 two=$3 file=$4
  shift 4
  "$PY" match "$one" "$two" --games "$games" --limit 50ms --openings "$START" --workers 1 \
    --no-progress --pgn "$OUT/$file.pgn" --json "$OUT/$file.json" "$@"
}

for pair in 1200:1350 1600:1600 2000:2000; do
  R=${pair%%:*}
  SF=${pair##*:}
  match "$ANCHOR_GAMES" "ab:limit_strength=true,elo=$R,verify=false" "stockfish:elo=$SF" \
    "ab-elo$R-vs-sf$SF" \
    --event "human ab elo=$R vs stockfish elo=$SF"
done
for R in 1200 1600 2000; do
  match "$GAMES" "ab:limit_strength=true,elo=$R,verify=false" "$SKILL0" "ab-elo$R-vs-skill0" \
    --limit2 nodes=30 --event "human ab elo=$R vs stockfish skill 0 at 30 nodes"
done
match "$GAMES" "$SKILL0" "stockfish:elo=1350" "skill0-vs-sf1350" --limit1 nodes=30 \
  --event "stockfish skill 0 at 30 nodes vs stockfish elo=1350"
match "$GAMES" "ab:limit_strength=true,elo=1600,verify=true" "$SKILL0" \
  "ab-elo1600-verify-vs-skill0" \
  --limit2 nodes=30 --event "human ab elo=1600 verify vs stockfish skill 0 at 30 nodes"
match "$GAMES" "ab:limit_strength=true,elo=1600,verify=true" "stockfish:elo=1350" \
  "ab-elo1600-verify-vs-sf1350" --event "human ab elo=1600 verify vs stockfish elo=1350"
