"""Does calibration cost humanness? Move matching of the calibrated engine near each UCI_Elo.

    .venv/bin/python benchmarks/human_calibrated_matching.py \
        --out benchmarks/results/human_play/matching

Issue 31 asks, beside the calibrated engine's Elo against the ``UCI_Elo`` asked for, for its
move matching against held-out players of rating near that ``UCI_Elo``. For each R of the
calibration rounds (1100, 1400, 1700, 2000, 2100) this takes positions of held-out Lichess games
(``../shared/testsuites/lichess_2021-10_sample.pgn``, games with a player of the training corpus
left out) whose mover is rated within 100 of R, under the field's protocol (plies 1-10 skipped,
nothing from the first ply where the mover's clock is under 30 s), and compares on the same
positions:

* **model @ player**: the human model's top move, conditioned on the players' own ratings
  (``eval-human``'s number, the model as a predictor);
* **model alone @ R**: ``HumanCalibrated`` off, ``UCI_Elo`` R (the model conditioned on R): its
  top move, and the probability that its draw (temperature 1) is the player's move;
* **calibrated @ R**: the shipped engine at ``UCI_Elo`` R (the table's model rating, beta and
  depth; the opponent's rating from ``UCI_Opponent``, here the actual opponent's): the top move of
  the distribution it draws from, and the probability that its draw is the player's move.

Intervals: 95%, bootstrap over games. Positions are drawn at random (``--positions`` per R,
``--seed``). The strength search runs the shipped ``ab`` at the table's depth on one thread.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.pgn
import numpy as np

from latentchess.engines.human import HumanConfig, HumanPlay
from latentchess.evaluation.human import training_players
from latentchess.provenance import git_commit
from latentchess.textfiles import open_text

ROOT = Path(__file__).parents[1]
GAMES = ROOT.parent / "shared/testsuites/lichess_2021-10_sample.pgn"
TRAIN = ROOT.parent / "shared/data/lichess-rated-games.pgn.gz"
RATINGS = (1100, 1400, 1700, 2000, 2100)
SKIP_PLIES = 10
MIN_CLOCK = 30.0


@dataclass(frozen=True)
class Position:
    """A held-out position: the game's board before the move (history kept), the move played,
    the mover's and the opponent's ratings, the game's number."""

    board: chess.Board
    move: chess.Move
    mover_elo: int
    opponent_elo: int
    game: int


def read_positions(path: Path, train: Path) -> list[Position]:
    """Every position of ``path`` the protocol keeps, from games with no training player."""
    seen = training_players([train])
    positions: list[Position] = []
    with open_text(path) as handle:
        index = 0
        while (game := chess.pgn.read_game(handle)) is not None:
            index += 1
            headers = game.headers
            if headers.get("White") in seen.names or headers.get("Black") in seen.names:
                continue
            if headers.get("Site", "") in seen.sites:
                continue
            try:
                white, black = int(headers["WhiteElo"]), int(headers["BlackElo"])
            except (KeyError, ValueError):
                continue
            elos = {chess.WHITE: white, chess.BLACK: black}
            board = game.board()
            low_clock = {chess.WHITE: False, chess.BLACK: False}
            for ply, node in enumerate(game.mainline()):
                mover = board.turn
                clock = node.clock()
                if clock is not None and clock < MIN_CLOCK:
                    low_clock[mover] = True
                if ply >= SKIP_PLIES and not low_clock[mover]:
                    positions.append(
                        Position(board.copy(), node.move, elos[mover], elos[not mover], index)
                    )
                board.push(node.move)
    return positions


def bootstrap(values: np.ndarray, games: np.ndarray, rng: np.random.Generator) -> list[float]:
    """95% interval of the mean, resampling whole games."""
    ids, inverse = np.unique(games, return_inverse=True)
    sums = np.bincount(inverse, weights=values, minlength=len(ids))
    counts = np.bincount(inverse, minlength=len(ids))
    means = []
    for _ in range(2000):
        pick = rng.integers(0, len(ids), len(ids))
        means.append(sums[pick].sum() / counts[pick].sum())
    return [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))]


