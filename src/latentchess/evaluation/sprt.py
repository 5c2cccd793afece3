"""Sequential probability ratio test (SPRT) over game pairs: the pentanomial GSPRT.

A match plays every opening twice with the colours reversed (rounds ``2k - 1`` and ``2k``). The
two games of a pair are correlated (an opening that favours one side favours it in both), so the
test treats the *pair* as the unit: player 1 scores 0, 0.5, 1, 1.5 or 2 points in it, and the
counts of the five outcomes are the pentanomial ``[N0, N1, N2, N3, N4]`` (the order fishtest,
OpenBench and fastchess print as ``Ptnml(0-2)``). A pair with one game missing is not counted.

The test is H0: Elo = ``elo0`` against H1: Elo = ``elo1``. Since the pentanomial distribution has
four free parameters and the hypotheses fix only one quantity, it is a *generalized* SPRT: under
each hypothesis the distribution is the maximum likelihood estimate given the observed frequencies
``p̂`` and the hypothesis' constraint, and

    LLR = N * sum_i p̂_i * ln(p1_i / p0_i)        (N pairs)

(M. Van den Bergh, "Comments on Normalized Elo", https://www.cantate.be/Fishtest/
normalized_elo_practical.pdf, the method of fishtest and fastchess). We use this exact MLE rather
than OpenBench's normal approximation because it costs one 1-D root per hypothesis and stays
accurate when there are few pairs, which is where a local test decides.

Models (the per-game pair scores are ``a = 0, 1/4, 1/2, 3/4, 1``):

- ``logistic`` (default): the expected score is ``s = 1 / (1 + 10^(-elo/400))``. The constrained
  MLE is ``p_i = p̂_i / (1 + θ (a_i - s))`` with θ the root of ``sum p̂_i (a_i - s) / (1 + θ (a_i -
  s)) = 0`` (Proposition 1.1 of the note).
- ``normalized``: normalized Elo fixes ``t = (mu - 1/2) / sigma`` (sigma: the standard deviation
  of the pair score), ``t = sqrt(2) * nelo / (800 / ln 10)`` for pairs. The MLE is the fixed point
  of ``p_i = p̂_i / (1 + θ φ_i)`` with ``φ_i = a_i - 1/2 - t sigma (1 + ((a_i - mu) / sigma)^2) / 2``
  (mu, sigma of the current p), θ again a 1-D root (section 4.1 of the note).

Empty cells would make the MLE degenerate; like the references, a zero count is replaced by 0.001
(so ``N`` is the regularised total). Bounds: ``lower = ln(beta / (1 - alpha))``, ``upper =
ln((1 - beta) / alpha)``; H1 is accepted when LLR >= upper, H0 when LLR <= lower. No overshoot
correction (fishtest has one, fastchess does not): the error rates are the nominal ones, slightly
conservative.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import optimize, stats

from latentchess.errors import LatentChessError
from latentchess.evaluation.elo import EloDiff, elo_of_score

__all__ = [
    "PAIR_SCORES",
    "SPRT_MODELS",
    "Pentanomial",
    "SprtConfig",
    "SprtStatus",
    "pentanomial",
    "llr",
    "pentanomial_elo",
    "sprt_status",
]

Pentanomial = tuple[int, int, int, int, int]  # pairs scoring 0, 0.5, 1, 1.5, 2 points
Model = Literal["logistic", "normalized"]

SPRT_MODELS: tuple[Model, ...] = ("logistic", "normalized")
PAIR_SCORES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])  # a pair's points / 2, per outcome
_REGULARISED_ZERO = 1e-3
_NELO_PER_T = 800.0 / math.log(10.0)  # normalized Elo = t * 800 / ln 10 (per game)


@dataclass(frozen=True, kw_only=True)
class SprtConfig:
    """An SPRT: H0 Elo = ``elo0`` against H1 Elo = ``elo1``.

    Attributes:
        elo0: Elo difference under H0 (usually 0: "no gain").
        elo1: Elo difference under H1 (the gain worth detecting), above ``elo0``.
        alpha: probability of accepting H1 when H0 holds (false positive).
        beta: probability of accepting H0 when H1 holds (false negative).
        model: ``logistic`` Elo or ``normalized`` Elo (see the module docstring).
    """

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05
    model: Model = "logistic"

    def __post_init__(self) -> None:
        if not self.elo0 < self.elo1:
            raise LatentChessError(
                f"SPRT needs elo0 < elo1, got elo0={self.elo0!r}, elo1={self.elo1!r}"
            )
        for name, value in (("alpha", self.alpha), ("beta", self.beta)):
            if not 0.0 < value < 0.5:
                raise LatentChessError(f"SPRT {name} must lie in (0, 0.5), got {value!r}")
        if self.model not in SPRT_MODELS:
            raise LatentChessError(
                f"unknown SPRT model {self.model!r}; known: {', '.join(SPRT_MODELS)}"
            )
        if self.model == "logistic" and max(abs(self.elo0), abs(self.elo1)) >= 1200:
            raise LatentChessError(f"SPRT Elo bounds must lie within +-1200, got {self!r}")

    @property
    def lower(self) -> float:
        """LLR at or below which H0 is accepted: ``ln(beta / (1 - alpha))``."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        """LLR at or above which H1 is accepted: ``ln((1 - beta) / alpha)``."""
        return math.log((1.0 - self.beta) / self.alpha)

    def header(self) -> str:
        """The test's parameters, as in the ``SPRT`` PGN tag."""
        return (
            f"elo0={self.elo0:g} elo1={self.elo1:g} alpha={self.alpha:g} beta={self.beta:g} "
            f"model={self.model}"
        )


