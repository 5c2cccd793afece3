"""Tabulate a clock ladder (``benchmarks/ccrl_ladder.sh``): per rung the result, the Elo
difference, each side's median time per move and lowest clock, the terminations; then the fit.

    .venv/bin/python benchmarks/ladder_report.py DIR [--engine ab]

Reads ``DIR/*.pgn`` (plain or compressed; ``[%emt]``/``[%clk]`` comments as the match writes
them) and ``DIR/*_elo.json`` (the ``latentchess elo`` fits, one per scale); writes
``DIR/ladder.md`` and prints it.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import Counter
from pathlib import Path

import chess.pgn

from latentchess.evaluation.elo import score_elo
from latentchess.textfiles import glob_text, open_text, read_text

EMT = re.compile(r"\[%emt (\d+):(\d+):([\d.]+)\]")
CLK = re.compile(r"\[%clk (\d+):(\d+):([\d.]+)\]")


def _seconds(match: re.Match[str]) -> float:
    return int(match[1]) * 3600 + int(match[2]) * 60 + float(match[3])


def rung(path: Path, engine: str) -> dict[str, object]:
    """One match's numbers, seen from ``engine``."""
    wins = draws = losses = flags = 0
    spent: dict[bool, list[float]] = {True: [], False: []}  # engine's moves, opponent's
    lowest = float("inf")
    terminations: Counter[str] = Counter()
    opponent = "?"
    with open_text(path) as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            white = game.headers["White"] == engine
            opponent = game.headers["Black" if white else "White"]
            result = game.headers["Result"]
            if result == "*":
                continue
            score = {"1-0": 1.0, "0-1": 0.0}.get(result, 0.5)
            score = score if white else 1.0 - score
            wins += score == 1.0
            draws += score == 0.5
            losses += score == 0.0
            terminations[game.headers.get("Termination", "normal")] += 1
            flags += "time" in game.headers.get("TerminationDetails", "").lower()
            for node in game.mainline():
                ours = node.turn() != (chess.WHITE if white else chess.BLACK)  # mover was us
                if (emt := EMT.search(node.comment)) is not None:
                    spent[ours].append(_seconds(emt))
                if ours and (clk := CLK.search(node.comment)) is not None:
                    lowest = min(lowest, _seconds(clk))
    diff = score_elo(wins, draws, losses)
    return {
        "opponent": opponent,
        "games": wins + draws + losses,
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "elo": diff.elo,
        "lower": diff.lower,
        "upper": diff.upper,
        "median_s": statistics.median(spent[True]) if spent[True] else None,
        "opponent_median_s": statistics.median(spent[False]) if spent[False] else None,
        "lowest_clock_s": lowest if lowest != float("inf") else None,
        "flags": flags,
        "terminations": dict(terminations),
    }


def main(argv: list[str] | None = None) -> int:
    """Write ``ladder.md``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--engine", default="ab")
    args = parser.parse_args(argv)
    rows = [rung(p, args.engine) for p in glob_text(args.root, "*.pgn")]
    lines = [
        f"| opponent | games | `{args.engine}` +win =draw -loss | Elo difference [95%] | "
        f"median time per move, `{args.engine}` / opponent | lowest clock after a move | "
        "terminations |",
        "|---|---:|---|---:|---:|---:|---|",
    ]
    for r in rows:
        terms = ", ".join(f"{k} {v}" for k, v in sorted(r["terminations"].items()))  # type: ignore[union-attr]
        lines.append(
            f"| `{r['opponent']}` | {r['games']} | +{r['wins']} ={r['draws']} -{r['losses']} | "
            f"{r['elo']:+.0f} [{r['lower']:+.0f}, {r['upper']:+.0f}] | "
            f"{r['median_s']:.3f} s / {r['opponent_median_s']:.3f} s | "
            f"{r['lowest_clock_s']:.2f} s | {terms}; {r['flags']} lost on time |"
        )
    for fit_path in glob_text(args.root, "*_elo.json"):
        fit = json.loads(read_text(fit_path))
        anchored = ", ".join(f"`{name}` at {elo:.0f}" for name, elo in fit["anchors"].items())
        for rating in fit["ratings"]:
            if rating["name"] == args.engine:
                lines += [
                    "",
                    f"BayesElo ({fit_path.name}, anchored: {anchored}): "
                    f"**`{args.engine}` {rating['elo']:.0f} [{rating['lower']:.0f}, "
                    f"{rating['upper']:.0f}]** over {rating['games']} games; draw Elo "
                    f"{fit['draw_elo'][0]:.0f}, White advantage {fit['advantage'][0]:.0f}.",
                ]
    text = "\n".join(lines) + "\n"
    (args.root / "ladder.md").write_text(text, encoding="utf-8")
    (args.root / "ladder.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
