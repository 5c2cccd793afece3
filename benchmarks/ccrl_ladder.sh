#!/usr/bin/env bash
# The default engine's rating at one time control, fitted with BayesElo, on two scales:
#
# - Stockfish 15.1's UCI_Elo rungs (RUNGS). Stockfish maps UCI_Elo to its Skill Level by a fit
#   "anchored to CCRL Elo (goldfish 1.13 = 2000)" over matches at 60+0.6 (the comment above
#   `struct Skill` in its search.cpp): at TC=60+0.6 the rungs are a CCRL 40/4 scale, at 10+0.1
#   the same rungs off their calibration clock.
# - Engines with published CCRL ratings (ANCHORS, NAME=RATING: the sources in ../shared/anchors/,
#   built there by its build.sh into ANCHOR_DIR/bin when missing), one thread and 16 MB hash each.
#   Their fit uses the ratings as given, so it is on the scale they come from (CCRL Blitz for the
#   shipped defaults, the list that is played at a blitz clock).
#
# Each scale gets its own fit (tc${TC}_elo.json, tc${TC}_ccrl_elo.json). Resumable: a killed run
# continues each match from its PGN (stored .pgn.xz).
#
#   bash benchmarks/ccrl_ladder.sh OUT_DIR
#
# Knobs (environment): ENGINE (default ab), TC (default 60+0.6), RUNGS (default "2400 2650 2850";
# "" for none), RUNG_GAMES (per rung, default 12), ANCHORS (default none, e.g.
# "stash=3398 drofa=3298 polaris=3049"), ANCHOR_GAMES (per anchor, default RUNG_GAMES, or
# NAME=RATING:GAMES per anchor), ANCHOR_DIR (default runs/anchors), WORKERS (default 2).
# For timings that other jobs on the machine should not disturb, run it with
#   (echo -15 > /proc/self/autogroup; bash benchmarks/ccrl_ladder.sh OUT)
# (a process's own nice value does not reach across autogroups); the load average is logged.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$1
ENGINE=${ENGINE:-ab}
TC=${TC:-60+0.6}
RUNGS=${RUNGS-2400 2650 2850}
RUNG_GAMES=${RUNG_GAMES:-12}
WORKERS=${WORKERS:-2}
ANCHORS=${ANCHORS:-}
ANCHOR_GAMES=${ANCHOR_GAMES:-$RUNG_GAMES}
ANCHOR_DIR=${ANCHOR_DIR:-runs/anchors}
LC=(.venv/bin/python -m latentchess)
mkdir -p "$OUT"

(while true; do echo "$(date +%s) $(cat /proc/loadavg)"; sleep 30; done) >>"$OUT/load_average.log" &
LOGGER=$!
trap 'kill $LOGGER 2>/dev/null' EXIT

play() {  # play OPPONENT GAMES NAME
    "${LC[@]}" match "$ENGINE" "$1" --games "$2" --limit "tc=$TC" \
        --workers "$WORKERS" --adjudicate --event "ladder: $ENGINE vs $3 at $TC" \
        --pgn "$OUT/tc${TC}_vs_$3.pgn.xz" --json "$OUT/tc${TC}_vs_$3.json" --no-progress
}

anchors=()
pgns=()
for elo in $RUNGS; do
    opponent="stockfish:elo=$elo,Move Overhead=100"
    play "$opponent" "$RUNG_GAMES" "$elo"
    anchors+=(--anchor "$opponent=$elo")
    pgns+=("$(ls "$OUT/tc${TC}_vs_$elo".pgn*)")
done
if ((${#pgns[@]})); then
    "${LC[@]}" elo "${pgns[@]}" "${anchors[@]}" --json "$OUT/tc${TC}_elo.json"
fi

anchors=()
pgns=()
for anchor in $ANCHORS; do
    name=${anchor%%=*}
    rating=${anchor#*=}
    games=$ANCHOR_GAMES
    if [[ $rating == *:* ]]; then
        games=${rating#*:}
        rating=${rating%%:*}
    fi
    if [[ ! -x "$ANCHOR_DIR/bin/$name" ]]; then
        bash ../shared/anchors/build.sh "$ANCHOR_DIR"
    fi
    opponent="uci:$ANCHOR_DIR/bin/$name,Threads=1,Hash=16"
    play "$opponent" "$games" "$name"
    anchors+=(--anchor "$opponent=$rating")
    pgns+=("$(ls "$OUT/tc${TC}_vs_$name".pgn*)")
done
if ((${#pgns[@]})); then
    "${LC[@]}" elo "${pgns[@]}" "${anchors[@]}" --json "$OUT/tc${TC}_ccrl_elo.json"
fi