@dataclass(frozen=True, kw_only=True)
class SprtStatus:
    """Where a test stands after some pairs.

    Attributes:
        config: the test.
        counts: the pentanomial of the complete pairs.
        llr: log-likelihood ratio of H1 over H0.
        decision: ``"H1"``, ``"H0"``, or None while the LLR lies between the bounds.
        unfinished: first rounds of pairs with one game played (not counted).
    """

    config: SprtConfig
    counts: Pentanomial
    llr: float
    decision: Literal["H0", "H1"] | None
    unfinished: tuple[int, ...] = ()

    @property
    def pairs(self) -> int:
        """Complete pairs counted."""
        return sum(self.counts)

    def line(self) -> str:
        """Short progress text: ``LLR 1.23 (-2.94, 2.94) [0, 10]``."""
        c = self.config
        return f"LLR {self.llr:.2f} ({c.lower:.2f}, {c.upper:.2f}) [{c.elo0:g}, {c.elo1:g}]"

    def to_dict(self) -> dict[str, object]:
        """For the result JSON."""
        elo = pentanomial_elo(self.counts)
        return {
            "elo0": self.config.elo0,
            "elo1": self.config.elo1,
            "alpha": self.config.alpha,
            "beta": self.config.beta,
            "model": self.config.model,
            "llr": self.llr,
            "lower": self.config.lower,
            "upper": self.config.upper,
            "pentanomial": list(self.counts),
            "pairs": self.pairs,
            "games": 2 * self.pairs,
            "unfinished_pairs": [[r, r + 1] for r in self.unfinished],
            "decision": self.decision,
            "elo": {"diff": elo.elo, "lower": elo.lower, "upper": elo.upper},
        }


def pentanomial(points: Mapping[int, float]) -> tuple[Pentanomial, tuple[int, ...]]:
    """Pentanomial counts from player 1's points per round.

    Args:
        points: round number (1-based) -> player 1's points in that game (0, 0.5 or 1). Rounds
            ``2k - 1`` and ``2k`` are one pair (same opening, colours reversed).

    Returns:
        The counts of complete pairs, and the first rounds of pairs with only one game.
    """
    counts = [0] * 5
    unfinished: list[int] = []
    for first in sorted({r - (r + 1) % 2 for r in points}):  # odd round starting each pair
        if first in points and first + 1 in points:
            total = points[first] + points[first + 1]
            if total * 2 not in (0, 1, 2, 3, 4):
                raise LatentChessError(f"pair of rounds {first}-{first + 1} scored {total!r}")
            counts[int(total * 2)] += 1
        else:
            unfinished.append(first)
    return (counts[0], counts[1], counts[2], counts[3], counts[4]), tuple(unfinished)


def _frequencies(counts: Pentanomial) -> tuple[float, np.ndarray]:
    if len(counts) != 5 or any(c < 0 for c in counts):
        raise LatentChessError(f"expected five non-negative pair counts, got {counts!r}")
    regularised = np.array([c if c > 0 else _REGULARISED_ZERO for c in counts], dtype=np.float64)
    total = float(regularised.sum())
    return total, regularised / total


