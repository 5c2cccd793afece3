"""Probes of the static evaluators on held-out Lichess positions: what does each one see?

Three measurements, on positions of the shared test suite's Lichess games (never training data),
sampled with a fixed seed, against Stockfish 15.1 at a fixed depth:

1. **Winning captures.** Positions where the side to move has a capture that wins at least a
   minor piece by static exchange (the core's ``see_at_least``, >= 320 cp) and Stockfish's best
   move is such a capture. Each evaluator alone scores every legal child; does it rank the
   winning capture's child first? Wilson 95% intervals, and paired differences to ``sparse-64``
   with bootstrap intervals that resample whole games.
2. **Ranking.** On a separate sample of positions (side to move not in check): Spearman
   correlation with Stockfish's search score and pair accuracy (which of two positions is better
   for White), with game-bootstrap intervals and paired differences; and how often ``sparse-64``
   saturates (positions sharing one of its two extreme scores exactly).
3. **Embedding arithmetic.** Is "a white knight more" one direction? Pairs of legal positions
   that differ by one white knight (a knight removed, or added on an empty square); the mean
   pairwise cosine of the embedding differences against random pairs of positions, what is left
   of it once the advantage axis is projected out, whether adding the mean direction (of half
   the pairs) predicts the other half's positions with the knight better than moving along the
   axis by the same amount or than adding "a white bishop more" (the same construction), and
   whether the axis score moves by what Stockfish says the knight is worth.

Evaluators: the shipped latent encoders' axis scores (PyTorch, float32; ``sparse-64`` also as
the core's int16 encoder that the latent engine searches with), the shipped NNUE and the
hand-crafted evaluation (the core's), and Stockfish's static evaluation (its ``eval`` command,
White's view; it has none for a side in check, so such children get a depth-1 search: check
evasions and quiescence). Checkmate and draws by rule are scored by the rules for every evaluator
(mate best, draws 0, as the latent search does).

Stockfish's answers are cached (JSON lines under ``--cache``), so a rerun is cheap and a killed
run resumes::

    .venv/bin/python benchmarks/latent_probes.py --pgn PATH/lichess_2021-10_sample.pgn \\
        --out benchmarks/results/latent_probes
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import chess
import chess.engine
import chess.pgn
import numpy as np
import numpy.typing as npt

from latentchess.core import _native
from latentchess.core.nnue import load_network
from latentchess.models import load_model
from latentchess.nnue.distil import StaticEvaluator
from latentchess.provenance import git_commit
from latentchess.training.metrics import pair_accuracy, spearman
from latentchess.winprob import WIN_PROB_SCALE, win_probability

FloatArray = npt.NDArray[np.float64]
Evaluator = Callable[[Sequence[str]], FloatArray]
"""FENs -> scores from White's view (higher is better for White), NaN where undefined."""

WEIGHTS = Path(__file__).resolve().parents[1] / "src" / "latentchess" / "weights"
MINOR_PIECE = 320  # the core's SEE value of a knight (see.h: kSeeValue)
MATE_CP = 100_000  # a mate as centipawns, for ranking
REFERENCE = "sparse-64"


# -- positions ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One position of a game: ``game`` (0-based index in the PGN), ``ply``, ``fen``."""

    game: int
    ply: int
    fen: str


def game_positions(pgn: Path, max_games: int | None = None) -> list[Sample]:
    """Every position before each move of the PGN's main lines."""
    samples = []
    with pgn.open(encoding="utf-8") as handle:
        for index in range(max_games or sys.maxsize):
            game = chess.pgn.read_game(handle)
            if game is None:
                break
            board = game.board()
            for ply, move in enumerate(game.mainline_moves()):
                samples.append(Sample(index, ply, board.fen()))
                board.push(move)
    return samples


def winning_captures(fen: str, threshold: int = MINOR_PIECE) -> list[str]:
    """Legal captures (UCI) that win at least ``threshold`` cp by static exchange."""
    position = _native.Position(fen)
    moves = [_native.move_to_uci(bits) for bits in position.legal_captures()]
    return [uci for uci in moves if _native.see_at_least(position, uci, threshold)]


def capture_candidates(samples: Sequence[Sample], seed: int) -> list[tuple[Sample, list[str]]]:
    """Positions with a SEE-winning capture, ordered so that games take turns: every game's first
    (random) candidate, then every game's second, ... (each round in a seeded random order)."""
    rng = random.Random(seed)
    by_game: dict[int, list[tuple[Sample, list[str]]]] = defaultdict(list)
    for sample in samples:
        captures = winning_captures(sample.fen)
        if captures:
            by_game[sample.game].append((sample, captures))
    keyed = []
    for found in by_game.values():
        rng.shuffle(found)
        keyed += [(rank, rng.random(), item) for rank, item in enumerate(found)]
    keyed.sort(key=lambda entry: entry[:2])
    return [item for _, _, item in keyed]


