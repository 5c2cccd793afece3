"""Human-like play at a chosen rating: moves drawn from the human Chessformer.

:class:`HumanPlay` is the piece both ``ab`` and ``chessformer`` use when a GUI switches
``UCI_LimitStrength`` on. Each move is *sampled* from the human model's policy conditioned on two
ratings, the engine's own (``UCI_Elo``) and its opponent's (the rating in ``UCI_Opponent`` when the
GUI sends one, e.g. ``GM 2800 human Carlsen``, else ``UCI_Elo`` again), at a temperature and
within a top-p nucleus. There is no opening book: the model plays from move 1.

Optional verification (``HumanVerify``) removes a sampled move only when *both* hold:

* its probability under the model at that rating (temperature 1, before top-p) is below
  ``HumanVerifyProb`` -- a move players of that rating often make is never removed, however
  bad -- and
* a shallow alpha-beta search (``HumanVerifyDepth`` plies, the native core) scores it more than
  ``HumanVerifyCp`` centipawns below the search's best move.

A removed move is taken out of the distribution and another is drawn (rejection sampling, so the
move comes from the renormalised distribution without the removed moves); after
:data:`_MAX_REJECTIONS` removals the most probable remaining move is played. Its default is off:
``benchmarks/results/human_play/`` measured how often people of each band make the moves it
would remove (see ``docs/engines/chessformer.md``).

Strength (``HumanSearchWeight``, beta): the model's moves re-weighted by a shallow search. With
beta > 0 the draw is over the model's :data:`SEARCH_CANDIDATES` most probable moves (after
temperature and top-p), each weighted by ``p * exp(-beta * loss / 100)``, where ``loss`` is how
many centipawns a ``HumanSearchDepth``-ply search of the candidates (MultiPV, the native core)
puts the move below the best candidate. beta 0 is the model alone; beta 1 makes a move that drops
a pawn e times rarer; large beta plays the best of the human candidates. Every move played is one
the model gives to players of that rating; what changes is how often the bad ones are drawn.

Calibration (``HumanCalibrated``, on by default): ``UCI_Elo`` is then the strength the engine is
meant to measure on the project's ladder (Stockfish 15.1's ``UCI_Elo`` scale), not the Lichess
rating the model imitates. A table shipped with the model (``calibration.json``, made by
``benchmarks/human_calibration_fit.py`` from measured games) maps it to the rating the model is
conditioned on, beta and the search depth, by linear interpolation between its rows (the end rows
outside them). Off, or for a model without a table, ``UCI_Elo`` conditions the model directly and
``HumanSearchWeight``/``HumanSearchDepth`` apply as set.

Nothing heavy at import: torch and the model load when the option is first switched on (in the
background; :meth:`HumanPlay.ready` waits), so ``ab`` starts as fast as before.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import chess
import chess.engine

from latentchess.engines.base import (
    Analysis,
    Engine,
    EngineOption,
    GoControl,
    MoveScore,
    check,
    spin,
    string,
)
from latentchess.errors import EngineError

if TYPE_CHECKING:
    import numpy as np

    from latentchess.core.alphabeta import SearchOutcome
    from latentchess.models.chessformer_io import ChessformerModel, Prediction

__all__ = [
    "HUMAN_KEYS",
    "ELO_MIN",
    "ELO_MAX",
    "SEARCH_CANDIDATES",
    "HumanConfig",
    "HumanCalibration",
    "HumanStrength",
    "HumanChoice",
    "HumanPlay",
    "MoveVerifier",
    "opponent_rating",
]

ELO_MIN, ELO_MAX = 800, 2400
"""``UCI_Elo``'s range: the Lichess ratings the human model was trained on (0.1% of its games'
players were under 800; 0.3% of held-out positions are 2400+, and its move matching falls from
2000 on, where the data thin out). The numbers are Lichess (Glicko-2) ratings, not FIDE Elo."""

HUMAN_KEYS = frozenset(
    {
        "limit_strength",
        "elo",
        "uci_elo",
        "opponent",
        "temperature",
        "top_p",
        "verify",
        "verify_cp",
        "verify_prob",
        "verify_depth",
        "search_weight",
        "search_depth",
        "calibrated",
        "seed",
    }
)
"""Spec keys of the human-play options (``ab:limit_strength=true,elo=1500``) and ``seed``;
``chessformer`` names ``UCI_Elo`` ``uci_elo`` and keeps its own ``temperature``/``top_p``."""

_MAX_REJECTIONS = 8
SEARCH_CANDIDATES = 8
"""How many of the model's most probable moves the strength search weighs."""
_MAX_LOSS_CP = 1_000  # a loss beyond 10 pawns counts as 10 pawns in the strength weighting
_CP_LIMIT = 10_000
_MATE_CP = 100_000


