#!/usr/bin/env bash
# Strength of the shipped Chessformers without search (issue 14): Lichess puzzles (dev half) and
# the Stockfish UCI_Elo ladder, for the policy's argmax (mode=policy, one forward pass per move)
# and the best child by the value head (mode=value, one batched ply). Resumable (the ladder
# continues from its PGN; puzzles rerun in minutes).
#
#   bash benchmarks/chessformer_strength.sh [OUT_DIR] [STAGES]
#
# Stages (default "puzzles ladder"). Knobs: MODELS (default "engine"; "human" adds the human
# model at elo=2500), MODES ("policy value"), RUNG_GAMES (12).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-benchmarks/results/chessformer/strength}
STAGES=${2:-puzzles ladder}
MODELS=${MODELS:-engine}
MODES=${MODES:-policy value}
RUNG_GAMES=${RUNG_GAMES:-12}
PUZZLES=../shared/testsuites/lichess_puzzles_dev.csv
LC=(.venv/bin/python -m latentchess)
mkdir -p "$OUT"
for model in $MODELS; do
    extra=""
    [ "$model" = human ] && extra=",elo=2500"
    for mode in $MODES; do
        spec="chessformer:model=$model,mode=$mode$extra"
        tag="$model-$mode"
        for stage in $STAGES; do
            case $stage in
            puzzles)
                "${LC[@]}" puzzles solve "$PUZZLES" --engine "$spec" --limit nodes=1 --workers 2 \
                    --json "$OUT/puzzles-$tag.json" --plot "$OUT/puzzles-$tag.png" --no-progress \
                    | tail -n 4
                ;;
            ladder)
                "${LC[@]}" ladder "$spec" --limit nodes=1 --opponent-limit 50ms --adjudicate \
                    --games-per-rung "$RUNG_GAMES" --calibration-games 20 --workers 2 \
                    --pgn "$OUT/ladder-$tag.pgn" --json "$OUT/ladder-$tag.json" --no-progress \
                    | tail -n 12
                ;;
            *)
                echo "unknown stage $stage (puzzles, ladder)" >&2
                exit 2
                ;;
            esac
        done
    done
done
