"""Where a match's games were lost: every move re-scored by Stockfish, errors by phase and clock.

Usage::

    python benchmarks/game_errors.py A/games.pgn B/games.pgn --player ab --nodes 100000 \
        --workers 2 --out benchmarks/results/ab_vs_sf2850/errors [--games all]

Every position after the book (``{ book }`` comments are skipped) is searched once by Stockfish
at ``--nodes`` and its score turned into White's expected score with python-chess's WDL model of
Stockfish 15.1 (``Score.wdl(model="sf15.1", ply=...)``). A move's **error** is the expected score
its mover had before it minus what was left after it (0: no worse than the referee's line; 1: a
won game thrown to a lost one). Per player (``--player`` names the engine under study by a
substring of its PGN name; the other side of each game is "opponent"):

* mean error per move, and the counts of *mistakes* (error >= 0.10) and *blunders* (>= 0.20),
  by stretch of the game (plies 0-39, 40-79, 80+), by the clock the mover had (under 1 s, 1-3 s,
  over 3 s) and by material (an endgame: both sides' pieces other than pawns and king worth at
  most a rook and a minor piece, 8 in 3/3/5/9 units);
* in every lost game, the **decisive error**: the loser's largest error, with its ply, clock
  and the expected score before it.

The referee's verdicts are only as deep as ``--nodes``; the counts compare the two sides
under the same referee, not against perfect play. Games are analysed in ``--workers`` processes,
each with its own Stockfish (1 thread, 64 MB hash, cleared per game); finished games go to
``NAME.cache.jsonl`` as they end, so a killed run resumes where it stopped. Writes ``NAME.json``
and ``NAME.png``.
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import chess
import chess.engine
import chess.pgn

from latentchess.textfiles import open_text, strip_compression

MISTAKE = 0.10
BLUNDER = 0.20
ENDGAME_PIECE_VALUE = 8
_PIECE_VALUES = {chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}


@dataclass(frozen=True, kw_only=True)
class MoveError:
    """One analysed move.

    Attributes:
        pgn: the PGN file's parent folder and name.
        round: the game's PGN round.
        side: ``"player"`` (the engine under study) or ``"opponent"``.
        ply: plies before the move.
        san: the move.
        before: the mover's expected score before the move (referee's WDL model).
        after: the mover's expected score after it.
        clock: seconds on the mover's clock before the move (the previous ``%clk``, or the
            time control's base; ``None`` without either).
        endgame: whether both sides' pieces are worth at most a rook and a minor piece.
    """

    pgn: str
    round: int
    side: str
    ply: int
    san: str
    before: float
    after: float
    clock: float | None
    endgame: bool

    @property
    def error(self) -> float:
        """Expected score the move gave away (never negative)."""
        return max(0.0, self.before - self.after)


@dataclass(frozen=True)
class GameTask:
    """One game to analyse: where it came from and its text."""

    pgn: str
    round: int
    player_is_white: bool
    result: str
    text: str


def _pieces_value(board: chess.Board, color: chess.Color) -> int:
    return sum(value * len(board.pieces(piece, color)) for piece, value in _PIECE_VALUES.items())


def player_games(path: Path, player: str) -> Iterator[tuple[int, chess.pgn.Game, bool]]:
    """``(number, game, player is White)`` for each game of ``path``; a game python-chess could
    not read, or in which not exactly one side's name contains ``player``, raises ValueError
    naming the file and the game."""
    with open_text(path) as handle:
        index = 0
        while (game := chess.pgn.read_game(handle)) is not None:
            index += 1
            if game.errors:
                raise ValueError(f"{path}: game {index}: {game.errors[0]}")
            white_name, black_name = game.headers.get("White", ""), game.headers.get("Black", "")
            white, black = player in white_name, player in black_name
            if white == black:
                raise ValueError(
                    f"{path}: game {index}: {player!r} must name exactly one side "
                    f"(White {white_name!r}, Black {black_name!r})"
                )
            yield index, game, white


def read_games(paths: list[Path], player: str, decisive_only: bool) -> Iterator[GameTask]:
    """The games of ``paths`` in which exactly one side's name contains ``player``."""
    for path in paths:
        label = f"{path.parent.name}/{strip_compression(path)}"  # the same once compressed
        for _, game, white in player_games(path, player):
            headers = game.headers
            if decisive_only and headers["Result"] not in ("1-0", "0-1"):
                continue
            yield GameTask(
                pgn=label,
                round=int(headers["Round"]),
                player_is_white=white,
                result=headers["Result"],
                text=str(game),
            )


def white_expectation(
    engine: chess.engine.SimpleEngine, board: chess.Board, limit: chess.engine.Limit
) -> float:
    """White's expected score in ``board``: exact at the game's end, else the referee's WDL."""
    if board.is_checkmate():
        return 0.0 if board.turn == chess.WHITE else 1.0
    if board.is_game_over(claim_draw=False):
        return 0.5
    score = engine.analyse(board, limit)["score"].white()
    return score.wdl(model="sf15.1", ply=board.ply()).expectation()


