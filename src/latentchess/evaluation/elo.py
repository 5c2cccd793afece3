"""Elo ratings from game results: BayesElo's model, fitted by maximum likelihood with scipy.

The model (Rémi Coulom's BayesElo): with ``f(d) = 1 / (1 + 10^(-d/400))``, a game between White
rated ``Rw`` and Black rated ``Rb`` ends

    1-0       with probability  f(Rw - Rb + adv - drawelo)
    0-1       with probability  f(Rb - Rw - adv - drawelo)
    1/2-1/2   otherwise,

where ``adv`` (White's advantage) and ``drawelo`` (how drawish the pool is) are estimated with the
ratings. Ratings are identified by anchors (players whose rating is fixed, e.g. every Stockfish
``UCI_Elo`` level at its nominal value) or, without anchors, by a mean-zero constraint (plus an
optional offset). Intervals come from the inverse Hessian of the negative log-likelihood at the
optimum (the observed Fisher information), propagated through the constraint.

Prior: as in BayesElo, every pair of players that met gets ``prior_draws`` virtual draws (half
with each colour). The default here is 1 (BayesElo's is 2). This keeps perfect scores finite (a
player who won every game gets a large but finite rating with a wide interval) and is negligible
for ratings once a pair has played tens of games; it does pull the draw parameter up a little
(measured: 2 virtual draws per pair at 100 games per pair cut the coverage of draw-elo's 95%
interval to 87%, ratings' stayed at 95%). The advantage and draw parameters get weak normal priors
(sd 200 Elo around BayesElo's defaults 32.8 and 97.3): negligible when games determine them, but
without them a set with no real draws has no finite optimum (draw Elo and the rating gaps can grow
together forever). ``prior_draws=0, parameter_prior_sd=None`` is the plain maximum likelihood.

Time odds: a player who is another player given more (or less) thinking time can be declared as
such (``time_odds={"glaurung-4x": ("glaurung", 4.0)}``). Its rating is then not free but tied to
its base player's: ``R(glaurung-4x) = R(glaurung) + slope * log2(4)``, with ``slope`` (Elo per
doubling of time) one more parameter fitted from the games. This is how a rating list places an
engine far stronger than its anchors: the anchor gets enough time to score near 50%, and the
anchor's published rating plus the fitted value of its extra time carry the rating over. The fit
assumes Elo is linear in log time over the odds played; with a single odds level the slope and the
rating are still identified when the same pair also played at equal time.

The score-based Elo difference of a single match (:func:`score_elo`) uses the logistic model
without colour or draw parameters, with a normal-approximation interval on the mean score.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import chess.pgn
import numpy as np
from scipy import optimize, stats
from scipy.special import expit, log_expit

from latentchess.errors import DataFormatError, LatentChessError
from latentchess.textfiles import open_text

__all__ = [
    "GameOutcome",
    "EloDiff",
    "Rating",
    "EloFit",
    "score_elo",
    "read_pgn_outcomes",
    "fit_bayeselo",
    "expected_score",
    "elo_of_score",
]

_RESULTS = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}
_K = math.log(10.0) / 400.0  # d/dx of log10-base logistic, per Elo point
_ADVANTAGE0, _DRAW_ELO0 = 32.8, 97.3  # BayesElo's defaults: starting point and prior centre


@dataclass(frozen=True)
class GameOutcome:
    """One finished game: the players' names and White's score (1, 0.5 or 0)."""

    white: str
    black: str
    score: float


def expected_score(diff: float | np.ndarray) -> float | np.ndarray:
    """Logistic expected score of a player rated ``diff`` Elo above the opponent."""
    return expit(_K * np.asarray(diff, dtype=np.float64))


@dataclass(frozen=True, kw_only=True)
class EloDiff:
    """Elo difference implied by a match score, with its interval.

    Attributes:
        elo: difference (``inf`` when one side scored everything).
        lower: lower end of the interval.
        upper: upper end.
        score: mean score of the first player.
        games: number of games.
    """

    elo: float
    lower: float
    upper: float
    score: float
    games: int

    @property
    def error(self) -> float:
        """Half-width of the interval (a single "+-" number)."""
        return (self.upper - self.lower) / 2.0

    def __str__(self) -> str:
        if not math.isfinite(self.elo):
            return f"{self.elo:+.0f}"
        return f"{self.elo:+.0f} +- {self.error:.0f}"


def elo_of_score(score: float) -> float:
    """The Elo difference whose :func:`expected_score` is ``score`` (-inf at 0, inf at 1)."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def score_elo(wins: int, draws: int, losses: int, *, confidence: float = 0.95) -> EloDiff:
    """Elo difference from a match score (first player's wins, draws, losses)."""
    games = wins + draws + losses
    if games == 0:
        return EloDiff(elo=0.0, lower=-math.inf, upper=math.inf, score=0.5, games=0)
    score = (wins + 0.5 * draws) / games
    variance = (
        wins * (1.0 - score) ** 2 + draws * (0.5 - score) ** 2 + losses * (0.0 - score) ** 2
    ) / games
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    half = z * math.sqrt(variance / games)
    return EloDiff(
        elo=elo_of_score(score),
        lower=elo_of_score(score - half),
        upper=elo_of_score(score + half),
        score=score,
        games=games,
    )


