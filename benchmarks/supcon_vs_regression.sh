#!/usr/bin/env bash
# Does the contrastive geometry help planning? The shipped sparse-64 SupCon encoder against the
# same network trained by axis regression (`latentchess train regression`), scored by the same
# axis cosine in the same native search. Results in benchmarks/results/supcon_vs_regression/.
#   bash benchmarks/supcon_vs_regression.sh           # everything
#   bash benchmarks/supcon_vs_regression.sh train     # one section: train, info, ladder, match,
#                                                     # widths
# The data cache is sparse-64's (models/README.md, "Model card: sparse-64"), at
# runs/sparse-encoder/data/all-cache; the regression model stays in runs/ (RUN below).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-benchmarks/results/supcon_vs_regression}
run=${RUN:-runs/supcon-vs-regression/regression-64}
supcon=src/latentchess/weights/sparse-64
py=${PYTHON:-.venv/bin/python}
lc="$py -m latentchess"
want=${1:-all}
mkdir -p "$out"
timed() {  # timed NAME COMMAND...: run it, append "NAME seconds (load)" to timings.txt
    local name=$1 start=$SECONDS
    shift
    "$@"
    echo "$name $((SECONDS - start)) s (load $(cut -d' ' -f1-3 /proc/loadavg))" >>"$out/timings.txt"
}
if [[ $want == all || $want == train ]]; then
    # 1. sparse-64's settings at equal steps: 115,000 AdamW steps, cosine, peak lr 1e-3, fp32,
    #    one thread; 768 positions a step = SupCon's 128 anchors x (1 + 5 positives).
    OMP_NUM_THREADS=1 timed train nice -n 19 $lc train regression \
        --data runs/sparse-encoder/data/all-cache --out "$run" --model-config sparse-64 \
        --optimizer adamw --lr 0.001 --schedule cosine --batch-size 768 --steps 115000 \
        --threads 1 --precision fp32 --eval-every 10000 --checkpoint-every 5000 --seed 0 \
        --no-progress
fi
if [[ $want == all || $want == info ]]; then
    # 2. Held-out metrics of both (the same 20,000 rows: same cache, seed and split).
    $lc model-info "$supcon" --json >"$out/supcon_model.json"
    $lc model-info "$run/model" --json >"$out/regression_model.json"
fi
if [[ $want == all || $want == ladder ]]; then
    # 3. sparse-64's depth ladder, depth 8 width 3, for the regression model: its games are added
    #    to a copy of sparse-64's ladder PGN, so both are rated in one fit on the same rungs.
    compgen -G "$out/ladder/games.pgn*" >/dev/null || {
        mkdir -p "$out/ladder"
        xzcat benchmarks/results/depth_ladder/sparse-64/games.pgn.xz >"$out/ladder/games.pgn"
    }
    timed ladder nice -n 19 "$py" benchmarks/depth_ladder.py --out "$out/ladder" \
        --model "$run/model" --label regression --modes minimax --depths 8 --width 3 \
        --games-per-rung 10 --calibration-games 10 --focus regression-minimax-d8 \
        --focus-games 30 --workers 2 --no-progress
fi
if [[ $want == all || $want == match ]]; then
    # 4. Head to head in the same search, both colours of each opening: depth 8 width 3 (the
    #    ladder's setting; match.json) and depth 6 width 8 (match_d6w8.json).
    for dw in 8:3 6:8; do
        d=${dw%:*} w=${dw#*:}
        tag=$([[ $dw == 8:3 ]] && echo match || echo "match_d${d}w${w}")
        n=$([[ $w == 3 ]] && echo "d$d" || echo "d$d-w$w")
        timed "$tag" nice -n 19 $lc match \
            "latent:model=$run/model,depth=$d,width=$w,name=regression-$n" \
            "latent:model=$supcon,depth=$d,width=$w,name=sparse-64-$n" \
            --games 200 --limit depth=$d --workers 2 --max-plies 300 --adjudicate \
            --pgn "$out/$tag.pgn" --json "$out/$tag.json" --no-progress
    done
fi
if [[ $want == all || $want == widths ]]; then
    # 5. Widths 5 and 8 for sparse-64 at depth 8, added to a copy of its ladder PGN.
    w=benchmarks/results/depth_ladder/sparse-64-width
    compgen -G "$w/games.pgn*" >/dev/null || {
        mkdir -p "$w"
        xzcat benchmarks/results/depth_ladder/sparse-64/games.pgn.xz >"$w/games.pgn"
    }
    timed widths nice -n 19 "$py" benchmarks/depth_ladder.py --out "$w" --model "$supcon" \
        --modes minimax --depths 8 --width 5,8 --games-per-rung 10 --calibration-games 10 \
        --focus latent-minimax-d8-w5 --focus latent-minimax-d8-w8 --focus-games 30 \
        --workers 2 --no-progress
fi
