"""Find an engine's bracket on a ladder of opponents, then estimate its Elo.

As in the SOLIS paper (section 4.1): Stockfish levels capped with ``UCI_LimitStrength`` are chosen
"so that each configuration has at least one positive and one negative win rate", and ratings are
fitted with BayesElo. Here:

1. Rungs are ordered by strength (anchored rungs by their nominal Elo, the others by a rough guess
   used only for ordering).
2. Bracket search: a binary search over the rungs with ``games_per_step`` games per probe; a score
   above 50% moves up, otherwise down. It ends with two adjacent rungs, the strongest one beaten and
   the weakest one not beaten (or at an end of the ladder, which the result flags).
3. The two bracketing rungs get ``games_per_rung`` games each; where those longer matches
   contradict the short probes (a rung beaten after all, or not), the bracket steps up or down
   and the next rung gets its games too.
4. Rungs without a nominal rating that were played (Stockfish's ``UCI_Elo`` starts at 1350, so
   weaker engines need lower rungs: a random mover, a one-ply material grabber, Stockfish at a
   tiny node budget, sunfish) are calibrated in the same run: each plays ``calibration_games``
   against the next stronger rung, repeatedly, until an anchored rung is reached. Debian's
   engines (gnuchess, toga2, phalanx) join as extra unanchored rungs the same way
   (CLI: ``--add-rung 'gnuchess guess=1800'``).
5. One BayesElo fit over every game of the run, each ``UCI_Elo`` rung anchored at its nominal
   rating, gives the engine's Elo with a 95% interval.

Stockfish's ``UCI_Elo`` is calibrated at long time controls (CCRL 40/4); at 50 ms per move the
anchors are nominal, exactly as in the paper. All games go to one PGN, and the match layer resumes
from it, so an interrupted ladder run picks up where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import chess.engine

from latentchess.cluster import WorkPool
from latentchess.errors import LatentChessError
from latentchess.evaluation.elo import EloFit, GameOutcome, fit_bayeselo
from latentchess.evaluation.game import Adjudication
from latentchess.evaluation.limits import SideLimit, parse_limit

__all__ = [
    "Rung",
    "LadderResult",
    "PairingRunner",
    "run_ladder",
    "default_rungs",
    "stockfish_elo_range",
    "match_runner",
]

PairingRunner = Callable[[str, str, int], Sequence[GameOutcome]]
"""``play(a, b, n)``: make sure ``n`` games exist between specs ``a`` and ``b`` (playing only
the missing ones) and return all of them."""


@dataclass(frozen=True, kw_only=True)
class Rung:
    """One opponent on the ladder.

    Attributes:
        spec: engine spec (its display name identifies it in the PGN and the fit).
        elo: nominal rating (an anchor of the fit), or None to calibrate it in the run.
        guess: rough strength, only to order the rungs (defaults to ``elo``).
        limit: its own limit string, if it differs from the ladder's (e.g. ``nodes=50``).
    """

    spec: str
    elo: float | None = None
    guess: float | None = None
    limit: str | None = None

    @property
    def strength(self) -> float:
        value = self.elo if self.elo is not None else self.guess
        if value is None:
            raise LatentChessError(f"rung {self.spec!r} needs an elo or a guess to be ordered")
        return value

    @property
    def name(self) -> str:
        from latentchess.engines.registry import parse_engine_spec

        return parse_engine_spec(self.spec).name


@dataclass(frozen=True, kw_only=True)
class LadderResult:
    """Outcome of :func:`run_ladder`.

    Attributes:
        engine: the engine's spec.
        fit: the BayesElo fit over all games of the run.
        below: strongest rung the engine scored above 50% against (None: it beat none).
        above: weakest rung it did not beat (None: it beat them all).
        scores: the engine's score against each rung it played, by rung name.
    """

    engine: str
    fit: EloFit
    below: str | None
    above: str | None
    scores: dict[str, tuple[float, int]] = field(default_factory=dict)

    @property
    def bracketed(self) -> bool:
        """Whether one rung was beaten and one was not (the paper's condition)."""
        return self.below is not None and self.above is not None

    def summary(self) -> str:
        from latentchess.engines.registry import parse_engine_spec

        rating = self.fit.rating(parse_engine_spec(self.engine).name)
        lines = [
            f"{self.engine}: Elo {rating.elo:.0f} "
            f"[{rating.lower:.0f}, {rating.upper:.0f}] ({rating.games} games)",
            f"bracket: beats {self.below or '(no rung)'}, not {self.above or '(no rung)'}",
        ]
        for name, (score, games) in self.scores.items():
            lines.append(f"  vs {name}: {100 * score:.1f}% of {games}")
        if not self.bracketed:
            lines.append("warning: not bracketed; add rungs beyond the end of the ladder")
        return "\n".join(lines)


def _score(outcomes: Sequence[GameOutcome], player: str) -> tuple[float, int]:
    points = sum(o.score if o.white == player else 1.0 - o.score for o in outcomes)
    return (points / len(outcomes) if outcomes else 0.5, len(outcomes))


def run_ladder(
    engine: str,
    rungs: Sequence[Rung],
    play: PairingRunner,
    *,
    games_per_step: int = 20,
    games_per_rung: int = 100,
    calibration_games: int = 40,
    prior_draws: float = 1.0,
    log: Callable[[str], None] = lambda message: None,
) -> LadderResult:
    """Bracket ``engine`` on ``rungs`` and fit its Elo (see the module docstring).

    Args:
        engine: spec of the engine to rate.
        rungs: opponents; at least one must have a nominal ``elo``.
        play: plays games between two specs (see :data:`PairingRunner`).
        games_per_step: games per probe of the bracket search.
        games_per_rung: games against each bracketing rung.
        calibration_games: games per calibration pairing of unanchored rungs.
        prior_draws: BayesElo prior (virtual draws per pair).
        log: receives one line per step.
    """
    from latentchess.engines.registry import parse_engine_spec

    ordered = sorted(rungs, key=lambda r: r.strength)
    if not any(r.elo is not None for r in ordered):
        raise LatentChessError("a ladder needs at least one rung with a nominal elo (an anchor)")
    me = parse_engine_spec(engine).name
    games: dict[tuple[str, str], Sequence[GameOutcome]] = {}

    def versus(index: int, count: int) -> float:
        outcomes = play(engine, ordered[index].spec, count)
        games[engine, ordered[index].spec] = outcomes
        score, total = _score(outcomes, me)
        log(f"{me} vs {ordered[index].name}: {100 * score:.1f}% of {total}")
        return score

    low, high = -1, len(ordered)
    while high - low > 1:
        middle = (low + high) // 2
        if versus(middle, games_per_step) > 0.5:
            low = middle
        else:
            high = middle
    # The probes are short and noisy: with games_per_rung games against each side of the
    # bracket, step it up (or down) while the longer match contradicts the probe.
    scores = {i: versus(i, games_per_rung) for i in (low, high) if 0 <= i < len(ordered)}
    while high < len(ordered) and scores[high] > 0.5:
        low, high = high, high + 1
        if high < len(ordered):
            scores[high] = versus(high, games_per_rung)
    while low >= 0 and scores[low] <= 0.5:
        low, high = low - 1, low
        if low >= 0:
            scores[low] = versus(low, games_per_rung)

    played = {spec for _, spec in games}
    anchored = [i for i, r in enumerate(ordered) if r.elo is not None]
    for start, rung in enumerate(ordered):
        if rung.spec not in played or rung.elo is not None:
            continue
        current = start
        while ordered[current].elo is None:  # walk up to an anchor, one calibration per step
            # (past the strongest rung, calibrate against the strongest anchor instead)
            stronger = current + 1 if current + 1 < len(ordered) else anchored[-1]
            pair = (ordered[current].spec, ordered[stronger].spec)
            if pair not in games:
                games[pair] = play(pair[0], pair[1], calibration_games)
                score, total = _score(games[pair], ordered[current].name)
                log(
                    f"calibration {ordered[current].name} vs {ordered[stronger].name}: "
                    f"{100 * score:.1f}% of {total}"
                )
            if stronger < current:
                break
            current = stronger

    anchors = {r.name: float(r.elo) for r in ordered if r.elo is not None}
    outcomes = [o for pairing in games.values() for o in pairing]
    present = {o.white for o in outcomes} | {o.black for o in outcomes}
    fit = fit_bayeselo(
        outcomes,
        anchors={k: v for k, v in anchors.items() if k in present},
        prior_draws=prior_draws,
    )
    scores = {
        ordered[i].name: _score(games[engine, ordered[i].spec], me)
        for i in range(len(ordered))
        if (engine, ordered[i].spec) in games
    }
    return LadderResult(
        engine=engine,
        fit=fit,
        below=ordered[low].name if low >= 0 else None,
        above=ordered[high].name if high < len(ordered) else None,
        scores=scores,
    )


def stockfish_elo_range(stockfish: str | Path = "stockfish") -> tuple[int, int]:
    """``UCI_Elo``'s declared minimum and maximum (1350 and 2850 for Stockfish 15.1)."""
    from latentchess.engines.external import find_executable

    with chess.engine.SimpleEngine.popen_uci(str(find_executable(stockfish))) as engine:
        option = engine.options.get("UCI_Elo")
        if option is None or option.min is None or option.max is None:
            raise LatentChessError(f"{stockfish!s} declares no UCI_Elo range")
        return int(option.min), int(option.max)


LOWER_RUNGS: tuple[Rung, ...] = (
    Rung(spec="random", guess=0.0),
    Rung(spec="greedy", guess=400.0),
    Rung(spec="stockfish:skill=0,name=stockfish-skill0-nodes30", guess=700.0, limit="nodes=30"),
    Rung(spec="sunfish", guess=1100.0),
)
"""Below Stockfish's UCI_Elo range; the guesses only order them (they are calibrated in the run).
Stockfish's UCI_Elo 1350 already maps to Skill Level 0, so the Stockfish rung here is weakened by a
tiny node budget instead (below about 30 nodes it hardly weakens further: 1 and 5 nodes also won
6/6 against random). Measured here: greedy beat random 7.5/8 and lost 8/8 to Stockfish at 30
nodes; Sunfish at 50 ms scored 5/8 against Stockfish at 30 nodes."""


def default_rungs(
    *,
    step: int = 200,
    stockfish: str | Path = "stockfish",
    lower: Sequence[Rung] = LOWER_RUNGS,
    elo_range: tuple[int, int] | None = None,
) -> list[Rung]:
    """Stockfish ``UCI_Elo`` rungs from its declared minimum to maximum every ``step``, plus
    the (available) lower rungs."""
    from latentchess.engines.registry import ENGINES, parse_engine_spec

    low, high = elo_range or stockfish_elo_range(stockfish)
    levels = list(range(low, high + 1, step))
    if levels[-1] != high:
        levels.append(high)
    rungs = [r for r in lower if ENGINES[parse_engine_spec(r.spec).kind].available()]
    rungs += [Rung(spec=f"stockfish:elo={elo}", elo=float(elo)) for elo in levels]
    return rungs


def match_runner(
    *,
    pgn_path: str | Path,
    limit: SideLimit,
    rungs: Sequence[Rung],
    openings: Sequence[object],
    workers: int,
    opponent_limit: SideLimit | None = None,
    max_plies: int = 600,
    adjudication: Adjudication | None = None,
    event: str = "latentchess ladder",
    progress: bool = True,
    make_player: Callable[[str, SideLimit], object] | None = None,
    pool: WorkPool | None = None,
) -> PairingRunner:
    """A :data:`PairingRunner` that plays real matches, resuming from ``pgn_path``.

    Args:
        pgn_path: every game of the ladder is appended here.
        limit: the rated engine's limit (and every rung's, unless ``opponent_limit`` is given).
        rungs: to look up rung limits by spec.
        openings: the match openings (the same for every pairing).
        workers: concurrent games.
        opponent_limit: the limit of rungs without a limit of their own. The paper's setup is
            the engine at a fixed depth against Stockfish at 50 ms per move.
        max_plies: games still going at this many plies are drawn.
        adjudication: optional early ends (see :class:`~latentchess.evaluation.game.Adjudication`).
        event: PGN Event of the ladder's games.
        progress: progress bars.
        make_player: builds a Player from a spec and limit (default ``Player.from_spec``).
        pool: play every match's games on this cluster (:mod:`latentchess.cluster`) instead of
            ``workers`` threads.
    """
    from latentchess.evaluation.match import MatchConfig, Player, run_match

    rung_limit = opponent_limit or limit
    limits = {r.spec: parse_limit(r.limit) if r.limit else rung_limit for r in rungs}
    build = make_player or Player.from_spec

    def play(a: str, b: str, count: int) -> Sequence[GameOutcome]:
        first = build(a, limits.get(a, limit))
        second = build(b, limits.get(b, limit))
        config = MatchConfig(
            games=count,
            workers=workers,
            event=event,
            progress=progress,
            max_plies=max_plies,
            adjudication=adjudication,
        )
        result = run_match(first, second, openings, config, pgn_path=pgn_path, pool=pool)  # type: ignore[arg-type]
        return [game.outcome() for game in result.games]

    return play
