#!/usr/bin/env bash
# The default engine on Stockfish 15.1's UCI_Elo rungs at one time control, fitted with BayesElo
# (issue 29). Stockfish 15.1 maps UCI_Elo to its Skill Level by a fit "anchored to CCRL Elo
# (goldfish 1.13 = 2000)" over matches at 60+0.6 (the comment above `struct Skill` in its
# search.cpp), so at TC=60+0.6 the rungs are a CCRL-anchored scale; at 10+0.1 they are the same
# rungs off their calibration clock. Resumable: a killed run continues each match from its PGN.
#
#   bash benchmarks/ccrl_ladder.sh OUT_DIR
#
# Knobs (environment): ENGINE (default ab), TC (default 60+0.6), RUNGS (default "2400 2650 2850"),
# RUNG_GAMES (per rung, default 12), WORKERS (default 2).
# For timings that other jobs on the machine should not disturb, run it with
#   (echo -15 > /proc/self/autogroup; bash benchmarks/ccrl_ladder.sh OUT)
# (a process's own nice value does not reach across autogroups); the load average is logged.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$1
ENGINE=${ENGINE:-ab}
TC=${TC:-60+0.6}
RUNGS=${RUNGS:-2400 2650 2850}
RUNG_GAMES=${RUNG_GAMES:-12}
WORKERS=${WORKERS:-2}
LC=(.venv/bin/python -m latentchess)
mkdir -p "$OUT"

(while true; do echo "$(date +%s) $(cat /proc/loadavg)"; sleep 30; done) >>"$OUT/load_average.log" &
LOGGER=$!
trap 'kill $LOGGER 2>/dev/null' EXIT

anchors=()
for elo in $RUNGS; do
    opponent="stockfish:elo=$elo,Move Overhead=100"
    "${LC[@]}" match "$ENGINE" "$opponent" --games "$RUNG_GAMES" --limit "tc=$TC" \
        --workers "$WORKERS" --adjudicate --event "ladder: $ENGINE vs UCI_Elo $elo at $TC" \
        --pgn "$OUT/tc${TC}_vs_$elo.pgn" --json "$OUT/tc${TC}_vs_$elo.json" --no-progress
    anchors+=(--anchor "$opponent=$elo")
done
"${LC[@]}" elo "$OUT"/tc"${TC}"_vs_*.pgn "${anchors[@]}" --json "$OUT/tc${TC}_elo.json"