def analyse_game(engine: chess.engine.SimpleEngine, task: GameTask, nodes: int) -> list[dict]:
    """The errors of every non-book move of one game, both sides."""
    game = chess.pgn.read_game(io.StringIO(task.text))
    assert game is not None
    engine.configure({"Clear Hash": None})
    board = game.board()
    limit = chess.engine.Limit(nodes=nodes)
    control = game.headers.get("TimeControl", "")
    base = float(control.partition("+")[0]) if control[:1].isdigit() else None
    clocks: dict[chess.Color, float | None] = {chess.WHITE: base, chess.BLACK: base}
    white_before: float | None = None
    errors: list[dict] = []
    for node in game.mainline():
        book = "book" in node.comment
        if book:
            board.push(node.move)
            white_before = None
            continue
        if white_before is None:
            white_before = white_expectation(engine, board, limit)
        mover = board.turn
        san = board.san(node.move)
        ply = board.ply()
        endgame = (
            _pieces_value(board, chess.WHITE) <= ENDGAME_PIECE_VALUE
            and _pieces_value(board, chess.BLACK) <= ENDGAME_PIECE_VALUE
        )
        board.push(node.move)
        white_after = white_expectation(engine, board, limit)
        mine = (mover == chess.WHITE) == task.player_is_white
        to_mover = (lambda e: e) if mover == chess.WHITE else (lambda e: 1.0 - e)
        errors.append(
            asdict(
                MoveError(
                    pgn=task.pgn,
                    round=task.round,
                    side="player" if mine else "opponent",
                    ply=ply,
                    san=san,
                    before=round(to_mover(white_before), 4),
                    after=round(to_mover(white_after), 4),
                    clock=clocks[mover],
                    endgame=endgame,
                )
            )
        )
        white_before = white_after
        clocks[mover] = node.clock() if node.clock() is not None else clocks[mover]
    return errors


_ENGINE: chess.engine.SimpleEngine | None = None


def _worker_start(stockfish: str) -> None:
    global _ENGINE
    _ENGINE = chess.engine.SimpleEngine.popen_uci(stockfish)
    _ENGINE.configure({"Threads": 1, "Hash": 64})


def _worker_run(job: tuple[GameTask, int]) -> tuple[GameTask, list[dict]]:
    task, nodes = job
    assert _ENGINE is not None
    return task, analyse_game(_ENGINE, task, nodes)


def _key(pgn: str, round_: int) -> str:
    return f"{pgn}#{round_}"


def _read_cache(path: Path, nodes: int) -> dict[str, dict]:
    done: dict[str, dict] = {}
    if not path.exists():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line cut by a kill: that game is analysed again
            continue
        if record.get("nodes") == nodes:
            done[_key(record["pgn"], record["round"])] = record
    return done


def _bucket_stats(moves: list[MoveError]) -> dict[str, float | int]:
    errors = [m.error for m in moves]
    return {
        "moves": len(moves),
        "mean_error": round(statistics.fmean(errors), 4) if errors else 0.0,
        "mistakes": sum(e >= MISTAKE for e in errors),
        "blunders": sum(e >= BLUNDER for e in errors),
        "mistakes_per_100_moves": round(100 * sum(e >= MISTAKE for e in errors) / len(errors), 2)
        if errors
        else 0.0,
    }


def _stretch(ply: int) -> str:
    return "plies 0-39" if ply < 40 else "plies 40-79" if ply < 80 else "plies 80+"


def _clock_band(clock: float | None) -> str:
    if clock is None:
        return "no clock"
    return "clock < 1 s" if clock < 1 else "clock 1-3 s" if clock <= 3 else "clock > 3 s"


