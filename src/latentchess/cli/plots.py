"""``latentchess plot umap|trajectory|depth-elo|human-bands|attention|attribution``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``plot`` command group."""
    plot = subparsers.add_parser(
        "plot",
        help="draw the latent space, game paths, Elo vs depth, human matching by band, Chessformer "
        "attention and attribution",
    )
    kinds = plot.add_subparsers(dest="plot_kind", metavar="KIND", required=True)

    umap_parser = kinds.add_parser("umap", help="UMAP of labelled positions with the axis")
    _add_space_args(umap_parser)
    umap_parser.add_argument("--out", type=Path, default=Path("umap.png"), help="PNG/SVG file")
    umap_parser.set_defaults(func=_umap)

    trajectory = kinds.add_parser("trajectory", help="a game's path over the map (paper Fig. 3)")
    trajectory.add_argument("pgn", type=Path, help="PGN file; [%%eval] comments give labels")
    trajectory.add_argument("--game", type=int, default=0, help="0-based game index in the file")
    _add_space_args(trajectory)
    trajectory.add_argument("--out", type=Path, default=Path("trajectory.png"))
    trajectory.set_defaults(func=_trajectory)

    depth_elo = kinds.add_parser("depth-elo", help="Elo against depth with intervals")
    depth_elo.add_argument(
        "results",
        type=Path,
        nargs="+",
        help="results: `latentchess ladder --json` files (one point each), depth_ladder.py's "
        "depth_elo.json, or CSV series,depth,elo,elo_low,elo_high",
    )
    depth_elo.add_argument("--out", type=Path, default=Path("depth-elo.png"))
    depth_elo.add_argument("--no-paper", action="store_true", help="omit paper Table 2")
    depth_elo.set_defaults(func=_depth_elo)

    human = kinds.add_parser(
        "human-bands", help="human move matching by rating band next to published figures"
    )
    human.add_argument("results", type=Path, nargs="+", help="`eval-human --json` files")
    human.add_argument("--label", action="append", default=None, help="series name (repeat)")
    human.add_argument("--no-published", action="store_true", help="omit published figures")
    human.add_argument("--out", type=Path, default=Path("human-bands.png"))
    human.set_defaults(func=_human_bands)

    attention = kinds.add_parser("attention", help="a Chessformer layer's GAB for one square")
    attention.add_argument("fen", help="the position (FEN, or 'startpos')")
    attention.add_argument("--square", default="e4", help="query square (default e4)")
    attention.add_argument("--layer", type=int, default=0)
    attention.add_argument("--kind", default="gab", choices=("gab", "dot"))
    attention.add_argument("--elo", type=float, default=1500.0)
    attention.add_argument("--model", type=Path, default=None, help="Chessformer model dir")
    attention.add_argument("--out", type=Path, default=Path("attention.png"))
    attention.set_defaults(func=_attention)

    attribution = kinds.add_parser(
        "attribution", help="a Chessformer move's logit attributed to the squares"
    )
    attribution.add_argument("fen", help="the position (FEN, or 'startpos')")
    attribution.add_argument("--move", default=None, help="UCI move (default: the policy's best)")
    attribution.add_argument("--elo", type=float, default=1500.0, help="both players' rating")
    attribution.add_argument("--steps", type=int, default=64, help="integration steps")
    attribution.add_argument("--model", type=Path, default=None, help="Chessformer model dir")
    attribution.add_argument("--out", type=Path, default=Path("attribution.png"))
    attribution.set_defaults(func=_attribution)


def _add_space_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="labelled Parquet dataset dir")
    parser.add_argument("--model", type=Path, default=None, help="model dir (default model)")
    parser.add_argument("--sample", type=int, default=5000, help="positions to project")
    parser.add_argument("--seed", type=int, default=0)