def read_pgn_outcomes(paths: Iterable[str | Path]) -> tuple[list[GameOutcome], int]:
    """Finished games of PGN files, plain or compressed (headers only, so it is fast).

    Returns:
        The outcomes, and the number of games skipped for having no result (``*``).

    Raises:
        DataFormatError: for a game without White/Black names or with an unknown result, or a
            file that cannot be read or decompressed.
    """
    outcomes: list[GameOutcome] = []
    skipped = 0
    for path in paths:
        path = Path(path)
        with open_text(path) as handle:
            index = 0
            while (headers := chess.pgn.read_headers(handle)) is not None:
                index += 1
                result = headers.get("Result", "*")
                if result == "*":
                    skipped += 1
                    continue
                if result not in _RESULTS:
                    raise DataFormatError(f"game {index}: unknown result {result!r}", path=path)
                white, black = headers.get("White", "?"), headers.get("Black", "?")
                if white in ("", "?") or black in ("", "?"):
                    raise DataFormatError(f"game {index}: missing White or Black name", path=path)
                outcomes.append(GameOutcome(white, black, _RESULTS[result]))
    return outcomes, skipped


@dataclass(frozen=True, kw_only=True)
class Rating:
    """A player's fitted rating.

    Attributes:
        name: the player.
        elo: rating.
        lower, upper: interval at the fit's confidence (equal to ``elo`` for anchors).
        games: games played.
        points: points scored.
        draws: games drawn.
        anchored: whether the rating was fixed rather than fitted.
    """

    name: str
    elo: float
    lower: float
    upper: float
    games: int
    points: float
    draws: int
    anchored: bool = False