def _tilted(p_hat: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """``p̂ / (1 + θ φ)`` for the θ in ``(-1/max φ, -1/min φ)`` that makes it sum to one.

    ``sum p̂ φ / (1 + θ φ)`` falls strictly from +inf to -inf on that interval (φ takes both signs
    and every ``p̂ > 0``), so the root exists and is unique.
    """
    low, high = -1.0 / phi.max(), -1.0 / phi.min()
    margin = 1e-12 * (high - low)

    def slope(theta: float) -> float:
        return float(np.sum(p_hat * phi / (1.0 + theta * phi)))

    theta = optimize.brentq(slope, low + margin, high - margin, xtol=1e-15, rtol=1e-15)
    return p_hat / (1.0 + theta * phi)


def _mle_logistic(p_hat: np.ndarray, score: float) -> np.ndarray:
    return _tilted(p_hat, PAIR_SCORES - score)


def _mle_normalized(p_hat: np.ndarray, t: float) -> np.ndarray:
    p = np.full(5, 0.2)
    for _ in range(10_000):
        mu = float(np.dot(PAIR_SCORES, p))
        sigma = math.sqrt(float(np.dot(p, (PAIR_SCORES - mu) ** 2)))
        phi = PAIR_SCORES - 0.5 - 0.5 * t * sigma * (1.0 + ((PAIR_SCORES - mu) / sigma) ** 2)
        new = _tilted(p_hat, phi)
        if np.max(np.abs(new - p)) < 1e-12:
            return new
        p = new
    raise LatentChessError(f"normalized-Elo MLE did not converge for t={t!r}, p̂={p_hat!r}")


def _expected_score(elo: float) -> float:
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def llr(counts: Pentanomial, elo0: float, elo1: float, model: Model = "logistic") -> float:
    """Log-likelihood ratio of Elo ``elo1`` over ``elo0`` given pentanomial pair counts.

    Zero counts are regularised to 0.001 (see the module docstring); no pairs give 0.
    """
    if sum(counts) == 0:
        return 0.0
    total, p_hat = _frequencies(counts)
    if model == "logistic":
        p0 = _mle_logistic(p_hat, _expected_score(elo0))
        p1 = _mle_logistic(p_hat, _expected_score(elo1))
    elif model == "normalized":
        p0 = _mle_normalized(p_hat, math.sqrt(2.0) * elo0 / _NELO_PER_T)
        p1 = _mle_normalized(p_hat, math.sqrt(2.0) * elo1 / _NELO_PER_T)
    else:
        raise LatentChessError(f"unknown SPRT model {model!r}; known: {', '.join(SPRT_MODELS)}")
    return total * float(np.sum(p_hat * (np.log(p1) - np.log(p0))))


def sprt_status(config: SprtConfig, points: Mapping[int, float]) -> SprtStatus:
    """The test's state given player 1's points per round (see :func:`pentanomial`)."""
    counts, unfinished = pentanomial(points)
    value = llr(counts, config.elo0, config.elo1, config.model)
    decision: Literal["H0", "H1"] | None = None
    if value >= config.upper:
        decision = "H1"
    elif value <= config.lower:
        decision = "H0"
    return SprtStatus(
        config=config, counts=counts, llr=value, decision=decision, unfinished=unfinished
    )


def pentanomial_elo(counts: Pentanomial, *, confidence: float = 0.95) -> EloDiff:
    """Logistic Elo difference from pair counts, with an interval from the pair-score variance.

    The variance of the mean comes from the pairs (not from single games), which is what the
    pairing buys: correlated games of a pair do not count as independent evidence.
    """
    pairs = sum(counts)
    if pairs == 0:
        return EloDiff(elo=0.0, lower=-math.inf, upper=math.inf, score=0.5, games=0)
    freq = np.asarray(counts, dtype=np.float64) / pairs
    mean = float(np.dot(freq, PAIR_SCORES))
    variance = float(np.dot(freq, (PAIR_SCORES - mean) ** 2))
    half = float(stats.norm.ppf(0.5 + confidence / 2.0)) * math.sqrt(variance / pairs)
    return EloDiff(
        elo=elo_of_score(mean),
        lower=elo_of_score(mean - half),
        upper=elo_of_score(mean + half),
        score=mean,
        games=2 * pairs,
    )
