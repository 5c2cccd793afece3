"""Web board costs: start-up (cold and warm latent-view cache), PCA vs UMAP for the view, explain.

Usage: python benchmarks/bench_web.py --out benchmarks/results/web

Measures, on this machine, with the default model:

* ``latentchess serve --port 0 --no-browser`` from process start to the printed URL, with an
  empty cache (the view is fitted) and again with the cache filled (run in subprocesses);
* fitting the 2-D view: embedding the 2,000 reference positions, then PCA vs UMAP (cosine,
  15 neighbours, as ``latentchess plot umap``) on the same embeddings, and placing 40 new
  positions with each fitted transform;
* one ``explain_move`` (2 + 2 x pieces positions in one batch) and one game-state update.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _serve_start(cache: Path) -> float:
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), PYTHONUNBUFFERED="1")
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "latentchess", "serve", "--port", "0", "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if re.search(r"http://127\.0\.0\.1:\d+/", line):
                return time.monotonic() - started
        raise RuntimeError("serve printed no URL")
    finally:
        process.terminate()
        process.wait(timeout=20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    load_before = os.getloadavg()
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        results["serve_cold_s"] = _serve_start(cache)
        results["serve_warm_s"] = _serve_start(cache)
        results["serve_warm_again_s"] = _serve_start(cache)

    import chess
    import numpy as np
    import torch

    torch.set_num_threads(1)
    import latentchess
    from latentchess.explain import explain_move
    from latentchess.latent_view import fit_latent_view, reference_positions

    model = latentchess.load_model()
    fens, _ = reference_positions()
    tick = time.perf_counter()
    embeddings = model.embed(fens, batch_size=512)
    results["embed_2000_s"] = time.perf_counter() - tick
    tick = time.perf_counter()
    view = fit_latent_view(model)
    results["pca_view_total_s"] = time.perf_counter() - tick
    tick = time.perf_counter()
    centred = embeddings - embeddings.mean(axis=0)
    np.linalg.svd(centred.astype(np.float64), full_matrices=False)
    results["pca_fit_only_s"] = time.perf_counter() - tick
    board = chess.Board()
    new = []
    for move in list(board.legal_moves)[:20]:
        board.push(move)
        new.append(board.copy())
        for reply in list(board.legal_moves)[:1]:
            board.push(reply)
            new.append(board.copy())
            board.pop()
        board.pop()
    new_embeddings = model.embed(new)
    tick = time.perf_counter()
    view.transform(new_embeddings)
    results["pca_transform_40_s"] = time.perf_counter() - tick
    tick = time.perf_counter()
    import umap

    results["umap_import_s"] = time.perf_counter() - tick
    tick = time.perf_counter()
    reducer = umap.UMAP(n_neighbors=15, metric="cosine", random_state=0)
    reducer.fit(embeddings)
    results["umap_fit_s"] = time.perf_counter() - tick
    tick = time.perf_counter()
    reducer.transform(new_embeddings)
    results["umap_transform_40_s"] = time.perf_counter() - tick
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3")
    move = board.parse_san("Nf6")
    explain_move(model, board, move)
    times = []
    for _ in range(5):
        tick = time.perf_counter()
        explain_move(model, board, move)
        times.append(time.perf_counter() - tick)
    results["explain_s_median_of_5"] = sorted(times)[2]
    results["explain_batch"] = 2 + 2 * (len(board.piece_map()) - 2)
    results["model"] = f"{model.config.name}, {model.precision}"
    results["load_before"] = load_before
    results["load_after"] = os.getloadavg()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "web.json").write_text(json.dumps(results, indent=2) + "\n")
    r = results
    lines = [
        "# Web board costs",
        "",
        "Command: `python benchmarks/bench_web.py --out benchmarks/results/web`",
        "",
        f"Model: default ({r['model']}); torch {torch.__version__}, 1 thread in-process; load "
        f"average {[round(x, 2) for x in load_before]} before, "
        f"{[round(x, 2) for x in r['load_after']]} after (shared machine: absolute times are "  # type: ignore[union-attr]
        "pessimistic).",
        "",
        "| what | seconds |",
        "|---|---:|",
        "| `latentchess serve` start to URL, empty cache (view fitted) | "
        f"{r['serve_cold_s']:.1f} |",
        f"| the same, cache filled | {r['serve_warm_s']:.1f} |",
        f"| the same, again | {r['serve_warm_again_s']:.1f} |",
        f"| embed the 2,000 reference positions | {r['embed_2000_s']:.2f} |",
        f"| PCA view, embedding included | {r['pca_view_total_s']:.2f} |",
        f"| PCA fit alone (SVD) | {r['pca_fit_only_s']:.3f} |",
        f"| PCA: place 40 new positions | {r['pca_transform_40_s']:.5f} |",
        f"| UMAP: import (numba) | {r['umap_import_s']:.1f} |",
        f"| UMAP: fit on the same embeddings | {r['umap_fit_s']:.1f} |",
        f"| UMAP: place 40 new positions | {r['umap_transform_40_s']:.2f} |",
        f"| explain one move ({r['explain_batch']} positions, one batch), median of 5 | "
        f"{r['explain_s_median_of_5']:.3f} |",
        "",
        "UMAP fit/transform ratio to PCA, same process: "
        f"fit {r['umap_fit_s'] / r['pca_fit_only_s']:.0f}x, "  # type: ignore[operator]
        f"transform {r['umap_transform_40_s'] / max(r['pca_transform_40_s'], 1e-9):.0f}x.",  # type: ignore[operator, call-overload]
    ]
    (args.out / "web.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