def ranking_sample(samples: Sequence[Sample], count: int, seed: int) -> list[Sample]:
    """``count`` distinct positions (by EPD) whose side to move is not in check and can move."""
    rng = random.Random(seed)
    order = list(samples)
    rng.shuffle(order)
    seen: set[str] = set()
    chosen = []
    for sample in order:
        board = chess.Board(sample.fen)
        epd = board.epd()
        if epd in seen or board.is_check() or board.is_game_over():
            continue
        seen.add(epd)
        chosen.append(sample)
        if len(chosen) == count:
            break
    return chosen


# -- Stockfish, cached --------------------------------------------------------------------------


class Progress:
    """Prints ``done/total``, rate and ETA to stderr at most every ``every`` seconds."""

    def __init__(self, label: str, total: int, every: float = 15.0) -> None:
        self.label, self.total, self.every = label, total, every
        self.start = self.last = time.monotonic()

    def update(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last < self.every and done < self.total:
            return
        self.last = now
        rate = done / max(now - self.start, 1e-9)
        eta = (self.total - done) / rate if rate > 0 else math.inf
        print(
            f"{self.label}: {done}/{self.total}  {rate:.1f}/s  ETA {eta:.0f} s",
            file=sys.stderr,
            flush=True,
        )


class LabelCache:
    """Stockfish answers by key (``"d10:FEN"``, ``"static:FEN"``), appended to a JSON-lines file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.values: dict[str, Any] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except ValueError:  # a line cut short by a killed run
                    continue
                self.values[record["k"]] = record["v"]
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = path.open("a", encoding="utf-8")

    def get(self, key: str) -> Any:
        return self.values.get(key)

    def __contains__(self, key: str) -> bool:
        return key in self.values

    def put(self, key: str, value: Any) -> None:
        self.values[key] = value
        self._handle.write(json.dumps({"k": key, "v": value}) + "\n")
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()


def search_label(engine: chess.engine.SimpleEngine, fen: str, depth: int) -> dict[str, Any]:
    """Stockfish's search at ``depth`` from a cleared hash: White's cp (mate as +-MATE_CP minus
    the distance) and the best move."""
    board = chess.Board(fen)
    info = engine.analyse(board, chess.engine.Limit(depth=depth), game=object())
    score = info["score"].white()
    pv = info.get("pv") or []
    return {"cp": score.score(mate_score=MATE_CP), "best": pv[0].uci() if pv else None}


def cached_search(
    engine: chess.engine.SimpleEngine, cache: LabelCache, fen: str, depth: int
) -> dict[str, Any]:
    """:func:`search_label`, from the cache when it has it."""
    key = f"d{depth}:{fen}"
    if key not in cache:
        cache.put(key, search_label(engine, fen, depth))
    return cache.get(key)


def search_labels(
    engine: chess.engine.SimpleEngine,
    cache: LabelCache,
    fens: Sequence[str],
    depth: int,
    label: str,
) -> list[dict[str, Any]]:
    """:func:`search_label` of each FEN, from the cache where it has them."""
    progress = Progress(label, len(fens))
    out = []
    for done, fen in enumerate(fens, start=1):
        out.append(cached_search(engine, cache, fen, depth))
        progress.update(done)
    return out


# -- evaluators ---------------------------------------------------------------------------------


def latent_evaluator(path: Path) -> tuple[Evaluator, Any]:
    """A latent model's axis score (PyTorch, float32) and the model (for embeddings)."""
    model = load_model(path, precision="fp32")
    return lambda fens: np.asarray(model.score(list(fens)), dtype=np.float64), model


def native_latent_evaluator(path: Path) -> Evaluator:
    """A sparse model's axis score as the core computes it (int16 accumulators): the latent
    engine's own evaluator."""
    from latentchess.search.native import load_native_encoder

    encoder = load_native_encoder(path)
    return lambda fens: np.asarray(encoder.score_fens(list(fens)), dtype=np.float64)


def core_evaluator(name: str) -> Evaluator:
    """The core's ``hce`` or the shipped ``nnue``: centipawns, turned to White's view."""
    network = load_network() if name == "nnue" else None

    def evaluate(fens: Sequence[str]) -> FloatArray:
        out = np.empty(len(fens))
        for i, fen in enumerate(fens):
            position = _native.Position(fen)
            cp = network.evaluate(position) if network else _native.evaluate(position, name)
            out[i] = cp if position.side_to_move() == 0 else -cp
        return out

    return evaluate


class StockfishStatic:
    """Stockfish's static evaluation (``eval``, White's view, cached); a side in check, which it
    does not evaluate statically, gets a depth-1 search instead (counted in ``in_check``)."""

    def __init__(
        self, static: StaticEvaluator, engine: chess.engine.SimpleEngine, cache: LabelCache
    ) -> None:
        self.static, self.engine, self.cache = static, engine, cache
        self.in_check = 0

    def __call__(self, fens: Sequence[str]) -> FloatArray:
        out = np.empty(len(fens))
        progress = Progress("stockfish static", len(fens), every=30.0)
        for i, fen in enumerate(fens):
            key = f"static:{fen}"
            if key not in self.cache:
                self.cache.put(key, self.static.evaluate(fen))
            value = self.cache.get(key)
            if value is None:
                self.in_check += 1
                value = cached_search(self.engine, self.cache, fen, 1)["cp"]
            out[i] = value
            progress.update(i + 1)
        return out


# -- statistics ---------------------------------------------------------------------------------


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (95% by default)."""
    if n == 0:
        return (math.nan, math.nan)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def game_bootstrap(
    groups: npt.NDArray[np.int64],
    statistic: Callable[[npt.NDArray[np.int64]], FloatArray],
    resamples: int,
    seed: int,
) -> FloatArray:
    """``(resamples, K)`` values of ``statistic(rows)`` over resamples of whole groups (games)."""
    rng = np.random.default_rng(seed)
    _, inverse = np.unique(groups, return_inverse=True)
    members = [np.flatnonzero(inverse == g) for g in range(inverse.max() + 1)]
    draws = []
    for _ in range(resamples):
        pick = rng.integers(0, len(members), size=len(members))
        draws.append(statistic(np.concatenate([members[g] for g in pick])))
    return np.asarray(draws)


def interval(values: FloatArray) -> list[float]:
    """The central 95% of bootstrap values."""
    return [
        round(float(np.percentile(values, 2.5)), 4),
        round(float(np.percentile(values, 97.5)), 4),
    ]


# -- probe 1: winning captures ------------------------------------------------------------------


def best_index(values: Sequence[float], rng: random.Random) -> int:
    """Index of the largest value; ties broken uniformly at random."""
    top = max(values)
    tied = [i for i, value in enumerate(values) if value == top]
    return tied[0] if len(tied) == 1 else rng.choice(tied)


def children(fen: str) -> tuple[list[str], list[str], list[float | None]]:
    """(moves, child FENs, rule value for the mover or ``None``) of every legal move: a mate is
    ``+inf``, a draw by rule (stalemate, insufficient material) ``0``."""
    board = chess.Board(fen)
    moves, fens, rules = [], [], []
    for move in board.legal_moves:
        board.push(move)
        rule: float | None = None
        if board.is_checkmate():
            rule = math.inf
        elif board.is_stalemate() or board.is_insufficient_material():
            rule = 0.0
        moves.append(move.uci())
        fens.append(board.fen())
        rules.append(rule)
        board.pop()
    return moves, fens, rules


def mover_values(fen: str, rules: Sequence[float | None], white_scores: FloatArray) -> list[float]:
    """Children's values for the side to move at ``fen``: rule values, else the evaluator's."""
    sign = 1.0 if chess.Board(fen).turn == chess.WHITE else -1.0
    return [
        rule if rule is not None else sign * float(score)
        for rule, score in zip(rules, white_scores, strict=True)
    ]


def capture_probe(
    positions: Sequence[tuple[Sample, str]],
    evaluators: dict[str, Evaluator],
    *,
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """How often each evaluator ranks Stockfish's best (SEE-winning) capture's child first."""
    expanded = [children(sample.fen) for sample, _ in positions]
    flat = [child for _, fens, _ in expanded for child in fens]
    offsets = np.cumsum([0] + [len(fens) for _, fens, _ in expanded])
    any_check = np.array([any(chess.Board(c).is_check() for c in fens) for _, fens, _ in expanded])
    hits: dict[str, npt.NDArray[np.int64]] = {}
    ties: dict[str, int] = {}
    for name, evaluate in evaluators.items():
        tick = time.monotonic()
        scores = evaluate(flat)
        rng = random.Random(seed)
        row, tie_count = [], 0
        for i, ((sample, target), (moves, _, rules)) in enumerate(
            zip(positions, expanded, strict=True)
        ):
            values = mover_values(sample.fen, rules, scores[offsets[i] : offsets[i + 1]])
            tie_count += values.count(max(values)) > 1
            row.append(int(moves[best_index(values, rng)] == target))
        hits[name], ties[name] = np.asarray(row), tie_count
        print(f"capture probe: {name} scored {len(flat)} children in "
              f"{time.monotonic() - tick:.0f} s", file=sys.stderr)  # fmt: skip

    names = list(evaluators)
    matrix = np.stack([hits[name] for name in names], axis=1)  # (N, E)
    games = np.array([sample.game for sample, _ in positions])
    draws = game_bootstrap(games, lambda rows: matrix[rows].mean(axis=0), resamples, seed)
    reference = names.index(REFERENCE)
    n = len(positions)
    table = {}
    for e, name in enumerate(names):
        k = int(matrix[:, e].sum())
        clean = matrix[~any_check, e]
        table[name] = {
            "first": k,
            "rate": round(k / n, 4),
            "wilson95": [round(x, 4) for x in wilson(k, n)],
            "game_bootstrap95": interval(draws[:, e]),
            "ties_at_top": ties[name],
            f"minus_{REFERENCE}": round((k - int(matrix[:, reference].sum())) / n, 4),
            f"minus_{REFERENCE}_95": interval(draws[:, e] - draws[:, reference]),
            "rate_no_child_in_check": round(float(clean.mean()), 4) if len(clean) else None,
        }
    return {
        "positions": n,
        "games": len(np.unique(games)),
        "children": len(flat),
        "positions_without_a_child_in_check": int((~any_check).sum()),
        "evaluators": table,
    }


# -- probe 2: ranking ---------------------------------------------------------------------------


def saturation(scores: FloatArray, labels_cp: FloatArray | None = None) -> dict[str, Any]:
    """Positions sharing the extreme (min or max) score exactly, the most repeated score, and
    the range of Stockfish's scores (``labels_cp``) over the positions at each extreme."""
    values, counts = np.unique(scores, return_counts=True)
    most = int(np.argmax(counts))
    spread = {}
    if labels_cp is not None:
        for name, value in (("max", values[-1]), ("min", values[0])):
            tied = labels_cp[scores == value]
            spread[f"stockfish_cp_at_{name}"] = [float(tied.min()), float(tied.max())]
    return {
        **spread,
        "at_max": int(counts[-1]),
        "at_min": int(counts[0]),
        "max": round(float(values[-1]), 6),
        "min": round(float(values[0]), 6),
        "distinct": len(values),
        "most_repeated": {"value": round(float(values[most]), 6), "count": int(counts[most])},
    }


def ranking_probe(
    samples: Sequence[Sample],
    labels_cp: FloatArray,
    scores: dict[str, FloatArray],
    *,
    delta: float,
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """Spearman and pair accuracy of each evaluator against Stockfish's search scores."""
    p_white = np.asarray(win_probability(labels_cp), dtype=np.float64)
    names = list(scores)

    def statistic(rows: npt.NDArray[np.int64]) -> FloatArray:
        out = []
        for name in names:
            s = scores[name][rows]
            out += [spearman(s, labels_cp[rows]), pair_accuracy(s, p_white[rows], delta=delta)]
        return np.asarray(out)

    games = np.array([sample.game for sample in samples])
    point = statistic(np.arange(len(samples)))
    draws = game_bootstrap(games, statistic, resamples, seed)
    reference = names.index(REFERENCE)
    table = {}
    for e, name in enumerate(names):
        s, a = 2 * e, 2 * e + 1
        table[name] = {
            "spearman": round(float(point[s]), 4),
            "spearman_95": interval(draws[:, s]),
            "pair_accuracy": round(float(point[a]), 4),
            "pair_accuracy_95": interval(draws[:, a]),
            f"spearman_minus_{REFERENCE}_95": interval(draws[:, s] - draws[:, 2 * reference]),
            f"pair_accuracy_minus_{REFERENCE}_95": interval(
                draws[:, a] - draws[:, 2 * reference + 1]
            ),
            "saturation": saturation(scores[name], labels_cp),
        }
    return {
        "positions": len(samples),
        "games": len(np.unique(games)),
        "pair_delta": delta,
        "evaluators": table,
    }


# -- probe 3: embedding arithmetic --------------------------------------------------------------


def piece_pairs(
    samples: Sequence[Sample], count: int, seed: int, piece: chess.PieceType = chess.KNIGHT
) -> dict[str, list[tuple[Sample, str, str]]]:
    """(base sample, FEN without, FEN with) one more white ``piece``: ``remove`` takes one of
    White's off, ``add`` puts one on a random empty square. Both positions must be valid and the
    side to move not in check; each base sample serves one kind, the kinds taking turns."""
    rng = random.Random(seed)
    pairs: dict[str, list[tuple[Sample, str, str]]] = {"remove": [], "add": []}
    for sample in samples:
        board = chess.Board(sample.fen)
        knights = list(board.pieces(piece, chess.WHITE))
        can_remove = bool(knights) and len(pairs["remove"]) < count
        if can_remove and (len(pairs["remove"]) <= len(pairs["add"]) or len(pairs["add"]) >= count):
            kind = "remove"
        elif len(pairs["add"]) < count:
            kind = "add"
        else:
            continue
        edited = board.copy(stack=False)
        if kind == "remove":
            edited.remove_piece_at(rng.choice(knights))
        else:
            empty = [sq for sq in chess.SQUARES if board.piece_at(sq) is None]
            edited.set_piece_at(rng.choice(empty), chess.Piece(piece, chess.WHITE))
        if not edited.is_valid() or edited.is_check() or edited.is_game_over():
            continue
        without, with_knight = (edited, board) if kind == "remove" else (board, edited)
        pairs[kind].append((sample, without.fen(), with_knight.fen()))
        if all(len(found) >= count for found in pairs.values()):
            break
    return pairs


def mean_pairwise_cosine(vectors: FloatArray) -> float:
    """Mean cosine over all distinct pairs of rows (rows of zero length are dropped)."""
    norms = np.linalg.norm(vectors, axis=1)
    unit = vectors[norms > 1e-12] / norms[norms > 1e-12, None]
    gram = unit @ unit.T
    n = len(unit)
    return float((gram.sum() - np.trace(gram)) / (n * (n - 1)))


def resampled_pairwise_cosine(vectors: FloatArray, resamples: int, seed: int) -> list[float]:
    """95% interval of :func:`mean_pairwise_cosine` over resamples of the rows (a row drawn twice
    is never paired with itself)."""
    norms = np.linalg.norm(vectors, axis=1)
    unit = vectors[norms > 1e-12] / norms[norms > 1e-12, None]
    gram = unit @ unit.T
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        rows = rng.integers(0, len(unit), size=len(unit))
        distinct = rows[:, None] != rows[None, :]
        values.append(gram[np.ix_(rows, rows)][distinct].mean())
    return interval(np.asarray(values))


def pearson(a: FloatArray, b: FloatArray) -> float:
    """Pearson correlation (``nan`` when either side is constant)."""
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    return float(np.corrcoef(a, b)[0, 1])


def mean_interval(values: FloatArray, resamples: int, seed: int) -> list[float]:
    """95% bootstrap interval of the mean of ``values``."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, len(values), size=(resamples, len(values)))
    return interval(values[rows].mean(axis=1))


def arithmetic_probe(
    model: Any,
    pairs: Sequence[tuple[Sample, str, str]],
    random_fens: Sequence[str],
    sf_without: FloatArray,
    sf_with: FloatArray,
    control: Sequence[tuple[Sample, str, str]],
    *,
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """Consistency of the knight direction, its use as arithmetic, and its effect on the score.

    ``control``: pairs that differ by another piece (a bishop): is the direction the knight's, or
    any minor piece's?"""
    without = np.asarray(model.embed([p[1] for p in pairs]), dtype=np.float64)  # (N, D)
    with_knight = np.asarray(model.embed([p[2] for p in pairs]), dtype=np.float64)
    diff = with_knight - without  # (N, D)
    axis = np.asarray(model.axis, dtype=np.float64)
    axis /= np.linalg.norm(axis)
    residual = diff - np.outer(diff @ axis, axis)  # the part of each difference off the axis
    moved = np.linalg.norm(diff, axis=1) > 1e-9  # a saturated encoder may not see the knight

    rng = np.random.default_rng(seed)
    emb = np.asarray(model.embed(list(random_fens)), dtype=np.float64)
    i = rng.integers(0, len(emb), size=len(pairs))
    j = (i + rng.integers(1, len(emb), size=len(pairs))) % len(emb)  # never i itself
    random_diff = emb[i] - emb[j]
    random_residual = random_diff - np.outer(random_diff @ axis, axis)

    control_diff = np.asarray(model.embed([p[2] for p in control]), dtype=np.float64) - np.asarray(
        model.embed([p[1] for p in control]), dtype=np.float64
    )  # (M, D)
    control_direction = control_diff.mean(axis=0)

    # Arithmetic on held-out pairs: the mean direction of one half, applied to the other half.
    half = len(pairs) // 2
    direction = diff[:half].mean(axis=0)
    test_without, test_with = without[half:], with_knight[half:]

    def closeness(predicted: FloatArray) -> FloatArray:
        unit = predicted / np.linalg.norm(predicted, axis=1, keepdims=True)
        return np.sum(unit * test_with, axis=1)  # (N - half,)

    along_axis = np.outer(np.full(len(test_without), direction @ axis), axis)
    by_direction = closeness(test_without + direction)
    by_axis = closeness(test_without + along_axis)
    by_control = closeness(test_without + control_direction)

    def cosine(a: FloatArray, b: FloatArray) -> float:
        return round(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))), 4)

    def off_axis(v: FloatArray) -> FloatArray:
        return v - (v @ axis) * axis

    def to_cp(cosines: FloatArray) -> FloatArray:
        calibration = model.metadata["calibration"]
        logit = calibration["slope"] * cosines + calibration["intercept"]
        return logit / WIN_PROB_SCALE

    score_without = without @ axis
    score_with = with_knight @ axis
    model_cp = to_cp(score_with) - to_cp(score_without)
    sf_cp = sf_with - sf_without
    finite = (np.abs(sf_with) < MATE_CP / 2) & (np.abs(sf_without) < MATE_CP / 2)
    balanced = finite & (np.abs(sf_without) <= 200)

    def follows(mask: npt.NDArray[np.bool_]) -> dict[str, Any]:
        if mask.sum() < 3:
            return {"pairs": int(mask.sum())}
        return {
            "pairs": int(mask.sum()),
            "stockfish_cp_median": round(float(np.median(sf_cp[mask])), 1),
            "model_cp_median": round(float(np.median(model_cp[mask])), 1),
            "axis_score_change_mean": round(float(np.mean((score_with - score_without)[mask])), 4),
            "axis_score_change_positive": round(
                float(np.mean((score_with - score_without)[mask] > 0)), 4
            ),
            "pearson_cp": round(pearson(model_cp[mask], sf_cp[mask]), 4),
            "spearman_cp": round(spearman(model_cp[mask], sf_cp[mask]), 4),
        }

    return {
        "pairs": len(pairs),
        "difference_norm_mean": round(float(np.linalg.norm(diff, axis=1).mean()), 4),
        "random_difference_norm_mean": round(float(np.linalg.norm(random_diff, axis=1).mean()), 4),
        "mean_pairwise_cosine": round(mean_pairwise_cosine(diff), 4),
        "mean_pairwise_cosine_95": resampled_pairwise_cosine(diff, resamples, seed),
        "random_pairs_mean_pairwise_cosine": round(mean_pairwise_cosine(random_diff), 4),
        "off_axis_mean_pairwise_cosine": round(mean_pairwise_cosine(residual), 4),
        "off_axis_mean_pairwise_cosine_95": resampled_pairwise_cosine(residual, resamples, seed),
        "random_off_axis_mean_pairwise_cosine": round(mean_pairwise_cosine(random_residual), 4),
        "unchanged_embeddings": int((~moved).sum()),
        "axis_share_of_difference": round(
            float(np.mean((diff[moved] @ axis) ** 2 / np.sum(diff[moved] ** 2, axis=1))), 4
        ),
        "control_pairs": len(control),
        "control_mean_pairwise_cosine": round(mean_pairwise_cosine(control_diff), 4),
        "cosine_knight_to_control_direction": cosine(diff.mean(axis=0), control_direction),
        "off_axis_cosine_knight_to_control_direction": cosine(
            off_axis(diff.mean(axis=0)), off_axis(control_direction)
        ),
        "arithmetic_heldout": {
            "pairs": len(pairs) - half,
            "cos_without_to_with": round(float(np.mean(np.sum(test_without * test_with, 1))), 4),
            "cos_without_plus_direction_to_with": round(float(by_direction.mean()), 4),
            "cos_without_plus_axis_step_to_with": round(float(by_axis.mean()), 4),
            "cos_without_plus_control_direction_to_with": round(float(by_control.mean()), 4),
            "direction_minus_axis_step_95": mean_interval(by_direction - by_axis, resamples, seed),
            "direction_minus_control_95": mean_interval(by_direction - by_control, resamples, seed),
        },
        "score_change_vs_stockfish": {
            "all_finite": follows(finite),
            "balanced_without_knight_within_200cp": follows(balanced),
        },
    }


