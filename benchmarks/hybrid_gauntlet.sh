#!/usr/bin/env bash
# Hybrid engines against their parts, same openings, one time per move; then BayesElo.
#
#   bash benchmarks/hybrid_gauntlet.sh main 100ms 16     # the modes against ab and latent
#   bash benchmarks/hybrid_gauntlet.sh k 100ms 16        # verify with k = 3, 1, 5, all, 2 vs ab
#   bash benchmarks/hybrid_gauntlet.sh slow 300ms 10     # the key pairs at a longer time
#
# Every match appends to its own PGN under benchmarks/results/hybrid/LIMIT/ and resumes from it
# (kill and rerun the same command to continue). Openings: the project's balanced ECO sample
# (seed 0; Stockfish depth 10 keeps lines within +-60 cp), each played with both colours; games
# adjudicated by Stockfish (depth 8) so lost endgames do not run to 600 plies. Each match is one
# game at a time (workers 1), niced: the machine is shared.
set -euo pipefail
cd "$(dirname "$0")/.."
set_name=${1:?usage: hybrid_gauntlet.sh main|slow|k LIMIT GAMES}
limit=${2:-100ms}
games=${3:-16}
# OUT: results root (default benchmarks/results/hybrid; the NNUE runs use .../hybrid/nnue);
# SF_ELO: the Stockfish UCI_Elo rung that anchors the scale (default 2000); WORKERS: games at once
# per match (default 1).
out=${OUT:-benchmarks/results/hybrid}/$limit
rung=stockfish:elo=${SF_ELO:-2000}
mkdir -p "$out"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

case $set_name in
  main)
    pairs=(
      "hybrid:mode=order|ab"
      "hybrid:mode=horizon,depth=2|latent:depth=4"
      "latent:depth=4|ab"
      "hybrid:mode=verify,k=3|latent:depth=4"
      "hybrid:mode=order|latent:depth=4"
      "ab|$rung"
      "hybrid:mode=horizon,depth=2|ab"
    )
    ;;
  slow)
    pairs=(
      "hybrid:mode=verify,k=3|ab"
      "hybrid:mode=order|ab"
      "latent:depth=4|ab"
      "ab|$rung"
      "hybrid:mode=horizon,depth=2|latent:depth=4"
    )
    ;;
  k)
    pairs=(
      "hybrid:mode=verify,k=3|ab"
      "hybrid:mode=verify,k=1|ab"
      "hybrid:mode=verify,k=5|ab"
      "hybrid:mode=verify,k=0|ab"
      "hybrid:mode=verify,k=2|ab"
      "hybrid:mode=order|ab"
    )
    ;;
  *)
    echo "unknown set $set_name (main, slow or k)" >&2
    exit 2
    ;;
esac

for pair in "${pairs[@]}"; do
  one=${pair%%|*}
  two=${pair##*|}
  file=$out/$(echo "$one-vs-$two" | tr ':,=' '___').pgn
  echo "== $(date -u +%H:%M:%S) $one vs $two ($games games, $limit per move) -> $file"
  nice -n 10 .venv/bin/latentchess match "$one" "$two" --games "$games" --limit "$limit" \
    --workers "${WORKERS:-1}" --pgn "$file" --event "hybrid gauntlet $limit" --adjudicate --no-progress \
    --json "${file%.pgn}.json"
done
