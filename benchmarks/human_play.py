"""Human-like play (``UCI_LimitStrength``): opening realism by rating band, and what verification
would remove, measured on Lichess games the human Chessformer never trained on.

    .venv/bin/python benchmarks/human_play.py --out benchmarks/results/human_play

Held-out games: the shipped human model trained on the first 23,977 usable games of
``../shared/data/lichess-rated-games.pgn.gz`` minus those held out by game hash and by player hash
(``latentchess.data.moves``: ``hash_fraction(...) < 0.05``, ``models/README.md``); every game of
the file that training did not see is used here: the held-out ones among the first 23,977 and all
after them.

**Opening realism.** The model, conditioned on each band's middle rating for both players,
plays ``--games`` games against itself from the initial position, sampling at temperature 1
(top-p 1, no book); its first ten moves per side (20 plies) are scored against the band's
held-out games (the band of the player to move) three ways: *position level*, whether the move is
common (at least ``--common-share`` of the band's games that reached the position, and at least
two) where the band's games reached the position at least ``--min-visits`` times; *ply level*,
whether it is among the band's common moves (``--ply-share``) at that ply; *book depth*, how many
plies the line follows a line held-out games of the band (players' mean rating) played.
References on the same tables: the band's own players (each held-out game scored leave-one-out,
its own moves removed from the counts) and a uniform random mover. The model at every rating is
also scored against every band (rating conditioning). Writes ``results.json``, ``results.md``
and ``model_openings.tsv.gz`` (reused with ``--openings-from``).

**Verification.** On ``--verify-positions`` held-out positions per band (plies 11-80), with the
model conditioned on the two players' actual ratings: how often the move the person played is
one the rule would remove (model probability below ``p`` and a depth-``d`` ``ab`` search scoring
it more than ``X`` cp below its best move), against the probability that the model, sampling at
temperature 1, draws such a move. If the model draws them much more often than people play them,
removing them makes it more human-like.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import io
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import numpy as np

from latentchess.data.moves import game_key, hash_fraction
from latentchess.provenance import git_commit
from latentchess.textfiles import find_text, read_text

TRAIN_GAMES = 23_977
"""Usable games the shipped human model's training read (``models/README.md``)."""
HOLDOUT = 0.05
PLIES = 20
BANDS = {"800-1199": (800, 1200), "1200-1599": (1200, 1600), "1600-1999": (1600, 2000)}
BANDS["2000+"] = (2000, 10_000)
BAND_RATING = {"800-1199": 1000, "1200-1599": 1400, "1600-1999": 1800, "2000+": 2200}


@dataclass(frozen=True)
class Game:
    """A held-out game: its moves and the players' ratings."""

    moves: list[chess.Move]
    elos: tuple[int, int]


def _key(board: chess.Board) -> str:
    return " ".join(board.fen().split()[:4])


def _band(elo: int) -> str | None:
    return next((name for name, (lo, hi) in BANDS.items() if lo <= elo < hi), None)


def read_unseen_games(path: Path) -> tuple[list[Game], dict[str, int]]:
    """Every usable game the human model did not train on (the split of ``read_pgn_moves``)."""
    games: list[Game] = []
    counts = collections.Counter()
    usable = 0
    with io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace") as handle:
        while True:
            game = chess.pgn.read_game(handle)
            if game is None:
                break
            if game.errors:
                continue
            headers = game.headers
            if game.board().uci_variant != "chess" or "FEN" in headers:
                continue
            try:
                elos = (int(headers.get("WhiteElo", "")), int(headers.get("BlackElo", "")))
            except ValueError:
                continue
            moves = list(game.mainline_moves())
            if not moves:
                continue
            usable += 1
            key = game_key(headers, moves)
            names = (headers.get("White"), headers.get("Black"))
            if usable > TRAIN_GAMES:
                reason = "after_training_games"
            elif hash_fraction("game:" + key) < HOLDOUT:
                reason = "heldout_game"
            elif any(hash_fraction(f"player:{n}") < HOLDOUT for n in names if n):
                reason = "heldout_player"
            else:
                continue
            counts[reason] += 1
            games.append(Game(moves, elos))
    counts["usable_games"] = usable
    return games, dict(counts)


Table = dict[str, collections.Counter[str]]


