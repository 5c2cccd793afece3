"""Every ``latentchess`` command: the ``cli`` module that builds its parser, and its one-line help.

``latentchess --help`` lists the commands from this table without importing their modules, and
running a command imports its own module alone (``uci`` does not build the parsers of the
training or data commands). Each module's ``register(subparsers)`` adds its commands with the
same help text (``tests/test_cli_startup.py`` checks that the two agree).
"""

from __future__ import annotations

from latentchess.engines.default import DEFAULT_ENGINE_SPEC

__all__ = ["COMMANDS", "module_of"]

COMMANDS: dict[str, tuple[str, str]] = {
    "data": ("data", "make, import and inspect labelled datasets"),
    "train": (
        "train",
        "train a model: supcon (the SOLIS encoder), chessformer or nnue (resumable, DDP-ready)",
    ),
    "train-chessformer": ("train", "deprecated: `latentchess train chessformer`"),
    "nnue": ("nnue", "NNUE evaluation networks (export, label-static, info)"),
    "models": ("models", "list the named encoder configurations with their parameter counts"),
    "model-info": ("models", "describe a model directory (config, parameters, axis, metrics)"),
    "export-onnx": ("models", "export a model's encoder to ONNX and verify it with ONNX Runtime"),
    "chessformer": ("chessformer", "Chessformer models: configs, ONNX, attention"),
    "uci": (
        "engines",
        f"speak UCI on stdin/stdout (GUIs, cutechess, lichess-bot) as {DEFAULT_ENGINE_SPEC!r} "
        "or the --engine spec",
    ),
    "bestmove": (
        "engines",
        f"print the engine's move for a position ({DEFAULT_ENGINE_SPEC!r} unless --engine)",
    ),
    "analyse": ("engines", "analyse a position: best move, score, principal variation, best lines"),
    "bench": (
        "engines",
        "search fixed positions to a fixed depth with the alpha-beta engine (as Stockfish's)",
    ),
    "options": ("engines", "list an engine's options: UCI name, type, default, range, spec key"),
    "play": (
        "engines",
        f"play against the engine in the terminal ({DEFAULT_ENGINE_SPEC!r} unless --engine)",
    ),
    "match": ("evaluation", "play two engines against each other (PGN out, resumable)"),
    "elo": ("evaluation", "fit BayesElo ratings to PGN games"),
    "ladder": ("evaluation", "bracket an engine between rated opponents and estimate its Elo"),
    "puzzles": ("evaluation", "solve Lichess-format puzzles, or make new ones"),
    "epd": ("evaluation", "score an engine on EPD test suites (bm/am accuracy, STS points)"),
    "tune": ("tune", "tune the alpha-beta search's parameters (SPSA)"),
    "eval-human": (
        "human",
        "top-1 move-matching accuracy of a Chessformer on rated games, per rating band",
    ),
    "plot": (
        "plots",
        "draw the latent space, game paths, Elo vs depth, human matching by band, Chessformer "
        "attention and attribution",
    ),
    "demo": (
        "demo",
        "analyse a position, play a short game against Stockfish, show the latent view",
    ),
    "perft": (
        "perft",
        "count the leaves of the legal move tree (move generator check, as 'go perft')",
    ),
    "serve": ("web", "a local web board: play the engines, analyse, watch the latent view"),
    "explain": ("web", "what a move changed along the advantage axis, piece by piece (occlusion)"),
}
"""Command -> (its module under ``latentchess.cli``, its help), in the order of ``--help``."""


def module_of(command: str) -> str:
    """The dotted name of the module that registers ``command``."""
    return f"latentchess.cli.{COMMANDS[command][0]}"
