"""A searchless Chessformer engine: the policy's choice, or the child the value head likes best.

* ``mode=policy``: the most probable legal move (``temperature=0``, the default), or a sample
  from the policy at ``temperature`` restricted to the smallest set of moves whose probability
  reaches ``top_p``.
* ``mode=value``: every child position is evaluated in one batch (one ply, as the paper's
  Leela-CF-value) and the move whose child is worst for the opponent is played; a move that
  mates is played at once, and a child that is stalemate or a claimable draw scores 0.5.

Human-like play at a chosen rating (``UCI_LimitStrength``, ``UCI_Elo``, ``UCI_Opponent`` and the
verification options of :class:`~latentchess.engines.human.HumanPlay`, spec keys
``limit_strength``, ``uci_elo``, ``opponent``, ``verify``...): moves sampled from the human model
at ``UCI_Elo`` against the opponent's rating, at this engine's ``Temperature`` and ``TopP``
(``Temperature`` 0, the default, plays the rating's most probable move; 1 samples the model's
frequencies, as ``ab`` does by default); ``CfMode``, ``SelfElo`` and ``OppoElo`` then do not apply.

Skill: ``elo=`` sets both players' ratings, ``selfelo=`` / ``oppoelo=`` each (Maia-3's UCI options
``Elo``, ``SelfElo``, ``OppoElo``; under ``latentchess uci --engine chessformer`` these and
``Temperature``, ``TopP`` and ``CfMode`` are UCI options, a bad value answered by an
``info string``). ``analyse`` reports the value head's expected score as centipawns
(ChessBench's logistic) and the WDL as permille (UCI ``score cp ... wdl W D L``).

Time control (``time_control=`` / UCI ``TimeControl``): the game's band for a model with the
time-control input: a band name (``bullet``, ``blitz``, ``rapid``, ``classical``, ``unknown``) or
``BASE+INC`` seconds (``180+2``), classed by Lichess's rule (base + 40 x increment); ``auto``, the
default, infers it from the clock of the game's first search given one (``go wtime ... winc``, or
``Limit(white_clock=..., white_inc=...)``), until :meth:`~ChessformerEngine.new_game`
(``ucinewgame``). The human play of ``UCI_LimitStrength`` keeps the band it was calibrated at.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import chess
import chess.engine
import numpy as np

from latentchess.data.moves import TIME_CONTROL_BANDS, clock_band, time_control_band
from latentchess.engines.base import (
    Analysis,
    Engine,
    EngineOption,
    MoveScore,
    combo,
    spin,
    string,
)
from latentchess.engines.human import HumanPlay
from latentchess.errors import EngineError
from latentchess.winprob import centipawns, white_perspective

__all__ = ["ChessformerEngine"]

MODES = ("policy", "value")
_ELO_MAX = 5000
_CP_LIMIT = 10_000


def _cp(score: float) -> int:
    score = min(max(score, 1e-6), 1 - 1e-6)
    return round(max(-_CP_LIMIT, min(_CP_LIMIT, centipawns(score))))


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


def parse_time_control(text: str) -> int | None:
    """The band index of a ``time_control`` value: a band name, ``BASE+INC`` seconds
    (``180+2``: blitz), or ``auto`` (None: inferred from the clock).

    Raises:
        EngineError: anything else.
    """
    value = text.strip().lower()
    if value == "auto":
        return None
    if value in TIME_CONTROL_BANDS:
        return TIME_CONTROL_BANDS.index(value)
    band = time_control_band(value)
    if band == 0:
        raise EngineError(
            f"time control must be auto, one of {list(TIME_CONTROL_BANDS)} or BASE+INC seconds "
            f"(180+2), got {text!r}"
        )
    return band


def limit_band(board: chess.Board, limit: chess.engine.Limit | None) -> int | None:
    """The band of the clock in ``limit`` (the side to move's, else the other's; its increment,
    0 when none), taken as the game's initial clock; None when ``limit`` has no clock."""
    if limit is None:
        return None
    clocks = [(limit.white_clock, limit.white_inc), (limit.black_clock, limit.black_inc)]
    if not board.turn:
        clocks.reverse()
    for clock, increment in clocks:
        if clock is not None:
            return clock_band(clock, increment or 0.0)
    return None


