"""Our engine: a trained model plus the embedding-guided search, behind the ``Engine`` protocol.

``LatentEngine(model, config).play(board, limit)`` honours python-chess limits: ``depth`` (plies),
``nodes`` (positions embedded), ``time`` (seconds for this move) and clocks (``white_clock``,
``black_clock``, ``white_inc``, ``black_inc``, ``remaining_moves``), whichever come first. The
search cache persists across the moves of a game; :meth:`LatentEngine.new_game` clears it.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chess
import chess.engine
import numpy as np
import numpy.typing as npt

from latentchess.batch_keys import tokenize_boards
from latentchess.engines.base import (
    Analysis,
    Engine,
    EngineOption,
    GoControl,
    MoveScore,
    TimeBudget,
    button,
    check,
    combo,
    spin,
    string,
)
from latentchess.errors import EngineError
from latentchess.provenance import note_model
from latentchess.search import (
    MAX_DEPTH,
    MODES,
    RootMove,
    SearchConfig,
    Searcher,
    SearchResult,
    is_mate_value,
    pov_score,
)
from latentchess.search.native import (
    NATIVE_CHOICES,
    NativeScorer,
    NativeSearcher,
    is_sparse,
    native_available,
    native_encoder,
)

if TYPE_CHECKING:
    from latentchess.models.inference import LatentModel
    from latentchess.search.policy import PolicyProposer

__all__ = [
    "LatentEngine",
    "search_config_from_options",
    "TimeBudget",
    "time_budget",
    "calibration",
    "calibrated_draw_score",
    "ranked_root_moves",
    "DEFAULT_MOVE_OVERHEAD_S",
    "BYTES_PER_CACHE_ENTRY",
]

DEFAULT_MOVE_OVERHEAD_S = 0.05
"""Seconds reserved per move for process and GUI latency (UCI option ``Move Overhead``)."""

BYTES_PER_CACHE_ENTRY = 220
"""Rough memory of one cache entry, to turn the ``Hash`` option (MB) into a number of entries."""

PRECISIONS = ("auto", "fp32", "int8", "bf16")
"""Model precisions (``Precision`` option; ``auto`` is measured per machine)."""


def time_budget(
    limit: chess.engine.Limit, turn: chess.Color, *, overhead_s: float = DEFAULT_MOVE_OVERHEAD_S
) -> TimeBudget | None:
    """How long to think under ``limit``, or ``None`` when it sets no time.

    A fixed time per move is used whole, minus the overhead, which takes at most a fifth of it
    (at 50 ms per move, the ladder's setting, a 50 ms reserve would leave no time to score a
    single move: the engine would play the first legal move). With a clock the target is an even
    share of what is left (``remaining_moves``, else 30 more moves) plus most of the increment;
    the hard limit is at most three targets and never more than half the clock (85% on the last
    move before a time control), so the engine never loses on time, even when an iteration it
    started takes longer than predicted.
    """
    budgets = []
    if limit.time is not None:
        hard = max(limit.time - min(overhead_s, 0.2 * limit.time), 0.0)
        budgets.append(TimeBudget(hard, hard))
    clock = limit.white_clock if turn == chess.WHITE else limit.black_clock
    if clock is not None:
        increment = (limit.white_inc if turn == chess.WHITE else limit.black_inc) or 0.0
        moves = min(limit.remaining_moves or 30, 50)
        usable = max(clock - overhead_s, 0.0)
        target = usable / moves + 0.75 * increment
        hard = min(3.0 * target, usable * (0.85 if moves == 1 else 0.5))
        budgets.append(TimeBudget(min(target, hard), hard))
    if not budgets:
        return None
    return TimeBudget(min(b.soft for b in budgets), min(b.hard for b in budgets))


def calibration(model: LatentModel) -> Callable[[float], float]:
    """The model's map from axis score to White's win probability, if it is increasing.

    A calibration fitted on a barely trained model can come out decreasing (White's chances
    falling as the position aligns with White's side of the axis); it would invert every
    reported score, so the linear fallback ``(score + 1) / 2`` is used instead, with a warning.
    """

    def fitted(score: float) -> float:
        return float(model.win_probability(score))

    if fitted(1.0) > fitted(-1.0):
        return fitted
    warnings.warn(
        f"model {model!r}: calibration is not increasing in the axis score; using (s + 1) / 2",
        stacklevel=2,
    )
    return lambda score: min(max((score + 1.0) / 2.0, 0.0), 1.0)


def calibrated_draw_score(win_probability: Callable[[float], float]) -> float:
    """The axis score at which White's calibrated win probability is 1/2 (bisection on [-1, 1]).

    Args:
        win_probability: an increasing calibration (see :func:`calibration`); 0 for the linear
            fallback.
    """
    low, high = -1.0, 1.0
    if win_probability(low) >= 0.5:
        return low
    if win_probability(high) <= 0.5:
        return high
    for _ in range(50):
        middle = (low + high) / 2
        if win_probability(middle) < 0.5:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def ranked_root_moves(result: SearchResult, turn: chess.Color) -> list[RootMove]:
    """Root moves best first for the side to move: searched ones by value, then by static score."""
    sign = 1.0 if turn == chess.WHITE else -1.0
    searched = [r for r in result.root_moves if r.value is not None]
    others = [r for r in result.root_moves if r.value is None]
    searched.sort(key=lambda r: -sign * (r.value or 0.0))
    others.sort(key=lambda r: -sign * r.static)
    ranked = searched + others
    # The played move first, even when a bound ties it (alpha-beta proves only "not better").
    if result.move is not None:
        ranked.sort(key=lambda r: r.move != result.move)
    return ranked


_OPTION_TYPES: dict[str, type] = {f.name: type(f.default) for f in dataclasses.fields(SearchConfig)}
_ENGINE_OPTIONS = (
    "precision",
    "device",
    "threads",
    "name",
    "move_overhead",
    "policy",
    "policy_elo",
    "hash",
    "native",
)


def _coerce(key: str, value: Any, kind: type) -> Any:
    """Convert an option given as text (engine specs, UCI) to the config field's type."""
    if not isinstance(value, str) or kind is str:
        return value
    text = value.strip()
    try:
        if kind is bool:
            lowered = text.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        return kind(text)
    except ValueError:
        raise EngineError(f"option {key}={value!r} is not a valid {kind.__name__}") from None


def search_config_from_options(
    options: dict[str, Any], base: SearchConfig | None = None
) -> SearchConfig:
    """``base`` (default: ``SearchConfig()``) with the :class:`SearchConfig` fields among loosely
    typed ``options`` (strings from specs and command lines) replaced; other keys are ignored.

    Raises:
        EngineError: a value of the wrong type or out of range.
    """
    fields = {
        key: _coerce(key, value, _OPTION_TYPES[key])
        for key, value in options.items()
        if key in _OPTION_TYPES
    }
    try:
        return dataclasses.replace(base or SearchConfig(), **fields)
    except ValueError as error:
        raise EngineError(f"bad latent engine options {options!r}: {error}") from error


_DECLARABLE = (
    "mode",
    "depth",
    "width",
    "alpha_beta",
    "frontier_batch",
    "leaf_chunk",
    "qs",
    "revise",
    "partial",
    "reduce",
)
"""The :class:`SearchConfig` fields a model may declare (the cache size is the user's ``Hash``;
the draw score comes from the model's calibration)."""


def declared_search(model: str | Path | LatentModel | None) -> SearchConfig:
    """The search a model declares it plays best with, over :class:`SearchConfig`'s defaults.

    A model directory's ``config.json`` may hold a ``"search"`` object with
    :class:`SearchConfig` fields (``width``, ``depth``, ``mode``, ...; other keys, such as a
    ``"measured"`` note, are ignored): the shipped sparse encoder declares width 8, the width at
    which it measured strongest. ``None`` is the default model. Options given to the engine
    override it.

    Raises:
        EngineError: the declared values are not valid :class:`SearchConfig` fields.
    """
    import json

    if model is None:
        from latentchess.paths import default_model_path

        model = default_model_path()
    if isinstance(model, str | Path):
        try:
            document = json.loads((Path(model).expanduser() / "config.json").read_text("utf-8"))
        except (OSError, ValueError):
            return SearchConfig()  # not a model directory: loading it will say why
        declared = document.get("search") if isinstance(document, dict) else None
    else:
        declared = model.metadata.get("search")
    if not isinstance(declared, dict):
        return SearchConfig()
    return search_config_from_options(dict(declared))


class LatentEngine(Engine):
    """A :class:`~latentchess.models.inference.LatentModel` searching with :class:`Searcher`.

    The model is either given loaded or loaded from ``model_path``, in the background from
    :meth:`prepare` (the UCI session calls it after ``uciok`` and answers ``isready`` once it
    is there); :meth:`ready` waits for it and raises why it could not be loaded. Search options
    (``Depth``, ``Width``, ``Mode``, ``Hash``) rebuild the search around the loaded model;
    ``Model`` and ``Precision`` load another one.

    Args:
        model: the loaded model, or ``None`` to load ``model_path``.
        config: search settings; ``draw_score`` is replaced by the model's calibrated draw score
            unless ``draw_score`` is given here.
        name: engine name in PGNs and reports.
        move_overhead_s: seconds reserved per move for communication latency.
        draw_score: override for the axis score of a draw.
        model_path: the model directory to load when ``model`` is ``None`` (``None``: the
            default model).
        precision: ``auto``, ``fp32``, ``int8`` or ``bf16`` (for a model loaded here).
        device: torch device for a model loaded here (default: CPU, or CUDA when present).
        threads: torch CPU threads (process-wide; ``None``: leave as is).
        native: ``auto`` (default): a sparse-encoder model is scored and searched by the native
            core (:mod:`latentchess.search.native`: the same search in C++, the encoder
            quantised and updated incrementally) unless a root policy is set; other models use
            PyTorch and the Python search. ``true``: the native core or an error; ``false``:
            PyTorch and the Python search always.
    """

    def __init__(
        self,
        model: LatentModel | None = None,
        config: SearchConfig | None = None,
        *,
        name: str | None = None,
        move_overhead_s: float = DEFAULT_MOVE_OVERHEAD_S,
        draw_score: float | None = None,
        model_path: str | Path | None = None,
        precision: str = "auto",
        device: str | None = None,
        threads: int | None = None,
        native: str = "auto",
    ) -> None:
        if native not in NATIVE_CHOICES:
            raise EngineError(f"native must be one of {list(NATIVE_CHOICES)}, got {native!r}")
        config = config or SearchConfig()
        self.config = config
        self.name = name or f"latent-{config.mode}-d{config.depth}-w{config.width}"
        self.move_overhead_s = move_overhead_s
        self.policy: PolicyProposer | None = None
        self._draw_override = draw_score
        self._hash_mb: int | None = None  # as set by the Hash option (entries round it down)
        self._model: LatentModel | None = None
        self._searcher: Searcher | NativeSearcher | None = None
        self._native = native
        self._native_encoder: Any = None  # the core's encoder when it scores and searches
        self._calibration: Callable[[float], float] = lambda score: (score + 1.0) / 2.0
        self._model_path = None if model_path is None else str(model_path)
        self._precision, self._device, self._threads = precision, device, threads
        self._load_error: BaseException | None = None
        # Search fields set by the user (spec keys, UCI options): a new Model keeps them and
        # takes the rest from what that model declares (:func:`declared_search`).
        self._chosen: set[str] = set()
        self._loader: threading.Thread | None = None
        if model is not None:
            if threads:
                import torch

                torch.set_num_threads(threads)
            self._install(model)

    @classmethod
    def from_options(
        cls, model: str | Path | LatentModel | None = None, **options: Any
    ) -> LatentEngine:
        """Build an engine from loosely typed options (engine specs, command lines).

        A model given as a directory (or ``None``: the default model) is loaded by
        :meth:`prepare` (in the background) or :meth:`ready` (waiting for it).

        Args:
            model: a model directory, a loaded model, or ``None`` for the default model.
            **options: :class:`SearchConfig` fields (``mode``, ``depth``, ``width``,
                ``cache_size``, ``alpha_beta``, ``frontier_batch``, ``leaf_chunk``,
                ``draw_score``) and
                ``precision``, ``device``, ``threads`` (torch CPU threads, process-wide),
                ``name``, ``move_overhead`` (seconds), ``hash`` (MB of cache), ``policy``
                (``human`` or a Chessformer model directory: its policy picks and orders the
                root moves the search expands, :mod:`latentchess.search.policy`) and
                ``policy_elo``, ``native`` (``auto``, ``true``, ``false``: see the class);
                values may be strings.

        Raises:
            EngineError: an unknown option or a value of the wrong type.
        """
        unknown = set(options) - set(_OPTION_TYPES) - set(_ENGINE_OPTIONS)
        if unknown:
            raise EngineError(
                f"unknown latent engine options {sorted(unknown)!r}; "
                f"known: {sorted([*_OPTION_TYPES, *_ENGINE_OPTIONS])!r}"
            )
        draw = options.get("draw_score")
        if draw is not None:
            draw = _coerce("draw_score", draw, float)
        fields = {key: value for key, value in options.items() if key != "draw_score"}
        if options.get("hash") is not None:
            megabytes = _coerce("hash", options["hash"], int)
            fields["cache_size"] = max(1, megabytes * 1_000_000 // BYTES_PER_CACHE_ENTRY)
        config = search_config_from_options(fields, declared_search(model))
        if config.eval != "latent":
            from latentchess.search.native import leaf_evaluator

            leaf_evaluator(config.eval)  # an unknown name fails here, not in the loader
        # One torch thread unless asked: what every measured ladder ran (two games at a time
        # on two cores), and what `latentchess uci --engine latent` always used.
        threads = _coerce("threads", options.get("threads", 1), int)
        precision = str(options.get("precision", "auto"))
        if precision not in PRECISIONS:
            raise EngineError(f"precision must be one of {list(PRECISIONS)}, got {precision!r}")
        overhead = _coerce(
            "move_overhead", options.get("move_overhead", DEFAULT_MOVE_OVERHEAD_S), float
        )
        native = str(options.get("native", "auto")).strip().lower()
        native = {"1": "true", "yes": "true", "on": "true", "0": "false", "no": "false"}.get(
            native, native
        )
        if native not in NATIVE_CHOICES:
            raise EngineError(f"native must be one of {list(NATIVE_CHOICES)}, got {native!r}")
        loaded = model if model is not None and not isinstance(model, str | Path) else None
        path = model if isinstance(model, str | Path) else None
        if path is not None and not Path(path).expanduser().is_dir():
            raise EngineError(f"no model directory {str(path)!r}")
        engine = cls(
            loaded,
            config,
            name=options.get("name"),
            move_overhead_s=overhead,
            draw_score=draw,
            model_path=path,
            precision=precision,
            device=options.get("device"),
            threads=threads or None,
            native=native,
        )
        engine._chosen = set(fields) & set(_DECLARABLE)
        if options.get("policy") is not None:
            from latentchess.search.policy import load_policy

            raw = options.get("policy_elo")
            elo = None if raw is None else _coerce("policy_elo", raw, float)
            engine.set_policy(load_policy(str(options["policy"]), elo=elo))
        return engine

    # -- the model -------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Start loading the model in the background (once; a loaded model stays)."""
        if self._model is None and self._loader is None:
            self._start_loading()

    def _start_loading(self) -> None:
        self._model, self._searcher, self._load_error = None, None, None
        self._loader = threading.Thread(target=self._load, name="latentchess-load", daemon=True)
        self._loader.start()

    def _load(self) -> None:
        from latentchess.models.io import load_model

        try:
            if self._threads:
                import torch

                torch.set_num_threads(self._threads)
            model = load_model(
                self._model_path,
                device=self._device,
                precision=self._precision,
                threads=self._threads,
            )
            seconds = _warm_up(model)
            self._install(model)
            assert self._searcher is not None
            self._searcher.seconds_per_position = seconds
        except Exception as error:  # reported by ready(), never lost in a thread
            # Nothing half installed (a search that failed to build after the model was set):
            # ready() then raises this instead of letting every move fail.
            self._model, self._searcher = None, None
            where = self._model_path or "the default model"
            self._load_error = EngineError(f"cannot load model {where!r}: {error}")

    def _install(self, model: LatentModel) -> None:
        # eval=nnue/hce/...: the search's values are W - L of that evaluation, not axis scores
        scored_by_axis = self.config.eval == "latent"
        self._calibration = calibration(model) if scored_by_axis else lambda v: (v + 1.0) / 2.0
        score = (
            calibrated_draw_score(self._calibration)
            if self._draw_override is None
            else self._draw_override
        )
        self.config = dataclasses.replace(self.config, draw_score=score)
        note_model(model.provenance())  # for the results of the command that built it
        self._native_encoder = self._native_encoder_of(model)
        self._model = model
        self._rebuild_search()

    def _native_encoder_of(self, model: LatentModel) -> Any:
        """The core's encoder when ``native`` asks for it and the model allows it, else None."""
        if self._native == "false":
            return None
        if is_sparse(model) and native_available():
            return native_encoder(model)
        if self._native == "true":
            raise EngineError(
                "native=true needs a sparse-encoder model and a native core with the latent "
                f"search; {model!r} is {'sparse' if is_sparse(model) else 'not sparse'}"
            )
        return None

    @property
    def native(self) -> bool:
        """Whether the native core scores and searches (see ``native`` in the class doc)."""
        return self._native_encoder is not None and isinstance(self._searcher, NativeSearcher)

    def _rebuild_search(self) -> None:
        old = self._searcher
        if self.config.eval != "latent" and (self._native_encoder is None or self.policy):
            raise EngineError(
                f"eval={self.config.eval!r} needs the native latent search (a sparse model, "
                "native=auto or true, no root policy); the Python search scores by the axis only"
            )
        if self._native_encoder is not None and self.policy is None:
            self._searcher = NativeSearcher(self._native_encoder, self.config)
        else:  # a root policy needs the Python search (the paper's: no qs, no revise)
            self._searcher = Searcher(self.score_boards, self.config)
        if old is not None:
            self._searcher.seconds_per_position = old.seconds_per_position
        if self.policy is not None:
            self._searcher.root_policy = self.policy.order

    def ready(self) -> None:
        """Wait for the model.

        Raises:
            EngineError: it could not be loaded (the reason).
        """
        self.prepare()
        if self._loader is not None:
            self._loader.join()
        if self._model is None:
            raise self._load_error or EngineError("no model loaded")

    @property
    def model(self) -> LatentModel:
        """The loaded model (waits for a background load; raises why it failed)."""
        self.ready()
        assert self._model is not None
        return self._model

    @property
    def searcher(self) -> Searcher | NativeSearcher:
        """The search over the loaded model."""
        self.ready()
        assert self._searcher is not None
        return self._searcher

    def provenance(self) -> dict[str, str]:
        """The model's path, content hash and precision."""
        return self.model.provenance()

    # -- options ---------------------------------------------------------------------------------

    def options(self) -> list[EngineOption]:
        """``Model``, ``Precision``, ``Depth``, ``Width``, ``Mode``, ``QS``, ``Revise``,
        ``Partial``, ``Reduce``, ``Native``, ``Threads``, ``Hash``, ``Move Overhead``,
        ``Clear Hash``."""
        c = self.config
        hash_mb = self._hash_mb or max(1, c.cache_size * BYTES_PER_CACHE_ENTRY // 1_000_000)
        model = self._model_path
        if model is None:
            from latentchess.paths import default_model_path

            model = str(default_model_path())
        return [
            string("Model", model, self._set_model, "model"),
            combo("Precision", self._precision, PRECISIONS, self._set_precision, "precision"),
            spin("Depth", c.depth, 1, MAX_DEPTH, lambda v: self._choose(depth=v), "depth"),
            spin("Width", c.width, 1, 256, lambda v: self._choose(width=v), "width"),
            combo("Mode", c.mode, MODES, lambda v: self._choose(mode=v), "mode"),
            check("QS", c.qs, lambda v: self._choose(qs=_coerce("qs", v, bool)), "qs"),
            check(
                "Revise",
                c.revise,
                lambda v: self._choose(revise=_coerce("revise", v, bool)),
                "revise",
            ),
            check(
                "Partial",
                c.partial,
                lambda v: self._choose(partial=_coerce("partial", v, bool)),
                "partial",
            ),
            check(
                "Reduce",
                c.reduce,
                lambda v: self._choose(reduce=_coerce("reduce", v, bool)),
                "reduce",
            ),
            combo("Native", self._native, NATIVE_CHOICES, self._set_native, "native"),
            spin(
                "Threads",
                self._threads or 1,
                1,
                256,
                self._set_threads,
                "threads",
            ),
            spin("Hash", hash_mb, 1, 65536, self._set_hash, "hash"),
            spin(
                "Move Overhead",
                round(self.move_overhead_s * 1000),
                0,
                10000,
                lambda v: setattr(self, "move_overhead_s", v / 1000.0),
                None,  # the spec key move_overhead is in seconds
            ),
            button("Clear Hash", self.new_game),
        ]

    def _configure(self, **changes: Any) -> None:
        self.config = dataclasses.replace(self.config, **changes)
        if self._searcher is not None:
            self._rebuild_search()

    def _choose(self, **changes: Any) -> None:
        """Search fields the user set: kept when another model is loaded."""
        self._chosen |= set(changes)
        self._configure(**changes)

    def _set_native(self, choice: str) -> None:
        if choice not in NATIVE_CHOICES:
            raise EngineError(f"native must be one of {list(NATIVE_CHOICES)}, got {choice!r}")
        self.ready_or_failed()
        self._native = choice
        if self._model is not None:
            self._native_encoder = self._native_encoder_of(self._model)
            self._rebuild_search()

    def _set_hash(self, megabytes: int) -> None:
        self._hash_mb = megabytes
        self._configure(cache_size=max(1, megabytes * 1_000_000 // BYTES_PER_CACHE_ENTRY))

    def _set_threads(self, threads: int) -> None:
        import torch

        self._threads = threads
        torch.set_num_threads(threads)

    def _set_model(self, path: str) -> None:
        if not path:
            raise EngineError("option 'Model' needs a directory")
        self.ready_or_failed()
        declared = declared_search(path)
        self._model_path = path
        self.config = dataclasses.replace(
            self.config,
            **{name: getattr(declared, name) for name in _DECLARABLE if name not in self._chosen},
        )
        self._start_loading()

    def _set_precision(self, precision: str) -> None:
        self.ready_or_failed()
        self._precision = precision
        self._start_loading()

    def ready_or_failed(self) -> None:
        """Wait for a background load to end, successful or not."""
        if self._loader is not None:
            self._loader.join()

    def set_policy(self, policy: PolicyProposer | None) -> None:
        """Let ``policy`` pick and order the root moves the search expands (None: the scores)."""
        self.policy = policy
        if self._searcher is not None:
            if self._native_encoder is not None:
                self._rebuild_search()  # the native search has no root policy
            self._searcher.root_policy = None if policy is None else policy.order

    # -- scoring ---------------------------------------------------------------------------------

    def score_boards(self, boards: Sequence[chess.Board]) -> npt.NDArray[np.float32]:
        """Axis scores of boards, White's view (the search's scorer): the native core's for a
        sparse model (see ``native``), else the model's."""
        if self._native_encoder is not None:
            return NativeScorer(self._native_encoder)(boards)
        return self.model.score_tokens(tokenize_boards(boards))

    def win_probability(self, value: float) -> float:
        """White's win probability for a search value (mates are certain)."""
        if is_mate_value(value):
            return 1.0 if value > 0 else 0.0
        return self._calibration(value)

    def pov_score(self, value: float, turn: chess.Color) -> chess.engine.PovScore:
        """A search value as a python-chess score from ``turn``'s view (cp or mate)."""
        return pov_score(value, turn, self.win_probability)

    # -- thinking --------------------------------------------------------------------------------

    def default_limit(self) -> chess.engine.Limit:
        """No limit: the configured depth."""
        return chess.engine.Limit()

    def time_budget(
        self, limit: chess.engine.Limit, board: chess.Board, *, move_overhead_ms: int | None = None
    ) -> TimeBudget | None:
        """The latent search's own budget (:func:`time_budget`: an even share of 30 moves)."""
        overhead = self.move_overhead_s if move_overhead_ms is None else move_overhead_ms / 1000
        return time_budget(limit, board.turn, overhead_s=overhead)

    def search(
        self,
        board: chess.Board,
        limit: chess.engine.Limit | None = None,
        *,
        stop: threading.Event | None = None,
        on_iteration: Callable[[SearchResult], None] | None = None,
        infinite: bool = False,
        exact_root: bool = False,
        started: float | None = None,
    ) -> SearchResult:
        """Search ``board`` under ``limit`` (default: the configured depth).

        Args:
            board: the position, with its move stack as game history.
            limit: depth, nodes, time and/or clock limits.
            stop: set from another thread to stop (the last completed iteration's move stands).
            on_iteration: called with each completed iteration.
            infinite: deepen until ``stop`` (or ``limit.depth``) instead of the configured depth.

        The configured depth applies only when ``limit`` has neither a depth, nor a time, clock
        or node limit; with one of those the search deepens until the limit ends it.
            exact_root: exact values for every expanded root move (analysis).
            started: ``time.monotonic()`` when the request arrived (time limits count from it).
        """
        limit = limit or chess.engine.Limit()
        started = time.monotonic() if started is None else started
        budget = self.time_budget(limit, board)
        # The configured depth is the search when nothing else bounds it; a clock, a time or a
        # node limit deepens until it runs out, as a UCI engine's `go wtime`/`movetime` does.
        bounded = budget is not None or limit.nodes is not None
        depth = limit.depth or (MAX_DEPTH if infinite or bounded else self.config.depth)
        depth = max(1, min(depth, MAX_DEPTH))
        deadline = soft = None
        if budget is not None and not infinite:
            deadline, soft = started + budget.hard, started + budget.soft
            if board.legal_moves.count() == 1:
                depth = 1  # nothing to choose: answer at once and keep the clock
        return self.searcher.search(
            board,
            depth=depth,
            deadline=deadline,
            soft_deadline=soft,
            stop=stop,
            max_nodes=limit.nodes,
            on_iteration=on_iteration,
            exact_root=exact_root,
        )

    def go(
        self, board: chess.Board, limit: chess.engine.Limit, control: GoControl | None = None
    ) -> Analysis:
        """The iterative search, one ``info`` per completed iteration."""
        control = control or GoControl()
        on_info = control.on_info
        if limit.mate is not None and on_info is not None:
            on_info(
                {
                    "string": f"go mate {limit.mate}: searching {limit.depth} plies for a mate "
                    f"(mates outside the {self.config.width} best moves of a node are "
                    "not seen)"
                }
            )

        def iteration(result: SearchResult) -> None:
            if on_info is not None:
                on_info(self._info(result, board.turn))

        result = self.search(
            board,
            limit,
            stop=control.stop,
            infinite=control.infinite,
            started=control.started,
            on_iteration=iteration,
        )
        return self.to_analysis(board, result)

    def _info(self, result: SearchResult, turn: chess.Color) -> chess.engine.InfoDict:
        cache = self.searcher.cache
        return {
            "depth": result.depth,
            "score": self.pov_score(result.value, turn),
            "nodes": result.nodes,
            "nps": int(result.nps),
            "hashfull": min(1000, len(cache) * 1000 // cache.capacity),
            "time": result.time_s,
            "pv": list(result.pv),
        }

    def play(self, board: chess.Board, limit: chess.engine.Limit) -> chess.Move:
        """The move to play in ``board`` within ``limit``.

        Raises:
            EngineError: ``board`` has no legal move.
        """
        result = self.search(board, limit)
        if result.move is None:
            raise EngineError(f"no legal move to play in {board.fen()!r}")
        return result.move

    def analyse(self, board: chess.Board, limit: chess.engine.Limit) -> Analysis:
        """Search ``board`` and report the best line and every root move's score."""
        result = self.search(board, limit, exact_root=True)
        return self.to_analysis(board, result)

    def to_analysis(self, board: chess.Board, result: SearchResult) -> Analysis:
        """Convert a search result on ``board`` to the protocol's :class:`Analysis`."""
        score = self.pov_score(result.value, board.turn).relative
        moves = [
            MoveScore(
                move=root.move,
                score=root.static if root.value is None else root.value,
                rank=rank,
                win_prob_white=self.win_probability(
                    root.static if root.value is None else root.value
                ),
            )
            for rank, root in enumerate(ranked_root_moves(result, board.turn), 1)
        ]
        return Analysis(
            best_move=result.move,
            pv=list(result.pv),
            score_cp=score.score(),
            mate=score.mate(),
            win_prob_white=self.win_probability(result.value),
            depth=result.depth,
            nodes=result.nodes,
            nps=int(result.nps),
            time_s=result.time_s,
            moves=moves,
        )

    def new_game(self) -> None:
        """Forget history-dependent state and cached scores before a new game."""
        if self._searcher is not None:
            self._searcher.new_game()
        if self.policy is not None:
            self.policy.new_game()

    def close(self) -> None:
        """Release the cache; the model stays usable by others holding it."""
        self.ready_or_failed()
        if self._searcher is not None:
            self._searcher.cache.clear()

    def __repr__(self) -> str:
        return f"LatentEngine(name={self.name!r}, config={self.config!r})"


def _warm_up(model: LatentModel) -> float:
    """Run the first (slow) forward passes now; returns the measured seconds per position."""
    start = chess.Board()
    boards = []
    for move in start.legal_moves:
        child = start.copy(stack=False)
        child.push(move)
        boards.append(child)
    tokens = tokenize_boards(boards)
    model.score_tokens(tokens)
    began = time.perf_counter()
    model.score_tokens(tokens)
    return (time.perf_counter() - began) / len(boards)
