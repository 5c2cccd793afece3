"""Inference-time options of a human-move Chessformer, scored on held-out players, paired.

Two ways to get more from a trained model without training it again, each against the model's
plain top-1 on the same positions (the field's protocol of ``latentchess eval-human``: the Lichess
games of ``testsuites/lichess_2021-10_sample.pgn`` whose players never appear in the rated-games
corpus, blitz, skip 10 plies, clock >= 30 s):

* **a-h mirror averaging**: where no board of the input window has castling rights (the rules
  are then symmetric under a <-> h), the policy is the mean of the log-probabilities of the
  position and of its mirror (mapped back); other positions keep their own policy;
* **rating offsets**: the mover's rating input shifted by D (the opponent's kept), as if the
  model's rating scale and the test players' were offset.

    .venv/bin/python benchmarks/human_inference.py --shared ../shared \\
        --out benchmarks/results/human_options/inference.json

Every difference is a paired bootstrap over the games
(:func:`latentchess.evaluation.human.paired_difference`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from latentchess.data.moves import batch_features, read_pgn_moves
from latentchess.evaluation.human import (
    HumanProtocol,
    band_table,
    paired_difference,
    protocol_mask,
    read_game_headers,
    training_players,
)
from latentchess.models.chessformer_human import select_rows
from latentchess.models.chessformer_io import ChessformerModel
from latentchess.provenance import git_commit, repo_relative
from latentchess.squares import POLICY_SIZE
from latentchess.training.objectives.chessformer import MIRROR_POLICY, mirror_eligible

SHIFTS = (-300, -150, 150, 300)


def _per_game(hits: npt.NDArray[np.bool_], games: npt.NDArray[np.int64]) -> dict[str, Any]:
    ids, inverse = np.unique(games, return_inverse=True)
    return {
        "per_game": {
            "game": ids.tolist(),
            "positions": np.bincount(inverse, minlength=len(ids)).tolist(),
            "hits": np.bincount(inverse, weights=hits, minlength=len(ids)).astype(int).tolist(),
        }
    }


def _log_policy(
    model: ChessformerModel,
    planes: npt.NDArray[np.float32],
    mine: npt.NDArray[np.float32],
    theirs: torch.Tensor,
    legal: torch.Tensor,
) -> torch.Tensor:
    with torch.no_grad():
        logits, _ = model.network(
            torch.from_numpy(np.ascontiguousarray(planes)), torch.from_numpy(mine), theirs, None
        )
    return torch.log_softmax(logits.float().masked_fill(~legal, -1e9), dim=1)


def _top1(
    logp: torch.Tensor, legal: torch.Tensor, answer: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    best = logp.masked_fill(~legal, float("-inf")).argmax(dim=1).numpy()
    return np.asarray(best == answer)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shared", type=Path, default=Path("../shared"))
    p.add_argument("--model", default=None, help="model directory (default: the shipped one)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--positions", type=int, default=None, help="only the first N (a quick check)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    pgn = args.shared / "testsuites" / "lichess_2021-10_sample.pgn"
    corpus = args.shared / "data" / "lichess-rated-games.pgn.gz"
    model = ChessformerModel.load(args.model)
    cfg = model.cfg
    data = read_pgn_moves(pgn, progress=False)
    protocol = HumanProtocol()
    keep, counts = protocol_mask(data, protocol, read_game_headers(pgn), training_players([corpus]))
    rows = select_rows(data, "all", 0.05)
    rows = rows[keep[rows]][: args.positions]
    eligible = mirror_eligible(data, rows, cfg.history)
    variants = ["plain", "mirror"] + [f"rating{d:+d}" for d in SHIFTS]
    hits = {name: np.zeros(len(rows), dtype=bool) for name in variants}
    mirror_back = torch.from_numpy(MIRROR_POLICY)
    started = time.monotonic()
    for start in range(0, len(rows), args.batch_size):
        chunk = rows[start : start + args.batch_size]
        part = slice(start, start + len(chunk))
        features = batch_features(data, chunk, history=cfg.history, side=cfg.side_features)
        mine = data.self_elo[chunk].astype(np.float32)
        theirs = torch.from_numpy(data.oppo_elo[chunk].astype(np.float32))
        legal = torch.from_numpy(data.legal_mask(chunk, POLICY_SIZE))

        inputs = (mine, theirs, legal)
        answer = data.move[chunk]
        plain = _log_policy(model, features, *inputs)
        hits["plain"][part] = _top1(plain, legal, answer)
        # the mirror's policy in its own frame (its legal moves are the mirrored ones), then back
        flipped = (mine, theirs, legal[:, mirror_back])
        mirrored = _log_policy(model, features[:, np.arange(64) ^ 7], *flipped)[:, mirror_back]
        flip = torch.from_numpy(eligible[part])[:, None]
        hits["mirror"][part] = _top1(
            torch.where(flip, (plain + mirrored) / 2, plain), legal, answer
        )
        for shift in SHIFTS:
            logp = _log_policy(model, features, mine + shift, theirs, legal)
            hits[f"rating{shift:+d}"][part] = _top1(logp, legal, answer)
        done = start + len(chunk)
        rate = done / (time.monotonic() - started)
        print(
            f"{done}/{len(rows)} positions, {rate:.0f}/s, ETA {(len(rows) - done) / rate:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    games = data.game[rows]
    elos = data.self_elo[rows]
    base = _per_game(hits["plain"], games)
    result: dict[str, Any] = {
        "model": repo_relative(model.directory),
        "protocol": protocol.to_dict(),
        "filters": counts,
        "positions": len(rows),
        "games": len(np.unique(games)),
        "mirror_eligible_share": float(eligible.mean()),
        "commit": git_commit(),
        "variants": {},
    }
    for name in variants:
        table = band_table(hits[name], elos, games, protocol)
        entry: dict[str, Any] = {"top1": float(hits[name].mean()), "by_band": table}
        if name != "plain":
            entry["minus_plain"] = paired_difference(base, _per_game(hits[name], games))
        result["variants"][name] = entry
        extra = entry.get("minus_plain", {})
        print(name, round(entry["top1"], 4), extra.get("difference"), extra.get("ci95"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