# -- main ---------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ProbeConfig:
    """One run's settings (stored in the results file)."""

    pgn: str
    captures: int
    ranking: int
    knight_pairs: int
    depth: int
    seed: int
    resamples: int
    pair_delta: float
    see_threshold: int


def _markdown(result: dict[str, Any]) -> Iterator[str]:
    capture, ranking = result["capture_probe"], result["ranking_probe"]
    yield "# Latent probes: results\n"
    yield f"Written by `benchmarks/latent_probes.py` (commit `{result['git_commit']}`); the "
    yield "method and the command are in [README.md](README.md).\n\n"
    yield f"## Winning captures ranked first ({capture['positions']} positions, "
    yield f"{capture['games']} games)\n\n"
    yield "| evaluator | ranked first | Wilson 95% | game bootstrap 95% | "
    yield f"minus {REFERENCE} [95%] | ties at top | no child in check "
    yield f"({capture['positions_without_a_child_in_check']}) |\n"
    yield "|---|---:|---|---|---|---:|---:|\n"
    for name, row in capture["evaluators"].items():
        diff = row[f"minus_{REFERENCE}"]
        lo, hi = row[f"minus_{REFERENCE}_95"]
        yield (
            f"| {name} | {row['rate']:.3f} ({row['first']}) | {row['wilson95']} | "
            f"{row['game_bootstrap95']} | {diff:+.3f} [{lo:+.3f}, {hi:+.3f}] | "
            f"{row['ties_at_top']} | {row['rate_no_child_in_check']} |\n"
        )
    yield (
        f"\nStockfish static: {result['stockfish_static_in_check_children']} children in check "
        "scored by a depth-1 search.\n\n"
    )
    yield f"## Ranking against Stockfish depth {result['config']['depth']} "
    yield f"({ranking['positions']} positions, {ranking['games']} games)\n\n"
    yield "| evaluator | Spearman [95%] | pair accuracy [95%] | Spearman minus "
    yield f"{REFERENCE} | pair acc. minus {REFERENCE} | at max / at min (distinct) |\n"
    yield "|---|---|---|---|---|---|\n"
    for name, row in ranking["evaluators"].items():
        sat = row["saturation"]
        yield (
            f"| {name} | {row['spearman']:.3f} {row['spearman_95']} | "
            f"{row['pair_accuracy']:.3f} {row['pair_accuracy_95']} | "
            f"{row[f'spearman_minus_{REFERENCE}_95']} | "
            f"{row[f'pair_accuracy_minus_{REFERENCE}_95']} | "
            f"{sat['at_max']} at {sat['max']:+.4g} / {sat['at_min']} at {sat['min']:+.4g} "
            f"({sat['distinct']}) |\n"
        )
    sat = ranking["evaluators"][REFERENCE]["saturation"]
    yield (
        f"\n{REFERENCE}'s extremes: the {sat['at_max']} positions at {sat['max']:+.4g} have "
        f"Stockfish scores from {sat['stockfish_cp_at_max'][0]:+.0f} to "
        f"{sat['stockfish_cp_at_max'][1]:+.0f} cp, the {sat['at_min']} at {sat['min']:+.4g} from "
        f"{sat['stockfish_cp_at_min'][0]:+.0f} to {sat['stockfish_cp_at_min'][1]:+.0f} cp "
        f"(mates count as +-{MATE_CP} minus the distance).\n"
    )
    yield "\n## A white knight more\n\n"
    for model, kinds in result["arithmetic_probe"].items():
        for kind, row in kinds.items():
            held = row["arithmetic_heldout"]
            yield f"### {model}, knight {'removed' if kind == 'remove' else 'added'} "
            yield f"({row['pairs']} pairs)\n\n"
            yield (
                f"- mean pairwise cosine of the differences {row['mean_pairwise_cosine']:.3f} "
                f"{row['mean_pairwise_cosine_95']} (random pairs of positions "
                f"{row['random_pairs_mean_pairwise_cosine']:.3f}); off the axis "
                f"{row['off_axis_mean_pairwise_cosine']:.3f} "
                f"{row['off_axis_mean_pairwise_cosine_95']} (random "
                f"{row['random_off_axis_mean_pairwise_cosine']:.3f}); axis share of the squared "
                f"difference {row['axis_share_of_difference']:.3f}; difference norm "
                f"{row['difference_norm_mean']:.3f} "
                f"(random {row['random_difference_norm_mean']:.3f}); embedding unchanged by the "
                f"knight in {row['unchanged_embeddings']} pairs\n"
                f"- a white bishop more ({row['control_pairs']} pairs): mean pairwise cosine "
                f"{row['control_mean_pairwise_cosine']:.3f}; its mean direction against the "
                f"knight's: cosine {row['cosine_knight_to_control_direction']:.3f}, off the axis "
                f"{row['off_axis_cosine_knight_to_control_direction']:.3f}\n"
                f"- held-out arithmetic ({held['pairs']} pairs), mean cosine to the position with "
                f"the knight: without it {held['cos_without_to_with']:.4f}, plus the knight's "
                f"mean direction {held['cos_without_plus_direction_to_with']:.4f}, plus the same "
                f"step along the axis only {held['cos_without_plus_axis_step_to_with']:.4f} "
                f"(gain of the direction {held['direction_minus_axis_step_95']}), plus the "
                f"bishop's mean direction {held['cos_without_plus_control_direction_to_with']:.4f} "
                f"(gain of the knight's {held['direction_minus_control_95']})\n"
            )
            for subset, f in row["score_change_vs_stockfish"].items():
                if "stockfish_cp_median" not in f:
                    continue
                yield (
                    f"- {subset.replace('_', ' ')} ({f['pairs']}): Stockfish says the knight is "
                    f"worth {f['stockfish_cp_median']:+.0f} cp (median), the model's calibrated "
                    f"score moves {f['model_cp_median']:+.0f} cp (median; axis score up in "
                    f"{f['axis_score_change_positive']:.0%}); across pairs Pearson "
                    f"{f['pearson_cp']:+.3f}, Spearman {f['spearman_cp']:+.3f}\n"
                )
            yield "\n"


