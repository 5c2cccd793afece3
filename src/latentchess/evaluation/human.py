"""Human move matching measured the way the field reports it: protocol, held-out players, intervals.

The published human-move models are scored on a filtered set of positions, and a number is only
comparable under the same filters. :class:`HumanProtocol` states them; its defaults are the
protocol of Maia-3 (Monroe et al., ICLR 2026, arXiv 2605.19091) and Allie (Zhang et al., ICLR 2025,
arXiv 2410.03893) as the Allie repository's evaluation notes quote it:

* skip each game's first 10 plies;
* drop every position from the first ply on which the player to move has under 30 seconds (read
  here from the ``[%clk]`` comment on the move, the time left after it, as Maia-2's code reads it);
* blitz games only (Lichess's speed classes by ``base + 40 x increment`` seconds);
* bands of the *mover's* rating: < 1400, 1400-1999, 2000-2399, >= 2400 (the bands of the Allie
  2.0 blitz benchmark, which reports Maia-3 on this protocol).

Positions of a game are correlated, so the 95% intervals come from a bootstrap over whole games
(as the Allie notes do); a Wilson interval over positions is kept beside it for reference.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import chess.pgn
import numpy as np
import numpy.typing as npt

from latentchess.data.moves import lichess_speed
from latentchess.errors import DataFormatError, LatentChessError
from latentchess.provenance import repo_relative
from latentchess.textfiles import find_text, open_text, read_text

__all__ = [
    "SPEEDS",
    "FIELD_BANDS",
    "PUBLISHED",
    "HumanProtocol",
    "GameHeaders",
    "TrainingPlayers",
    "lichess_speed",
    "band_label",
    "band_labels",
    "read_game_headers",
    "training_players",
    "protocol_mask",
    "HumanEval",
    "evaluate_human",
    "write_json",
    "band_table",
    "speed_table",
    "NothingKeptError",
    "FILTER_FLAGS",
    "paired_difference",
]

SPEEDS = ("ultrabullet", "bullet", "blitz", "rapid", "classical", "correspondence")
FIELD_BANDS = (1400, 2000, 2400)
"""Band edges of the Allie 2.0 blitz benchmark (< 1400, 1400-1999, 2000-2399, >= 2400)."""


PUBLISHED: tuple[dict[str, Any], ...] = (
    {
        "model": "Maia-3 79M",
        "band": "all",
        "top1": 0.571,
        "test_set": "original Allie test set (Lichess blitz, 2022)",
        "protocol": "skip 10 plies; drop positions after a player first has < 30 s",
        "source": "Monroe et al., Chessformer, ICLR 2026 (arXiv 2605.19091), abstract",
    },
    {
        "model": "Allie (original)",
        "band": "all",
        "top1": 0.557,
        "test_set": "Allie test set (Lichess blitz, 2022)",
        "protocol": "skip 10 plies; stop at the first ply the mover has < 30 s",
        "source": "Zhang et al., ICLR 2025 (arXiv 2410.03893), as quoted in y0mingzhang/allie "
        "docs/DETAILS.md",
    },
    {
        "model": "Maia-3 79M",
        "band": "all",
        "top1": 0.5906,
        "test_set": "Allie 2.0 blitz benchmark (July 2026, 20,000 positions per band)",
        "protocol": "skip 10 plies; stop at the first ply the mover has < 30 s (56,599 kept)",
        "source": "y0mingzhang/allie docs/DETAILS.md, 'Maia's protocol' table",
    },
    {
        "model": "Maia-3 5M",
        "band": "all",
        "top1": 0.5704,
        "test_set": "Allie 2.0 blitz benchmark (July 2026)",
        "protocol": "skip 10 plies; stop at the first ply the mover has < 30 s",
        "source": "y0mingzhang/allie docs/DETAILS.md, 'Maia's protocol' table",
    },
    {
        "model": "Allie (original)",
        "band": ">=2400",
        "top1": 0.592,
        "test_set": "Allie 2.0 blitz benchmark (July 2026), every position (no ply/clock filter)",
        "protocol": "all positions",
        "source": "y0mingzhang/allie docs/DETAILS.md, 'The original Allie'",
    },
)
"""Published top-1 figures with their test sets and protocols (facts only; see the docs)."""


def band_label(elo: int, edges: Sequence[int]) -> str:
    """The band of a rating between ascending ``edges``: ``"<1400"``, ``"1400-1999"``, ...,
    ``">=2400"``."""
    if elo < edges[0]:
        return f"<{edges[0]}"
    for low, high in itertools.pairwise(edges):
        if elo < high:
            return f"{low}-{high - 1}"
    return f">={edges[-1]}"


def band_labels(edges: Sequence[int]) -> list[str]:
    """Every band of ``edges`` in rating order."""
    return [band_label(edges[0] - 1, edges)] + [band_label(e, edges) for e in edges]


@dataclass(frozen=True, kw_only=True)
class HumanProtocol:
    """Which positions count, and how they are grouped.

    Attributes:
        skip_plies: positions before this ply of each game are skipped (Maia-1/2/3, Allie: 10).
        min_clock: seconds; positions where the mover's clock is below it are dropped (0: no
            clock filter). Games without ``[%clk]`` comments keep all their positions (counted).
        clock_rule: ``"truncate"``: drop everything from the first such ply on (Maia-3, Allie);
            ``"position"``: drop only those positions (Maia-2's code).
        speeds: Lichess speed classes kept (``()``: every game). Default blitz, as Maia-3/Allie.
        band_edges: ascending rating edges of the mover's-rating bands.
        sample_positions: score a uniform random sample of this many positions (None: all).
        seed: for the sample and the bootstrap.
        bootstrap: bootstrap draws over games for the 95% intervals.
    """

    skip_plies: int = 10
    min_clock: float = 30.0
    clock_rule: str = "truncate"
    speeds: tuple[str, ...] = ("blitz",)
    band_edges: tuple[int, ...] = FIELD_BANDS
    sample_positions: int | None = None
    seed: int = 0
    bootstrap: int = 2000

    def __post_init__(self) -> None:
        if self.skip_plies < 0 or self.min_clock < 0:
            raise ValueError(
                f"skip_plies and min_clock must be >= 0, got {self.skip_plies}, {self.min_clock}"
            )
        if self.clock_rule not in ("truncate", "position"):
            raise ValueError(f"clock_rule must be truncate or position, got {self.clock_rule!r}")
        unknown = [s for s in self.speeds if s not in SPEEDS]
        if unknown:
            raise ValueError(f"unknown speed {unknown[0]!r}; choose from {', '.join(SPEEDS)}")
        edges = list(self.band_edges)
        if not edges or edges != sorted(set(edges)):
            raise ValueError(f"band edges must be ascending and distinct, got {edges}")
        if self.sample_positions is not None and self.sample_positions < 1:
            raise ValueError(f"sample_positions must be >= 1, got {self.sample_positions}")
        if self.bootstrap < 0:
            raise ValueError(f"bootstrap must be >= 0, got {self.bootstrap}")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["speeds"] = list(self.speeds) or "any"
        out["band_edges"] = list(self.band_edges)
        out["bands"] = band_labels(self.band_edges)
        return out


@dataclass(frozen=True)
class GameHeaders:
    """The headers of one game that the protocol reads (``index``: the game's number in its file,
    counted as :func:`latentchess.data.moves.read_pgn_moves` counts it)."""

    index: int
    white: str
    black: str
    site: str
    speed: str | None


def read_game_headers(path: str | Path) -> list[GameHeaders]:
    """The headers of every game of a PGN (``.gz``/``.xz``/``.zst`` streamed), without moves."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError("no such file", path=path)
    out: list[GameHeaders] = []
    with open_text(path) as handle:
        while (headers := chess.pgn.read_headers(handle)) is not None:
            out.append(
                GameHeaders(
                    index=len(out),
                    white=headers.get("White", "?"),
                    black=headers.get("Black", "?"),
                    site=headers.get("Site", "?"),
                    speed=lichess_speed(headers.get("TimeControl", "?")),
                )
            )
    return out


@dataclass(frozen=True)
class TrainingPlayers:
    """Player names and Lichess game URLs of training PGNs (what held-out means)."""

    names: frozenset[str]
    sites: frozenset[str]
    files: tuple[str, ...] = field(default=())


def training_players(paths: Iterable[str | Path]) -> TrainingPlayers:
    """Every player name and ``lichess.org`` Site URL in the training PGNs (``"?"`` is no name)."""
    names: set[str] = set()
    sites: set[str] = set()
    files = []
    for path in paths:
        files.append(str(path))
        for game in read_game_headers(path):
            names.update(n for n in (game.white, game.black) if n not in ("", "?"))
            if "lichess.org/" in game.site:
                sites.add(game.site)
    return TrainingPlayers(frozenset(names), frozenset(sites), tuple(files))


def protocol_mask(
    data: Any,
    protocol: HumanProtocol,
    games: Sequence[GameHeaders],
    seen: TrainingPlayers | None = None,
    removed: dict[str, dict[str, list[int]]] | None = None,
) -> tuple[npt.NDArray[np.bool_], dict[str, int]]:
    """(positions,) True where a position of ``data`` (a :class:`MoveData` read from the PGN whose
    ``games`` these are) counts under ``protocol``, and the counts each filter removed.

    A game is out when either player (or its URL) is in ``seen``, or its speed is not one of
    ``protocol.speeds``. Ply = row within the game; the clock is ``data.clock``. ``removed``, when
    given, is filled with ``{filter: {speed: [games, positions]}}`` of what each filter removed
    (the filters of :data:`FILTER_FLAGS`; speed ``"unknown"`` where the header has none).
    """
    by_index = {g.index: g for g in games}
    game = data.game.astype(np.int64)
    ply = data.board_row - data.first_row
    keep = np.ones(len(game), dtype=bool)
    counts: dict[str, int] = {"positions_read": len(game)}
    unique = np.unique(game)
    missing = [int(i) for i in unique if int(i) not in by_index]
    if missing:
        raise DataFormatError(f"game {missing[0]} has no headers: the files do not match")
    for name, test in (
        ("games_with_a_training_player", _seen_test(seen)),
        ("games_of_another_speed", _speed_test(protocol)),
    ):
        out = np.array([test(by_index[int(i)]) for i in unique], dtype=bool)
        counts[name] = int(out.sum())
        drop = np.isin(game, unique[out]) & keep
        counts[f"positions_in_{name}"] = int(drop.sum())
        _by_speed(removed, name, drop, game, by_index)
        keep &= ~drop
    early = keep & (ply < protocol.skip_plies)
    counts["positions_in_first_plies"] = int(early.sum())
    _by_speed(removed, "positions_in_first_plies", early, game, by_index)
    keep &= ~early
    if protocol.min_clock > 0:
        clock = data.clock
        known = ~np.isnan(clock)
        clockless = np.setdiff1d(np.unique(game[keep]), np.unique(game[known]))
        counts["games_without_clocks_kept"] = len(clockless)
        low = known & (clock < protocol.min_clock)
        if protocol.clock_rule == "truncate":
            # the first low ply of each game; every position from it on goes
            first_low = np.full(int(game.max()) + 1 if len(game) else 0, np.iinfo(np.int64).max)
            np.minimum.at(first_low, game[low], ply[low])
            low = ply >= first_low[game]
        dropped = keep & low
        counts["positions_after_low_clock"] = int(dropped.sum())
        _by_speed(removed, "positions_after_low_clock", dropped, game, by_index)
        keep &= ~dropped
    counts["positions_kept"] = int(keep.sum())
    counts["games_kept"] = len(np.unique(game[keep]))
    return keep, counts


FILTER_FLAGS = {
    "games_with_a_training_player": "leave out --exclude-players-of",
    "games_of_another_speed": "--time-control any",
    "positions_in_first_plies": "--skip-plies 0",
    "positions_after_low_clock": "--min-clock 0",
    "positions_of_other_splits": "--heldout all",
}
"""What each filter of eval-human removes, and the flag that keeps it."""


def _by_speed(
    removed: dict[str, dict[str, list[int]]] | None,
    name: str,
    drop: npt.NDArray[np.bool_],
    game: npt.NDArray[np.int64],
    by_index: dict[int, GameHeaders],
) -> None:
    if removed is None or not drop.any():
        return
    ids, positions = np.unique(game[drop], return_counts=True)
    out = removed.setdefault(name, {})
    for index, count in zip(ids.tolist(), positions.tolist(), strict=True):
        speed = by_index[index].speed or "unknown"
        row = out.setdefault(speed, [0, 0])
        row[0] += 1
        row[1] += count


class NothingKeptError(LatentChessError):
    """eval-human's protocol kept no position (the message names the filters and flags)."""


def nothing_kept_message(
    removed: dict[str, dict[str, list[int]]], read: tuple[int, int], protocol: HumanProtocol
) -> str:
    """The error of a protocol that kept nothing: each filter that removed games or positions,
    with its counts by speed, and the flag that keeps them."""
    games, positions = read
    lines = [f"the protocol kept no position of the {games} games ({positions} positions) read:"]
    for name, flag in FILTER_FLAGS.items():
        if name not in removed:
            continue
        by_speed = removed[name]
        total_games = sum(v[0] for v in by_speed.values())
        total = sum(v[1] for v in by_speed.values())
        detail = ", ".join(
            f"{speed} {g} games / {n} positions"
            for speed, (g, n) in sorted(by_speed.items(), key=lambda kv: -kv[1][1])
        )
        if name == "games_of_another_speed":
            kept = ",".join(protocol.speeds)
            present = ",".join(s for s in SPEEDS if s in by_speed)
            flag = f"--time-control any (or --time-control {present})" if present else flag
            label = f"games of another speed than {kept}"
        else:
            label = name.replace("_", " ")
        lines.append(
            f"  {label}: {total_games} games, {total} positions ({detail}); keep them with {flag}"
        )
    return "\n".join(lines)


def _seen_test(seen: TrainingPlayers | None) -> Any:
    if seen is None:
        return lambda g: False
    return lambda g: g.white in seen.names or g.black in seen.names or g.site in seen.sites


def _speed_test(protocol: HumanProtocol) -> Any:
    if not protocol.speeds:
        return lambda g: False
    return lambda g: g.speed not in protocol.speeds


def _wilson(hits: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    if n == 0:
        return float("nan"), float("nan")
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(centre - half), float(centre + half)


def _bootstrap(
    hits: npt.NDArray[np.int64], counts: npt.NDArray[np.int64], draws: int, rng: np.random.Generator
) -> tuple[float, float]:
    """95% percentile interval of sum(hits)/sum(counts) over games resampled with replacement."""
    if draws == 0 or len(counts) < 2:
        return float("nan"), float("nan")
    chosen = rng.integers(0, len(counts), size=(draws, len(counts)))  # (draws, games)
    rates = hits[chosen].sum(axis=1) / np.maximum(counts[chosen].sum(axis=1), 1)
    low, high = np.percentile(rates, [2.5, 97.5])
    return float(low), float(high)


def _known(interval: tuple[float, float]) -> list[float] | None:
    """The interval, or None (JSON null) where there is none (no bootstrap, a single game)."""
    return None if np.isnan(interval[0]) else [interval[0], interval[1]]


def band_table(
    correct: npt.ArrayLike,
    elos: npt.ArrayLike,
    games: npt.ArrayLike,
    protocol: HumanProtocol,
) -> dict[str, dict[str, Any]]:
    """Per band of the mover's rating and ``"all"``: accuracy, positions, games, and 95%
    intervals (``ci95``: bootstrap over games, None with fewer than 2 games; ``wilson95``:
    binomial over positions)."""
    hits = np.asarray(correct, dtype=bool)
    ratings = np.asarray(elos)
    game = np.asarray(games)
    labels = np.array([band_label(int(e), protocol.band_edges) for e in ratings])
    rng = np.random.default_rng(protocol.seed)
    out: dict[str, dict[str, Any]] = {}
    for band in [*band_labels(protocol.band_edges), "all"]:
        chosen = np.ones(len(hits), bool) if band == "all" else labels == band
        n = int(chosen.sum())
        if band != "all" and n == 0:
            out[band] = {"accuracy": None, "positions": 0, "games": 0}
            continue
        ids, inverse = np.unique(game[chosen], return_inverse=True)
        per_hits = np.bincount(inverse, weights=hits[chosen], minlength=len(ids)).astype(np.int64)
        per_n = np.bincount(inverse, minlength=len(ids)).astype(np.int64)
        k = int(hits[chosen].sum())
        out[band] = {
            "accuracy": k / n if n else None,
            "positions": n,
            "games": len(ids),
            "ci95": _known(_bootstrap(per_hits, per_n, protocol.bootstrap, rng)),
            "wilson95": _known(_wilson(k, n)),
        }
    return out


def speed_table(
    correct: npt.ArrayLike, speeds: npt.ArrayLike, games: npt.ArrayLike, protocol: HumanProtocol
) -> dict[str, dict[str, Any]]:
    """Per time-control band (``MoveData.speed``, :data:`latentchess.data.moves.
    TIME_CONTROL_BANDS`) with positions: accuracy, positions, games, bootstrap ``ci95``."""
    from latentchess.data.moves import TIME_CONTROL_BANDS

    hits = np.asarray(correct, dtype=bool)
    speed = np.asarray(speeds)
    game = np.asarray(games)
    rng = np.random.default_rng(protocol.seed)
    out: dict[str, dict[str, Any]] = {}
    for index, name in enumerate(TIME_CONTROL_BANDS):
        chosen = speed == index
        if not chosen.any():
            continue
        ids, inverse = np.unique(game[chosen], return_inverse=True)
        per_hits = np.bincount(inverse, weights=hits[chosen], minlength=len(ids)).astype(np.int64)
        per_n = np.bincount(inverse, minlength=len(ids)).astype(np.int64)
        out[name] = {
            "accuracy": float(hits[chosen].mean()),
            "positions": int(chosen.sum()),
            "games": len(ids),
            "ci95": _known(_bootstrap(per_hits, per_n, protocol.bootstrap, rng)),
        }
    return out


def paired_difference(
    a: dict[str, Any] | str | Path,
    b: dict[str, Any] | str | Path,
    *,
    draws: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Top-1 of ``b`` minus top-1 of ``a`` on the same positions, with a 95% paired bootstrap
    interval over games.

    ``a`` and ``b`` are eval-human results (dicts or JSON paths, plain or compressed: a path
    ``x.json`` stored as ``x.json.xz`` is found) with ``per_game`` hits, of the
    same PGN under the same protocol: both models scored the same positions, so the games are
    resampled together and what varies between the models is what the interval measures.

    Raises:
        ValueError: results without per-game hits, or of other games or positions.
    """
    results = [
        json.loads(read_text(find_text(r))) if isinstance(r, str | Path) else r for r in (a, b)
    ]
    tables = []
    for result in results:
        per_game = result.get("per_game")
        if per_game is None:
            raise ValueError("a result without per_game hits (eval-human before they were kept)")
        tables.append(per_game)
    first, second = tables
    if first["game"] != second["game"] or first["positions"] != second["positions"]:
        raise ValueError("the two results scored other games or positions: not paired")
    n = np.asarray(first["positions"], dtype=np.int64)
    hits_a = np.asarray(first["hits"], dtype=np.int64)
    hits_b = np.asarray(second["hits"], dtype=np.int64)
    total = int(n.sum())
    difference = (int(hits_b.sum()) - int(hits_a.sum())) / max(total, 1)
    interval: list[float] | None = None
    if draws and len(n) > 1:
        chosen = np.random.default_rng(seed).integers(0, len(n), size=(draws, len(n)))
        rates = (hits_b[chosen].sum(axis=1) - hits_a[chosen].sum(axis=1)) / np.maximum(
            n[chosen].sum(axis=1), 1
        )
        low, high = np.percentile(rates, [2.5, 97.5])
        interval = [float(low), float(high)]
    return {
        "difference": difference,
        "ci95": interval,
        "a": total and int(hits_a.sum()) / total,
        "b": total and int(hits_b.sum()) / total,
        "positions": total,
        "games": len(n),
    }


@dataclass(frozen=True)
class HumanEval:
    """Result of :func:`evaluate_human`.

    Attributes:
        accuracy: top-1 move-matching accuracy over all positions.
        positions: positions evaluated.
        by_band: per rating band of the mover: accuracy, positions, games, 95% intervals.
        games: games evaluated.
        model: the model directory.
        seconds: wall time.
        extra: other facts (e.g. the held-out selection).
    """

    accuracy: float
    positions: int
    by_band: dict[str, dict[str, Any]]
    games: int
    model: str
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "accuracy": self.accuracy,
            "positions": self.positions,
            "by_band": self.by_band,
            "games": self.games,
            "model": self.model,
            "seconds": self.seconds,
            **self.extra,
        }

    def table(self) -> str:
        """Bands and overall: positions, games, top-1 and its 95% interval (over games)."""
        lines = [f"{'band':>10}  {'positions':>9}  {'games':>5}  {'top-1':>6}  95% interval"]
        rows = [*self.by_band.items(), ("all", {**self.to_dict(), "games": self.games})]
        for band, row in rows:
            accuracy, interval = row.get("accuracy"), row.get("ci95")
            text = "     -" if accuracy is None else f"{accuracy:>6.3f}"
            ci = f"[{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""
            counts = f"{row['positions']:>9}  {row.get('games', ''):>5}"
            lines.append(f"{band:>10}  {counts}  {text}  {ci}")
        return "\n".join(lines)


def evaluate_human(
    pgn: str | Path,
    model_dir: str | Path | None = None,
    *,
    protocol: HumanProtocol | None = None,
    exclude_players_of: Sequence[str | Path] = (),
    max_games: int | None = None,
    skip_games: int = 0,
    heldout: str = "all",
    holdout_fraction: float = 0.05,
    batch_size: int = 512,
    device: str = "cpu",
    progress: bool = True,
) -> HumanEval:
    """Top-1 move matching of a Chessformer on the positions of ``pgn`` that ``protocol`` keeps.

    Args:
        pgn: games with ``WhiteElo``/``BlackElo`` (``.gz``/``.xz``/``.zst``); ``[%clk]``
            comments and ``TimeControl`` headers are read when the protocol filters on them.
        model_dir: a Chessformer model directory (default: the shipped human model).
        protocol: which plies, clocks, speeds and bands (default: the field's,
            :class:`~latentchess.evaluation.human.HumanProtocol`).
        exclude_players_of: training PGNs; games where either player (or the game's URL) appears
            in them are left out, so the players are held out in the strict sense.
        max_games: read at most this many games.
        skip_games: pass over the file's first games (e.g. the ones trained on).
        heldout: ``"all"`` positions, only those of ``"games"`` held out by the training split's
            game hash, or only those whose mover is a ``"players"`` held-out player (games with a
            held-out player were not trained on).
        holdout_fraction: the split's fraction (as in training).
        batch_size: positions per forward pass.
        device: torch device.
        progress: print progress on stderr.
    """
    import torch

    from latentchess.data.moves import batch_features, read_pgn_moves
    from latentchess.models.chessformer_human import select_rows
    from latentchess.models.chessformer_io import ChessformerModel, resolve_chessformer_path
    from latentchess.squares import POLICY_SIZE

    protocol = protocol if protocol is not None else HumanProtocol()
    started = time.monotonic()
    path = resolve_chessformer_path(model_dir)
    data = read_pgn_moves(
        pgn,
        holdout_fraction=holdout_fraction,
        max_games=max_games,
        skip_games=skip_games,
        progress=progress,
    )
    seen = training_players(exclude_players_of) if exclude_players_of else None
    removed: dict[str, dict[str, list[int]]] = {}
    headers = read_game_headers(pgn)
    keep, counts = protocol_mask(data, protocol, headers, seen, removed)
    rows = select_rows(data, heldout, holdout_fraction)
    other_split = np.ones(len(data), dtype=bool)
    other_split[rows] = False
    by_index = {g.index: g for g in headers}
    _by_speed(removed, "positions_of_other_splits", keep & other_split, data.game, by_index)
    rows = rows[keep[rows]]
    if not len(rows):
        read = (len(np.unique(data.game)), len(data))
        raise NothingKeptError(nothing_kept_message(removed, read, protocol))
    model = ChessformerModel.load(path, device=device)
    if protocol.sample_positions is not None and protocol.sample_positions < len(rows):
        rng = np.random.default_rng(protocol.seed)
        rows = np.sort(rng.choice(rows, size=protocol.sample_positions, replace=False))
        counts["positions_sampled"] = len(rows)
    cfg = model.cfg
    correct = np.zeros(len(rows), dtype=bool)
    tick = time.monotonic()
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        features = torch.from_numpy(
            batch_features(data, chunk, history=cfg.history, side=cfg.side_features)
        )
        speed = None
        if cfg.time_control:  # the game's band from its TimeControl tag
            speed = torch.from_numpy(data.speed[chunk].astype(np.int64)).to(model.device)
        with torch.no_grad():
            policy, _ = model.network(
                features.to(model.device),
                torch.from_numpy(data.self_elo[chunk].astype(np.float32)).to(model.device),
                torch.from_numpy(data.oppo_elo[chunk].astype(np.float32)).to(model.device),
                speed,
            )
        legal = torch.from_numpy(data.legal_mask(chunk, POLICY_SIZE)).to(model.device)
        best = policy.float().masked_fill(~legal, float("-inf")).argmax(dim=1).cpu().numpy()
        correct[start : start + len(chunk)] = best == data.move[chunk]
        if progress and (start // batch_size) % 5 == 4:
            done = start + len(chunk)
            rate = done / (time.monotonic() - tick)
            eta = (len(rows) - done) / max(rate, 1e-9)
            print(
                f"eval-human: {done}/{len(rows)} positions, {rate:.0f}/s, ETA {eta:.0f} s",
                file=sys.stderr,
            )
    elos = data.self_elo[rows]
    table = band_table(correct, elos, data.game[rows], protocol)
    by_band = {band: row for band, row in table.items() if band != "all"}
    ids, inverse = np.unique(data.game[rows], return_inverse=True)
    per_game = {
        "game": ids.tolist(),
        "positions": np.bincount(inverse, minlength=len(ids)).tolist(),
        "hits": np.bincount(inverse, weights=correct, minlength=len(ids)).astype(int).tolist(),
    }
    return HumanEval(
        accuracy=float(correct.mean()) if len(rows) else float("nan"),
        positions=len(rows),
        by_band=by_band,
        games=len(np.unique(data.game[rows])),
        model=repo_relative(path),
        seconds=time.monotonic() - started,
        extra={
            "ci95": table["all"].get("ci95"),
            "wilson95": table["all"].get("wilson95"),
            "by_speed": speed_table(correct, data.speed[rows], data.game[rows], protocol),
            "time_control_input": cfg.time_control,
            "protocol": protocol.to_dict(),
            "filters": counts,
            "exclude_players_of": [str(p) for p in exclude_players_of],
            "training_players": len(seen.names) if seen is not None else None,
            "heldout": heldout,
            "pgn": str(pgn),
            "skip_games": skip_games,
            "max_games": max_games,
            "positions_per_s": len(rows) / max(time.monotonic() - tick, 1e-9),
            "per_game": per_game,
        },
    )


def write_json(result: HumanEval, path: str | Path) -> None:
    """Write the result's dict as JSON (keys ``accuracy``, ``positions``, ``by_band``, ...) with
    the git commit, atomically."""
    from latentchess.provenance import git_commit

    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({**result.to_dict(), "git_commit": git_commit()}, indent=2) + "\n")
    tmp.replace(path)
