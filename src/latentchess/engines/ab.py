"""``ab``: the native alpha-beta engine (C++ core) behind the :class:`latentchess.Engine` protocol.

Spec examples: ``ab`` (= ``ab:eval=nnue``, the shipped network), ``ab:eval=hce`` (hand-crafted),
``ab:eval=latent`` (the shipped sparse latent model's axis score, mapped to centipawns by its
calibration: the latent engine's evaluation under this search), ``ab:eval=PATH`` (an NNUE or
sparse latent model directory), ``ab:depth=10,hash=64``, ``ab:threads=1,multipv=3``.
``depth``/``nodes`` in the spec cap every search on top of the limit a caller passes.
``ab:syzygy=DIR`` (UCI ``SyzygyPath``) probes Syzygy tables at the root (see
:mod:`latentchess.engines.syzygy`).

The search's tunable constants (:data:`~latentchess.core.alphabeta.SEARCH_PARAMETERS`) are spec
keys by their names (``ab:reverse_futility_margin=90``). With ``tune=1`` (``latentchess uci
--tunable``) they are also declared as UCI spin options, so that an external SPSA tuner can set
them with ``setoption``; without it they stay out of the option list.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import chess
import chess.engine

from latentchess.core.alphabeta import (
    PRUNING,
    SEARCH_PARAMETERS,
    AlphaBeta,
    SearchInfo,
    SearchLine,
    SearchOutcome,
    check_search_parameters,
)
from latentchess.core.nnue import BUILTIN_EVALUATORS
from latentchess.core.nnue import resolve_evaluator as _resolve_in_core
from latentchess.engines.base import (
    Analysis,
    Engine,
    EngineOption,
    GoControl,
    MoveScore,
    TimeBudget,
    button,
    native_time_budget,
    spin,
    string,
)
from latentchess.engines.default import DEFAULT_EVALUATOR
from latentchess.engines.human import HUMAN_KEYS, HumanPlay
from latentchess.engines.syzygy import open_tablebases, root_probe
from latentchess.errors import EngineError

if TYPE_CHECKING:
    from latentchess.wdl import WdlModel

__all__ = ["AlphaBetaConfig", "AlphaBetaEngine"]

MAX_THREADS = 256
"""Lazy SMP threads (more than the machine's cores is allowed, as in Stockfish; see
docs/engines/alphabeta.md for what a second thread gains)."""


def resolve_evaluator(name: str) -> str:
    """The core's evaluator name for ``name`` (:func:`latentchess.core.nnue.resolve_evaluator`),
    with the assembler of latent models on an NNUE's transformer registered first when ``name``
    may be a latent model (importing it loads NumPy, which ``nnue``, ``hce`` and ``pesto`` do not
    need: ``uci`` starts without it)."""
    if name != "nnue" and not name.startswith("nnue:") and name not in BUILTIN_EVALUATORS:
        from latentchess.search import native  # noqa: F401  (registers the assembler)
    return _resolve_in_core(name)


@dataclass(frozen=True, kw_only=True)
class AlphaBetaConfig:
    """Settings of an :class:`AlphaBetaEngine`.

    Attributes:
        evaluator: ``nnue`` (the shipped network, the default: :data:`DEFAULT_EVALUATOR`),
            ``hce`` (hand-crafted), ``pesto`` (its piece-square tables alone), ``latent`` (the
            shipped sparse latent model's axis score) or an NNUE or sparse latent model
            directory.
        hash_mb: transposition table size in MB.
        threads: search threads (Lazy SMP over one shared transposition table; 1 is the
            deterministic single-threaded search).
        multipv: principal variations reported by :meth:`AlphaBetaEngine.analyse`.
        depth: a cap on every search's depth (None: none).
        nodes: a cap on every search's nodes (None: none).
        move_overhead_ms: kept back from clocks and move times (transmission, set-up); 30 ms,
            the setting every measured ladder ran with.
        no_pruning: pruning (or the singular extension) switched off, to measure it: names of
            ``PRUNING`` (rfp, lmp, see, fp, se).
        syzygy_path: Syzygy table directories joined by ``os.pathsep`` ("": none), probed at
            the root.
        search_parameters: values of ``SEARCH_PARAMETERS`` by name that differ from the
            defaults (a tuned set).
        tunable: declare every search parameter as a UCI option (for external tuners).
    """

    evaluator: str = DEFAULT_EVALUATOR
    hash_mb: int = 16
    threads: int = 1
    multipv: int = 1
    depth: int | None = None
    nodes: int | None = None
    move_overhead_ms: int = 30
    no_pruning: frozenset[str] = frozenset()
    syzygy_path: str = ""
    search_parameters: Mapping[str, int] = field(default_factory=dict)
    tunable: bool = False

    def __post_init__(self) -> None:
        check_search_parameters(self.search_parameters)  # EngineError: name or range
        unknown = sorted(set(self.no_pruning) - set(PRUNING))
        if unknown:
            raise EngineError(f"unknown pruning {unknown!r}; known: {', '.join(PRUNING)}")
        resolve_evaluator(self.evaluator)  # EngineError for an unknown name or a bad directory
        if not 1 <= self.hash_mb <= 65536:
            raise EngineError(f"hash must lie in [1, 65536] MB, got {self.hash_mb!r}")
        if not 1 <= self.threads <= MAX_THREADS:
            raise EngineError(f"threads must lie in [1, {MAX_THREADS}], got {self.threads!r}")
        if not 1 <= self.multipv <= 256:
            raise EngineError(f"multipv must lie in [1, 256], got {self.multipv!r}")
        if self.depth is not None and not 1 <= self.depth <= 127:
            raise EngineError(f"depth must lie in [1, 127], got {self.depth!r}")
        if self.nodes is not None and self.nodes < 1:
            raise EngineError(f"nodes must be positive, got {self.nodes!r}")
        if not 0 <= self.move_overhead_ms <= 10000:
            raise EngineError(
                f"move overhead must lie in [0, 10000] ms, got {self.move_overhead_ms!r}"
            )


def _capped(limit: chess.engine.Limit, config: AlphaBetaConfig) -> chess.engine.Limit:
    depth, nodes = limit.depth, limit.nodes
    if config.depth is not None:
        depth = config.depth if depth is None else min(depth, config.depth)
    if config.nodes is not None:
        nodes = config.nodes if nodes is None else min(nodes, config.nodes)
    return chess.engine.Limit(
        time=limit.time,
        depth=depth,
        nodes=nodes,
        mate=limit.mate,
        white_clock=limit.white_clock,
        black_clock=limit.black_clock,
        white_inc=limit.white_inc,
        black_inc=limit.black_inc,
        remaining_moves=limit.remaining_moves,
    )


class AlphaBetaEngine(Engine):
    """Our alpha-beta engine over the native core.

    Args:
        config: its settings.
        name: display name (PGN headers, ladders).
    """

    def __init__(self, config: AlphaBetaConfig | None = None, *, name: str = "ab") -> None:
        self.config = config or AlphaBetaConfig()
        self.name = name
        self._search = AlphaBeta(
            self.config.evaluator,
            hash_mb=self.config.hash_mb,
            threads=self.config.threads,
            parameters=self.config.search_parameters,
        )
        self._wdl: tuple[str, WdlModel | None] | None = None
        self._tablebase = open_tablebases(self.config.syzygy_path)
        self._tablebase_note = ""
        self.human = HumanPlay(verifier=self)
        """``UCI_LimitStrength``: human-like moves at ``UCI_Elo`` instead of the search."""

    @classmethod
    def from_options(cls, name: str = "ab", **options: object) -> AlphaBetaEngine:
        """Build from spec keys: ``eval``, ``hash``, ``threads``, ``multipv``, ``depth``,
        ``nodes``, ``overhead``, and ``rfp``/``lmp``/``see``/``fp``/``se`` = 0 to switch a pruning
        (or the singular extension) off; the search parameters by name and ``tune`` = 1 to
        declare them as UCI options; ``limit_strength``, ``elo``, ``opponent``,
        ``temperature``, ``top_p``, ``verify``, ``verify_cp``, ``verify_prob``, ``verify_depth``
        and ``seed`` for human-like play (:class:`~latentchess.engines.human.HumanPlay`).

        Raises:
            EngineError: on an unknown key or a bad value.
        """
        keys = {
            "eval": "evaluator",
            "evaluator": "evaluator",
            "hash": "hash_mb",
            "threads": "threads",
            "multipv": "multipv",
            "depth": "depth",
            "nodes": "nodes",
            "overhead": "move_overhead_ms",
            "syzygy": "syzygy_path",
        }
        fields: dict[str, object] = {}
        disabled: set[str] = set()
        parameters: dict[str, object] = {}
        names = {parameter.name for parameter in SEARCH_PARAMETERS}
        human = {k: v for k, v in options.items() if k.lower() in HUMAN_KEYS}
        for key, value in options.items():
            if key in human:
                continue
            if key.lower() in PRUNING:
                if str(value).lower() not in ("0", "1", "false", "true"):
                    raise EngineError(f"ab option {key!r} must be 0 or 1, got {value!r}")
                if str(value).lower() in ("0", "false"):
                    disabled.add(key.lower())
                continue
            if key.lower() in names:
                parameters[key.lower()] = value
                continue
            if key.lower() == "tune":
                if str(value).lower() not in ("0", "1", "false", "true"):
                    raise EngineError(f"ab option {key!r} must be 0 or 1, got {value!r}")
                fields["tunable"] = str(value).lower() in ("1", "true")
                continue
            field_name = keys.get(key.lower())
            if field_name is None:
                known = ", ".join(sorted([*keys, *PRUNING, "tune"]))
                raise EngineError(
                    f"unknown ab option {key!r}; known: {known} and the search parameters "
                    f"({', '.join(sorted(names))})"
                )
            if field_name not in ("evaluator", "syzygy_path"):
                try:
                    value = int(value)  # type: ignore[call-overload]
                except (TypeError, ValueError):
                    raise EngineError(
                        f"ab option {key!r} needs an integer, got {value!r}"
                    ) from None
            text_field = field_name in ("evaluator", "syzygy_path")
            fields[field_name] = str(value) if text_field else value
        fields["no_pruning"] = frozenset(disabled)
        fields["search_parameters"] = check_search_parameters(parameters)
        engine = cls(AlphaBetaConfig(**fields), name=name)  # type: ignore[arg-type]
        engine.human.configure(engine, human)
        return engine

    # -- options ------------------------------------------------------------------------------

    def options(self) -> list[EngineOption]:
        """``Hash``, ``Threads``, ``MultiPV``, ``Move Overhead``, ``Clear Hash``, ``EvalFile``,
        ``SyzygyPath``; with ``tune=1`` also every search parameter (a spin over its tuning
        range)."""
        c = self.config
        tunable = []
        if c.tunable:
            values = self._search.parameters
            for parameter in SEARCH_PARAMETERS:
                tunable.append(
                    spin(
                        parameter.name,
                        values[parameter.name],
                        parameter.minimum,
                        parameter.maximum,
                        lambda value, name=parameter.name: self.set_search_parameters(
                            {name: value}
                        ),
                        parameter.name,
                    )
                )
        return [
            spin("Hash", self._search.hash_mb, 1, 65536, self.set_hash, "hash"),
            spin("Threads", c.threads, 1, MAX_THREADS, self.set_threads, "threads"),
            spin("MultiPV", c.multipv, 1, 256, lambda v: self._replace(multipv=v), "multipv"),
            spin(
                "Move Overhead",
                c.move_overhead_ms,
                0,
                10000,
                lambda v: self._replace(move_overhead_ms=v),
                "overhead",
            ),
            button("Clear Hash", self.new_game),
            string("EvalFile", c.evaluator, self.set_evaluator, "eval"),
            string("SyzygyPath", c.syzygy_path or "<empty>", self.set_syzygy_path, "syzygy"),
            *self.human.options(),
            *tunable,
        ]

    def set_search_parameters(self, changes: Mapping[str, object]) -> None:
        """Set search parameters by name for the next searches (UCI ``setoption`` when tunable).

        Raises:
            EngineError: an unknown name or a value outside its range (nothing changes then).
        """
        self._search.set_parameters(changes)
        defaults = {parameter.name: parameter.default for parameter in SEARCH_PARAMETERS}
        changed = {k: v for k, v in self._search.parameters.items() if v != defaults[k]}
        self._replace(search_parameters=changed)

    def _replace(self, **changes: object) -> None:
        self.config = dataclasses.replace(self.config, **changes)  # type: ignore[arg-type]

    def provenance(self) -> dict[str, str]:
        """The evaluator (``nnue:/path`` for a network), and the human model when in use."""
        human = self.human.provenance() if self.human.enabled else {}
        tables = {"syzygy": self.config.syzygy_path} if self._tablebase is not None else {}
        return {"evaluator": resolve_evaluator(self.config.evaluator), **tables, **human}

    def ready(self) -> None:
        """Wait for the human model when ``UCI_LimitStrength`` is on (nothing to wait for else)."""
        if self.human.enabled:
            self.human.ready()

    def info_string(self) -> str:
        """The human-play settings when ``UCI_LimitStrength`` is on; the tablebase verdict of the
        last search's root when the tables had it."""
        return self.human.info_string() if self.human.enabled else self._tablebase_note

    def new_game(self) -> None:
        """Forget the previous game (clears the transposition table)."""
        self._search.new_game()

    def set_evaluator(self, evaluator: str) -> None:
        """Switch the evaluation (UCI ``EvalFile``): ``nnue``, ``hce``, ``pesto``, ``latent`` or a
        model directory.

        Raises:
            EngineError: an unknown name or an unreadable network (the old evaluation stays).
        """
        config = dataclasses.replace(self.config, evaluator=evaluator)
        self._search = AlphaBeta(
            config.evaluator,
            hash_mb=self._search.hash_mb,
            threads=config.threads,
            parameters=config.search_parameters,
        )
        self.config = config

    def set_syzygy_path(self, path: str) -> None:
        """Probe the Syzygy tables in ``path`` at the root (UCI ``SyzygyPath``; ``<empty>``: none).

        Raises:
            EngineError: a directory that is missing or holds no tables (the old tables stay).
        """
        tablebase = open_tablebases(path)
        if self._tablebase is not None:
            self._tablebase.close()
        self._tablebase = tablebase
        self.config = dataclasses.replace(
            self.config, syzygy_path="" if tablebase is None else path.strip()
        )

    def set_threads(self, threads: int) -> None:
        """Search with ``threads`` threads from the next search on (UCI ``Threads``)."""
        config = dataclasses.replace(self.config, threads=threads)  # validates
        self._search.threads = threads
        self.config = config

    def set_hash(self, hash_mb: int) -> None:
        """Resize the transposition table (clearing it)."""
        self._search.resize(hash_mb)
        self.config = dataclasses.replace(self.config, hash_mb=hash_mb)

    @property
    def hashfull(self) -> int:
        """Permille of the transposition table in use (UCI ``hashfull``)."""
        return int(self._search._engine.hashfull)

    # -- thinking -------------------------------------------------------------------------------

    def time_budget(
        self, limit: chess.engine.Limit, board: chess.Board, *, move_overhead_ms: int | None = None
    ) -> TimeBudget | None:
        """The native time manager's budget with this engine's move overhead and parameters."""
        overhead = self.config.move_overhead_ms if move_overhead_ms is None else move_overhead_ms
        return native_time_budget(
            limit, board, move_overhead_ms=overhead, parameters=self.config.search_parameters
        )

    def wdl_model(self) -> WdlModel | None:
        """The network's WDL model (``wdl.json`` beside an NNUE, fitted to this engine's own
        games by ``benchmarks/fit_wdl.py``); None for the built-in evaluations."""
        evaluator = resolve_evaluator(self.config.evaluator)
        if not evaluator.startswith("nnue:"):
            return None
        if self._wdl is None or self._wdl[0] != evaluator:
            from latentchess.wdl import WdlModel  # NumPy: only when WDL is asked for

            self._wdl = (evaluator, WdlModel.load(evaluator[len("nnue:") :]))
        return self._wdl[1]

    def supports_chess960(self) -> bool:
        """The native search plays Chess960; the human model (``UCI_LimitStrength``) cannot."""
        return not self.human.enabled

    def supports_search_moves(self) -> bool:
        """``go searchmoves`` restricts the root."""
        return True

    def go(
        self, board: chess.Board, limit: chess.engine.Limit, control: GoControl | None = None
    ) -> Analysis:
        """The iterative search, one ``info`` per iteration and PV line; stops at once."""

        control = control or GoControl()
        if self.human.enabled:
            return self.human.go(board, control)
        on_info = control.on_info

        def iteration(info: SearchInfo) -> None:
            if on_info is not None:
                for line in info.lines:
                    on_info(_info_dict(info, line, board.turn))

        outcome = self.search(
            board,
            limit,
            infinite=control.infinite,
            stop=control.stop,
            started=control.started,
            on_iteration=iteration,
            search_moves=control.search_moves or None,
        )
        return _analysis(board, outcome)

    def search(
        self,
        board: chess.Board,
        limit: chess.engine.Limit,
        *,
        multipv: int | None = None,
        infinite: bool = False,
        stop: threading.Event | None = None,
        started: float | None = None,
        move_overhead_ms: int | None = None,
        spent_s: float = 0.0,
        on_iteration: Callable[[SearchInfo], None] | None = None,
        search_moves: Sequence[chess.Move] | None = None,
        move_orders: Mapping[int, Sequence[chess.Move]] | None = None,
    ) -> SearchOutcome:
        """Search with every control the UCI session needs (see :meth:`AlphaBeta.search`).

        ``started`` (``time.monotonic()`` when the request arrived) charges the time already
        spent to the move overhead, so a late start never costs a game on time.
        ``spent_s``, ``search_moves`` and ``move_orders`` are the hybrid engine's hooks (see
        :meth:`AlphaBeta.search`).
        """
        overhead = self.config.move_overhead_ms if move_overhead_ms is None else move_overhead_ms
        if started is not None:
            overhead += int(max(0.0, time.monotonic() - started) * 1000)
        # Syzygy at the root: only the best-ranked moves are searched, scored by the tables.
        tables = root_probe(self._tablebase, board, search_moves)
        self._tablebase_note = tables.describe() if tables is not None else ""
        if tables is not None:
            search_moves = tables.moves
            if on_iteration is not None:
                report = on_iteration
                on_iteration = lambda info: report(tables.rescore_info(info))  # noqa: E731
        outcome = self._search.search(
            board,
            _capped(limit, self.config),
            multipv=multipv or self.config.multipv,
            infinite=infinite,
            move_overhead_ms=overhead,
            spent_s=spent_s,
            stop=stop,
            on_iteration=on_iteration,
            search_moves=search_moves,
            move_orders=move_orders,
            disabled_pruning=self.config.no_pruning,
        )
        return tables.rescore(outcome) if tables is not None else outcome

    def play(self, board: chess.Board, limit: chess.engine.Limit) -> chess.Move:
        """The move to play within ``limit``.

        Raises:
            EngineError: when ``board`` has no legal move.
        """
        if self.human.enabled:
            return Engine.play(self, board, limit)
        outcome = self.search(board, limit, multipv=1)
        if outcome.best_move is None:
            raise EngineError(f"no legal move in {board.fen()!r}")
        return outcome.best_move

    def analyse(
        self,
        board: chess.Board,
        limit: chess.engine.Limit,
        *,
        stop: threading.Event | None = None,
    ) -> Analysis:
        """Search and report the best line (and ``multipv`` lines as ``moves``).

        ``stop`` ends the search early (the web board cancels a search when the game moves on).
        """
        if self.human.enabled:
            return self.human.analyse(board, stop=stop)
        return _analysis(board, self.search(board, limit, stop=stop))

    def close(self) -> None:
        """Close the Syzygy tables (the transposition table goes with the object)."""
        if self._tablebase is not None:
            self._tablebase.close()
            self._tablebase = None


def _info_dict(info: SearchInfo, line: SearchLine, turn: chess.Color) -> chess.engine.InfoDict:
    """One PV line of one iteration as python-chess's ``info``."""
    result: chess.engine.InfoDict = {
        "depth": info.depth,
        "seldepth": info.seldepth,
        "multipv": line.multipv,
        "score": chess.engine.PovScore(line.score(), turn),
        "nodes": info.nodes,
        "nps": info.nps,
        "hashfull": info.hashfull,
        "time": info.time_s,
        "pv": list(line.pv),
    }
    if line.bound == "lower":
        result["lowerbound"] = True
    elif line.bound == "upper":
        result["upperbound"] = True
    return result


def _analysis(board: chess.Board, outcome: SearchOutcome) -> Analysis:
    """A search outcome as the protocol's :class:`Analysis` (MultiPV lines as ``moves``)."""
    info = outcome.info
    if not info.lines:
        return Analysis(best_move=outcome.best_move, depth=info.depth, nodes=outcome.nodes)
    best = info.lines[0]
    moves = []
    for line in info.lines:
        cp = line.score().score(mate_score=100_000)
        white_cp = cp if board.turn == chess.WHITE else -(cp or 0)
        moves.append(
            MoveScore(
                move=line.pv[0],
                score=float(white_cp or 0),
                rank=line.multipv,
                pv=line.pv,
                score_cp=line.score_cp,
                mate=line.mate,
            )
        )
    pv = list(best.pv)
    if outcome.ponder is not None and len(pv) < 2 and pv and pv[0] == outcome.best_move:
        pv.append(outcome.ponder)
    return Analysis(
        best_move=outcome.best_move,
        pv=pv,
        score_cp=best.score_cp,
        mate=best.mate,
        depth=info.depth,
        seldepth=info.seldepth,
        nodes=outcome.nodes,
        nps=info.nps,
        time_s=outcome.time_s,
        moves=moves,
    )