@dataclass(frozen=True, kw_only=True)
class HumanConfig:
    """Settings of :class:`HumanPlay` (each one a UCI option, see :meth:`HumanPlay.options`).

    Attributes:
        enabled: ``UCI_LimitStrength``: play human-like moves instead of searching.
        elo: ``UCI_Elo``: the engine's own rating, in ``[ELO_MIN, ELO_MAX]``.
        opponent: ``UCI_Opponent`` as the GUI sent it (``[title] elo|none computer|human name``).
        temperature: sampling temperature (1: the model's own frequencies; 0: its top move).
        top_p: sample only from the most probable moves whose probabilities reach this.
        verify: ``HumanVerify``: remove moves a shallow search refutes and players of that
            rating rarely make (the rule in the module docstring).
        verify_cp: ``HumanVerifyCp``: the loss, in centipawns, that refutes a move.
        verify_prob: ``HumanVerifyProb``: moves at least this probable are never removed.
        verify_depth: ``HumanVerifyDepth``: the verifying search's depth in plies.
        search_weight: ``HumanSearchWeight``: beta, how strongly a shallow search's judgement
            re-weights the model's moves (0: the model alone; see the module docstring).
        search_depth: ``HumanSearchDepth``: that search's depth in plies.
        calibrated: ``HumanCalibrated``: ``elo`` is the strength to play at on the project's
            ladder, mapped through the model's calibration table to the model's rating, beta and
            depth; off: ``elo`` conditions the model and the two search settings apply as set.
    """

    enabled: bool = False
    elo: int = 1500
    opponent: str = ""
    temperature: float = 1.0
    top_p: float = 1.0
    verify: bool = False
    verify_cp: int = 300
    verify_prob: float = 0.05
    verify_depth: int = 6
    search_weight: float = 0.0
    search_depth: int = 6
    calibrated: bool = True

    def __post_init__(self) -> None:
        if not ELO_MIN <= self.elo <= ELO_MAX:
            raise EngineError(f"UCI_Elo must lie in [{ELO_MIN}, {ELO_MAX}], got {self.elo!r}")
        if not 0 <= self.temperature <= 100:  # also refuses nan
            raise EngineError(f"Temperature must lie in [0, 100], got {self.temperature!r}")
        if not 0 < self.top_p <= 1:
            raise EngineError(f"TopP must lie in (0, 1], got {self.top_p!r}")
        if not 0 <= self.verify_cp <= _CP_LIMIT:
            raise EngineError(f"HumanVerifyCp must lie in [0, {_CP_LIMIT}], got {self.verify_cp!r}")
        if not 0 <= self.verify_prob <= 1:
            raise EngineError(f"HumanVerifyProb must lie in [0, 1], got {self.verify_prob!r}")
        if not 1 <= self.verify_depth <= 20:
            raise EngineError(f"HumanVerifyDepth must lie in [1, 20], got {self.verify_depth!r}")
        if not 0 <= self.search_weight <= 100:
            raise EngineError(f"HumanSearchWeight must lie in [0, 100], got {self.search_weight!r}")
        if not 1 <= self.search_depth <= 20:
            raise EngineError(f"HumanSearchDepth must lie in [1, 20], got {self.search_depth!r}")

    @property
    def opponent_elo(self) -> int:
        """The opponent's rating: ``UCI_Opponent``'s (clamped to the model's range), else
        ``elo``."""
        rating = opponent_rating(self.opponent)
        return self.elo if rating is None else min(max(rating, ELO_MIN), ELO_MAX)


