"""``hybrid``: latent intuition proposes, alpha-beta validates (the SOLIS paper's future work).

Spec examples (``latentchess uci --engine hybrid:mode=verify,k=3``)::

    hybrid                         mode=verify, k=3, eval=hce, the default latent model
    hybrid:mode=verify,k=5         root candidates: the latent top 5 validated by alpha-beta
    hybrid:mode=order              latent move ordering at the alpha-beta's first two plies
    hybrid:mode=horizon,depth=3    a 3-ply alpha-beta whose leaves the latent model scores
    hybrid:mode=verify,policy=human   the Chessformer policy proposes the root candidates

Modes (see :mod:`latentchess.search.hybrid` for the seams):

``verify``
    The proposer (the latent search, iterative deepening up to ``latent_depth`` within
    ``propose_share`` of the time) ranks the root moves. Alpha-beta then searches every move;
    when its favourite is among the proposer's top ``k`` it is played. Otherwise a second search,
    restricted to the top k (``searchmoves``, the last ``rest_share`` of the time, the
    transposition table warm), validates the best candidate: alpha-beta's favourite is admitted
    only when it beats that by ``admit_cp`` (the safety net), else the candidate is played.
``order``
    The proposer's ranking orders the root, and one scorer batch ranks the replies to the
    proposer's first ``order_roots`` moves; alpha-beta searches every move, consulting these
    orders at its first two plies (latent favourites tried earlier and reduced less). Under a
    time limit alpha-beta gets the caller's limit with the latent time counted as spent, so the
    native time manager budgets the move as it does for ``ab`` alone.
``horizon``
    :class:`~latentchess.search.hybrid.HorizonSearch`: full-width alpha-beta of ``depth`` plies
    (iterative deepening under the time limit) with latent leaf scores in batches.

Counters (:class:`HybridCounters`, deterministic for fixed-depth/node limits) say how often the
latent view was overruled: reported as a UCI ``info string`` after each search and by the
benchmarks.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import chess
import chess.engine

from latentchess.engines.base import Analysis, Engine, EngineOption, MoveScore, button, combo, spin
from latentchess.engines.default import DEFAULT_EVALUATOR
from latentchess.errors import EngineError
from latentchess.search.hybrid import (
    BatchScorer,
    Candidate,
    CandidateProposer,
    HorizonSearch,
    ply_one_orders,
)
from latentchess.search.policy import PolicyProposer

if TYPE_CHECKING:
    from latentchess.engines.ab import AlphaBetaEngine
    from latentchess.engines.latent import LatentEngine
    from latentchess.search.base import SearchResult

__all__ = ["HYBRID_MODES", "HybridConfig", "HybridCounters", "HybridEngine", "LatentProposer"]

HYBRID_MODES = ("verify", "order", "horizon")
_MATE_CP = 100_000
_DEFAULT_DEPTH = 8
"""Alpha-beta depth when a caller gives no depth, node or time limit."""
_CHILDREN_PER_POSITION = 35
"""Typical legal moves per position, to price a ply-1 order before scoring it."""


@dataclass(frozen=True, kw_only=True)
class HybridConfig:
    """Settings of a :class:`HybridEngine`.

    Attributes:
        mode: ``verify``, ``order`` or ``horizon`` (module docstring).
        k: root candidates validated (verify); 0 means every legal move.
        latent_depth: deepest latent iteration of the proposer (it stops earlier at its deadline).
        propose_share: share of the move's time the proposer may use (verify, order).
        rest_share: share of the remaining time for the restricted search (verify).
        admit_cp: margin by which alpha-beta's favourite must beat the best of the top k when it
            lies outside them (verify; otherwise the best of the top k is played).
        order_roots: root moves whose replies the scorer ranks (order).
        depth: plies of the horizon search (horizon).
        evaluator: the alpha-beta's static evaluation (``nnue``, the default as for ``ab``;
            ``hce``, ``pesto`` or an NNUE model directory). The committed hybrid ladders were
            played with ``eval=hce``.
        hash_mb: transposition table size in MB.
        move_overhead_ms: kept back from every time limit.
    """

    mode: str = "verify"
    k: int = 3
    latent_depth: int = 2
    propose_share: float = 0.15
    rest_share: float = 0.25
    admit_cp: int = 20
    order_roots: int = 4
    depth: int = 2
    evaluator: str = DEFAULT_EVALUATOR
    hash_mb: int = 16
    move_overhead_ms: int = 10

    def __post_init__(self) -> None:
        if self.mode not in HYBRID_MODES:
            raise EngineError(
                f"unknown hybrid mode {self.mode!r}; known: {', '.join(HYBRID_MODES)}"
            )
        if self.k < 0:
            raise EngineError(f"hybrid k must be >= 0 (0: all moves), got {self.k!r}")
        if not 1 <= self.latent_depth <= 8:
            raise EngineError(f"hybrid latent_depth must lie in [1, 8], got {self.latent_depth!r}")
        if not 1 <= self.depth <= 4:
            raise EngineError(f"hybrid depth must lie in [1, 4], got {self.depth!r}")
        for name in ("propose_share", "rest_share"):
            value = getattr(self, name)
            if not 0.0 < value < 1.0:
                raise EngineError(f"hybrid {name} must lie in (0, 1), got {value!r}")
        for name in ("admit_cp", "order_roots", "move_overhead_ms"):
            if getattr(self, name) < 0:
                raise EngineError(f"hybrid {name} must be >= 0, got {getattr(self, name)!r}")


@dataclass(kw_only=True)
class HybridCounters:
    """How the latent view and alpha-beta agreed, over the searches since the last reset.

    Attributes:
        searches: searches with at least two legal moves.
        latent_first: the played move was the proposer's favourite.
        outside_top_k: the played move was outside the proposer's top k.
        admitted: verify: the safety net admitted a move from outside the top k.
        rest_better: verify: alpha-beta's own favourite was outside the top k.
        latent_kept: verify: ... and within ``admit_cp`` of the best top-k move, which was played
            instead (the latent view overruling alpha-beta's).
    """

    searches: int = 0
    latent_first: int = 0
    outside_top_k: int = 0
    admitted: int = 0
    rest_better: int = 0
    latent_kept: int = 0

    def text(self) -> str:
        """One line for a UCI ``info string``."""
        return " ".join(f"{f.name} {getattr(self, f.name)}" for f in dataclasses.fields(self))


class LatentProposer:
    """The latent search as a :class:`CandidateProposer` (its cache persists across moves).

    Args:
        engine: the latent engine whose searcher ranks the moves.
        depth: deepest iteration (the deadline usually stops it earlier).
    """

    def __init__(self, engine: LatentEngine, *, depth: int = 2) -> None:
        self.engine = engine
        self.depth = depth
        self.last: SearchResult | None = None

    def propose(self, board: chess.Board, deadline: float | None) -> list[Candidate]:
        """Every legal move, the latent search's favourite first."""
        from latentchess.engines.latent import ranked_root_moves

        result = self.engine.searcher.search(
            board, depth=self.depth, deadline=deadline, soft_deadline=deadline
        )
        self.last = result
        sign = 1.0 if board.turn == chess.WHITE else -1.0
        return [
            Candidate(
                move=root.move,
                score=sign * (root.static if root.value is None else root.value),
                rank=rank,
            )
            for rank, root in enumerate(ranked_root_moves(result, board.turn))
        ]


def _cp(line: Any) -> int:
    """A validated line's score as one comparable number (mates far beyond any centipawns)."""
    if line.mate is not None:
        return (_MATE_CP - abs(line.mate)) * (1 if line.mate > 0 else -1)
    return int(line.score_cp or 0)


def _axis_cp(value: float) -> int:
    """A side-to-move axis value as rough centipawns (linear win-probability map)."""
    from latentchess.winprob import centipawns

    probability = min(max((value + 1.0) / 2.0, 1e-4), 1 - 1e-4)
    return round(min(max(centipawns(probability), -10000.0), 10000.0))


class HybridEngine(Engine):
    """Latent planning and the native alpha-beta in one engine (see the module docstring).

    Args:
        config: its settings.
        proposer: ranks root moves (verify, order).
        scorer: batched position scorer (order: ply-1 orders; horizon: leaves).
        draw_score: the scorer's value of a draw, White's view.
        name: display name.
    """

    def __init__(
        self,
        config: HybridConfig,
        *,
        proposer: CandidateProposer,
        scorer: BatchScorer,
        draw_score: float = 0.0,
        name: str = "hybrid",
    ) -> None:
        from latentchess.engines.ab import AlphaBetaConfig, AlphaBetaEngine

        self.config = config
        self.name = name
        self.proposer = proposer
        self.scorer = scorer
        self.draw_score = draw_score
        self.counters = HybridCounters()
        self.alpha_beta: AlphaBetaEngine = AlphaBetaEngine(
            AlphaBetaConfig(evaluator=config.evaluator, hash_mb=config.hash_mb, move_overhead_ms=0),
            name=f"{name}/ab",
        )
        self.horizon = HorizonSearch(scorer, draw_score=draw_score)
        self.last_candidates: list[Candidate] = []
        self._seconds_per_position = 1e-3  # the scorer's cost, measured as it runs

    @classmethod
    def from_options(cls, name: str = "hybrid", **options: str) -> HybridEngine:
        """Build from spec keys: the :class:`HybridConfig` fields (``eval`` = ``evaluator``,
        ``hash`` = ``hash_mb``, ``overhead`` = ``move_overhead_ms``), ``model`` (a latent
        model directory; default: the shipped model) and ``precision`` (the latent model's,
        default ``auto``).

        Raises:
            EngineError: on an unknown key or a bad value.
        """
        from latentchess.engines.latent import LatentEngine

        aliases = {"eval": "evaluator", "hash": "hash_mb", "overhead": "move_overhead_ms"}
        types = {f.name: type(f.default) for f in dataclasses.fields(HybridConfig)}
        fields: dict[str, Any] = {}
        model = policy = None
        precision = "auto"
        policy_elo: str | float | None = None
        for key, value in options.items():
            field_name = aliases.get(key.lower(), key.lower())
            if field_name == "model":
                model = value
                continue
            if field_name == "policy":
                policy = value
                continue
            if field_name == "policy_elo":
                policy_elo = value
                continue
            if field_name == "precision":
                precision = value
                continue
            if field_name not in types:
                raise EngineError(
                    f"unknown hybrid option {key!r}; known: {', '.join(sorted(types))}, model, "
                    "precision, policy, policy_elo"
                )
            try:
                fields[field_name] = types[field_name](value)
            except ValueError:
                raise EngineError(
                    f"hybrid option {key!r} needs a {types[field_name].__name__}, got {value!r}"
                ) from None
        config = HybridConfig(**fields)
        latent = LatentEngine.from_options(model, precision=precision)
        # The first inference of a fresh model is slow (about 0.2 s): pay it here, not on move 1.
        latent.score_boards([chess.Board()])
        proposer: CandidateProposer = LatentProposer(latent, depth=config.latent_depth)
        if policy is not None:  # the Chessformer policy proposes the root candidates
            from latentchess.search.policy import load_policy

            try:
                elo = None if policy_elo is None else float(policy_elo)
            except ValueError:
                raise EngineError(
                    f"hybrid option policy_elo needs a number, got {policy_elo!r}"
                ) from None
            proposer = load_policy(policy, elo=elo)
        elif policy_elo is not None:
            raise EngineError("hybrid option policy_elo needs policy=human|engine|DIR")
        return cls(
            config,
            proposer=proposer,
            scorer=latent.model.score_tokens,
            draw_score=latent.config.draw_score,
            name=name,
        )

    # -- time -------------------------------------------------------------------------------------

    def _budget(
        self, board: chess.Board, limit: chess.engine.Limit, started: float
    ) -> float | None:
        """Seconds for this move (None: no time limit), the move overhead already deducted."""
        from latentchess.engines.latent import time_budget

        budget = time_budget(limit, board.turn, overhead_s=self.config.move_overhead_ms / 1000)
        if budget is None:
            return None
        used = time.monotonic() - started
        return max(0.001, budget.soft - used)

    def _ab_limit(self, limit: chess.engine.Limit, seconds: float | None) -> chess.engine.Limit:
        if seconds is None:
            depth = limit.depth
            if depth is None and limit.nodes is None:
                depth = _DEFAULT_DEPTH  # no limit at all: a bounded search, never an endless one
            return chess.engine.Limit(depth=depth, nodes=limit.nodes, mate=limit.mate)
        return chess.engine.Limit(time=max(0.001, seconds), depth=limit.depth, nodes=limit.nodes)

    # -- the modes ---------------------------------------------------------------------------

    def _verify(
        self, board: chess.Board, limit: chess.engine.Limit, started: float, seconds: float | None
    ) -> tuple[chess.Move, Any]:
        config = self.config
        deadline = None if seconds is None else started + config.propose_share * seconds
        candidates = self.proposer.propose(board, deadline)
        self.last_candidates = candidates
        k = len(candidates) if config.k == 0 else min(config.k, len(candidates))
        top = [c.move for c in candidates[:k]]
        remaining = None if seconds is None else max(0.002, started + seconds - time.monotonic())
        first_time = None if remaining is None else remaining * (1 - config.rest_share)
        # Alpha-beta's own view of every move first: the safety net needs it, and when its
        # favourite is among the latent top k there is nothing to decide.
        full = self.alpha_beta.search(board, self._ab_limit(limit, first_time), multipv=1)
        assert full.best_move is not None
        if full.best_move in top:
            return full.best_move, full
        self.counters.rest_better += 1
        rest_time = None if seconds is None else max(0.002, started + seconds - time.monotonic())
        validated = self.alpha_beta.search(
            board, self._ab_limit(limit, rest_time), multipv=1, search_moves=top
        )
        if not validated.info.lines or (
            _cp(full.info.lines[0]) >= _cp(validated.info.lines[0]) + config.admit_cp
        ):
            self.counters.admitted += 1
            return full.best_move, full
        self.counters.latent_kept += 1
        assert validated.best_move is not None
        return validated.best_move, validated

    def _order(
        self, board: chess.Board, limit: chess.engine.Limit, started: float, seconds: float | None
    ) -> tuple[chess.Move, Any]:
        config = self.config
        deadline = None if seconds is None else started + config.propose_share * seconds
        candidates = self.proposer.propose(board, deadline)
        self.last_candidates = candidates
        count = config.order_roots
        if seconds is not None:
            # As many ply-1 orders as another propose_share of the time affords.
            spare = started + 2 * config.propose_share * seconds - time.monotonic()
            count = min(count, int(spare / (_CHILDREN_PER_POSITION * self._seconds_per_position)))
        roots = [c.move for c in candidates[: max(count, 0)]]
        orders: dict[int, list[chess.Move]] = {}
        if roots:
            began = time.monotonic()
            orders = ply_one_orders(board, roots, self.scorer, draw_score=self.draw_score)
            positions = sum(len(order) for order in orders.values())
            per = (time.monotonic() - began) / max(positions, 1)
            self._seconds_per_position = 0.7 * self._seconds_per_position + 0.3 * per
        from latentchess.core.board import Board

        orders[Board.from_chess(board).zobrist_key()] = [c.move for c in candidates]
        # With a time limit, alpha-beta gets the caller's limit and the time already spent: the
        # native time manager budgets the move exactly as it does for `ab` alone (clocks,
        # increments, stopping early once the best move has settled), and the latent work
        # comes out of that budget.
        outcome = self.alpha_beta.search(
            board,
            self._ab_limit(limit, None) if seconds is None else limit,
            move_orders=orders,
            move_overhead_ms=config.move_overhead_ms,
            spent_s=time.monotonic() - started,
        )
        assert outcome.best_move is not None
        return outcome.best_move, outcome

    # -- the Engine protocol ----------------------------------------------------------------

    def analyse(self, board: chess.Board, limit: chess.engine.Limit) -> Analysis:
        """Search ``board`` in the configured mode and report the move and its line.

        Raises:
            EngineError: when ``board`` has no legal move.
        """
        started = time.monotonic()
        legal = list(board.legal_moves)
        if not legal:
            raise EngineError(f"no legal move in {board.fen()!r}")
        seconds = self._budget(board, limit, started)
        if len(legal) == 1:
            return Analysis(best_move=legal[0], pv=[legal[0]], time_s=time.monotonic() - started)
        self.counters.searches += 1
        if self.config.mode == "horizon":
            return self._analyse_horizon(board, limit, started, seconds)
        search = self._verify if self.config.mode == "verify" else self._order
        move, outcome = search(board, limit, started, seconds)
        self._count(move)
        line = next((ln for ln in outcome.info.lines if ln.pv and ln.pv[0] == move), None)
        pv = list(line.pv) if line is not None else [move]
        return Analysis(
            best_move=move,
            pv=pv,
            score_cp=None if line is None else line.score_cp,
            mate=None if line is None else line.mate,
            depth=outcome.info.depth,
            nodes=outcome.nodes,
            time_s=time.monotonic() - started,
            moves=[
                MoveScore(move=c.move, score=c.score, rank=c.rank + 1) for c in self.last_candidates
            ],
        )

    def _analyse_horizon(
        self, board: chess.Board, limit: chess.engine.Limit, started: float, seconds: float | None
    ) -> Analysis:
        depth = min(limit.depth or self.config.depth, 4)
        deadline = None if seconds is None else started + seconds
        root_order = None
        if isinstance(self.proposer, PolicyProposer):  # the policy orders the first iteration
            root_order = self.proposer.order(board)
        result = self.horizon.search(board, depth=depth, deadline=deadline, root_order=root_order)
        assert result.move is not None
        ranked = sorted(result.root_values.items(), key=lambda item: -item[1])
        self.last_candidates = [
            Candidate(move=move, score=value, rank=rank)
            for rank, (move, value) in enumerate(ranked)
        ]
        mate = None
        if abs(result.value) > 50:
            plies = round(100 - abs(result.value))
            mate = (plies + 1) // 2 if result.value > 0 else -(plies // 2)
        self._count(result.move)
        return Analysis(
            best_move=result.move,
            pv=result.pv,
            score_cp=None if mate is not None else _axis_cp(result.value),
            mate=mate,
            depth=result.depth,
            nodes=result.positions,
            time_s=time.monotonic() - started,
            moves=[
                MoveScore(move=c.move, score=c.score, rank=c.rank + 1) for c in self.last_candidates
            ],
        )

    def _count(self, move: chess.Move) -> None:
        ranks = {c.move: c.rank for c in self.last_candidates}
        rank = ranks.get(move, 0)
        k = self.config.k or len(self.last_candidates)
        self.counters.latent_first += rank == 0
        self.counters.outside_top_k += rank >= k

    def play(self, board: chess.Board, limit: chess.engine.Limit) -> chess.Move:
        """The move to play within ``limit``."""
        move = self.analyse(board, limit).best_move
        assert move is not None
        return move

    def options(self) -> list[EngineOption]:
        """``HybridMode``, ``HybridK`` and ``Clear Hash``."""
        return [
            combo("HybridMode", self.config.mode, HYBRID_MODES, self._set_mode, "mode"),
            spin("HybridK", self.config.k, 0, 256, self._set_k, "k"),
            button("Clear Hash", self.new_game),
        ]

    def _set_mode(self, mode: str) -> None:
        self.config = dataclasses.replace(self.config, mode=mode)

    def _set_k(self, k: int) -> None:
        self.config = dataclasses.replace(self.config, k=k)

    def info_string(self) -> str:
        """The counters, for a UCI ``info string`` after each search."""
        return f"hybrid {self.config.mode} k {self.config.k} " + self.counters.text()

    def new_game(self) -> None:
        """Forget the previous game (tables and caches)."""
        self.alpha_beta.new_game()
        self.horizon.new_game()
        owner = getattr(self.proposer, "engine", self.proposer)  # the latent engine, or a policy
        new_game = getattr(owner, "new_game", None)
        if new_game is not None:
            new_game()

    def close(self) -> None:
        """Release caches."""
        self.horizon.new_game()
