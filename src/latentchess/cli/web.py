"""Subcommands ``serve`` (the web board) and ``explain`` (a move's occlusion heat map).

Heavy imports (torch, the model, the web framework) happen inside the handlers.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from latentchess.argtypes import non_negative_int

__all__ = ["register"]

_PRECISIONS = ("auto", "fp32", "bf16", "fp16", "int8")  # models.inference.PRECISIONS, no torch


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0.1 <= value <= 600:
        raise argparse.ArgumentTypeError(f"expected seconds in [0.1, 600], got {text!r}")
    return value


def _port(text: str) -> int:
    value = non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"expected a port in [0, 65535], got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``serve`` and ``explain`` to the ``latentchess`` parser."""
    serve = subparsers.add_parser(
        "serve",
        help="a local web board: play the engines, analyse, watch the latent view",
        description=(
            "Serve the web board on http://HOST:PORT/ (this machine only unless --host says "
            "otherwise), print the URL and open a browser."
        ),
    )
    serve.add_argument("--host", default="127.0.0.1", help="interface (default: %(default)s)")
    serve.add_argument(
        "--port", type=_port, default=8000, help="port, 0 for any (default: %(default)s)"
    )
    serve.add_argument("--no-browser", action="store_true", help="do not open a browser")
    serve.add_argument(
        "--model",
        type=Path,
        metavar="DIR",
        help="latent model of the latent view, the explanations and the 'latent' opponent "
        "(default: the shipped model)",
    )
    serve.add_argument(
        "--precision",
        default="auto",
        choices=_PRECISIONS,
        help="model precision (default: %(default)s)",
    )
    serve.add_argument(
        "--max-think",
        type=_seconds,
        default=10.0,
        metavar="S",
        help="longest engine move or analysis in seconds (default: %(default)s)",
    )
    serve.add_argument(
        "--allow-external-engines",
        action="store_true",
        help="let the page start uci:/xboard: commands and free-form engine specs",
    )
    serve.set_defaults(func=_serve)

    explain = subparsers.add_parser(
        "explain",
        help="what a move changed along the advantage axis, piece by piece (occlusion)",
        description=(
            "Score the position before and after MOVE, then again with each piece removed, in "
            "one batch; print each piece's contribution to the axis change and optionally draw "
            "it as a heat map."
        ),
    )
    explain.add_argument("fen", help="position (FEN, or 'startpos')")
    explain.add_argument("move", help="move in UCI (e2e4) or SAN (e4)")
    explain.add_argument("--png", type=Path, metavar="OUT", help="write the heat map here")
    explain.add_argument(
        "--model", type=Path, metavar="DIR", help="latent model (default: the shipped model)"
    )
    explain.add_argument(
        "--precision",
        default="fp32",
        choices=_PRECISIONS,
        help="model precision (default: %(default)s)",
    )
    explain.add_argument("--json", action="store_true", help="print JSON instead of text")
    explain.set_defaults(func=_explain)


def _serve(args: argparse.Namespace) -> int:
    from latentchess.web.server import ServeConfig, serve
    from latentchess.web.service import Settings

    config = ServeConfig(
        host=args.host,
        port=args.port,
        open_browser=not args.no_browser,
        model=args.model,
        precision=args.precision,
        settings=Settings(max_think_s=args.max_think, allow_external=args.allow_external_engines),
    )
    serve(config)
    return 0


def _explain(args: argparse.Namespace) -> int:
    import chess

    from latentchess.errors import LatentChessError
    from latentchess.explain import (
        explain_move,
        format_explanation,
        parse_position_and_move,
        plot_explanation,
    )
    from latentchess.models.io import load_model

    try:
        board, move = parse_position_and_move(args.fen, args.move)
    except chess.IllegalMoveError as error:
        raise LatentChessError(str(error)) from None
    model = load_model(args.model, precision=args.precision)
    explanation = explain_move(model, board, move)
    if args.json:
        print(
            json.dumps(
                {
                    "fen": explanation.fen,
                    "move": explanation.move,
                    "san": explanation.san,
                    "score_before": explanation.score_before,
                    "score_after": explanation.score_after,
                    "change": explanation.change,
                    "pieces": {p.square_name: p.contribution for p in explanation.pieces},
                }
            )
        )
    else:
        print(format_explanation(explanation))
    if args.png is not None:
        print(f"heat map written to {plot_explanation(explanation, args.png)}")
    return 0