@dataclass(frozen=True)
class HumanStrength:
    """What a ``UCI_Elo`` becomes: the rating the model is conditioned on, beta and depth."""

    model_elo: int
    search_weight: float
    search_depth: int


@dataclass(frozen=True)
class HumanCalibration:
    """A model's calibration table (``calibration.json`` in its directory).

    Attributes:
        rows: ``(uci_elo, strength)`` pairs, ``uci_elo`` ascending.
        about: what the table was fitted to (scale, games, command).
    """

    rows: tuple[tuple[int, HumanStrength], ...]
    about: str = ""

    @classmethod
    def load(cls, path: Path) -> HumanCalibration:
        """Read a table.

        Raises:
            EngineError: the file is not a valid table (naming the file and the problem).
        """
        import json

        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            rows = tuple(
                sorted(
                    (
                        int(row["uci_elo"]),
                        HumanStrength(
                            int(row["model_elo"]),
                            float(row["search_weight"]),
                            int(row["search_depth"]),
                        ),
                    )
                    for row in data["rows"]
                )
            )
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise EngineError(f"{path}: not a calibration table ({error!r})") from error
        if not rows:
            raise EngineError(f"{path}: a calibration table needs at least one row")
        for _, strength in rows:
            HumanConfig(
                elo=min(max(strength.model_elo, ELO_MIN), ELO_MAX),
                search_weight=strength.search_weight,
                search_depth=strength.search_depth,
            )  # validates the values
        return cls(rows, str(data.get("about", "")))

    def strength(self, uci_elo: int) -> HumanStrength:
        """The settings for ``uci_elo``: linear between rows; beyond the ends, the end row with
        the model's rating moved by the distance (clamped to the model's range)."""
        elos = [elo for elo, _ in self.rows]
        if uci_elo <= elos[0] or uci_elo >= elos[-1]:
            elo, end = self.rows[0] if uci_elo <= elos[0] else self.rows[-1]
            model_elo = min(max(end.model_elo + uci_elo - elo, ELO_MIN), ELO_MAX)
            return HumanStrength(model_elo, end.search_weight, end.search_depth)
        upper = next(i for i, elo in enumerate(elos) if elo >= uci_elo)
        (e0, s0), (e1, s1) = self.rows[upper - 1], self.rows[upper]
        t = (uci_elo - e0) / (e1 - e0)
        return HumanStrength(
            round(s0.model_elo + t * (s1.model_elo - s0.model_elo)),
            s0.search_weight + t * (s1.search_weight - s0.search_weight),
            round(s0.search_depth + t * (s1.search_depth - s0.search_depth)),
        )


def opponent_rating(text: str) -> int | None:
    """The rating in a UCI ``UCI_Opponent`` value (``GM 2800 human Carlsen`` -> 2800).

    The UCI standard's form is ``[GM|IM|FM|WGM|WIM|none] [elo|none] [computer|human] name``;
    the rating is the first number among the first two words. None when there is none.
    """
    for word in text.split()[:2]:
        if word.isdigit():
            return int(word)
    return None


def _number(name: str, low: float, high: float, open_low: bool = False) -> Any:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise EngineError(f"option {name} needs a number, got {text!r}") from None
        if not (low < value if open_low else low <= value) or not value <= high:
            bracket = "(" if open_low else "["
            raise EngineError(
                f"option {name} must lie in {bracket}{low:g}, {high:g}], got {text!r}"
            )
        return value

    return parse


@dataclass(frozen=True)
class HumanDistribution:
    """What :meth:`HumanPlay.choose` draws from in one position.

    Attributes:
        prediction: the model's output (moves most probable first, probabilities, WDL).
        probabilities: the draw's probabilities, aligned with ``prediction.moves`` (temperature,
            top-p, ``searchmoves`` and the strength search applied; verification is not).
        losses: the strength search's loss in centipawns of each candidate (empty at beta 0).
        nodes: nodes that search used.
    """

    prediction: Prediction
    probabilities: np.ndarray
    losses: tuple[tuple[chess.Move, int], ...] = ()
    nodes: int = 0


