"""The latent decomposition table: pairs of engines that share the evaluation or the search,
from the matches' JSON (``latentchess match ... --json``).

Two instruments: ``ab:eval=latent`` (the alpha-beta search scored by the latent axis) and
``latent:eval=nnue`` / ``latent:eval=hce`` (the latent search scored by an alpha-beta evaluator's
WDL). For each match JSON in the folder (``vs-*.json`` for the first, ``latent-*.json`` for the
second): the score, the match's own Elo (normal interval on the mean score) and the pentanomial
Elo over the game pairs (each opening played with both colours; the interval fishtest and fastchess
report). Writes ``elo.json`` beside them and prints the table (the folder's README holds it).

    .venv/bin/python benchmarks/latent_decomposition_report.py \
        benchmarks/results/latent_decomposition
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import chess.pgn

from latentchess.evaluation.elo import score_elo
from latentchess.evaluation.sprt import pentanomial, pentanomial_elo
from latentchess.textfiles import glob_text, open_text, read_text

HELD_EQUAL = {
    ("ab:eval=latent", "latent"): "the evaluation (sparse-64's axis): the search differs",
    ("ab:eval=latent", "ab"): "the search (alpha-beta + quiescence): the evaluation differs (NNUE)",
    ("ab:eval=latent", "ab:eval=hce"): "the search: the evaluation differs (hand-crafted)",
    ("ab:eval=latent", "ab:eval=pesto"): "the search: the evaluation differs (PeSTO tables)",
    ("latent:eval=nnue,qs=0", "latent:qs=0"): "the search (SOLIS, width 8): the evaluation "
    "differs (NNUE WDL vs axis)",
    ("latent:eval=hce,qs=0", "latent:qs=0"): "the search (SOLIS, width 8): the evaluation "
    "differs (HCE WDL vs axis)",
    ("latent:eval=nnue", "latent"): "the search (SOLIS, width 8, qs): the evaluation differs "
    "(NNUE WDL vs axis)",
    ("latent:eval=nnue,qs=0", "ab"): "the evaluation (NNUE): the search differs",
    ("latent:eval=nnue", "ab"): "the evaluation (NNUE): the search differs (SOLIS with qs)",
    ("latent:eval=hce", "latent"): "the search (SOLIS, width 8, qs): the evaluation differs "
    "(HCE WDL vs axis)",
    ("latent:eval=nnue,width=16", "latent:eval=nnue"): "evaluation (NNUE), depth, qs: width 16 "
    "vs 8",
    ("latent:eval=nnue,width=3", "latent:eval=nnue"): "evaluation (NNUE), depth, qs: width 3 vs 8",
    ("latent:width=16", "latent"): "evaluation (axis), depth, qs: width 16 vs 8",
    ("latent:width=3", "latent"): "evaluation (axis), depth, qs: width 3 vs 8",
}


def _elo(value: float) -> str:
    return "+inf" if value == math.inf else "-inf" if value == -math.inf else f"{value:+.0f}"


def _games(result: dict[str, Any], file: Path) -> list[dict[str, Any]]:
    """The match's game records: in its JSON (older matches), else from the PGN beside it
    (named as the JSON, ``.pgn``, plain or compressed)."""
    if "games" in result:
        return list(result["games"])
    stem = file.name.split(".json")[0]
    (pgn,) = glob_text(file.parent, f"{stem}.pgn")
    games = []
    with open_text(pgn) as handle:
        while (headers := chess.pgn.read_headers(handle)) is not None:
            games.append(
                {
                    "round": int(headers["Round"]),
                    "white": headers["White"],
                    "result": headers["Result"],
                }
            )
    return games


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    folder = parser.parse_args().folder
    rows = []
    files = [*glob_text(folder, "vs-*.json"), *glob_text(folder, "latent-*.json")]
    for file in files:
        result = json.loads(read_text(file))
        me = result["engine1"]
        points = {
            game["round"]: {"1-0": 1.0, "0-1": 0.0}.get(game["result"], 0.5)
            if game["white"] == me
            else {"1-0": 0.0, "0-1": 1.0}.get(game["result"], 0.5)
            for game in _games(result, file)
            if game["result"] in ("1-0", "0-1", "1/2-1/2")
        }
        wins = sum(1 for p in points.values() if p == 1.0)
        losses = sum(1 for p in points.values() if p == 0.0)
        draws = len(points) - wins - losses
        trinomial = score_elo(wins, draws, losses)
        counts, unfinished = pentanomial(points)
        penta = pentanomial_elo(counts)
        rows.append(
            {
                "engine1": me,
                "engine2": result["engine2"],
                "limit": result["limit1"],
                "held_equal": HELD_EQUAL.get((me, result["engine2"]), ""),
                "games": len(points),
                "wins": wins,
                "draws": draws,
                "losses": losses,
                "elo": [trinomial.elo, trinomial.lower, trinomial.upper],
                "pentanomial": list(counts),
                "unfinished_pairs": len(unfinished),
                "pentanomial_elo": [penta.elo, penta.lower, penta.upper],
                "pgn": file.name.replace(".json", ".pgn").replace(".pgn.gz", ".pgn"),
            }
        )
    lines = [
        "| engine | vs | held equal | games | +W =D -L | Elo [95%] | pentanomial Elo [95%] |",
        "|---|---|---|---:|---|---|---|",
    ]
    for row in rows:
        e, p = row["elo"], row["pentanomial_elo"]
        lines.append(
            f"| `{row['engine1']}` | `{row['engine2']}` ({row['limit']}) | {row['held_equal']} | "
            f"{row['games']} | "
            f"+{row['wins']} ={row['draws']} -{row['losses']} | "
            f"{_elo(e[0])} [{_elo(e[1])}, {_elo(e[2])}] | "
            f"{_elo(p[0])} [{_elo(p[1])}, {_elo(p[2])}] |"
        )
    (folder / "elo.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
