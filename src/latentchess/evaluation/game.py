"""One game between two engines: the rules that end it and the PGN that records it.

A game ends by the rules (checkmate, stalemate, insufficient material, threefold repetition and the
50-move rule, claimed at once), by a rules infraction (an illegal move: the offender loses), when an
engine crashes or hangs (it loses), on time in clock games (wall time per move, with a tolerance; a
flag against a side that cannot mate is a draw), by optional adjudication, or as a draw at
``max_plies``.

PGN headers: the Seven Tag Roster; ``TimeControl`` (``BASE+INC``, or ``-`` without a clock);
``ECO``/``Opening``, ``FEN``/``SetUp`` for non-standard starts; ``Termination`` with the PGN
standard's words (normal, adjudication, time forfeit, rules infraction, abandoned); and custom tags
``WhiteEngine``/``BlackEngine`` (spec), ``WhiteOptions``/``BlackOptions`` (engine options set),
``WhiteLimit``/``BlackLimit`` (limit string), ``TerminationDetails`` (what happened), ``PlyCount``;
for engines that run a latentchess model, ``WhiteModelHash``/``BlackModelHash`` (the model's short
content hash) and ``WhitePrecision``/``BlackPrecision`` (the precision ``auto`` resolved to).
Moves carry ``[%emt]`` (seconds used) and, on a clock, ``[%clk]`` comments; book moves say "book".
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import chess
import chess.engine
import chess.pgn

from latentchess.engines.base import Engine
from latentchess.evaluation.elo import GameOutcome
from latentchess.evaluation.limits import SideLimit
from latentchess.evaluation.openings import Opening

__all__ = [
    "Player",
    "Adjudication",
    "GameSettings",
    "GameRecord",
    "play_game",
    "describe_engine",
    "model_provenance",
]


@dataclass(frozen=True, kw_only=True)
class Player:
    """One side of a match.

    Attributes:
        name: display name (PGN White/Black; must differ between the two players).
        make: creates a fresh engine (called once per worker, and again after a crash).
        limit: how long it may think.
        spec: engine spec for the PGN (default: ``name``).
    """

    name: str
    make: Callable[[], Engine]
    limit: SideLimit
    spec: str = ""

    @classmethod
    def from_spec(cls, spec: str, limit: SideLimit) -> Player:
        """A player built by :func:`latentchess.engines.registry.create_engine`.

        ``make`` carries the spec as text, so the player pickles to a cluster's workers.
        """
        from latentchess.engines.registry import create_engine, parse_engine_spec

        name = parse_engine_spec(spec).name  # a bad spec fails here, not on a worker
        return cls(name=name, make=functools.partial(create_engine, spec), limit=limit, spec=spec)


@dataclass(frozen=True, kw_only=True)
class Adjudication:
    """Ending clear games early with an adjudicating engine's evaluation (White's view).

    Attributes:
        make: creates the adjudicating engine (usually full-strength Stockfish).
        limit: its search per position.
        resign_cp: a side loses once ``|eval| >= resign_cp`` against it ...
        resign_plies: ... for this many consecutive plies (None disables resign adjudication).
        draw_move: draw adjudication starts at this full-move number ...
        draw_cp: ... when ``|eval| <= draw_cp`` ...
        draw_plies: ... for this many consecutive plies (None disables draw adjudication).
        name: shown in the termination details.
    """

    make: Callable[[], Engine]
    limit: chess.engine.Limit = field(default_factory=lambda: chess.engine.Limit(depth=8))
    resign_cp: int = 1000
    resign_plies: int | None = 6
    draw_move: int = 40
    draw_cp: int = 10
    draw_plies: int | None = 10
    name: str = "stockfish"


@dataclass(frozen=True, kw_only=True)
class GameSettings:
    """What every game of a match shares (a match's
    :class:`~latentchess.evaluation.match.MatchConfig` adds how many and how they run).

    Attributes:
        event: PGN ``Event``; resuming matches it.
        site: PGN ``Site``.
        time_margin: seconds a clock may go below zero before the side loses on time.
        max_plies: a game still going at this many plies is drawn (adjudication).
        adjudication: optional early ends.
    """

    event: str = "latentchess match"
    site: str = "?"
    time_margin: float = 0.1
    max_plies: int = 600
    adjudication: Adjudication | None = None


@dataclass(frozen=True, kw_only=True)
class GameRecord:
    """One finished game.

    Attributes:
        round: round number (1-based).
        white, black: player names.
        result: ``1-0``, ``0-1`` or ``1/2-1/2``.
        termination: PGN ``Termination`` word.
        details: what ended the game, in words.
        plies: moves played, book moves included.
        opening: opening name.
        pgn: the game as PGN text.
    """

    round: int
    white: str
    black: str
    result: str
    termination: str
    details: str
    plies: int
    opening: str
    pgn: str = ""

    def outcome(self) -> GameOutcome:
        """For Elo fits."""
        return GameOutcome(self.white, self.black, {"1-0": 1.0, "0-1": 0.0}.get(self.result, 0.5))


@dataclass
class _GameEnd:
    result: str
    termination: str
    details: str
    crashed: list[str] = field(default_factory=list)  # "white", "black", "adjudicator"


def play_game(
    *,
    round_number: int,
    opening: Opening,
    white: tuple[Player, Engine],
    black: tuple[Player, Engine],
    config: GameSettings,
    adjudicator: Engine | None = None,
) -> tuple[GameRecord, list[str]]:
    """Play one game.

    Returns:
        The record, and which engines must be restarted (``"white"``, ``"black"``,
        ``"adjudicator"``) because they crashed, hung or misbehaved.
    """
    players = {chess.WHITE: white[0], chess.BLACK: black[0]}
    engines = {chess.WHITE: white[1], chess.BLACK: black[1]}
    board = chess.Board(opening.fen, chess960=opening.chess960)
    game = chess.pgn.Game()
    node: chess.pgn.GameNode = game
    if opening.fen != chess.STARTING_FEN or opening.chess960:
        game.setup(board)  # FEN and SetUp tags; Variant "Chess960" for a Chess960 board
    for uci in opening.moves:
        move = chess.Move.from_uci(uci)
        node = node.add_variation(move, comment="book")
        board.push(move)
    clocks: dict[chess.Color, float | None] = {c: players[c].limit.base for c in chess.COLORS}
    increments = {c: players[c].limit.increment for c in chess.COLORS}
    tracker = _AdjudicationTracker(config.adjudication) if adjudicator else None
    adjudicator_failed = False
    end: _GameEnd | None = None
    for color in chess.COLORS:
        try:
            engines[color].new_game()
        except Exception as error:  # a crash before the first move still loses the game
            end = _forfeit(color, "abandoned", f"engine failed to start a game: {error!r}")
            end.crashed.append(chess.COLOR_NAMES[color])
            break
    while end is None:
        end = _rules_end(board)
        if end is not None:
            break
        # Plies of this game, not board.ply(): that counts from move 1 of a FEN's move number.
        if len(board.move_stack) >= config.max_plies:
            end = _GameEnd("1/2-1/2", "adjudication", f"draw at the {config.max_plies}-ply limit")
            break
        turn = board.turn
        side = chess.COLOR_NAMES[turn].capitalize()
        limit = players[turn].limit.engine_limit(clocks, increments)
        start = time.perf_counter()
        try:
            move = engines[turn].play(board.copy(), limit)
        except chess.IllegalMoveError as error:
            end = _forfeit(turn, "rules infraction", f"{side} played an illegal move: {error}")
            end.crashed.append(chess.COLOR_NAMES[turn])  # its state is unknown after this
            break
        except Exception as error:  # any engine failure loses the game
            elapsed = time.perf_counter() - start
            clock = clocks[turn]
            if clock is not None and elapsed > clock + config.time_margin:
                end = _time_forfeit(board, turn, elapsed, clock)  # hung, then killed
            else:
                end = _forfeit(turn, "abandoned", f"{side}'s engine failed: {error!r}")
            end.crashed.append(chess.COLOR_NAMES[turn])
            break
        elapsed = time.perf_counter() - start
        if clocks[turn] is not None:
            remaining = clocks[turn] - elapsed  # type: ignore[operator]
            if remaining < -config.time_margin:
                end = _time_forfeit(board, turn, elapsed, clocks[turn])  # type: ignore[arg-type]
                break
            clocks[turn] = max(remaining, 0.0) + increments[turn]
        if not isinstance(move, chess.Move) or move not in board.legal_moves:
            end = _forfeit(
                turn, "rules infraction", f"{side} played an illegal move {move!s} in {board.fen()}"
            )
            break
        node = node.add_variation(move)
        node.set_emt(round(elapsed, 3))
        if clocks[turn] is not None:
            node.set_clock(clocks[turn])
        board.push(move)
        if tracker is not None and adjudicator is not None and not board.is_game_over():
            try:
                end = tracker.update(board, adjudicator)
            except Exception:  # a broken adjudicator only stops adjudication
                tracker = None
                adjudicator_failed = True
    assert end is not None
    if adjudicator_failed:
        end.crashed.append("adjudicator")
    _write_headers(game, round_number, opening, players, engines, config, end, board)
    record = GameRecord(
        round=round_number,
        white=players[chess.WHITE].name,
        black=players[chess.BLACK].name,
        result=end.result,
        termination=end.termination,
        details=end.details,
        plies=len(board.move_stack),
        opening=opening.name,
        pgn=str(game),
    )
    return record, end.crashed


def _forfeit(loser: chess.Color, termination: str, details: str) -> _GameEnd:
    return _GameEnd("0-1" if loser == chess.WHITE else "1-0", termination, details)


def _time_forfeit(board: chess.Board, loser: chess.Color, used: float, had: float) -> _GameEnd:
    side = chess.COLOR_NAMES[loser].capitalize()
    details = f"{side} lost on time (used {used:.3f}s with {had:.3f}s left)"
    if board.has_insufficient_material(not loser):
        return _GameEnd("1/2-1/2", "time forfeit", details + "; the opponent cannot mate: draw")
    return _forfeit(loser, "time forfeit", details)


def _rules_end(board: chess.Board) -> _GameEnd | None:
    outcome = board.outcome(claim_draw=True)
    if outcome is None:
        return None
    details = outcome.termination.name.lower().replace("_", " ")
    if outcome.winner is not None:
        details = f"{chess.COLOR_NAMES[outcome.winner].capitalize()} mates"
    return _GameEnd(outcome.result(), "normal", details)


class _AdjudicationTracker:
    def __init__(self, rules: Adjudication | None) -> None:
        assert rules is not None
        self.rules = rules
        self.resign_run = 0
        self.resign_sign = 0
        self.draw_run = 0

    def update(self, board: chess.Board, engine: Engine) -> _GameEnd | None:
        rules = self.rules
        analysis = engine.analyse(board, rules.limit)
        if analysis.mate is not None:
            cp = 100_000 if analysis.mate > 0 else -100_000
        elif analysis.score_cp is not None:
            cp = analysis.score_cp
        else:
            return None
        white_cp = cp if board.turn == chess.WHITE else -cp
        sign = (white_cp > 0) - (white_cp < 0)
        if abs(white_cp) >= rules.resign_cp:
            self.resign_run = self.resign_run + 1 if sign == self.resign_sign else 1
            self.resign_sign = sign
        else:
            self.resign_run = 0
        movenumber_ok = board.fullmove_number >= rules.draw_move
        self.draw_run = self.draw_run + 1 if movenumber_ok and abs(white_cp) <= rules.draw_cp else 0
        if rules.resign_plies is not None and self.resign_run >= rules.resign_plies:
            loser = chess.BLACK if sign > 0 else chess.WHITE
            details = (
                f"{rules.name} scored {white_cp / 100:+.2f} for White for {self.resign_run} plies "
                f"(|eval| >= {rules.resign_cp / 100:.2f}): "
                f"{chess.COLOR_NAMES[loser].capitalize()} resigns"
            )
            return _forfeit(loser, "adjudication", details)
        if rules.draw_plies is not None and self.draw_run >= rules.draw_plies:
            details = (
                f"{rules.name} scored within +-{rules.draw_cp / 100:.2f} for {self.draw_run} plies "
                f"from move {rules.draw_move}: draw"
            )
            return _GameEnd("1/2-1/2", "adjudication", details)
        return None


def model_provenance(engine: Engine) -> dict[str, str] | None:
    """``{"model", "model_sha256", "precision"}`` of an engine running a latentchess model."""
    provenance = engine.provenance()
    return provenance if "model_sha256" in provenance else None


def describe_engine(engine: Engine) -> str:
    """The options an engine runs with, for PGN headers (``key=value`` pairs)."""
    options = getattr(engine, "configured_options", None)
    if isinstance(options, dict):
        return ",".join(f"{k}={v}" for k, v in options.items())
    config = getattr(engine, "config", None)
    if config is not None and dataclasses.is_dataclass(config) and not isinstance(config, type):
        return ",".join(f"{k}={v}" for k, v in dataclasses.asdict(config).items())
    return ""


def _write_headers(
    game: chess.pgn.Game,
    round_number: int,
    opening: Opening,
    players: dict[chess.Color, Player],
    engines: dict[chess.Color, Engine],
    config: GameSettings,
    end: _GameEnd,
    board: chess.Board,
) -> None:
    headers = game.headers
    headers["Event"] = config.event
    headers["Site"] = config.site
    headers["Date"] = datetime.date.today().strftime("%Y.%m.%d")
    headers["Round"] = str(round_number)
    headers["White"] = players[chess.WHITE].name
    headers["Black"] = players[chess.BLACK].name
    headers["Result"] = end.result
    controls = {c: players[c].limit.pgn_time_control() for c in chess.COLORS}
    if controls[chess.WHITE] == controls[chess.BLACK]:
        headers["TimeControl"] = controls[chess.WHITE]
    else:
        headers["WhiteTimeControl"] = controls[chess.WHITE]
        headers["BlackTimeControl"] = controls[chess.BLACK]
    if opening.eco:
        headers["ECO"] = opening.eco
    headers["Opening"] = opening.name
    headers["Termination"] = end.termination
    headers["TerminationDetails"] = end.details
    headers["PlyCount"] = str(len(board.move_stack))
    for color, prefix in ((chess.WHITE, "White"), (chess.BLACK, "Black")):
        headers[f"{prefix}Engine"] = players[color].spec or players[color].name
        headers[f"{prefix}Options"] = describe_engine(engines[color])
        headers[f"{prefix}Limit"] = str(players[color].limit)
        provenance = model_provenance(engines[color])
        if provenance is not None:
            headers[f"{prefix}ModelHash"] = provenance["model_sha256"]
            headers[f"{prefix}Precision"] = provenance["precision"]