def band_tables(games: list[Game]) -> dict[str, Table]:
    """Per band: position key -> Counter of moves (UCI) played by movers of that band."""
    tables: dict[str, Table] = {
        band: collections.defaultdict(collections.Counter) for band in BANDS
    }
    for game in games:
        board = chess.Board()
        for ply, move in enumerate(game.moves[:PLIES]):
            band = _band(game.elos[ply % 2])
            if band is not None:
                tables[band][_key(board)][move.uci()] += 1
            board.push(move)
    return tables


def ply_tables(games: list[Game]) -> dict[str, list[collections.Counter[str]]]:
    """Per band and ply: Counter of the moves (UCI) movers of that band played at that ply."""
    tables = {band: [collections.Counter() for _ in range(PLIES)] for band in BANDS}
    for game in games:
        for ply, move in enumerate(game.moves[:PLIES]):
            band = _band(game.elos[ply % 2])
            if band is not None:
                tables[band][ply][move.uci()] += 1
    return tables


def line_tables(games: list[Game]) -> dict[str, collections.Counter[tuple[str, ...]]]:
    """Per band (of the players' mean rating): how many games began with each line."""
    tables = {band: collections.Counter() for band in BANDS}
    for game in games:
        band = _band(sum(game.elos) // 2)
        if band is not None:
            line = tuple(m.uci() for m in game.moves[:PLIES])
            for k in range(1, len(line) + 1):
                tables[band][line[:k]] += 1
    return tables


def book_depth(line: list[str], table: collections.Counter, own: int = 0) -> int:
    """Plies for which ``line`` follows a line that (other) held-out games of the band played."""
    depth = 0
    for k in range(1, len(line) + 1):
        if table.get(tuple(line[:k]), 0) - own < 1:
            break
        depth = k
    return depth


def depth_summary(depths: list[int]) -> dict[str, object]:
    values = np.asarray(depths)
    return {
        "mean_plies": round(float(values.mean()), 2),
        "share_reaching": {str(k): round(float((values >= k).mean()), 3) for k in (4, 8, 12, 20)},
        "lines": len(depths),
    }


def is_common(counter: collections.Counter[str], move: str, share: float) -> bool:
    total = sum(counter.values())
    return counter[move] >= 2 and counter[move] >= share * total


class Score:
    """Common-move hits over the scored plies, by move number."""

    def __init__(self, share: float, min_visits: int) -> None:
        self.share, self.min_visits = share, min_visits
        self.hits = np.zeros(PLIES, dtype=np.int64)
        self.scored = np.zeros(PLIES, dtype=np.int64)
        self.plies = np.zeros(PLIES, dtype=np.int64)
        self.frequency = np.zeros(PLIES, dtype=np.float64)

    def add(self, ply: int, counter: collections.Counter[str] | None, move: str) -> None:
        self.plies[ply] += 1
        if counter is None or sum(counter.values()) < self.min_visits:
            return
        self.scored[ply] += 1
        self.hits[ply] += is_common(counter, move, self.share)
        self.frequency[ply] += counter[move] / sum(counter.values())

    def summary(self) -> dict[str, object]:
        scored = int(self.scored.sum())
        hits = int(self.hits.sum())
        share = hits / scored if scored else float("nan")
        half = 1.96 * np.sqrt(share * (1 - share) / scored) if scored else float("nan")
        by_move = []
        for move in range(PLIES // 2):
            s = int(self.scored[2 * move : 2 * move + 2].sum())
            h = int(self.hits[2 * move : 2 * move + 2].sum())
            by_move.append(round(h / s, 3) if s else None)
        return {
            "common_share": round(share, 4),
            "common_share_95": [round(share - half, 4), round(share + half, 4)],
            "scored_plies": scored,
            "plies": int(self.plies.sum()),
            "coverage": round(scored / max(1, int(self.plies.sum())), 4),
            "mean_band_frequency": round(float(self.frequency.sum()) / max(1, scored), 4),
            "by_move_number": by_move,
        }


def play_model_games(model, rating: int, games: int, rng: np.random.Generator) -> list[list[str]]:
    """Self-play openings of ``PLIES`` plies at temperature 1, both sides at ``rating``."""
    boards = [chess.Board() for _ in range(games)]
    lines: list[list[str]] = [[] for _ in range(games)]
    for _ in range(PLIES):
        live = [i for i, b in enumerate(boards) if not b.is_game_over()]
        if not live:
            break
        predictions = model.predict([boards[i] for i in live], float(rating), float(rating))
        for i, prediction in zip(live, predictions, strict=True):
            p = prediction.probabilities.astype(np.float64)
            move = prediction.moves[int(rng.choice(len(p), p=p / p.sum()))]
            lines[i].append(move.uci())
            boards[i].push(move)
    return lines


def score_lines(lines: list[list[str]], table: Table, args: argparse.Namespace) -> Score:
    """Position level: is each move common where the band's games reached that position?"""
    score = Score(args.common_share, args.min_visits)
    for line in lines:
        board = chess.Board()
        for ply, uci in enumerate(line):
            score.add(ply, table.get(_key(board)), uci)
            board.push_uci(uci)
    return score


def score_plies(
    lines: list[list[str]], table: list[collections.Counter[str]], args: argparse.Namespace
) -> Score:
    """Move-number level: is each move common among the band's moves at that ply?"""
    score = Score(args.ply_share, 1)
    for line in lines:
        for ply, uci in enumerate(line):
            score.add(ply, table[ply], uci)
    return score


def load_or_play_openings(model, args: argparse.Namespace) -> dict[str, list[list[str]]]:
    """The model's openings per band: read from ``--openings-from`` or played and saved."""
    if args.openings_from is not None:
        lines: dict[str, list[list[str]]] = {band: [] for band in BANDS}
        with gzip.open(args.openings_from, "rt") as handle:
            for row in handle:
                band, moves = row.rstrip("\n").split("\t")
                lines[band].append(moves.split())
        return lines
    rng = np.random.default_rng(args.seed)
    lines = {}
    for band, rating in BAND_RATING.items():
        began = time.monotonic()
        lines[band] = play_model_games(model, rating, args.games, rng)
        print(
            f"{band}: {args.games} model openings in {time.monotonic() - began:.1f} s", flush=True
        )
    args.out.mkdir(parents=True, exist_ok=True)
    with gzip.open(args.out / "model_openings.tsv.gz", "wt") as handle:
        for band, band_lines in lines.items():
            for line in band_lines:
                handle.write(f"{band}\t{' '.join(line)}\n")
    return lines


def opening_realism(model, games: list[Game], args: argparse.Namespace) -> dict[str, object]:
    tables, plies, books = band_tables(games), ply_tables(games), line_tables(games)
    model_lines = load_or_play_openings(model, args)
    rng = np.random.default_rng(args.seed + 2)
    result: dict[str, object] = {"bands": {}, "cross": {}, "cross_plies": {}}
    for band in BANDS:
        table = tables[band]
        human = Score(args.common_share, args.min_visits)
        human_plies = Score(args.ply_share, 1)
        human_depths = []
        for game in games:
            board = chess.Board()
            for ply, move in enumerate(game.moves[:PLIES]):
                if _band(game.elos[ply % 2]) == band:
                    counter = table.get(_key(board))
                    left = collections.Counter(counter) if counter else None
                    if left is not None:
                        left[move.uci()] -= 1  # leave this game out
                    human.add(ply, left, move.uci())
                    at_ply = collections.Counter(plies[band][ply])
                    at_ply[move.uci()] -= 1
                    human_plies.add(ply, at_ply, move.uci())
                board.push(move)
            if _band(sum(game.elos) // 2) == band:
                line = [m.uci() for m in game.moves[:PLIES]]
                human_depths.append(book_depth(line, books[band], own=1))
        randoms: list[list[str]] = []
        for _ in range(args.games):
            board, line = chess.Board(), []
            for _ in range(PLIES):
                if board.is_game_over():
                    break
                move = rng.choice(list(board.legal_moves))
                line.append(move.uci())
                board.push(move)
            randoms.append(line)
        games_in_band = sum(
            1 for g in games if _band(g.elos[0]) == band or _band(g.elos[1]) == band
        )
        mine = model_lines[band]
        result["bands"][band] = {
            "model_rating": BAND_RATING[band],
            "held_out_games_with_a_player_in_band": games_in_band,
            "held_out_games_of_band_mean_rating": len(human_depths),
            "positions_in_table": len(table),
            "position_level": {
                "model": score_lines(mine, table, args).summary(),
                "people_leave_one_out": human.summary(),
                "random_mover": score_lines(randoms, table, args).summary(),
            },
            "ply_level": {
                "model": score_plies(mine, plies[band], args).summary(),
                "people_leave_one_out": human_plies.summary(),
                "random_mover": score_plies(randoms, plies[band], args).summary(),
            },
            "book_depth": {
                "model": depth_summary([book_depth(line, books[band]) for line in mine]),
                "people_leave_one_out": depth_summary(human_depths),
                "random_mover": depth_summary([book_depth(line, books[band]) for line in randoms]),
            },
        }
        result["cross"][band] = {
            f"model@{BAND_RATING[b]}": score_lines(model_lines[b], table, args).summary()[
                "common_share"
            ]
            for b in BANDS
        }
        result["cross_plies"][band] = {
            f"model@{BAND_RATING[b]}": score_plies(model_lines[b], plies[band], args).summary()[
                "common_share"
            ]
            for b in BANDS
        }
    return result


def _loss(verifier, board: chess.Board, move: chess.Move, best: tuple, depth: int) -> int:
    if move == best[0]:
        return 0
    outcome = verifier.search(
        board, chess.engine.Limit(depth=depth), multipv=1, search_moves=[move]
    )
    cp = outcome.info.lines[0].score().score(mate_score=100_000) if outcome.info.lines else 0
    return best[1] - int(cp or 0)


def verification(model, games: list[Game], args: argparse.Namespace) -> dict[str, object]:
    from latentchess.engines.ab import AlphaBetaEngine

    verifier = AlphaBetaEngine(name="verify")
    rng = np.random.default_rng(args.seed + 1)
    rules = [(cp, p) for cp in (200, 300, 500) for p in (0.02, 0.05, 0.10)]
    out: dict[str, object] = {"depth": args.verify_depth, "rules": {}}
    by_band: dict[str, list[tuple[chess.Board, chess.Move, tuple[int, int]]]] = {
        b: [] for b in BANDS
    }
    for game in games:
        board = chess.Board()
        for ply, move in enumerate(game.moves[:80]):
            if ply >= 10 and rng.random() < 0.08:
                band = _band(game.elos[ply % 2])
                if band is not None:
                    mine, theirs = game.elos[ply % 2], game.elos[1 - ply % 2]
                    by_band[band].append((board.copy(), move, (mine, theirs)))
            board.push(move)
    stats = {rule: collections.defaultdict(float) for rule in rules}
    began = time.monotonic()
    for band, samples in by_band.items():
        order = rng.permutation(len(samples))[: args.verify_positions]
        for index in order:
            board, played, (mine, theirs) = samples[int(index)]
            (prediction,) = model.predict([board], float(mine), float(theirs))
            probs = dict(zip(prediction.moves, prediction.probabilities.astype(float), strict=True))
            limit = chess.engine.Limit(depth=args.verify_depth)
            outcome = verifier.search(board, limit, multipv=1)
            cp = outcome.info.lines[0].score().score(mate_score=100_000)
            best = (outcome.best_move, int(cp or 0))
            low = [m for m, q in probs.items() if q < max(p for _, p in rules)]
            losses = {m: _loss(verifier, board, m, best, args.verify_depth) for m in low}
            if played not in losses:
                losses[played] = _loss(verifier, board, played, best, args.verify_depth)
            for cp_rule, p_rule in rules:
                s = stats[(cp_rule, p_rule)]
                flagged = [m for m, q in probs.items() if q < p_rule and losses[m] > cp_rule]
                s[f"{band}:positions"] += 1
                s[f"{band}:people"] += played in flagged
                s[f"{band}:model"] += sum(probs[m] for m in flagged)
        print(
            f"verification {band}: {len(order)} positions, {time.monotonic() - began:.0f} s",
            flush=True,
        )
    for (cp_rule, p_rule), s in stats.items():
        row = {}
        for band in BANDS:
            n = s[f"{band}:positions"]
            if n:
                row[band] = {
                    "positions": int(n),
                    "people_play_removable": round(s[f"{band}:people"] / n, 4),
                    "model_draws_removable": round(s[f"{band}:model"] / n, 4),
                }
        out["rules"][f"cp>{cp_rule},p<{p_rule}"] = row
    return out


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def markdown(report: dict) -> str:
    """The tables of ``results.json`` as Markdown (``results.md``)."""
    realism = report["opening_realism"]
    out = [
        "# Human-like play: opening realism and verification (generated)",
        "",
        f"`{report['command']}` at commit `{report['git_commit']}`; {report['seconds']} s.",
        "",
        f"Held-out games: {report['split']}.",
        "",
        "## Opening realism: the model's first ten moves per side (20 plies, temperature 1)",
        "",
        "Position level: share of moves that are common (>= 5% and >= 2 games) in that position "
        "among the band's held-out games, over plies whose position those games reached >= 10 "
        "times (coverage: share of all plies scored). Ply level: share of moves that are common "
        "(>= 2%) among the band's moves at that ply, every ply scored. Book depth: plies for which "
        "a line follows one that held-out games of the band (mean rating) played. People: each "
        "held-out game scored with its own moves left out.",
        "",
        "| band | model rating | who | position level (95%) | coverage | ply level | book depth |",
        "|---|---:|---|---|---:|---:|---:|",
    ]
    for band, row in realism["bands"].items():
        for who, label in (
            ("model", "model"),
            ("people_leave_one_out", "people"),
            ("random_mover", "random"),
        ):
            pos = row["position_level"][who]
            low, high = pos["common_share_95"]
            out.append(
                f"| {band} | {row['model_rating']} | {label} | {_pct(pos['common_share'])} "
                f"[{_pct(low)}, {_pct(high)}] | {_pct(pos['coverage'])} | "
                f"{_pct(row['ply_level'][who]['common_share'])} | "
                f"{row['book_depth'][who]['mean_plies']:.1f} |"
            )
    bands = list(realism["bands"])
    ratings = list(realism["cross"][bands[0]])
    out += [
        "",
        "Rating conditioning: position-level common share of the model at each rating (columns) "
        "against each band's games (rows).",
        "",
        "| band | " + " | ".join(ratings) + " |",
        "|---|" + "---:|" * len(ratings),
    ]
    for band in bands:
        cells = " | ".join(_pct(realism["cross"][band][r]) for r in ratings)
        out.append(f"| {band} | {cells} |")
    if "verification" in report:
        verify = report["verification"]
        out += [
            "",
            f"## Verification: removable moves (depth {verify['depth']})",
            "",
            "Share of held-out positions where the person's move is one the rule removes, "
            "against the probability that the model (temperature 1, the players' ratings) draws "
            "one.",
            "",
            "| rule | " + " | ".join(f"{b}: people / model" for b in bands) + " |",
            "|---|" + "---|" * len(bands),
        ]
        for rule, row in verify["rules"].items():
            cells = " | ".join(
                f"{_pct(row[b]['people_play_removable'])} / {_pct(row[b]['model_draws_removable'])}"
                for b in bands
                if b in row
            )
            out.append(f"| {rule} | {cells} |")
        first = next(iter(verify["rules"].values()))
        counts = ", ".join(f"{b} {first[b]['positions']}" for b in bands if b in first)
        out += ["", f"Positions per band: {counts}."]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pgn", type=Path, default=Path("../shared/data/lichess-rated-games.pgn.gz")
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/human_play"))
    parser.add_argument("--model", default=None, help="human model (default: the shipped one)")
    parser.add_argument("--games", type=int, default=400, help="model openings per band")
    parser.add_argument("--min-visits", type=int, default=10)
    parser.add_argument("--common-share", type=float, default=0.05)
    parser.add_argument("--ply-share", type=float, default=0.02)
    parser.add_argument(
        "--openings-from", type=Path, default=None, help="model_openings.tsv.gz of an earlier run"
    )
    parser.add_argument("--verify-positions", type=int, default=300)
    parser.add_argument("--verify-depth", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-verification", action="store_true")
    parser.add_argument(
        "--markdown-from", type=Path, default=None, help="only write results.md of a results.json"
    )
    args = parser.parse_args(argv)
    if args.markdown_from is not None:
        report = json.loads(read_text(find_text(args.markdown_from)))
        (args.markdown_from.parent / "results.md").write_text(markdown(report))
        return 0
    import torch

    from latentchess.models.chessformer_io import ChessformerModel

    torch.set_num_threads(1)
    began = time.monotonic()
    games, split = read_unseen_games(args.pgn.resolve())
    print(f"{len(games)} unseen games {split} in {time.monotonic() - began:.0f} s", flush=True)
    model = ChessformerModel.load(args.model)
    report: dict[str, object] = {
        "command": "python benchmarks/human_play.py " + " ".join(argv or sys.argv[1:]),
        "git_commit": git_commit(),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "split": split,
        "opening_realism": opening_realism(model, games, args),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    report["seconds"] = round(time.monotonic() - began, 1)
    (args.out / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["opening_realism"], indent=1), flush=True)
    if not args.skip_verification:
        report["verification"] = verification(model, games, args)
        report["seconds"] = round(time.monotonic() - began, 1)
        (args.out / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "results.md").write_text(markdown(report))
    if "verification" in report:
        print(json.dumps(report["verification"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
