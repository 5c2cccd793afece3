"""Would more time have saved the lost games? The decisive errors of ``game_errors.py``, replayed.

Usage::

    python benchmarks/recheck_errors.py benchmarks/results/ab_vs_sf2850/errors/game_errors.json.xz \
        --pgn-root benchmarks/results/ab_vs_sf2850 --engine ab:threads=1 --times 0.5,2,8 \
        --out benchmarks/results/ab_vs_sf2850/errors

For every game the studied engine lost, ``game_errors.json`` names its decisive error (its
largest loss of expected score). Each such position is set up again from its PGN (the path in
the JSON, under ``--pgn-root``) and ``--engine`` chooses a move at each of ``--times`` seconds (a
fresh search: table and histories cleared). Stockfish, the same referee as ``game_errors.py``
(``--nodes``, WDL model sf15.1, table cleared), scores the chosen move, and the move played in
the game once more (``error_rescored``: the referee's own noise between two looks). Per time: how
many errors the engine repeats (the same move), how many it avoids (a move that loses less than
0.10 of expected score), and the mean error of what it plays. If more time avoids them, the
engine lost on time allocation; if not, on what its search and evaluation see. Writes
``NAME.json`` (default ``recheck``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
from pathlib import Path

import chess
import chess.engine
import chess.pgn

from game_errors import white_expectation  # this folder: run as a script from anywhere
from latentchess.engines.registry import create_engine
from latentchess.textfiles import find_text, open_text, read_text

AVOIDED = 0.10


def _position(pgn: Path, round_: int, ply: int) -> chess.Board:
    with open_text(find_text(pgn)) as handle:  # games.pgn or games.pgn.xz
        while (game := chess.pgn.read_game(handle)) is not None:
            if int(game.headers["Round"]) != round_:
                continue
            board = game.board()
            for move in game.mainline_moves():
                if board.ply() == ply:
                    return board
                board.push(move)
            break
    raise ValueError(f"{pgn}: no round {round_} with a ply {ply}")


def _mover_expectation(
    referee: chess.engine.SimpleEngine, board: chess.Board, move: chess.Move, nodes: int
) -> float:
    """The mover's expected score after ``move``: ``game_errors.py``'s referee, the mover's view."""
    after = board.copy(stack=False)
    after.push(move)
    white = white_expectation(referee, after, chess.engine.Limit(nodes=nodes))
    return white if board.turn == chess.WHITE else 1.0 - white


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("errors", type=Path, help="game_errors.py's JSON")
    parser.add_argument(
        "--pgn-root", type=Path, required=True, help="folder the JSON's PGNs are in"
    )
    parser.add_argument("--engine", default="ab:threads=1")
    parser.add_argument("--times", default="0.5,2,8", help="seconds a move, comma-separated")
    parser.add_argument("--nodes", type=int, default=100_000, help="referee nodes per position")
    parser.add_argument("--stockfish", default="/usr/games/stockfish")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--name", default="recheck")
    args = parser.parse_args()
    times = [float(t) for t in args.times.split(",")]
    summary_in = json.loads(read_text(find_text(args.errors)))
    lost = [d for d in summary_in["decisive_errors"] if d["loser"] == "player"]
    if not lost:
        parser.error(f"{args.errors}: no decisive errors of the player")
    from tqdm import tqdm

    engine = create_engine(args.engine)
    referee = chess.engine.SimpleEngine.popen_uci(args.stockfish)
    referee.configure({"Threads": 1, "Hash": 64})
    rows = []
    try:
        for item in tqdm(lost, unit="position"):
            board = _position(args.pgn_root / item["pgn"], item["round"], item["ply"])
            played = board.parse_san(item["san"])
            referee.configure({"Clear Hash": None})
            again = _mover_expectation(referee, board, played, args.nodes)
            row = {
                **item,
                "fen": board.fen(),
                "error_rescored": round(max(0.0, item["before"] - again), 4),
                "choices": {},
            }
            for seconds in times:
                engine.new_game()
                referee.configure({"Clear Hash": None})
                move = engine.play(board, chess.engine.Limit(time=seconds))
                expectation = _mover_expectation(referee, board, move, args.nodes)
                row["choices"][str(seconds)] = {
                    "move": board.san(move),
                    "same": move == played,
                    "error": round(max(0.0, item["before"] - expectation), 4),
                }
            rows.append(row)
    finally:
        engine.close()
        referee.quit()
    by_time = {}
    for seconds in times:
        choices = [row["choices"][str(seconds)] for row in rows]
        by_time[str(seconds)] = {
            "positions": len(choices),
            "same_move": sum(c["same"] for c in choices),
            "avoided": sum(c["error"] < AVOIDED for c in choices),
            "mean_error": round(statistics.fmean(c["error"] for c in choices), 4),
        }
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    result = {
        "errors": args.errors.name,
        "engine": args.engine,
        "referee": f"{Path(args.stockfish).name}, {args.nodes} nodes, WDL model sf15.1",
        "analysed_at_commit": commit,
        "mean_error_in_the_games": round(statistics.fmean(d["error"] for d in lost), 4),
        "mean_error_in_the_games_rescored": round(
            statistics.fmean(row["error_rescored"] for row in rows), 4
        ),
        "by_seconds": by_time,
        "positions": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{args.name}.json"
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    temporary.replace(path)
    print(json.dumps({k: v for k, v in result.items() if k != "positions"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
