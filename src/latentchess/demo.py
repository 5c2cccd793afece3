"""``latentchess demo``: the main job in one command, non-interactively.

Loads the shipped default model (or ``--model``), analyses a position move by move, then plays a
short game against Stockfish, printing each move with our evaluation next to a full-strength
Stockfish referee's, and writes the game as PGN.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

import chess
import chess.engine
import chess.pgn

__all__ = ["register", "run_demo"]

DEMO_FEN = "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"
"""Scholar's mate set-up after 3...Nf6?? (Qxf7# wins): a position with one right answer."""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``demo`` command."""
    p = subparsers.add_parser(
        "demo",
        help="analyse a position and play a short game against Stockfish",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", type=Path, default=None, help="model dir (default: shipped model)")
    p.add_argument("--fen", default=DEMO_FEN, help="position to analyse")
    p.add_argument("--opponent", default="stockfish:elo=1350", help="engine spec of the opponent")
    p.add_argument("--opponent-limit", default="50ms", help="opponent's limit (see match --help)")
    p.add_argument("--depth", type=int, default=4, help="our search depth in plies (default 4)")
    p.add_argument("--width", type=int, default=3, help="our search width (default 3)")
    p.add_argument("--plies", type=int, default=40, help="game length cap in plies (default 40)")
    p.add_argument("--referee-depth", type=int, default=12, help="Stockfish referee depth")
    p.add_argument("--pgn", type=Path, default=Path("demo-output/demo-game.pgn"))
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    return run_demo(
        model=args.model,
        fen=args.fen,
        opponent=args.opponent,
        opponent_limit=args.opponent_limit,
        depth=args.depth,
        width=args.width,
        plies=args.plies,
        referee_depth=args.referee_depth,
        pgn_path=args.pgn,
    )


def _cp(score: chess.engine.PovScore | None) -> str:
    if score is None:
        return "?"
    white = score.white()
    if white.mate() == 0:
        return "1-0 #" if white > chess.engine.Cp(0) else "0-1 #"
    if white.is_mate():
        return f"#{white.mate()}"
    return f"{white.score() / 100:+.2f}"


def run_demo(
    *,
    model: Path | None,
    fen: str,
    opponent: str,
    opponent_limit: str,
    depth: int,
    width: int,
    plies: int,
    referee_depth: int,
    pgn_path: Path,
) -> int:
    """Analyse ``fen`` and play one game against ``opponent``; print everything to stdout."""
    from latentchess.data.stockfish import find_stockfish
    from latentchess.engines.latent import LatentEngine
    from latentchess.engines.registry import create_engine
    from latentchess.evaluation.limits import parse_limit
    from latentchess.models.io import load_model

    started = time.monotonic()
    latent_model = load_model(model)
    card = latent_model.metadata
    print(
        f"model: {latent_model.path} ({latent_model.config.name}, "
        f"{latent_model.encoder.num_parameters():,} parameters, {latent_model.precision}, "
        f"sha256 {latent_model.content_hash})"
    )
    metrics = card.get("metrics", {})
    if metrics:
        shown = ", ".join(f"{k}={v:.3f}" for k, v in metrics.items() if isinstance(v, float))
        print(f"held-out metrics: {shown}")
    engine = LatentEngine.from_options(latent_model, depth=depth, width=width)
    our_limit = chess.engine.Limit(depth=depth)
    referee_limit = chess.engine.Limit(depth=referee_depth)

    with chess.engine.SimpleEngine.popen_uci(str(find_stockfish())) as referee:
        board = chess.Board(fen)
        print(f"\n== Analysis of {fen} (depth {depth}, width {width}) ==")
        print(board.unicode(borders=False, empty_square="·"))
        analysis = engine.analyse(board, our_limit)
        print(f"{'rank':>4}  {'move':<8}{'axis value':>11}{'P(White wins)':>15}{'Stockfish':>11}")
        for entry in analysis.moves[:8]:
            board.push(entry.move)
            verdict = referee.analyse(board, chess.engine.Limit(depth=10))["score"]
            board.pop()
            p = "?" if entry.win_prob_white is None else f"{entry.win_prob_white:.3f}"
            print(
                f"{entry.rank:>4}  {board.san(entry.move):<8}{entry.score:>+11.4f}{p:>15}"
                f"{_cp(verdict):>11}"
            )
        pv = board.variation_san(analysis.pv) if analysis.pv else "-"
        print(
            f"best: {board.san(analysis.best_move) if analysis.best_move else '-'}  pv: {pv}  "
            f"nodes {analysis.nodes}  {analysis.time_s * 1000:.0f} ms"
        )

        print(f"\n== A short game: latentchess (White) vs {opponent} ({opponent_limit}/move) ==")
        opponent_engine = create_engine(opponent)
        their_limit = parse_limit(opponent_limit).fixed_limit()
        game = chess.pgn.Game()
        game.headers.update(
            {
                "Event": "latentchess demo",
                "Date": datetime.date.today().strftime("%Y.%m.%d"),
                "White": engine.name,
                "Black": opponent,
                "WhiteModelHash": latent_model.content_hash,
                "WhitePrecision": latent_model.precision,
            }
        )
        node: chess.pgn.GameNode = game
        board = chess.Board()
        try:
            while not board.is_game_over(claim_draw=True) and board.ply() < plies:
                tick = time.monotonic()
                ours = ""
                if board.turn == chess.WHITE:
                    mover_name = engine.name
                    result = engine.search(board, our_limit)
                    move = result.move
                    ours = f"  ours {_cp(engine.pov_score(result.value, board.turn))}"
                else:
                    mover_name = opponent_engine.name
                    move = opponent_engine.play(board, their_limit)
                spent = time.monotonic() - tick
                if move is None or move not in board.legal_moves:
                    print(f"{mover_name} played an illegal move {move}", file=sys.stderr)
                    return 1
                san = board.san(move)
                board.push(move)
                node = node.add_variation(move)
                verdict = referee.analyse(board, referee_limit)["score"]
                number = f"{(board.ply() + 1) // 2}." + ("" if board.turn == chess.BLACK else "..")
                print(
                    f"{number:<5}{san:<8}{spent * 1000:>6.0f} ms  Stockfish {_cp(verdict):>7}{ours}"
                )
        finally:
            opponent_engine.close()
        outcome = board.outcome(claim_draw=True)
        result = outcome.result() if outcome else "*"
        reason = outcome.termination.name.lower() if outcome else f"stopped after {plies} plies"
        game.headers["Result"] = result
        print(f"\nresult: {result} ({reason}); final position {board.fen()}")
    pgn_path.parent.mkdir(parents=True, exist_ok=True)
    pgn_path.write_text(str(game) + "\n\n")
    print(f"game written to {pgn_path}; demo took {time.monotonic() - started:.0f} s")
    return 0
