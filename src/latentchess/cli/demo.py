"""``latentchess demo``: the main job in one command, non-interactively.

1. The default engine (``ab``: alpha-beta on the native core, the strongest measured here)
   analyses a position: best move, principal variation, score, depth, nodes, its best lines next
   to a full-strength Stockfish referee.
2. It plays a short game against Stockfish at a ``UCI_Elo`` near its own rating, every move
   printed with both evaluations; the game is written as PGN.
3. The latent view, what this project is about: the SOLIS model (the shipped default) scores the
   same position's moves along its advantage axis, explains the best one piece by piece, and
   follows the game just played along the axis.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chess
import chess.engine
import chess.pgn

from latentchess.engines.default import DEFAULT_ENGINE_SPEC

if TYPE_CHECKING:
    from latentchess.models.inference import LatentModel

__all__ = ["register", "run_demo", "DEMO_FEN"]

DEMO_FEN = "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"
"""Scholar's mate set-up after 3...Nf6?? (Qxf7# wins): a position with one right answer."""


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``demo`` command."""
    p = subparsers.add_parser(
        "demo",
        help="analyse a position, play a short game against Stockfish, show the latent view",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--engine",
        default=DEFAULT_ENGINE_SPEC,
        help="engine spec that analyses and plays (default: %(default)s)",
    )
    p.add_argument("--limit", default="100ms", help="its limit per move (default: %(default)s)")
    p.add_argument("--fen", default=DEMO_FEN, help="position to analyse")
    p.add_argument(
        "--opponent", default="stockfish:elo=2000", help="opponent spec (default: %(default)s)"
    )
    p.add_argument("--opponent-limit", default="100ms", help="opponent's limit per move")
    p.add_argument("--plies", type=int, default=40, help="game length cap in plies (default 40)")
    p.add_argument("--referee-depth", type=int, default=12, help="Stockfish referee depth")
    p.add_argument("--model", type=Path, default=None, help="latent model (default: shipped)")
    p.add_argument("--depth", type=int, default=4, help="latent search depth (default 4)")
    p.add_argument("--width", type=int, default=3, help="latent search width (default 3)")
    p.add_argument("--pgn", type=Path, default=Path("demo-output/demo-game.pgn"))
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    return run_demo(
        engine_spec=args.engine,
        limit=args.limit,
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
    """A score from White's view, in pawns (``+0.35``), as a mate (``#3``) or a result."""
    if score is None:
        return "?"
    white = score.white()
    if white.mate() == 0:
        return "1-0 #" if white > chess.engine.Cp(0) else "0-1 #"
    if white.is_mate():
        return f"#{white.mate()}"
    return f"{white.score() / 100:+.2f}"


def _engine_score(analysis: Any, turn: chess.Color) -> chess.engine.PovScore | None:
    """An :class:`~latentchess.engines.base.Analysis` score as a python-chess score."""
    if analysis.mate is not None:
        return chess.engine.PovScore(chess.engine.Mate(analysis.mate), turn)
    if analysis.score_cp is not None:
        return chess.engine.PovScore(chess.engine.Cp(analysis.score_cp), turn)
    return None