def _space(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from latentchess.models import load_model
    from latentchess.plots.space import fit_space_map, load_labelled_sample

    model = load_model(args.model)
    fens, probs = load_labelled_sample(args.data, args.sample, seed=args.seed)
    return model, fit_space_map(model, fens, probs, seed=args.seed, progress=sys.stderr.isatty())


def _umap(args: argparse.Namespace) -> int:
    from latentchess.plots.space import plot_umap

    model, space = _space(args)
    name = model.path.name if model.path else "model"
    print(plot_umap(space, args.out, title=f"Latent space of {name}"))
    return 0


def _trajectory(args: argparse.Namespace) -> int:
    from latentchess.plots.space import plot_trajectory, read_game

    game = read_game(args.pgn, args.game)
    model, space = _space(args)
    print(plot_trajectory(model, space, game, args.out))
    return 0


def _depth_elo(args: argparse.Namespace) -> int:
    from latentchess.plots.elo import plot_depth_elo, read_depth_elo

    points = [point for path in args.results for point in read_depth_elo(path)]
    print(plot_depth_elo(points, args.out, paper=not args.no_paper))
    return 0


def _attention(args: argparse.Namespace) -> int:
    import chess

    from latentchess.errors import InvalidFenError, LatentChessError
    from latentchess.models.chessformer_io import ChessformerModel
    from latentchess.plots.attention import plot_attention

    try:
        board = chess.Board() if args.fen == "startpos" else chess.Board(args.fen)
    except ValueError as error:
        raise InvalidFenError(args.fen, str(error)) from error
    try:
        square = chess.parse_square(args.square)
    except ValueError as error:
        raise LatentChessError(f"bad square {args.square!r}: expected e.g. e4") from error
    model = ChessformerModel.load(args.model)
    print(
        plot_attention(
            model, board, square, args.out, layer=args.layer, elo=args.elo, kind=args.kind
        )
    )
    return 0


def _attribution(args: argparse.Namespace) -> int:
    import chess

    from latentchess.errors import InvalidFenError, LatentChessError
    from latentchess.evaluation.attribution import attribute_move
    from latentchess.models.chessformer_io import ChessformerModel
    from latentchess.plots.attention import plot_attribution

    try:
        board = chess.Board() if args.fen == "startpos" else chess.Board(args.fen)
    except ValueError as error:
        raise InvalidFenError(args.fen, str(error)) from error
    if not any(board.legal_moves):
        raise LatentChessError(f"no legal move in {board.fen()!r}")
    model = ChessformerModel.load(args.model)
    if args.move is None:
        move = model.predict([board], args.elo, args.elo)[0].moves[0]
    else:
        try:
            move = chess.Move.from_uci(args.move)
        except ValueError as error:
            raise LatentChessError(f"bad move {args.move!r}: expected UCI, e.g. e2e4") from error
    result = attribute_move(
        model, board, move, self_elo=args.elo, oppo_elo=args.elo, steps=args.steps
    )
    print(
        f"{move.uci()}: p {result.probability:.3f}, logit {result.logit:.3f}, baseline "
        f"{result.baseline_logit:.3f}, squares sum {result.squares.sum():.3f} "
        f"(gap {result.completeness_gap:+.3f})"
    )
    print("  " + "  ".join(f"{name} {value:+.3f}" for name, value in result.top(8)))
    print(plot_attribution(result, board, args.out))
    return 0


def _human_bands(args: argparse.Namespace) -> int:
    import json

    from latentchess.errors import DataFormatError
    from latentchess.plots.human import plot_human_bands

    runs = []
    for path in args.results:
        try:
            run = json.loads(path.read_text())
            if not isinstance(run, dict) or "by_band" not in run:
                raise ValueError("no 'by_band'")
        except (OSError, ValueError) as error:
            raise DataFormatError(f"not an eval-human --json result: {error}", path=path) from error
        runs.append(run)
    if args.label is not None and len(args.label) != len(runs):
        raise SystemExit(f"--label given {len(args.label)} times for {len(runs)} results")
    references = [] if args.no_published else None
    print(plot_human_bands(runs, args.out, labels=args.label, references=references))
    return 0
