#!/usr/bin/env bash
# The thesis's feature-set table at our scale (issue 15): every feature set trained on the same data
# with the same budget, then paired-opening matches against ALL at fixed nodes (evaluation quality)
# and at fixed time (its cost). Resumable: rerunning skips finished trainings and resumes matches.
#
#   bash benchmarks/nnue_feature_study.sh [OUT_DIR]      (default /tmp/nnue-study)
#
# Knobs (environment): MINUTES (training minutes per set, default 60), GAMES (per match, default
# 200), NODES (default 20000), TIME (per move, default 100ms), THREADS (default 1).
# MB and MC are Python-only blocks (the core does not compute mobility), so their rows get the
# validation loss but no Elo. Results: OUT_DIR/table.md (collect with the last step).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/nnue-study}
MINUTES=${MINUTES:-60}
GAMES=${GAMES:-200}
NODES=${NODES:-20000}
TIME=${TIME:-100ms}
THREADS=${THREADS:-1}
D=/work/shared/data
DATA=(--data "$D/tcec-engine-evals.csv.gz:1200000:2" --data "$D/sf15-selfplay-mpv1.csv.gz:900000:3"
      --data "$D/sf15-d9-eco-selfplay.csv.gz")
SETS="ALL ALL+H+V ALL+D1+D2 ALL+H+V+D1+D2 H+V+D1+D2 H+V D1+D2 ALL+PV ALL+PH ALL+PH+PV ALL+MB ALL+MC"
PY=.venv/bin/python
mkdir -p "$OUT"
for fs in $SETS; do
    run="$OUT/train-$fs"
    [ -f "$run/model/config.json" ] && continue
    nice -n 10 $PY -m latentchess nnue train "${DATA[@]}" --out "$run" --features "$fs" --l1 256 \
        --l2 32 --steps 1000000 --max-minutes "$MINUTES" --threads "$THREADS" --no-progress \
        > "$OUT/train-$fs.log" 2>&1
done
# PQR fine-tuning of the ALL network (thesis: +141 +- 6 Elo fine-tuned).
if [ ! -f "$OUT/pqr-ALL/model/config.json" ]; then
    nice -n 10 $PY -m latentchess nnue train "${DATA[@]}" --out "$OUT/pqr-ALL" --loss pqr \
        --init "$OUT/train-ALL/model" --lr 5e-5 --steps 1000000 --max-minutes "$MINUTES" \
        --threads "$THREADS" --no-progress > "$OUT/pqr-ALL.log" 2>&1
fi
for fs in $SETS pqr; do
    [ "$fs" = ALL ] && continue
    case "$fs" in *MB*|*MC*) continue ;; esac
    model="$OUT/train-$fs/model"
    [ "$fs" = pqr ] && model="$OUT/pqr-ALL/model"
    for limit in "nodes=$NODES" "$TIME"; do
        tag="$fs-${limit//[=]/}"
        nice -n 10 $PY -m latentchess match "ab:eval=$model" "ab:eval=$OUT/train-ALL/model" \
            --games "$GAMES" --limit "$limit" --workers 2 --pgn "$OUT/match-$tag.pgn" \
            --json "$OUT/match-$tag.json" --no-progress
    done
done
$PY - "$OUT" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
rows = ["| feature set | cache width | val. loss | Elo vs ALL, nodes (95%) | Elo vs ALL, time (95%) |", "|---|---|---|---|---|"]
for run in sorted(out.glob("train-*/model/config.json")) + sorted(out.glob("pqr-*/model/config.json")):
    doc = json.loads(run.read_text())
    fs = run.parent.parent.name.removeprefix("train-")
    key = "pqr" if fs.startswith("pqr") else fs
    elo = []
    for suffix in ("nodes", "ms"):
        hits = [p for p in out.glob(f"match-{key}-*.json") if suffix in p.name]
        if hits:
            e = json.loads(hits[0].read_text())["elo"]
            elo.append(f"{e['diff']:+.0f} [{e['lower']:+.0f}, {e['upper']:+.0f}]")
        else:
            elo.append("-")
    size = doc["data"].get("width", "")
    rows.append(f"| {fs} | {size} | {doc['metrics'].get('val_loss', float('nan')):.6f} | {elo[0]} | {elo[1]} |")
(out / "table.md").write_text("\n".join(rows) + "\n")
print("\n".join(rows))
PY