def summarise(records: list[dict]) -> dict[str, object]:
    """The numbers of ``NAME.json`` from the analysed games."""
    by_side: dict[str, object] = {}
    all_moves = [MoveError(**move) for record in records for move in record["moves"]]
    for side in ("player", "opponent"):
        own = [m for m in all_moves if m.side == side]
        by_side[side] = {
            "all": _bucket_stats(own),
            "by_stretch": {
                s: _bucket_stats([m for m in own if _stretch(m.ply) == s])
                for s in ("plies 0-39", "plies 40-79", "plies 80+")
            },
            "by_clock": {
                c: _bucket_stats([m for m in own if _clock_band(m.clock) == c])
                for c in ("clock > 3 s", "clock 1-3 s", "clock < 1 s")
            },
            "by_material": {
                "endgame": _bucket_stats([m for m in own if m.endgame]),
                "more material": _bucket_stats([m for m in own if not m.endgame]),
            },
        }
    decisive = []
    for record in records:
        winner_white = {"1-0": True, "0-1": False}.get(record["result"])
        if winner_white is None:
            continue
        loser = "opponent" if winner_white == record["player_is_white"] else "player"
        moves = [MoveError(**m) for m in record["moves"] if m["side"] == loser]
        if not moves:
            continue
        worst = max(moves, key=lambda m: m.error)
        decisive.append(
            {
                "pgn": record["pgn"],
                "round": record["round"],
                "loser": loser,
                "ply": worst.ply,
                "san": worst.san,
                "error": round(worst.error, 4),
                "before": worst.before,
                "clock": worst.clock,
                "endgame": worst.endgame,
                "stretch": _stretch(worst.ply),
            }
        )
    lost = [d for d in decisive if d["loser"] == "player"]
    won = [d for d in decisive if d["loser"] == "opponent"]

    def counts(items: list[dict], key: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for item in items:
            out[str(item[key])] = out.get(str(item[key]), 0) + 1
        return dict(sorted(out.items()))

    return {
        "games": len(records),
        "games_lost_by_player": len(lost),
        "games_won_by_player": len(won),
        "by_side": by_side,
        "decisive_errors_of_player": {
            "by_stretch": counts(lost, "stretch"),
            "by_clock": counts([{**d, "band": _clock_band(d["clock"])} for d in lost], "band"),
            "in_endgame": sum(d["endgame"] for d in lost),
            "median_error": round(statistics.median([d["error"] for d in lost]), 4)
            if lost
            else None,
            "median_expected_score_before": round(statistics.median([d["before"] for d in lost]), 4)
            if lost
            else None,
        },
        "decisive_errors_of_opponent": {
            "by_stretch": counts(won, "stretch"),
            "by_clock": counts([{**d, "band": _clock_band(d["clock"])} for d in won], "band"),
            "in_endgame": sum(d["endgame"] for d in won),
        },
        "decisive_errors": decisive,
    }


def _plot(summary: dict, out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    stretches = ("plies 0-39", "plies 40-79", "plies 80+")
    width = 0.38
    for offset, side, color in (
        (-width / 2, "player", "tab:blue"),
        (width / 2, "opponent", "tab:orange"),
    ):
        rates = [
            summary["by_side"][side]["by_stretch"][s]["mistakes_per_100_moves"] for s in stretches
        ]
        left.bar([i + offset for i in range(3)], rates, width, label=side, color=color)
    left.set_xticks(range(3), stretches)
    left.set_ylabel(f"mistakes (error >= {MISTAKE}) per 100 moves")
    left.set_title("mistakes by stretch of the game")
    left.legend()
    for side, color in (("player", "tab:blue"), ("opponent", "tab:orange")):
        plies = [d["ply"] for d in summary["decisive_errors"] if d["loser"] == side]
        right.hist(plies, bins=range(0, 200, 10), alpha=0.6, label=f"{side} lost", color=color)
    right.set_xlabel("ply of the loser's largest error")
    right.set_ylabel("games")
    right.set_title("decisive errors")
    right.legend()
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(out, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pgn", type=Path, nargs="+")
    parser.add_argument("--player", default="ab", help="substring of the studied engine's name")
    parser.add_argument("--nodes", type=int, default=100_000, help="referee nodes per position")
    parser.add_argument("--stockfish", default="/usr/games/stockfish")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 1)))
    parser.add_argument("--games", choices=("decisive", "all"), default="decisive")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--name", default="game_errors", help="output file stem")
    args = parser.parse_args()
    try:
        tasks = list(read_games(args.pgn, args.player, args.games == "decisive"))
    except (OSError, ValueError, KeyError) as error:
        parser.error(str(error))
    args.out.mkdir(parents=True, exist_ok=True)
    cache_path = args.out / f"{args.name}.cache.jsonl"
    done = _read_cache(cache_path, args.nodes)
    todo = [t for t in tasks if _key(t.pgn, t.round) not in done]
    from tqdm import tqdm

    with (
        cache_path.open("a", encoding="utf-8") as cache,
        multiprocessing.Pool(
            args.workers, initializer=_worker_start, initargs=(args.stockfish,)
        ) as pool,
    ):
        progress = tqdm(total=len(tasks), initial=len(tasks) - len(todo), unit="game")
        for task, moves in pool.imap_unordered(_worker_run, [(t, args.nodes) for t in todo]):
            record = {
                "pgn": task.pgn,
                "round": task.round,
                "result": task.result,
                "player_is_white": task.player_is_white,
                "nodes": args.nodes,
                "moves": moves,
            }
            cache.write(json.dumps(record) + "\n")
            cache.flush()
            done[_key(task.pgn, task.round)] = record
            progress.update()
        progress.close()
    records = [done[_key(t.pgn, t.round)] for t in tasks]
    summary = summarise(records)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    summary = {
        "pgns": [f"{p.parent.name}/{p.name}" for p in args.pgn],
        "player": args.player,
        "games_selected": args.games,
        "referee": f"{Path(args.stockfish).name}, {args.nodes} nodes a position, WDL model sf15.1",
        "analysed_at_commit": commit,
        **summary,
    }
    json_path = args.out / f"{args.name}.json"
    temporary = json_path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    temporary.replace(json_path)
    _plot(
        summary,
        args.out / f"{args.name}.png",
        f"{len(records)} games, referee {args.nodes} nodes",
    )
    shown = {k: v for k, v in summary.items() if k != "decisive_errors"}
    json.dump(shown, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