class ChessformerEngine(Engine):
    """The :class:`~latentchess.engines.base.Engine` of a Chessformer model.

    Args:
        model: a model directory, ``human`` (the shipped human-move model, default) or
            ``engine`` (the shipped model of engine moves), or a loaded model.
        mode: ``"policy"`` or ``"value"``.
        self_elo: rating of the side to move (the engine); default: the model's
            ``default_elo`` (a model of engine moves), else 1900.
        oppo_elo: rating of the opponent (same default).
        temperature: policy sampling temperature (0: argmax).
        top_p: nucleus of the sampled policy.
        seed: sampling seed.
        name: display name.
        time_control: the game's band for a model with the time-control input
            (:func:`parse_time_control`; ``auto``: from the first clock of each game).
    """

    def __init__(
        self,
        model: Any = None,
        *,
        mode: str = "policy",
        self_elo: float | None = None,
        oppo_elo: float | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int = 0,
        name: str = "chessformer",
        time_control: str = "auto",
    ) -> None:
        from latentchess.models.chessformer_io import ChessformerModel

        if mode not in MODES:
            raise EngineError(f"unknown chessformer mode {mode!r}; choose from {list(MODES)}")
        if temperature < 0 or not 0 < top_p <= 1:
            raise EngineError(
                f"need temperature >= 0 and 0 < top_p <= 1, got {temperature!r}, {top_p!r}"
            )
        if model is None or isinstance(model, str | Path):
            model = ChessformerModel.load(model)
        # Unset ratings: the one a model of engine moves was trained at, else a club player's.
        default = model.default_elo if model.default_elo is not None else 1900.0
        self_elo = default if self_elo is None else self_elo
        oppo_elo = default if oppo_elo is None else oppo_elo
        for label, elo in (("self_elo", self_elo), ("oppo_elo", oppo_elo)):
            if not 0 <= elo <= _ELO_MAX:
                raise EngineError(f"chessformer {label} must lie in [0, {_ELO_MAX}], got {elo!r}")
        self.model = model
        self.mode, self.temperature, self.top_p = mode, float(temperature), float(top_p)
        self.self_elo, self.oppo_elo = float(self_elo), float(oppo_elo)
        self.rng = np.random.default_rng(seed)
        self.name = name
        self.time_control = time_control.strip().lower()
        self.fixed_band = parse_time_control(time_control)
        self.game_band: int | None = None
        """The band inferred from this game's first clock (``auto``); None before it."""
        # UCI_LimitStrength: this model when it is a human one, else the shipped human model.
        self.human = HumanPlay(
            model if model.default_elo is None else None, seed=seed, threads=None
        )

    @classmethod
    def from_options(cls, model: str | None = None, **options: Any) -> ChessformerEngine:
        """Build from spec options: ``mode``, ``elo``, ``selfelo``, ``oppoelo``,
        ``temperature``, ``top_p`` (or ``topp``), ``seed``, ``time_control``; and the human-play
        keys ``limit_strength``, ``uci_elo``, ``opponent``, ``verify``, ``verify_cp``,
        ``verify_prob``, ``verify_depth``."""
        human_keys = {
            "limit_strength",
            "uci_elo",
            "opponent",
            "verify",
            "verify_cp",
            "verify_prob",
            "verify_depth",
        }
        known = {
            "mode",
            "elo",
            "selfelo",
            "oppoelo",
            "temperature",
            "top_p",
            "topp",
            "seed",
            "time_control",
        }
        unknown = set(options) - known - human_keys
        if unknown:
            raise EngineError(
                f"unknown chessformer options {sorted(unknown)!r}; known: {sorted(known)!r}"
            )
        elo = options.get("elo")
        try:
            engine = cls(
                model,
                mode=str(options.get("mode", "policy")),
                self_elo=_float_or_none(options.get("selfelo", elo)),
                oppo_elo=_float_or_none(options.get("oppoelo", elo)),
                temperature=float(options.get("temperature", 0.0)),
                top_p=float(options.get("top_p", options.get("topp", 1.0))),
                seed=int(options.get("seed", 0)),
                time_control=str(options.get("time_control", "auto")),
            )
        except ValueError as error:
            raise EngineError(f"bad chessformer option: {error}") from error
        engine.human.configure(engine, {k: v for k, v in options.items() if k in human_keys})
        return engine

    def _choose_policy(self, moves: tuple[chess.Move, ...], probs: np.ndarray) -> chess.Move:
        if self.temperature == 0:
            return moves[0]
        logits = np.log(np.maximum(probs, 1e-12)) / self.temperature
        p = np.exp(logits - logits.max())
        p /= p.sum()  # sorted best first, as the prediction is
        keep = int(np.searchsorted(np.cumsum(p), self.top_p) + 1)
        p = p[:keep] / p[:keep].sum()
        return moves[int(self.rng.choice(keep, p=p))]

    def _value_children(self, board: chess.Board) -> list[tuple[chess.Move, float]]:
        """(move, the mover's expected score after it), best first."""
        scored: list[tuple[chess.Move, float]] = []
        children, pending = [], []
        for move in board.legal_moves:
            child = board.copy(stack=True)
            child.push(move)
            if child.is_checkmate():
                scored.append((move, 1.0))
            elif child.is_stalemate() or child.is_insufficient_material() or child.can_claim_draw():
                scored.append((move, 0.5))
            else:
                children.append(child)
                pending.append(move)
        if children:  # one batch: the opponent is to move in each child
            predictions = self.model.predict(
                children, self.oppo_elo, self.self_elo, speed=self.band()
            )
            scored += [(m, 1.0 - p.score) for m, p in zip(pending, predictions, strict=True)]
        return sorted(scored, key=lambda item: -item[1])

    def band(self) -> int:
        """The time-control band the model is given: the fixed one, else this game's (0,
        unknown, before a clock is seen)."""
        if self.fixed_band is not None:
            return self.fixed_band
        return self.game_band or 0

    def new_game(self) -> None:
        """Forget the band of the previous game's clock."""
        self.game_band = None

    def analyse(self, board: chess.Board, limit: chess.engine.Limit | None = None) -> Analysis:
        if self.game_band is None:  # the first clock of the game is its time control
            self.game_band = limit_band(board, limit)
        if self.human.enabled:
            return self.human.analyse(board, temperature=self.temperature, top_p=self.top_p)
        started = time.monotonic()
        if not any(board.legal_moves):
            return Analysis(best_move=None, time_s=time.monotonic() - started)
        (prediction,) = self.model.predict([board], self.self_elo, self.oppo_elo, speed=self.band())
        score = prediction.score
        nodes = 1
        if self.mode == "value":
            children = self._value_children(board)
            nodes += len(children)
            best = children[0][0]
            moves = [
                MoveScore(
                    move=m, score=s, rank=i + 1, win_prob_white=white_perspective(s, board.turn)
                )
                for i, (m, s) in enumerate(children)
            ]
        else:
            best = self._choose_policy(prediction.moves, prediction.probabilities)
            moves = [
                MoveScore(move=m, score=float(p), rank=i + 1)
                for i, (m, p) in enumerate(
                    zip(prediction.moves, prediction.probabilities, strict=True)
                )
            ]
        wdl = tuple(round(1000 * float(x)) for x in prediction.wdl)
        return Analysis(
            best_move=best,
            pv=[best],
            score_cp=_cp(score),
            win_prob_white=white_perspective(score, board.turn),
            depth=1 if self.mode == "value" else 0,
            nodes=nodes,
            time_s=time.monotonic() - started,
            moves=moves,
            wdl=wdl,  # type: ignore[arg-type]
        )

    def play(self, board: chess.Board, limit: chess.engine.Limit | None = None) -> chess.Move:
        move = self.analyse(board, limit).best_move
        if move is None:
            raise EngineError(f"no legal move in {board.fen()!r}")
        return move

    # -- UCI options (Maia-3's) ---------------------------------------------------------------

    def options(self) -> list[EngineOption]:
        """Maia-3's names: ``Elo`` (sets both), ``SelfElo``, ``OppoElo``, ``Temperature``,
        ``TopP``; ``CfMode`` (policy or value) and ``TimeControl`` (``time_control``)."""

        def setter(name: str) -> Any:
            return lambda value: self._apply_option(name, str(value))

        return [
            spin("Elo", round(self.self_elo), 0, _ELO_MAX, setter("Elo"), "elo"),
            spin("SelfElo", round(self.self_elo), 0, _ELO_MAX, setter("SelfElo"), "selfelo"),
            spin("OppoElo", round(self.oppo_elo), 0, _ELO_MAX, setter("OppoElo"), "oppoelo"),
            string("Temperature", f"{self.temperature:g}", setter("Temperature"), "temperature"),
            string("TopP", f"{self.top_p:g}", setter("TopP"), "top_p"),
            combo("CfMode", self.mode, MODES, setter("CfMode"), "mode"),
            string("TimeControl", self.time_control, setter("TimeControl"), "time_control"),
            *self.human.options(elo_key="uci_elo", sampling=False),
        ]

    def _apply_option(self, name: str, value: str) -> bool:
        """Apply one of :meth:`options` by name; False for other names.

        Raises:
            EngineError: a value that is not a number or lies outside its range (nothing is
                changed then).
        """
        key = name.strip().lower()
        text = value.strip()
        if key in ("elo", "selfelo", "oppoelo"):
            try:
                elo = int(text)
            except ValueError:
                raise EngineError(f"option {name} needs an integer rating, got {text!r}") from None
            if not 0 <= elo <= _ELO_MAX:
                raise EngineError(f"option {name} must lie in [0, {_ELO_MAX}], got {elo}")
            if key in ("elo", "selfelo"):
                self.self_elo = float(elo)
            if key in ("elo", "oppoelo"):
                self.oppo_elo = float(elo)
            return True
        if key in ("temperature", "topp"):
            try:
                number = float(text)
            except ValueError:
                raise EngineError(f"option {name} needs a number, got {text!r}") from None
            if key == "temperature":
                if not 0 <= number <= 100:  # also refuses nan and inf
                    raise EngineError(f"option Temperature must lie in [0, 100], got {text!r}")
                self.temperature = number
            else:
                if not 0 < number <= 1:
                    raise EngineError(f"option TopP must lie in (0, 1], got {text!r}")
                self.top_p = number
            return True
        if key == "cfmode":
            if text.lower() not in MODES:
                raise EngineError(f"option CfMode must be one of {list(MODES)}, got {text!r}")
            self.mode = text.lower()
            return True
        if key == "timecontrol":
            try:
                self.fixed_band = parse_time_control(text)
            except EngineError as error:
                raise EngineError(f"option {name}: {error}") from None
            self.time_control = text.lower()
            return True
        return False

    def ready(self) -> None:
        """Wait for the human model when ``UCI_LimitStrength`` is on and it is another model."""
        if self.human.enabled:
            self.human.ready()

    def provenance(self) -> dict[str, str]:
        """The human model when ``UCI_LimitStrength`` is on."""
        return self.human.provenance() if self.human.enabled else {}

    def info_string(self) -> str:
        """The settings in force, for a UCI ``info string`` after each search."""
        if self.human.enabled:
            return self.human.info_string(temperature=self.temperature, top_p=self.top_p)
        band = (
            f" timecontrol {TIME_CONTROL_BANDS[self.band()]}" if self.model.cfg.time_control else ""
        )
        return (
            f"chessformer {self.mode} selfelo {self.self_elo:g} oppoelo {self.oppo_elo:g} "
            f"temperature {self.temperature:g} topp {self.top_p:g}{band}"
        )

    def close(self) -> None:
        pass