def run_demo(
    *,
    engine_spec: str = DEFAULT_ENGINE_SPEC,
    limit: str = "100ms",
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
    """Analyse ``fen``, play one game against ``opponent``, then show the latent view; print
    everything to stdout and write the game to ``pgn_path``."""
    from latentchess.data.stockfish import find_stockfish
    from latentchess.engines.registry import create_engine
    from latentchess.evaluation.limits import parse_limit

    started = time.monotonic()
    our_limit = parse_limit(limit).fixed_limit()
    referee_limit = chess.engine.Limit(depth=referee_depth)
    engine = create_engine(engine_spec)
    try:
        with chess.engine.SimpleEngine.popen_uci(str(find_stockfish())) as referee:
            _analysis(engine, engine_spec, limit, our_limit, chess.Board(fen), referee)
            board, game = _game(
                engine,
                engine_spec,
                limit,
                our_limit,
                opponent,
                opponent_limit,
                plies,
                referee,
                referee_limit,
            )
            if board is None:
                return 1
            _latent_view(model, fen, depth, width, board, referee)
    finally:
        engine.close()
    pgn_path.parent.mkdir(parents=True, exist_ok=True)
    pgn_path.write_text(str(game) + "\n\n")
    print(f"\ngame written to {pgn_path}; demo took {time.monotonic() - started:.0f} s")
    return 0


def _analysis(
    engine: Any,
    spec: str,
    limit_text: str,
    limit: chess.engine.Limit,
    board: chess.Board,
    referee: chess.engine.SimpleEngine,
) -> None:
    """Part 1: the engine's analysis of one position, its best lines next to the referee."""
    print(f"== {spec} analyses {board.fen()} ({limit_text}) ==")
    print(board.unicode(borders=False, empty_square="·"))
    if any(option.name == "MultiPV" for option in engine.options()):  # three lines, one search
        engine.set_option("MultiPV", min(3, board.legal_moves.count()))
    analysis = engine.analyse(board, limit)
    lines = [(row.pv, row.score_cp, row.mate) for row in analysis.moves if row.pv]
    if not lines and analysis.pv:
        lines = [(analysis.pv, analysis.score_cp, analysis.mate)]
    reach = f"depth {analysis.depth}" + (f"/{analysis.seldepth}" if analysis.seldepth else "")
    speed = f"  nps {analysis.nps:,}" if analysis.nps else ""
    summary = f"{reach}  nodes {analysis.nodes:,}{speed}  {analysis.time_s * 1000:.0f} ms"
    if not lines:
        print("no move found")
        return
    best_pv, best_cp, best_mate = lines[0]
    score = f"mate {best_mate}" if best_mate is not None else f"cp {best_cp}"
    print(f"best {board.san(best_pv[0])}  score {score}  {summary}")
    print(f"{'rank':>4}  {'move':<8}{'score':>9}{'Stockfish':>11}  line")
    for rank, (pv, cp, mate) in enumerate(lines, 1):
        board.push(pv[0])
        verdict = referee.analyse(board, chess.engine.Limit(depth=10))["score"]
        board.pop()
        ours = f"mate {mate}" if mate is not None else f"cp {cp}"
        print(
            f"{rank:>4}  {board.san(pv[0]):<8}{ours:>9}{_cp(verdict):>11}  "
            f"{board.variation_san(pv[:8])}"
        )


def _game(
    engine: Any,
    spec: str,
    limit_text: str,
    limit: chess.engine.Limit,
    opponent: str,
    opponent_limit: str,
    plies: int,
    referee: chess.engine.SimpleEngine,
    referee_limit: chess.engine.Limit,
) -> tuple[chess.Board | None, chess.pgn.Game]:
    """Part 2: a short game, ``engine`` with White; (final board or None on failure, game)."""
    from latentchess.engines.registry import create_engine
    from latentchess.evaluation.limits import parse_limit

    sides = f"{spec} (White, {limit_text}/move) vs {opponent} ({opponent_limit}/move)"
    print(f"\n== A short game: {sides} ==")
    opponent_engine = create_engine(opponent)
    their_limit = parse_limit(opponent_limit).fixed_limit()
    game = chess.pgn.Game()
    game.headers.update(
        {
            "Event": "latentchess demo",
            "Date": datetime.date.today().strftime("%Y.%m.%d"),
            "White": spec,
            "Black": opponent,
        }
    )
    node: chess.pgn.GameNode = game
    board = chess.Board()
    try:
        while not board.is_game_over(claim_draw=True) and board.ply() < plies:
            tick = time.monotonic()
            ours = ""
            if board.turn == chess.WHITE:
                mover = spec
                analysis = engine.analyse(board, limit)
                move = analysis.best_move
                ours = f"  ours {_cp(_engine_score(analysis, board.turn)):>6} d{analysis.depth}"
            else:
                mover = opponent
                move = opponent_engine.play(board, their_limit)
            spent = time.monotonic() - tick
            if move is None or move not in board.legal_moves:
                print(f"{mover} played an illegal move {move}", file=sys.stderr)
                return None, game
            san = board.san(move)
            board.push(move)
            node = node.add_variation(move)
            verdict = referee.analyse(board, referee_limit)["score"]
            number = f"{(board.ply() + 1) // 2}." + ("" if board.turn == chess.BLACK else "..")
            print(f"{number:<5}{san:<8}{spent * 1000:>6.0f} ms  Stockfish {_cp(verdict):>7}{ours}")
    finally:
        opponent_engine.close()
    outcome = board.outcome(claim_draw=True)
    result = outcome.result() if outcome else "*"
    reason = outcome.termination.name.lower() if outcome else f"stopped after {plies} plies"
    game.headers["Result"] = result
    print(f"result: {result} ({reason}); final position {board.fen()}")
    return board, game


def _latent_view(
    model_dir: Path | None,
    fen: str,
    depth: int,
    width: int,
    game_board: chess.Board,
    referee: chess.engine.SimpleEngine,
) -> None:
    """Part 3: the latent model's view of the position and of the game."""
    from latentchess.engines.latent import LatentEngine
    from latentchess.explain import explain_move, format_explanation
    from latentchess.models.io import load_model

    model = load_model(model_dir)
    print("\n== The latent view: a SOLIS model plans in its embedding space ==")
    print(
        f"model: {model.path} ({model.config.name}, {model.encoder.num_parameters():,} "
        f"parameters{_shared_transformer(model.config)}, {model.precision}, sha256 "
        f"{model.content_hash})"
    )
    metrics = model.metadata.get("metrics", {})
    if metrics:
        shown = ", ".join(f"{k}={v:.3f}" for k, v in metrics.items() if isinstance(v, float))
        print(f"held-out metrics: {shown}")
    print(
        "Each position becomes a unit vector; its cosine with the learned advantage axis is the "
        "model's score,\nand the latent planner ('--engine latent') searches along it "
        f"(depth {depth}, width {width}):"
    )
    latent = LatentEngine.from_options(model, depth=depth, width=width)
    board = chess.Board(fen)
    analysis = latent.analyse(board, chess.engine.Limit(depth=depth))
    print(f"{'rank':>4}  {'move':<8}{'axis value':>11}{'P(White wins)':>15}{'Stockfish':>11}")
    for entry in analysis.moves[:5]:
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
        f"latent best: {board.san(analysis.best_move) if analysis.best_move else '-'}  pv: {pv}  "
        f"nodes {analysis.nodes}  {analysis.time_s * 1000:.0f} ms"
    )
    if analysis.best_move is not None:
        print("\nWhy, piece by piece (occlusion: each piece removed from both positions):")
        print(format_explanation(explain_move(model, board, analysis.best_move), top=5))
        board.push(analysis.best_move)
        if board.is_game_over():  # the search scores the end exactly; the model sees a position
            print(
                "(the search scores the game's end exactly; the model alone sees only a position)"
            )
        board.pop()
    _trajectory(model, latent, game_board)


def _trajectory(model: LatentModel, latent: Any, game_board: chess.Board) -> None:
    """The game just played along the advantage axis: the model's P(White wins) every 8 plies."""
    from latentchess.batch_keys import tokenize_boards

    replay = chess.Board()
    boards = [replay.copy(stack=False)]
    for move in game_board.move_stack:
        replay.push(move)
        boards.append(replay.copy(stack=False))
    scores = model.score_tokens(tokenize_boards(boards))
    shown = [ply for ply in range(0, len(boards), 8)] + (
        [len(boards) - 1] if (len(boards) - 1) % 8 else []
    )
    cells = "  ".join(f"{ply}: {latent.win_probability(float(scores[ply])):.2f}" for ply in shown)
    print(f"\nThe game along the axis, the model's P(White wins) by ply: {cells}")


def _shared_transformer(config: object) -> str:
    """`` on nnue-default's transformer`` for an encoder that uses an NNUE's, else nothing."""
    source = getattr(config, "ft_from", None)
    return f" on {source}'s feature transformer" if source else ""
