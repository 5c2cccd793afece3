#!/usr/bin/env bash
# Pack an NNUE feature cache (`latentchess train nnue --cache DIR`, feature set ALL) for a lent
# GPU machine, whose transfer limit is 64 MiB: White's perspective only (Black's is its mirror,
# checked here on every row and rebuilt there by nnue_width_gpu.sh), xz-compressed, beside the pure
# Python packages the device's Python lacks (python-chess, safetensors, tqdm, copied from .venv).
#
#   bash benchmarks/nnue_gpu_pack.sh runs/cache-s01 runs/gpu     (about 3 minutes for 5.2 M rows)
#
# then on the device:  run(command="bash benchmarks/nnue_width_gpu.sh",
#                          carry=["runs/gpu"])
set -euo pipefail
CACHE=${1:?usage: nnue_gpu_pack.sh CACHE_DIR OUT_DIR}
OUT=${2:?usage: nnue_gpu_pack.sh CACHE_DIR OUT_DIR}
PY=${PY:-.venv/bin/python}
mkdir -p "$OUT/stage" "$OUT/site"
"$PY" - "$CACHE" "$OUT/stage" <<'PYTHON'
import json, sys
from pathlib import Path
import numpy as np
from latentchess.nnue.features import mirror_all_features

cache, stage = Path(sys.argv[1]), Path(sys.argv[2])
spec = json.loads((cache / "meta.json").read_text())
if spec["feature_set"] != "ALL" or spec.get("pqr"):
    sys.exit(f"{cache}: only ALL caches without PQR pairs are packed (got {spec['feature_set']})")
features = np.load(cache / "features.npy", mmap_mode="r")  # (rows, 2, width) int16, 768 = pad
for start in range(0, len(features), 1 << 20):
    block = np.asarray(features[start : start + (1 << 20)])
    if not np.array_equal(mirror_all_features(block[:, 0]), block[:, 1]):
        sys.exit(f"{cache}: rows from {start} on are not White's mirror; cannot pack them this way")
np.save(stage / "white.npy", np.ascontiguousarray(features[:, 0]))
for name in ("score", "stm", "result"):
    np.save(stage / f"{name}.npy", np.load(cache / f"{name}.npy"))
for name in ("meta.json", "spec.json"):
    (stage / name).write_text((cache / name).read_text())
print(f"{len(features):,} rows checked and staged")
PYTHON
tar -C "$OUT/stage" -cf - . | xz -6 -T2 > "$OUT/cache.tar.xz.tmp"
mv "$OUT/cache.tar.xz.tmp" "$OUT/cache.tar.xz"
rm -rf "$OUT/stage"
site=$("$PY" -c 'import chess, os; print(os.path.dirname(os.path.dirname(chess.__file__)))')
for package in chess safetensors tqdm; do rm -rf "$OUT/site/$package"; cp -r "$site/$package" "$OUT/site/"; done
du -sh "$OUT/cache.tar.xz" "$OUT/site"
