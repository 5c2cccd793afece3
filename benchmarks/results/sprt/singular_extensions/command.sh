#!/bin/sh
# The SPRT of singular extensions (ab, on by default) against the same search without them.
# Rerunning resumes from games.pgn.xz and recomputes the LLR from the complete pairs in it.
cd "$(dirname "$0")/../../../.." && exec .venv/bin/latentchess match ab ab:se=0 \
    --sprt 0,20 --alpha 0.05 --beta 0.05 --games 600 --limit nodes=100000 --workers 1 \
    --adjudicate --event "SPRT ab vs ab:se=0" \
    --pgn benchmarks/results/sprt/singular_extensions/games.pgn.xz \
    --json benchmarks/results/sprt/singular_extensions/result.json.xz