@dataclass(frozen=True, kw_only=True)
class EloFit:
    """Result of :func:`fit_bayeselo`.

    Attributes:
        ratings: one per player, best first.
        advantage: White's advantage in Elo, with its interval.
        draw_elo: the draw parameter, with its interval.
        confidence: interval level.
        games: games fitted.
        prior_draws: virtual draws per pair of opponents.
        anchors: fixed ratings (empty: mean-zero constraint).
        converged: whether the optimiser reached a stationary point.
        time_odds: players declared as another player with a time factor (name: base, factor).
        time_slope: fitted Elo per doubling of time, with its interval (None without time odds).
    """

    ratings: list[Rating]
    advantage: tuple[float, float, float]
    draw_elo: tuple[float, float, float]
    confidence: float
    games: int
    prior_draws: float
    anchors: dict[str, float]
    converged: bool = True
    time_odds: dict[str, tuple[str, float]] = field(default_factory=dict)
    time_slope: tuple[float, float, float] | None = None

    def rating(self, name: str) -> Rating:
        """The rating of ``name``."""
        for rating in self.ratings:
            if rating.name == name:
                return rating
        raise KeyError(f"no player {name!r} in the fit")

    def table(self) -> str:
        """A plain-text table, best first (as BayesElo's ``ratings`` command prints)."""
        width = max([len(r.name) for r in self.ratings] + [6])
        pct = round(self.confidence * 100)
        lines = [
            f"{'rank':>4}  {'name':<{width}}  {'elo':>6}  {pct}% interval    games  score  draws"
        ]
        for rank, r in enumerate(self.ratings, start=1):
            interval = "anchor" if r.anchored else f"[{r.lower:6.0f}, {r.upper:6.0f}]"
            score = 100 * r.points / max(r.games, 1)
            draws = 100 * r.draws / max(r.games, 1)
            lines.append(
                f"{rank:>4}  {r.name:<{width}}  {r.elo:6.0f}  {interval:<16}  {r.games:5d}"
                f"  {score:4.0f}%  {draws:4.0f}%"
            )
        adv, adv_lo, adv_hi = self.advantage
        draw, draw_lo, draw_hi = self.draw_elo
        lines.append(
            f"White advantage {adv:.1f} [{adv_lo:.1f}, {adv_hi:.1f}], "
            f"draw elo {draw:.1f} [{draw_lo:.1f}, {draw_hi:.1f}], {self.games} games, "
            f"prior {self.prior_draws:g} virtual draws per pair"
        )
        if self.time_slope is not None:
            slope, slope_lo, slope_hi = self.time_slope
            odds = ", ".join(f"{n} = {b} x{f:g}" for n, (b, f) in sorted(self.time_odds.items()))
            lines.append(
                f"time odds ({odds}): {slope:.1f} [{slope_lo:.1f}, {slope_hi:.1f}] Elo per "
                "doubling of time"
            )
        if not self.converged:
            lines.append("warning: the fit did not converge; ratings are unreliable")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "ratings": [r.__dict__ for r in self.ratings],
            "advantage": list(self.advantage),
            "draw_elo": list(self.draw_elo),
            "confidence": self.confidence,
            "games": self.games,
            "prior_draws": self.prior_draws,
            "anchors": self.anchors,
            "converged": self.converged,
            "time_odds": {name: list(odds) for name, odds in self.time_odds.items()},
            "time_slope": None if self.time_slope is None else list(self.time_slope),
        }


def _negative_log_likelihood(
    rating_diff: np.ndarray,
    advantage: float,
    draw_elo: float,
    counts: np.ndarray,
) -> tuple[float, np.ndarray, float, float]:
    """NLL and its derivatives with respect to each pair's (Rw - Rb), adv and drawelo.

    ``counts`` is (P, 3): White wins, draws, Black wins of each (white, black) pair.
    """
    # Everything in log space so that hopeless mismatches (huge rating gaps) stay finite.
    x = rating_diff + advantage  # (P,)
    a = _K * (draw_elo - x)  # p_white = expit(-a): 1 - p_white = expit(a)
    b = _K * (-x - draw_elo)  # p_black = expit(b)
    log_pw, log_pb = log_expit(-a), log_expit(b)
    log_pd = a + np.log(-np.expm1(b - a)) - np.logaddexp(0.0, a) - np.logaddexp(0.0, b)
    wins, draws, losses = counts[:, 0], counts[:, 1], counts[:, 2]
    nll = -float(np.sum(wins * log_pw + draws * log_pd + losses * log_pb))
    # dw = d p_white / d(x - drawelo) = K p_white (1 - p_white); db likewise for p_black.
    log_dw = math.log(_K) + log_pw + log_expit(a)
    log_db = math.log(_K) + log_pb + log_expit(-b)
    dw_pd, db_pd = np.exp(log_dw - log_pd), np.exp(log_db - log_pd)
    w_term = _K * expit(a)  # dw / p_white
    b_term = _K * expit(-b)  # db / p_black
    # d log-likelihood / dx and / d drawelo, per pair
    dll_dx = wins * w_term - losses * b_term + draws * (db_pd - dw_pd)
    dll_dd = -wins * w_term - losses * b_term + draws * (dw_pd + db_pd)
    return nll, -dll_dx, -float(np.sum(dll_dx)), -float(np.sum(dll_dd))


