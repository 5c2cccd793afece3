#!/usr/bin/env bash
# Evaluate a Chessformer human-move model (default: the shipped one) into
# benchmarks/results/chessformer/: move matching on games it never saw, the paper's attention
# analysis, a GAB picture and short engine matches with Elo intervals. About 10 minutes on 2 cores.
# Usage: [PGN=games.pgn.gz] benchmarks/eval_chessformer.sh [MODEL_DIR] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-src/latentchess/weights/chessformer-human}
OUT=${2:-benchmarks/results/chessformer}
PGN=${PGN:-../shared/data/lichess-rated-games.pgn.gz}
LC=.venv/bin/latentchess
mkdir -p "$OUT"
export OMP_NUM_THREADS=1
# The shipped model was trained on the file's first 12,000 games: games 12,001-14,000 are unseen.
# Every position, 200-point bands (as recorded; the field's protocol is benchmarks/human_bands.sh)
$LC eval-human "$PGN" --model "$MODEL" --skip-games 12000 --max-games 2000 --no-progress \
    --skip-plies 0 --min-clock 0 --time-control any --bands 800,1000,1200,1400,1600,1800,2000,2200,2400 \
    --json "$OUT/unseen_games.json" | tee "$OUT/unseen_games.txt"
$LC chessformer attention "$PGN" --model "$MODEL" --max-games 300 --positions 512 \
    --json "$OUT/attention_table3.json" | tee "$OUT/attention_table3.txt"
$LC plot attention "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3" \
    --model "$MODEL" --square f3 --layer 0 --out "$OUT/gab_f3_layer0.png"
for opponent in random greedy; do
    $LC match "chessformer:model=$MODEL,elo=1900" "$opponent" --games 20 --limit nodes=1 \
        --pgn "$OUT/match_$opponent.pgn" --json "$OUT/match_$opponent.json" --no-progress \
        | tail -n 4 | tee "$OUT/match_$opponent.txt"
done
