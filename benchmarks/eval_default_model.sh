#!/usr/bin/env bash
# Puzzles, EPD suites and equal-time matches of the shipped default model (the default latent model; src/latentchess/weights/default when the gab-micro results were made, now weights/gab-micro), with a
# reference engine on the same suites; results and timings in benchmarks/results/default_model/.
# The Elo-by-depth ladder (our Table 2) is benchmarks/depth_ladder.py.
#   bash benchmarks/eval_default_model.sh            # everything (about 40 minutes on 2 cores)
#   OUT=DIR bash benchmarks/eval_default_model.sh    # results into DIR instead
#   bash benchmarks/eval_default_model.sh puzzles    # one section: puzzles, epd, reference,
#                                                    # sunfish, sf1350
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-benchmarks/results/default_model}
ts=../shared/testsuites
mkdir -p "$out"
lc=.venv/bin/latentchess
want=${1:-all}
timed() {  # timed NAME COMMAND...: run it, append "NAME seconds" to timings.txt
    local name=$1 start=$SECONDS
    shift
    "$@"
    echo "$name $((SECONDS - start)) s (load $(cut -d' ' -f1-3 /proc/loadavg))" >>"$out/timings.txt"
}
suites=("$ts/bratko-kopec.epd" "$ts/ECM.epd" "$ts/arasan2024.epd" "$ts/STS1-STS15_LAN_v6.epd")
if [[ $want == all || $want == puzzles ]]; then
    # 1. All 2,271 Lichess puzzles, ours at depth 4 width 3 (minimax).
    timed puzzles_d4 $lc puzzles solve "$ts/lichess_puzzles_dev.csv" --engine latent:depth=4,width=3 \
        --limit depth=4 --workers 2 --no-progress --json "$out/puzzles_d4.json" \
        --plot "$out/puzzles_d4.png"
fi
if [[ $want == all || $want == epd ]]; then
    # 2. Bratko-Kopec, ECM, Arasan 2024 and STS (v6 points) in full, ours at depth 4.
    timed epd_d4 $lc epd "${suites[@]}" --engine latent:depth=4,width=3 --limit depth=4 \
        --workers 2 --no-progress --json "$out/epd_d4.json"
fi
if [[ $want == all || $want == reference ]]; then
    # 3. The same puzzles and suites for Stockfish 15.1 UCI_Elo 1350 at 50 ms per move.
    timed puzzles_sf1350 $lc puzzles solve "$ts/lichess_puzzles_dev.csv" \
        --engine stockfish:elo=1350 --limit 50ms --workers 2 --no-progress \
        --json "$out/puzzles_sf1350_50ms.json" --plot "$out/puzzles_sf1350_50ms.png"
    timed epd_sf1350 $lc epd "${suites[@]}" --engine stockfish:elo=1350 --limit 50ms \
        --workers 2 --no-progress --json "$out/epd_sf1350_50ms.json"
fi
if [[ $want == all || $want == sunfish ]]; then
    # 4. Equal time per move against Sunfish: 1 s per move each, 8 games (4 openings x 2 colours).
    timed vs_sunfish_1s $lc match latent sunfish --limit 1s --games 8 --workers 2 --max-plies 200 \
        --no-progress --pgn "$out/vs_sunfish_1s.pgn" --json "$out/vs_sunfish_1s.json"
fi
if [[ $want == all || $want == sf1350 ]]; then
    # 5. Depth 6 width 3 (the default) against Stockfish 15.1 UCI_Elo 1350 at 50 ms per move.
    timed vs_sf1350 $lc match latent:depth=6,width=3 stockfish:elo=1350 --limit1 depth=6 \
        --limit2 50ms --games 8 --workers 2 --max-plies 200 --no-progress \
        --pgn "$out/vs_sf1350.pgn" --json "$out/vs_sf1350.json"
fi