def fit_bayeselo(
    games: Sequence[GameOutcome],
    *,
    anchors: Mapping[str, float] | None = None,
    prior_draws: float = 1.0,
    confidence: float = 0.95,
    offset: float = 0.0,
    advantage: float | None = None,
    draw_elo: float | None = None,
    parameter_prior_sd: float | None = 200.0,
    time_odds: Mapping[str, tuple[str, float]] | None = None,
) -> EloFit:
    """Fit ratings, White advantage and draw Elo to games (see the module docstring).

    Args:
        games: the finished games.
        anchors: fixed ratings by player name; players named here must have played. Without
            anchors the ratings have mean ``offset``.
        prior_draws: virtual draws per pair of players that met.
        confidence: level of the reported intervals.
        offset: mean rating when there are no anchors.
        advantage: fix White's advantage instead of estimating it.
        draw_elo: fix the draw parameter instead of estimating it.
        parameter_prior_sd: width of the weak normal priors on the advantage and draw
            parameters (None: none).
        time_odds: players that are another player with a time factor, by name:
            ``(base player, factor)``; their ratings are the base's plus a fitted Elo per
            doubling of time (see the module docstring).

    Raises:
        LatentChessError: with no games, an anchor who did not play, or players in a part of
            the pairing graph that contains no anchor (their ratings would be undetermined),
            or time odds that name an unknown or anchored player, a base that is itself given
            odds, or a factor that is not positive.
    """
    anchors = dict(anchors or {})
    time_odds = {name: (base, float(factor)) for name, (base, factor) in (time_odds or {}).items()}
    if not games:
        raise LatentChessError("no finished games to fit ratings to")
    names = sorted({g.white for g in games} | {g.black for g in games})
    index = {name: i for i, name in enumerate(names)}
    missing = sorted(set(anchors) - set(names))
    if missing:
        raise LatentChessError(f"anchor(s) {missing!r} played no game; players: {names!r}")
    _check_time_odds(time_odds, names, anchors)
    _check_connected(names, games, anchors, time_odds)

    table: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for g in games:
        cell = table[index[g.white], index[g.black]]
        cell[0 if g.score == 1.0 else 1 if g.score == 0.5 else 2] += 1.0
    if prior_draws > 0:
        met = {tuple(sorted(pair)) for pair in table}
        for i, j in met:
            table[i, j][1] += prior_draws / 2.0
            table[j, i][1] += prior_draws / 2.0
    pairs = np.array(list(table), dtype=np.int64)  # (P, 2)
    counts = np.array(list(table.values()), dtype=np.float64)  # (P, 3)

    # ratings = base + T @ z + slope * doublings: anchors fixed in base; free players in z
    # (mean-zero if no anchor); a player given time odds copies its base player's row and adds
    # slope * log2(factor).
    n = len(names)
    base = np.zeros(n)
    own = [i for i, name in enumerate(names) if name not in time_odds]  # not given odds
    free = [i for i in own if names[i] not in anchors]
    for name, value in anchors.items():
        base[index[name]] = value
    transform = np.zeros((n, len(free) if anchors else len(own) - 1))
    if anchors:
        for column, i in enumerate(free):
            transform[i, column] = 1.0
    else:
        base[:] = offset
        transform[own] = np.vstack([np.eye(len(own) - 1), -np.ones((1, len(own) - 1))])
    doublings = np.zeros(n)
    for name, (base_name, factor) in time_odds.items():
        base[index[name]] = base[index[base_name]]
        transform[index[name]] = transform[index[base_name]]
        doublings[index[name]] = math.log2(factor)
    n_free = transform.shape[1]
    fit_slope = bool(time_odds)
    fit_adv = advantage is None
    fit_draw = draw_elo is None
    at_adv, at_draw = n_free + fit_slope, n_free + fit_slope + fit_adv

    def unpack(theta: np.ndarray) -> tuple[np.ndarray, float, float]:
        ratings = base + transform @ theta[:n_free]
        if fit_slope:
            ratings = ratings + theta[n_free] * doublings
        adv = theta[at_adv] if fit_adv else float(advantage)  # type: ignore[arg-type]
        drw = theta[at_draw] if fit_draw else float(draw_elo)  # type: ignore[arg-type]
        return ratings, float(adv), float(drw)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        ratings, adv, drw = unpack(theta)
        diff = ratings[pairs[:, 0]] - ratings[pairs[:, 1]]
        nll, d_diff, d_adv, d_draw = _negative_log_likelihood(diff, adv, drw, counts)
        if parameter_prior_sd is not None:  # weak normal priors on the two model parameters
            precision = 1.0 / parameter_prior_sd**2
            nll += 0.5 * precision * ((adv - _ADVANTAGE0) ** 2 + (drw - _DRAW_ELO0) ** 2)
            d_adv += precision * (adv - _ADVANTAGE0)
            d_draw += precision * (drw - _DRAW_ELO0)
        d_ratings = np.zeros(n)
        np.add.at(d_ratings, pairs[:, 0], d_diff)
        np.add.at(d_ratings, pairs[:, 1], -d_diff)
        grad = [transform.T @ d_ratings]
        if fit_slope:
            grad.append(np.array([d_ratings @ doublings]))
        if fit_adv:
            grad.append(np.array([d_adv]))
        if fit_draw:
            grad.append(np.array([d_draw]))
        return nll, np.concatenate(grad)

    theta0 = np.concatenate(
        [
            np.zeros(n_free),
            [0.0] if fit_slope else [],
            [_ADVANTAGE0] if fit_adv else [],
            [_DRAW_ELO0] if fit_draw else [],
        ]
    )
    if anchors:
        theta0[:n_free] = float(np.mean(list(anchors.values())))  # start free players mid-pool

    # Optimise over log(drawelo) so the draw parameter stays positive without a bounded method
    # (L-BFGS-B's BLAS calls thrash when other processes load the CPU); intervals come from the
    # Hessian in the original parameters.
    def log_space(phi: np.ndarray) -> tuple[float, np.ndarray]:
        theta = phi.copy()
        if fit_draw:
            theta[-1] = math.exp(min(phi[-1], 10.0))  # drawelo <= e^10: far beyond any real pool
        value, grad = objective(theta)
        if fit_draw:
            grad = grad.copy()
            grad[-1] *= theta[-1]
        return value, grad

    phi0 = theta0.copy()
    if fit_draw:
        phi0[-1] = math.log(theta0[-1])
    result = optimize.minimize(
        log_space, phi0, jac=True, method="BFGS", options={"maxiter": 10_000, "gtol": 1e-7}
    )
    theta = result.x.copy()
    if fit_draw:
        theta[-1] = math.exp(min(theta[-1], 10.0))
    covariance = _covariance(lambda t: objective(t)[1], theta)
    ratings, adv, drw = unpack(theta)
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    # Each rating is linear in (z, slope): its variance is j C j' with j its row of that map.
    jacobian = np.hstack([transform, doublings[:, None]]) if fit_slope else transform
    size = jacobian.shape[1]
    rating_sd = np.sqrt(np.clip(np.diag(jacobian @ covariance[:size, :size] @ jacobian.T), 0, None))

    played: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # games, points, draws
    for g in games:
        for name, points in ((g.white, g.score), (g.black, 1.0 - g.score)):
            played[name][0] += 1
            played[name][1] += points
            played[name][2] += g.score == 0.5
    out = [
        Rating(
            name=name,
            elo=float(ratings[i]),
            lower=float(ratings[i] - z * rating_sd[i]),
            upper=float(ratings[i] + z * rating_sd[i]),
            games=int(played[name][0]),
            points=played[name][1],
            draws=int(played[name][2]),
            anchored=name in anchors,
        )
        for i, name in enumerate(names)
    ]
    out.sort(key=lambda r: -r.elo)

    def interval(position: int | None, value: float) -> tuple[float, float, float]:
        if position is None:
            return (value, value, value)
        sd = math.sqrt(max(covariance[position, position], 0.0))
        return (value, value - z * sd, value + z * sd)

    return EloFit(
        ratings=out,
        advantage=interval(at_adv if fit_adv else None, adv),
        draw_elo=interval(at_draw if fit_draw else None, drw),
        confidence=confidence,
        games=len(games),
        prior_draws=prior_draws,
        anchors=anchors,
        converged=bool(result.success) or float(np.max(np.abs(result.jac))) < 1e-4,
        time_odds=time_odds,
        time_slope=interval(n_free, float(theta[n_free])) if fit_slope else None,
    )


