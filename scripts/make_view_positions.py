"""Make the fixed positions the web board's latent view is fitted on (run once; output committed).

Usage: python scripts/make_view_positions.py ../shared/data/sf15-d9-eco-selfplay.csv.gz \
           src/latentchess/resources/view_positions.csv.gz

A seeded uniform sample of 2,000 rows of the project's Stockfish-labelled self-play positions
(README of the data directory), kept as ``fen,win_prob_white`` (gzip CSV, no header).
"""

from __future__ import annotations

import csv
import gzip
import sys

import numpy as np

SIZE = 2000
SEED = 0


def main(source: str, out: str) -> None:
    with gzip.open(source, "rt", encoding="utf-8") as handle:
        rows = [(row[0], row[3]) for row in csv.reader(handle)]
    rng = np.random.default_rng(SEED)
    index = np.sort(rng.choice(len(rows), size=SIZE, replace=False))
    lines = [f"{rows[i][0]},{float(rows[i][1]):.4f}\n" for i in index]
    with gzip.GzipFile(out, "wb", mtime=0) as handle:
        handle.write("".join(lines).encode("utf-8"))
    print(f"{len(lines)} of {len(rows)} positions -> {out}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