@dataclass(frozen=True)
class HumanChoice:
    """One move chosen by :meth:`HumanPlay.choose`.

    Attributes:
        move: the move to play.
        probability: its probability under the model at this rating (temperature 1).
        prediction: the model's output for the position (moves, probabilities, WDL).
        removed: moves verification took out, with the centipawns each lost.
        nodes: nodes the verifying and strength searches used.
        losses: the strength search's loss in centipawns of each candidate (empty when beta
            is 0).
    """

    move: chess.Move
    probability: float
    prediction: Prediction
    removed: tuple[tuple[chess.Move, int], ...] = ()
    nodes: int = 0
    losses: tuple[tuple[chess.Move, int], ...] = ()


class MoveVerifier(Protocol):
    """What checks the human model's moves: a search (``ab``'s engine, or the core's
    :class:`~latentchess.core.alphabeta.AlphaBeta` by default)."""

    def search(
        self,
        board: chess.Board,
        limit: chess.engine.Limit,
        *,
        multipv: int = ...,
        search_moves: Sequence[chess.Move] | None = ...,
    ) -> SearchOutcome: ...


class HumanPlay:
    """The human Chessformer playing at a rating; shared by ``ab`` and ``chessformer``.

    Args:
        model: the human model: a loaded :class:`ChessformerModel`, a directory, or None (the
            shipped ``human`` model, loaded when first needed).
        verifier: the search that verifies moves (``ab`` passes itself); None: the core's
            default alpha-beta (the shipped NNUE, 16 MB hash, as ``ab``) built when first needed.
        seed: sampling seed; None: fresh entropy (each engine plays differently).
        threads: torch threads set when this object loads the model (None: leave torch's).
        config: initial settings.
    """

    def __init__(
        self,
        model: ChessformerModel | str | Path | None = None,
        *,
        verifier: MoveVerifier | None = None,
        seed: int | None = None,
        threads: int | None = 1,
        config: HumanConfig | None = None,
    ) -> None:
        self.config = config or HumanConfig()
        self._model: ChessformerModel | None = None
        self._model_path: str | Path | None = None
        self._in_memory = not (model is None or isinstance(model, str | Path))
        if self._in_memory:
            self._model = model  # type: ignore[assignment]
        else:
            self._model_path = model  # type: ignore[assignment]
        self._verifier = verifier
        self._threads = threads
        self._seed = seed
        self._rng: np.random.Generator | None = None  # NumPy is imported when first needed
        self._loader: threading.Thread | None = None
        self._load_error: BaseException | None = None
        self._lock = threading.Lock()
        self._calibration: HumanCalibration | bool | None = False  # False: not looked for yet

    # -- settings ------------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        """Whether ``UCI_LimitStrength`` is on."""
        return self.config.enabled

    def ratings(self) -> tuple[int, int]:
        """(own rating, opponent's rating) the model is conditioned on."""
        return self.strength().model_elo, self.config.opponent_elo

    @property
    def calibration(self) -> HumanCalibration | None:
        """The model's calibration table (None: its directory has none, or it was built in
        memory)."""
        if self._calibration is False:
            self._calibration = None
            if self._in_memory:
                directory = getattr(self._model, "directory", None)
            else:
                from latentchess.models.chessformer_io import resolve_chessformer_path

                directory = resolve_chessformer_path(self._model_path)
            if directory is not None and (Path(directory) / "calibration.json").is_file():
                self._calibration = HumanCalibration.load(Path(directory) / "calibration.json")
        return self._calibration  # type: ignore[return-value]

    def strength(self) -> HumanStrength:
        """The model's rating, beta and depth in force (through the calibration table when
        ``calibrated`` is on and the model has one)."""
        c = self.config
        table = self.calibration if c.calibrated else None
        if table is None:
            return HumanStrength(c.elo, c.search_weight, c.search_depth)
        return table.strength(c.elo)

    def replace(self, **changes: Any) -> None:
        """Change settings (validated; nothing changes on an error). Switching ``enabled`` on
        starts loading the model in the background."""
        self.config = dataclasses.replace(self.config, **changes)
        if self.config.enabled:
            self.prepare()

    def seed(self, seed: int | None) -> None:
        """Restart the sampling stream from ``seed``."""
        self._seed, self._rng = seed, None

    @property
    def rng(self) -> np.random.Generator:
        """The sampling stream (seeded by ``seed``)."""
        if self._rng is None:
            import numpy as np

            self._rng = np.random.default_rng(self._seed)
        return self._rng

    def configure(self, engine: Engine, params: Mapping[str, object]) -> None:
        """Apply spec keys (:data:`HUMAN_KEYS`) through ``engine``'s declared options; ``seed``
        restarts the sampling stream.

        Raises:
            EngineError: an unknown key or a bad value.
        """
        for key, value in params.items():
            if key.lower() == "seed":
                try:
                    self.seed(int(str(value)))
                except ValueError:
                    raise EngineError(f"seed must be an integer, got {value!r}") from None
                continue
            text = str(value).lower() if isinstance(value, bool) else str(value)
            engine.set_option(key, text)

    def options(self, *, elo_key: str = "elo", sampling: bool = True) -> list[EngineOption]:
        """The UCI options: ``UCI_LimitStrength``, ``UCI_Elo``, ``UCI_Opponent``, (with
        ``sampling``) ``Temperature`` and ``TopP``, ``HumanCalibrated``, ``HumanSearchWeight``,
        ``HumanSearchDepth``, ``HumanVerify``, ``HumanVerifyCp``, ``HumanVerifyProb``,
        ``HumanVerifyDepth``.

        Args:
            elo_key: the spec key of ``UCI_Elo`` (``elo`` for ``ab``; ``chessformer`` uses
                ``uci_elo`` because its ``elo`` sets its ``Elo`` option).
            sampling: declare ``Temperature`` and ``TopP`` (``chessformer`` has its own).
        """
        c = self.config
        temperature = _number("Temperature", 0, 100)
        top_p = _number("TopP", 0, 1, open_low=True)
        declared = [
            check(
                "UCI_LimitStrength",
                c.enabled,
                lambda v: self.replace(enabled=bool(v)),
                "limit_strength",
            ),
            spin("UCI_Elo", c.elo, ELO_MIN, ELO_MAX, lambda v: self.replace(elo=v), elo_key),
            string("UCI_Opponent", c.opponent, lambda v: self.replace(opponent=v), "opponent"),
        ]
        if sampling:
            declared += [
                string(
                    "Temperature",
                    f"{c.temperature:g}",
                    lambda v: self.replace(temperature=temperature(v)),
                    "temperature",
                ),
                string("TopP", f"{c.top_p:g}", lambda v: self.replace(top_p=top_p(v)), "top_p"),
            ]
        verify_prob = _number("HumanVerifyProb", 0, 1)
        search_weight = _number("HumanSearchWeight", 0, 100)
        return [
            *declared,
            check(
                "HumanCalibrated",
                c.calibrated,
                lambda v: self.replace(calibrated=bool(v)),
                "calibrated",
            ),
            string(
                "HumanSearchWeight",
                f"{c.search_weight:g}",
                lambda v: self.replace(search_weight=search_weight(v)),
                "search_weight",
            ),
            spin(
                "HumanSearchDepth",
                c.search_depth,
                1,
                20,
                lambda v: self.replace(search_depth=v),
                "search_depth",
            ),
            check("HumanVerify", c.verify, lambda v: self.replace(verify=bool(v)), "verify"),
            spin(
                "HumanVerifyCp",
                c.verify_cp,
                0,
                _CP_LIMIT,
                lambda v: self.replace(verify_cp=v),
                "verify_cp",
            ),
            string(
                "HumanVerifyProb",
                f"{c.verify_prob:g}",
                lambda v: self.replace(verify_prob=verify_prob(v)),
                "verify_prob",
            ),
            spin(
                "HumanVerifyDepth",
                c.verify_depth,
                1,
                20,
                lambda v: self.replace(verify_depth=v),
                "verify_depth",
            ),
        ]

    # -- the model -----------------------------------------------------------------------------

    def prepare(self) -> None:
        """Start loading the model in the background (once)."""
        with self._lock:
            if self._model is not None or self._loader is not None:
                return
            self._load_error = None
            self._loader = threading.Thread(
                target=self._load, name="latentchess-human", daemon=True
            )
            self._loader.start()

    def _load(self) -> None:
        try:
            if self._threads:
                import torch

                torch.set_num_threads(self._threads)
            from latentchess.models.chessformer_io import ChessformerModel

            model = ChessformerModel.load(self._model_path)
            if model.default_elo is not None:
                raise EngineError(
                    f"{self._model_path!r} is a model of engine moves (one rating, "
                    f"{model.default_elo:g}); UCI_LimitStrength needs a human model"
                )
            self._model = model
        except BaseException as error:  # reported by ready()
            self._load_error = error

    def ready(self) -> None:
        """Wait for the model.

        Raises:
            EngineError: it could not be loaded (the reason); the next call tries again.
        """
        self.prepare()
        loader = self._loader
        if loader is not None:
            loader.join()
        if self._model is None:
            error = self._load_error
            with self._lock:
                self._loader = None  # try again next time
            raise EngineError(f"the human model did not load: {error}") from error

    @property
    def model(self) -> ChessformerModel:
        """The human model (loaded now if need be)."""
        if self._model is None:
            self.ready()
        assert self._model is not None
        return self._model

    def provenance(self) -> dict[str, str]:
        """The human model's directory and weights hash (when loaded)."""
        if self._model is None:
            return {}
        from latentchess.models.chessformer_io import resolve_chessformer_path

        path = self._model_path
        where = (
            resolve_chessformer_path(path) if path is None or isinstance(path, str | Path) else None
        )
        if where is None:
            return {"human_model": "in memory"}
        digest = hashlib.sha256((where / "model.safetensors").read_bytes()).hexdigest()[:12]
        return {"human_model": f"{where}", "human_model_sha256": digest}

    # -- choosing ------------------------------------------------------------------------------

    def predict(self, board: chess.Board) -> Prediction:
        """The model's policy (temperature 1) and WDL for ``board`` at the configured ratings."""
        mine, theirs = self.ratings()
        (prediction,) = self.model.predict([board], float(mine), float(theirs))
        return prediction

    def sampling_distribution(
        self, probabilities: np.ndarray, temperature: float, top_p: float
    ) -> np.ndarray:
        """Probabilities (sorted best first, as the model's) after temperature and top-p.

        Temperature 0 puts everything on the first move; top-p keeps the shortest prefix whose
        tempered probabilities reach ``top_p``.
        """
        import numpy as np

        p = np.zeros(len(probabilities), dtype=np.float64)
        if temperature == 0 or len(p) == 1:
            p[0] = 1.0
            return p
        logits = np.log(np.maximum(probabilities.astype(np.float64), 1e-12)) / temperature
        p = np.exp(logits - logits.max())
        p /= p.sum()
        keep = min(int(np.searchsorted(np.cumsum(p), top_p - 1e-6) + 1), len(p))
        p[keep:] = 0.0
        return p / p.sum()

    def distribution(
        self,
        board: chess.Board,
        *,
        temperature: float | None = None,
        top_p: float | None = None,
        search_moves: Sequence[chess.Move] = (),
        stop: threading.Event | None = None,
    ) -> HumanDistribution:
        """What a move for ``board`` is drawn from (before verification): the model's
        probabilities after temperature and top-p, restricted to ``search_moves``, and re-weighted
        by the strength search when beta > 0. The arguments are :meth:`choose`'s."""
        import numpy as np

        c = self.config
        prediction = self.predict(board)
        moves, raw = prediction.moves, prediction.probabilities
        p = self.sampling_distribution(
            raw,
            c.temperature if temperature is None else temperature,
            c.top_p if top_p is None else top_p,
        )
        if search_moves:
            allowed = set(search_moves)
            chosen = np.array([m in allowed for m in moves])
            if chosen.any():
                p = np.where(chosen, p, 0.0)
                if p.sum() == 0:  # the allowed moves all lay outside the nucleus
                    p = np.where(chosen, raw.astype(np.float64), 0.0)
                p /= p.sum()
        losses: tuple[tuple[chess.Move, int], ...] = ()
        nodes = 0
        strength = self.strength()
        if strength.search_weight > 0 and not (stop is not None and stop.is_set()):
            p, losses, nodes = self._weigh_by_search(board, moves, p, strength)
        return HumanDistribution(prediction, p, losses, nodes)

    def choose(
        self,
        board: chess.Board,
        *,
        temperature: float | None = None,
        top_p: float | None = None,
        search_moves: Sequence[chess.Move] = (),
        stop: threading.Event | None = None,
    ) -> HumanChoice:
        """Draw a move for ``board`` (which must have a legal move) from :meth:`distribution`,
        then verify it when ``HumanVerify`` is on.

        Args:
            board: the position; its move stack is the history the model sees.
            temperature: overrides the configured one (``chessformer`` passes its own).
            top_p: overrides the configured one.
            search_moves: only these moves (UCI ``go searchmoves``; empty: all).
            stop: ends verification early (the sampled move then stands).
        """
        c = self.config
        drawn = self.distribution(
            board, temperature=temperature, top_p=top_p, search_moves=search_moves, stop=stop
        )
        prediction, losses, nodes = drawn.prediction, drawn.losses, drawn.nodes
        moves, raw = prediction.moves, prediction.probabilities
        p = drawn.probabilities.copy()
        removed: list[tuple[chess.Move, int]] = []
        best: tuple[chess.Move | None, int] | None = None
        while True:
            if len(removed) >= _MAX_REJECTIONS or p.sum() <= 0:
                # Too many refuted draws: the most probable move neither removed nor excluded.
                gone = {m for m, _ in removed}
                allowed = set(search_moves) & set(moves) or set(moves)
                index = next((i for i, m in enumerate(moves) if m in allowed and m not in gone), 0)
                break
            index = int(self.rng.choice(len(p), p=p))
            move = moves[index]
            if not c.verify or raw[index] >= c.verify_prob:
                break
            if stop is not None and stop.is_set():
                break
            if best is None:
                best, used = self._search(board, None)
                nodes += used
            if move == best[0]:
                break
            score, used = self._search(board, move)
            nodes += used
            loss = best[1] - score[1]
            if loss <= c.verify_cp:
                break
            removed.append((move, loss))
            p[index] = 0.0
            if p.sum() > 0:
                p /= p.sum()
        move = moves[index]
        return HumanChoice(move, float(raw[index]), prediction, tuple(removed), nodes, losses)

    def _weigh_by_search(
        self,
        board: chess.Board,
        moves: Sequence[chess.Move],
        p: np.ndarray,
        strength: HumanStrength,
    ) -> tuple[np.ndarray, tuple[tuple[chess.Move, int], ...], int]:
        """``p`` over the :data:`SEARCH_CANDIDATES` most probable moves, each times
        ``exp(-beta * loss / 100)`` (the module docstring), renormalised; with the losses and
        the nodes searched."""
        import numpy as np

        order = [int(i) for i in np.argsort(-p, kind="stable") if p[i] > 0][:SEARCH_CANDIDATES]
        if len(order) < 2:
            return p, (), 0
        candidates = [moves[i] for i in order]
        outcome = self._verifier_engine().search(
            board,
            chess.engine.Limit(depth=strength.search_depth),
            multipv=len(candidates),
            search_moves=candidates,
        )
        scores = {
            line.pv[0]: int(line.score().score(mate_score=_MATE_CP) or 0)
            for line in outcome.info.lines
            if line.pv
        }
        best = max(scores.values(), default=0)
        weighted = np.zeros_like(p)
        losses = []
        for i, move in zip(order, candidates, strict=True):
            loss = min(best - scores[move], _MAX_LOSS_CP) if move in scores else _MAX_LOSS_CP
            losses.append((move, loss))
            weighted[i] = p[i] * np.exp(-strength.search_weight * loss / 100.0)
        return weighted / weighted.sum(), tuple(losses), outcome.nodes

    def _verifier_engine(self) -> MoveVerifier:
        if self._verifier is None:
            from latentchess.core.alphabeta import AlphaBeta
            from latentchess.engines.default import DEFAULT_EVALUATOR

            # The default search, as `ab` verifies with itself: both play the same human moves.
            self._verifier = AlphaBeta(DEFAULT_EVALUATOR, hash_mb=16)
        return self._verifier

    def _search(
        self, board: chess.Board, move: chess.Move | None
    ) -> tuple[tuple[chess.Move | None, int], int]:
        """((best move, its centipawns for the side to move), nodes) of a shallow search, over
        every move (``move`` None) or ``move`` alone."""
        outcome = self._verifier_engine().search(
            board,
            chess.engine.Limit(depth=self.config.verify_depth),
            multipv=1,
            search_moves=None if move is None else [move],
        )
        lines = outcome.info.lines
        cp = lines[0].score().score(mate_score=_MATE_CP) if lines else 0
        return (outcome.best_move, int(cp or 0)), outcome.nodes

    def analyse(
        self,
        board: chess.Board,
        *,
        temperature: float | None = None,
        top_p: float | None = None,
        search_moves: Sequence[chess.Move] = (),
        stop: threading.Event | None = None,
    ) -> Analysis:
        """A drawn move as an :class:`Analysis`: ``moves`` are the model's probabilities at this
        rating (``score``), ``score_cp``/``wdl`` its value head's (given both ratings)."""
        from latentchess.winprob import centipawns, white_perspective

        started = time.monotonic()
        if not any(board.legal_moves):
            return Analysis(best_move=None, time_s=time.monotonic() - started)
        choice = self.choose(
            board, temperature=temperature, top_p=top_p, search_moves=search_moves, stop=stop
        )
        prediction = choice.prediction
        score = min(max(prediction.score, 1e-6), 1 - 1e-6)
        cp = round(max(-_CP_LIMIT, min(_CP_LIMIT, centipawns(score))))
        wdl = tuple(round(1000 * float(x)) for x in prediction.wdl)
        return Analysis(
            best_move=choice.move,
            pv=[choice.move],
            score_cp=cp,
            win_prob_white=white_perspective(score, board.turn),
            depth=0,
            nodes=1 + choice.nodes,
            time_s=time.monotonic() - started,
            moves=[
                MoveScore(move=m, score=float(q), rank=i + 1)
                for i, (m, q) in enumerate(
                    zip(prediction.moves, prediction.probabilities, strict=True)
                )
            ],
            wdl=wdl,  # type: ignore[arg-type]
        )

    def go(
        self,
        board: chess.Board,
        control: GoControl | None = None,
        *,
        temperature: float | None = None,
        top_p: float | None = None,
    ) -> Analysis:
        """:meth:`analyse` behind a UCI ``go`` (one ``info``; ``searchmoves`` honoured)."""
        control = control or GoControl()
        analysis = self.analyse(
            board,
            temperature=temperature,
            top_p=top_p,
            search_moves=control.search_moves,
            stop=control.stop,
        )
        if control.on_info is not None:
            control.on_info(analysis.info())
        return analysis

    def info_string(self, *, temperature: float | None = None, top_p: float | None = None) -> str:
        """The settings in force, for a UCI ``info string`` after each move."""
        c = self.config
        mine, theirs = self.ratings()
        strength = self.strength()
        temperature = c.temperature if temperature is None else temperature
        top_p = c.top_p if top_p is None else top_p
        text = f"human play: elo {mine} opponent {theirs} temperature {temperature:g} "
        text += f"topp {top_p:g}"
        if c.calibrated and self.calibration is not None:
            text += f" (calibrated for UCI_Elo {c.elo})"
        if strength.search_weight > 0:
            text += f" search weight {strength.search_weight:.2f} depth {strength.search_depth}"
        if c.verify:
            text += (
                f" verify depth {c.verify_depth} drops moves losing > {c.verify_cp} cp "
                f"with p < {c.verify_prob:g}"
            )
        return text