def _covariance(gradient: object, theta: np.ndarray, step: float = 1e-2) -> np.ndarray:
    """Inverse of the Hessian of the NLL, by central differences of its analytic gradient."""
    size = theta.size
    hessian = np.empty((size, size))
    for k in range(size):
        delta = np.zeros(size)
        delta[k] = step
        hessian[:, k] = (gradient(theta + delta) - gradient(theta - delta)) / (2 * step)  # type: ignore[operator]
    hessian = (hessian + hessian.T) / 2.0
    return np.linalg.pinv(hessian)


def _check_time_odds(
    time_odds: Mapping[str, tuple[str, float]], names: list[str], anchors: Mapping[str, float]
) -> None:
    for name, (base, factor) in time_odds.items():
        if name not in names:
            raise LatentChessError(
                f"time odds for {name!r}, who played no game; players: {names!r}"
            )
        if base not in names:
            raise LatentChessError(
                f"time odds: {name!r}'s base player {base!r} played no game; players: {names!r}"
            )
        if name in anchors:
            raise LatentChessError(f"{name!r} is both anchored and given time odds; choose one")
        if base in time_odds:
            raise LatentChessError(
                f"time odds: {name!r}'s base {base!r} is itself given odds; name the player "
                "that plays at the base time instead"
            )
        if not (factor > 0 and math.isfinite(factor)):
            raise LatentChessError(f"time odds for {name!r}: factor {factor!r} must be > 0")


def _check_connected(
    names: list[str],
    games: Sequence[GameOutcome],
    anchors: Mapping[str, float],
    time_odds: Mapping[str, tuple[str, float]] | None = None,
) -> None:
    parent = {name: name for name in names}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for g in games:
        parent[root(g.white)] = root(g.black)
    for name, (base, _) in (time_odds or {}).items():  # a player given odds is tied to its base
        parent[root(name)] = root(base)
    components: dict[str, list[str]] = defaultdict(list)
    for name in names:
        components[root(name)].append(name)
    if anchors:
        orphans = [c for c in components.values() if not any(p in anchors for p in c)]
        if orphans:
            raise LatentChessError(
                f"players {orphans[0]!r} never met an anchored player, directly or indirectly; "
                "their ratings are undetermined (anchor one of them or add games)"
            )
    elif len(components) > 1:
        groups = list(components.values())
        raise LatentChessError(
            f"the games split into {len(groups)} groups that never met ({groups[0]!r}, "
            f"{groups[1]!r}, ...); anchor a player in each group or add games"
        )
