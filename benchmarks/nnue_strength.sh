#!/usr/bin/env bash
# Strength of one NNUE inside `ab` (issue 15's goals), resumable: a killed run continues each
# match from its PGN.
#
#   bash benchmarks/nnue_strength.sh MODEL_DIR OUT_DIR [STAGES]
#
# Stages (default "hce-100ms hce-tc ladder"):
#   hce-100ms  MODEL against `ab:eval=hce`, same search, 100 ms per move, paired openings
#   hce-tc     the same at 10+0.1 per game
#   ladder     MODEL against Stockfish 15.1 at UCI_Elo 2200 / 2400 / 2600 at 10+0.1
#              (Move Overhead=100 for Stockfish, as benchmarks/results/ab_ladder/), then one
#              BayesElo fit anchored at the three rungs
# Knobs (environment): GAMES (vs hce, default 60), RUNG_GAMES (per rung, default 12),
# RUNGS (default "2200 2400 2600").
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=$1
OUT=$2
STAGES=${3:-hce-100ms hce-tc ladder}
GAMES=${GAMES:-60}
RUNG_GAMES=${RUNG_GAMES:-12}
RUNGS=${RUNGS:-2200 2400 2600}
LC=(.venv/bin/python -m latentchess)
mkdir -p "$OUT"
ENGINE="ab:eval=$MODEL"

for stage in $STAGES; do
    case $stage in
    hce-100ms | hce-tc)
        limit=100ms
        [ "$stage" = hce-tc ] && limit=tc=10+0.1
        "${LC[@]}" match "$ENGINE" ab:eval=hce --games "$GAMES" --limit "$limit" --workers 2 \
            --pgn "$OUT/vs-$stage.pgn" --json "$OUT/vs-$stage.json" --no-progress
        ;;
    ladder)
        anchors=()
        for elo in $RUNGS; do
            "${LC[@]}" match "$ENGINE" "stockfish:elo=$elo,Move Overhead=100" --games "$RUNG_GAMES" \
                --limit tc=10+0.1 --workers 2 --adjudicate --pgn "$OUT/tc10+0.1_vs_$elo.pgn" \
                --no-progress
            anchors+=(--anchor "stockfish:elo=$elo,Move Overhead=100=$elo")
        done
        "${LC[@]}" elo "$OUT"/tc10+0.1_vs_*.pgn "${anchors[@]}" --json "$OUT/tc10+0.1_elo.json"
        ;;
    *)
        echo "unknown stage $stage (hce-100ms, hce-tc, ladder)" >&2
        exit 2
        ;;
    esac
done
