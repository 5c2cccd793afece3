"""``latentchess play``: a human plays the engine in a terminal.

The board is drawn with Unicode pieces from the human's side; moves are typed in SAN (``Nf3``,
``exd5``, ``O-O``) or UCI (``g1f3``); illegal or unreadable input is explained and asked again.
Other commands: ``help``, ``moves`` (list the legal moves), ``undo`` (take back the last move pair),
``resign``, ``quit``. Input is read line by line, so a pipe or file works as well as a keyboard.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

import chess
import chess.engine

if TYPE_CHECKING:
    from latentchess.engines.base import Engine

__all__ = ["render", "parse_move", "play_terminal"]

_HELP = (
    "Type a move in SAN (Nf3, exd5, O-O, e8=Q) or UCI (g1f3, e7e8q), or one of: "
    "moves, undo, resign, quit, help."
)


def render(board: chess.Board, orientation: chess.Color = chess.WHITE) -> str:
    """The board as text with Unicode pieces, rank and file labels, from ``orientation``'s side."""
    ranks = range(7, -1, -1) if orientation == chess.WHITE else range(8)
    files = range(8) if orientation == chess.WHITE else range(7, -1, -1)
    lines = []
    for rank in ranks:
        cells = []
        for file in files:
            piece = board.piece_at(chess.square(file, rank))
            cells.append(piece.unicode_symbol() if piece else "·")
        lines.append(f"{rank + 1} " + " ".join(cells))
    lines.append("  " + " ".join(chess.FILE_NAMES[f] for f in files))
    return "\n".join(lines)


def parse_move(board: chess.Board, text: str) -> chess.Move:
    """A legal move of ``board`` from SAN or UCI text.

    Raises:
        ValueError: the text is not a legal move here; the message says why.
    """
    text = text.strip()
    try:
        move = board.parse_san(text)
    except chess.IllegalMoveError:
        raise ValueError(f"{text!r} is illegal in this position") from None
    except chess.AmbiguousMoveError:
        raise ValueError(f"{text!r} is ambiguous; add the file or rank of the piece") from None
    except ValueError:
        pass
    else:
        if not move:  # python-chess reads "--", "0000", "Z0" as a null move: not a chess move
            raise ValueError(f"{text!r} is a null move (passing is not allowed)")
        return move
    try:
        move = chess.Move.from_uci(text.lower())
    except ValueError:
        raise ValueError(
            f"cannot read {text!r} as a move (SAN like Nf3 or UCI like g1f3)"
        ) from None
    if not board.is_legal(move):
        raise ValueError(f"{text!r} is illegal in this position")
    return move


def _outcome_text(board: chess.Board) -> str | None:
    outcome = board.outcome(claim_draw=True)
    if outcome is None:
        return None
    reason = outcome.termination.name.replace("_", " ").lower()
    return f"Game over: {outcome.result()} ({reason})"


def play_terminal(
    engine: Engine,
    *,
    human: chess.Color,
    board: chess.Board | None = None,
    limit: chess.engine.Limit | None = None,
    input_stream: TextIO,
    output: TextIO,
) -> str:
    """Play one game; returns the result (``1-0``, ``0-1``, ``1/2-1/2`` or ``*`` if abandoned).

    Args:
        engine: the opponent.
        human: the colour the human plays.
        board: the starting position (default: the standard one).
        limit: the engine's limit per move (default: its configured depth).
        input_stream: where the human's lines come from.
        output: where the board and messages go.
    """
    board = board or chess.Board()
    limit = limit or chess.engine.Limit()
    engine.new_game()

    def say(text: str = "") -> None:
        output.write(text + "\n")
        output.flush()

    say(f"You play {'White' if human == chess.WHITE else 'Black'} against {engine.name}. {_HELP}")
    while True:
        say()
        say(render(board, human))
        finished = _outcome_text(board)
        if finished is not None:
            say(finished)
            return board.outcome(claim_draw=True).result()  # type: ignore[union-attr]
        if board.turn != human:
            analysis = engine.go(board, limit)
            assert analysis.best_move is not None
            score = f"#{analysis.mate}" if analysis.mate is not None else f"{analysis.score_cp}cp"
            say(
                f"{engine.name} plays {board.san(analysis.best_move)} "
                f"(score {score}, depth {analysis.depth}, {analysis.time_s:.1f}s)"
            )
            board.push(analysis.best_move)
            continue
        while True:
            output.write(f"Your move ({board.fullmove_number}{'.' if board.turn else '...'}): ")
            output.flush()
            line = input_stream.readline()
            if not line:
                say("\nEnd of input: game abandoned.")
                return "*"
            text = line.strip()
            command = text.lower()
            if not text:
                continue
            if command == "help":
                say(_HELP)
            elif command == "moves":
                say(" ".join(board.san(m) for m in board.legal_moves))
            elif command == "quit":
                say("Game abandoned.")
                return "*"
            elif command == "resign":
                result = "0-1" if human == chess.WHITE else "1-0"
                say(f"You resign: {result}")
                return result
            elif command == "undo":
                if len(board.move_stack) < 2:
                    say("Nothing to take back.")
                    continue
                board.pop()
                board.pop()
                say("Took back the last move pair.")
                break
            else:
                try:
                    move = parse_move(board, text)
                except ValueError as error:
                    say(f"{error}. Try again ('moves' lists the legal moves).")
                    continue
                say(f"You play {board.san(move)}")
                board.push(move)
                break