def plot(result: dict[str, Any], out: Path) -> Path:
    """Two panels: winning captures ranked first (Wilson 95%) and Spearman (game bootstrap 95%)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 3.6), constrained_layout=True)
    panels = (
        (result["capture_probe"], "rate", "wilson95", "winning capture ranked first"),
        (result["ranking_probe"], "spearman", "spearman_95", "Spearman vs Stockfish"),
    )
    for axis, (probe, key, bounds, title) in zip(axes, panels, strict=True):
        names = list(probe["evaluators"])
        values = [probe["evaluators"][name][key] for name in names]
        low = [v - probe["evaluators"][n][bounds][0] for n, v in zip(names, values, strict=True)]
        high = [probe["evaluators"][n][bounds][1] - v for n, v in zip(names, values, strict=True)]
        colours = ["tab:red" if name.startswith(REFERENCE) else "tab:gray" for name in names]
        axis.barh(names, values, xerr=[low, high], color=colours, capsize=3)
        axis.invert_yaxis()
        axis.set_xlim(min(values) - 0.15, 1.0)
        axis.set_title(f"{title} ({probe['positions']} positions)", fontsize=10)
    figure.savefig(out, dpi=90)
    plt.close(figure)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pgn", type=Path, required=True, help="held-out games (the Lichess sample)")
    p.add_argument("--out", type=Path, required=True, help="results directory")
    p.add_argument("--cache", type=Path, default=Path("runs/latent_probes/stockfish.jsonl"))
    p.add_argument("--stockfish", default="/usr/games/stockfish")
    p.add_argument("--captures", type=int, default=600, help="winning-capture positions")
    p.add_argument("--ranking", type=int, default=1500, help="ranking positions")
    p.add_argument("--knight-pairs", type=int, default=300, help="pairs per kind (remove, add)")
    p.add_argument("--depth", type=int, default=10, help="Stockfish's search depth")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    p.add_argument("--pair-delta", type=float, default=0.05, help="pair accuracy's label gap")
    p.add_argument("--max-games", type=int, default=None)
    p.add_argument("--weights", type=Path, default=WEIGHTS, help="the shipped models' folder")
    p.add_argument(
        "--model", action="append", default=[], metavar="NAME=DIR",
        help="another sparse latent model, probed as the shipped ones (PyTorch and core int16)",
    )  # fmt: skip
    args = p.parse_args(argv)
    extra: dict[str, Path] = {}
    for text in args.model:
        name, sep, folder = text.partition("=")
        if not sep or not name or not (Path(folder) / "config.json").is_file():
            p.error(f"--model wants NAME=DIR with DIR/config.json, got {text!r}")
        extra[name] = Path(folder)
    config = ProbeConfig(
        pgn=args.pgn.name, captures=args.captures, ranking=args.ranking,
        knight_pairs=args.knight_pairs, depth=args.depth, seed=args.seed,
        resamples=args.resamples, pair_delta=args.pair_delta, see_threshold=MINOR_PIECE,
    )  # fmt: skip

    started = time.monotonic()
    samples = game_positions(args.pgn, args.max_games)
    print(f"{len(samples)} positions in {samples[-1].game + 1} games", file=sys.stderr)
    cache = LabelCache(args.cache)
    with ExitStack() as stack:
        stack.callback(cache.close)
        engine = stack.enter_context(chess.engine.SimpleEngine.popen_uci(args.stockfish))
        engine.configure({"Threads": 1, "Hash": 16})
        static = stack.enter_context(StaticEvaluator(args.stockfish))
        sf_static = StockfishStatic(static, engine, cache)

        latent: dict[str, Any] = {}
        evaluators: dict[str, Evaluator] = {}
        for name in ("sparse-64", "gab-micro"):
            if (args.weights / name).is_dir():
                evaluators[name], latent[name] = latent_evaluator(args.weights / name)
        evaluators["sparse-64 (core int16)"] = native_latent_evaluator(args.weights / REFERENCE)
        for name, folder in extra.items():
            evaluators[name], latent[name] = latent_evaluator(folder)
            evaluators[f"{name} (core int16)"] = native_latent_evaluator(folder)
        evaluators["nnue"] = core_evaluator("nnue")
        evaluators["hce"] = core_evaluator("hce")
        evaluators["stockfish static"] = sf_static

        # 1. Winning captures that Stockfish also plays.
        candidates = capture_candidates(samples, args.seed)
        print(f"{len(candidates)} positions with a SEE-winning capture", file=sys.stderr)
        chosen: list[tuple[Sample, str]] = []
        progress = Progress("capture positions kept (Stockfish)", args.captures)
        labelled = 0
        for sample, captures in candidates:
            labelled += 1
            best = cached_search(engine, cache, sample.fen, args.depth)["best"]
            if best in captures:
                chosen.append((sample, best))
                progress.update(len(chosen))
            if len(chosen) == args.captures:
                break
        capture = capture_probe(chosen, evaluators, resamples=args.resamples, seed=args.seed)
        capture["candidates_labelled"] = labelled
        capture["candidates_available"] = len(candidates)
        in_check_children = sf_static.in_check

        # 2. Ranking on a separate sample.
        used = {sample.fen for sample, _ in chosen}
        ranking_set = ranking_sample(
            [s for s in samples if s.fen not in used], args.ranking, args.seed + 1
        )
        fens = [s.fen for s in ranking_set]
        labels = search_labels(engine, cache, fens, args.depth, "ranking positions (Stockfish)")
        labels_cp = np.array([label["cp"] for label in labels], dtype=np.float64)
        scores = {name: evaluate(fens) for name, evaluate in evaluators.items()}
        ranking = ranking_probe(
            ranking_set, labels_cp, scores,
            delta=args.pair_delta, resamples=args.resamples, seed=args.seed,
        )  # fmt: skip

        # 3. A white knight more.
        pairs = piece_pairs(ranking_set, args.knight_pairs, args.seed + 2)
        bishops = piece_pairs(ranking_set, args.knight_pairs, args.seed + 3, chess.BISHOP)
        arithmetic: dict[str, dict[str, Any]] = {name: {} for name in latent}
        for kind, found in pairs.items():
            sf = [
                np.array([x["cp"] for x in search_labels(
                    engine, cache, [pair[k] for pair in found], args.depth, f"knight {kind} {k}"
                )], dtype=np.float64)
                for k in (1, 2)
            ]  # fmt: skip
            for name, model in latent.items():
                arithmetic[name][kind] = arithmetic_probe(
                    model, found, fens, sf[0], sf[1], bishops[kind],
                    resamples=args.resamples, seed=args.seed,
                )  # fmt: skip

    result = {
        "config": asdict(config),
        "wall_seconds": round(time.monotonic() - started),
        "stockfish_searches_in_cache": sum(1 for key in cache.values if key.startswith("d")),
        "git_commit": git_commit(),
        "stockfish_static_in_check_children": in_check_children,
        "capture_probe": capture,
        "ranking_probe": ranking,
        "arithmetic_probe": arithmetic,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latent_probes.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "latent_probes.md").write_text("".join(_markdown(result)))
    plot(result, args.out / "latent_probes.png")
    print((args.out / "latent_probes.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
