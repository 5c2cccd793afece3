"""The latent decomposition table: ``ab:eval=latent`` against engines that share its evaluation
or its search, from the matches' JSON (``latentchess match ... --json``).

For each ``vs-*.json`` in the folder: the score, the match's own Elo (normal interval on the mean
score) and the pentanomial Elo over the game pairs (each opening played with both colours; the
interval fishtest and fastchess report). Writes ``elo.json`` beside them and prints the table
(the folder's README holds it).

    .venv/bin/python benchmarks/latent_decomposition_report.py \
        benchmarks/results/latent_decomposition
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from latentchess.evaluation.elo import score_elo
from latentchess.evaluation.sprt import pentanomial, pentanomial_elo
from latentchess.textfiles import glob_text, read_text

HELD_EQUAL = {
    "latent": "the evaluation (sparse-64's axis): the search differs",
    "ab": "the search (alpha-beta + quiescence): the evaluation differs (NNUE)",
    "ab:eval=hce": "the search: the evaluation differs (hand-crafted)",
    "ab:eval=pesto": "the search: the evaluation differs (PeSTO tables)",
}


def _elo(value: float) -> str:
    return "+inf" if value == math.inf else "-inf" if value == -math.inf else f"{value:+.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    folder = parser.parse_args().folder
    rows = []
    for file in glob_text(folder, "vs-*.json"):
        result = json.loads(read_text(file))
        me = result["engine1"]
        points = {
            game["round"]: {"1-0": 1.0, "0-1": 0.0}.get(game["result"], 0.5)
            if game["white"] == me
            else {"1-0": 0.0, "0-1": 1.0}.get(game["result"], 0.5)
            for game in result["games"]
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
                "held_equal": HELD_EQUAL.get(result["engine2"], ""),
                "games": len(points),
                "wins": wins,
                "draws": draws,
                "losses": losses,
                "elo": [trinomial.elo, trinomial.lower, trinomial.upper],
                "pentanomial": list(counts),
                "unfinished_pairs": len(unfinished),
                "pentanomial_elo": [penta.elo, penta.lower, penta.upper],
                "pgn": file.name.replace(".json", ".pgn.gz"),
            }
        )
    lines = [
        "| `ab:eval=latent` vs | held equal | games | +W =D -L | Elo [95%] "
        "| pentanomial Elo [95%] |",
        "|---|---|---:|---|---|---|",
    ]
    for row in rows:
        e, p = row["elo"], row["pentanomial_elo"]
        lines.append(
            f"| `{row['engine2']}` ({row['limit']}) | {row['held_equal']} | {row['games']} | "
            f"+{row['wins']} ={row['draws']} -{row['losses']} | "
            f"{_elo(e[0])} [{_elo(e[1])}, {_elo(e[2])}] | "
            f"{_elo(p[0])} [{_elo(p[1])}, {_elo(p[2])}] |"
        )
    (folder / "elo.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