def measure(positions: list[Position], rating: int, seed: int) -> dict[str, object]:
    """The three players' matching on ``positions`` (all near ``rating``)."""
    player = HumanPlay(config=HumanConfig(enabled=True, calibrated=False), seed=seed)
    alone = HumanPlay(config=HumanConfig(enabled=True, elo=rating, calibrated=False), seed=seed)
    calibrated = HumanPlay(config=HumanConfig(enabled=True, elo=rating), seed=seed)
    columns: dict[str, list[float]] = {
        "model_at_player_top1": [],
        "alone_top1": [],
        "alone_draw": [],
        "calibrated_top1": [],
        "calibrated_draw": [],
        "calibrated_candidates": [],
    }
    started = time.monotonic()
    for i, position in enumerate(positions):
        board, move = position.board, position.move
        opponent = f"none {position.opponent_elo} human opponent"
        player.replace(
            elo=min(max(position.mover_elo, 800), 2400), opponent=opponent, calibrated=False
        )
        alone.replace(opponent=opponent)
        calibrated.replace(opponent=opponent)
        own = player.predict(board)
        columns["model_at_player_top1"].append(float(own.moves[0] == move))
        for name, play in (("alone", alone), ("calibrated", calibrated)):
            drawn = play.distribution(board)
            moves = drawn.prediction.moves
            q = drawn.probabilities
            columns[f"{name}_top1"].append(float(moves[int(np.argmax(q))] == move))
            columns[f"{name}_draw"].append(float(q[moves.index(move)]) if move in moves else 0.0)
            if name == "calibrated":
                columns["calibrated_candidates"].append(float((q > 0).sum()))
        if (i + 1) % 50 == 0:
            rate = (i + 1) / (time.monotonic() - started)
            eta = (len(positions) - i - 1) / rate
            print(
                f"R={rating}: {i + 1}/{len(positions)} positions, {rate:.1f}/s, ETA {eta:.0f} s",
                file=sys.stderr,
            )
    games = np.array([p.game for p in positions])
    rng = np.random.default_rng(seed)
    strength = calibrated.strength()
    row: dict[str, object] = {
        "uci_elo": rating,
        "positions": len(positions),
        "games": len(np.unique(games)),
        "table": {
            "model_elo": strength.model_elo,
            "search_weight": round(strength.search_weight, 3),
            "search_depth": strength.search_depth,
        },
        "seconds": round(time.monotonic() - started, 1),
    }
    for name, values in columns.items():
        array = np.array(values)
        row[name] = float(array.mean())
        if name != "calibrated_candidates":
            row[f"{name}_ci95"] = bootstrap(array, games, rng)
    return row


def table(rows: list[dict[str, object]]) -> str:
    def cell(row: dict[str, object], name: str) -> str:
        low, high = row[f"{name}_ci95"]  # type: ignore[misc]
        return f"{row[name]:.3f} [{low:.3f}, {high:.3f}]"

    lines = [
        "| UCI_Elo R (movers R-100..R+99) | positions (games) | model @ player, top 1 "
        "| model alone @ R: top 1 | its draw | calibrated @ R: top 1 | its draw "
        "| table: model rating, beta, depth |",
        "|---:|---:|---|---|---|---|---|---|",
    ]
    for row in rows:
        t = row["table"]
        lines.append(
            f"| {row['uci_elo']} | {row['positions']} ({row['games']}) "
            f"| {cell(row, 'model_at_player_top1')} | {cell(row, 'alone_top1')} "
            f"| {cell(row, 'alone_draw')} | {cell(row, 'calibrated_top1')} "
            f"| {cell(row, 'calibrated_draw')} "
            f"| {t['model_elo']}, {t['search_weight']}, {t['search_depth']} |"  # type: ignore[index]
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="results folder")
    parser.add_argument("--games", type=Path, default=GAMES, help="held-out rated games (PGN)")
    parser.add_argument("--train", type=Path, default=TRAIN, help="the training corpus (PGN)")
    parser.add_argument("--positions", type=int, default=300, help="positions per rating")
    parser.add_argument("--ratings", type=int, nargs="+", default=list(RATINGS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    everything = read_positions(args.games, args.train)
    print(f"{len(everything)} positions kept from {args.games}", file=sys.stderr)
    rng = np.random.default_rng(args.seed)
    rows = []
    for rating in args.ratings:
        near = [p for p in everything if rating - 100 <= p.mover_elo < rating + 100]
        pick = rng.choice(len(near), size=min(args.positions, len(near)), replace=False)
        rows.append(measure([near[i] for i in sorted(pick)], rating, args.seed))
        print(table(rows[-1:]), file=sys.stderr)
    result = {
        "command": "benchmarks/human_calibrated_matching.py " + " ".join(sys.argv[1:]),
        "commit": git_commit(),
        "games_file": str(args.games.resolve().relative_to(ROOT.parent)),
        "protocol": {
            "skip_plies": SKIP_PLIES,
            "min_clock_s": MIN_CLOCK,
            "speeds": "all",
            "excluded": "games with a player (or the game's URL) of the training corpus",
            "band": "mover's rating in [R-100, R+100)",
        },
        "rows": rows,
    }
    tmp = args.out / "matching.json.tmp"
    tmp.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    tmp.replace(args.out / "matching.json")
    (args.out / "matching.md").write_text(table(rows) + "\n", encoding="utf-8")
    print(table(rows))


if __name__ == "__main__":
    main()
