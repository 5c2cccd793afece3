"""Feature cache for NNUE training: labelled CSV rows -> memory-mapped feature arrays, once.

Sources are the project's labelled CSVs (``fen,cp_white,mate_white,win_prob_white,best_move,
depth,multipv_gap_cp``, gzip or plain), its Parquet datasets (``data label``'s or ``data
generate``'s shards, the same columns by name), self-play files (Stockfish's ``.bin`` records of
``data selfplay``: :mod:`latentchess.data.packed_sfen`; their score is the row's centipawns and
their game result is kept), or a directory of either (such as ``nnue label-static``'s or
``data selfplay``'s output), each given as ``PATH[:ROWS[:EVERY]]``: every ``EVERY``-th
row, at most ``ROWS`` of them. The thesis's filters drop a row when it holds a mate score, when
``|cp| > 5000``, when the side to move is in check, or when the best move is a capture. Rows with
no best move are static-evaluation labels (:mod:`latentchess.nnue.distil`), quiet when made.

Cache directory layout::

    meta.json              feature set, sources, filters, counts (written last: its presence
                           means the cache is complete)
    shards/NNNNN.npz       one per ``shard_rows`` kept positions, written atomically; a killed
                           build resumes after the last complete shard
    features.npy           (n, 2, K) int16 (int32 above 32,767 features, as a threat block's
                           sets): active features of White's and Black's perspective, padded
                           with N (the feature count; an all-zero embedding row)
    stm.npy                (n,) uint8: 0 = White to move, 1 = Black
    score.npy              (n,) float32: the label in centipawns, side to move's view
    result.npy             (n,) float32: the game's result, side to move's view (1 win, 0.5 draw,
                           0 loss; NaN where unknown: CSV rows carry none)
    pqr.npy                (n, 2, 2, K) int16, only with ``pqr=True``: features of Q (after the
                           labelled best move) and R (after a random other legal move)
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess
import numpy as np
import numpy.typing as npt

from latentchess.errors import DataFormatError, LatentChessError
from latentchess.nnue.features import FeatureSet, parse_feature_set, position_features

__all__ = [
    "Source",
    "parse_source",
    "FeatureCache",
    "build_cache",
    "open_cache",
    "pad_features",
    "labelled_rows",
]

MAX_ABS_SCORE = 5000


@dataclass(frozen=True, kw_only=True)
class Source:
    """One CSV and how much of it to take.

    Attributes:
        path: the CSV (``.gz`` or plain).
        rows: keep at most this many rows (before filtering), ``None`` = all.
        every: take every ``every``-th row.
    """

    path: Path
    rows: int | None = None
    every: int = 1

    def __post_init__(self) -> None:
        if self.every < 1 or (self.rows is not None and self.rows < 1):
            raise LatentChessError(f"bad source {self.spec!r}: ROWS and EVERY must be >= 1")

    @property
    def spec(self) -> str:
        return f"{self.path}:{self.rows or ''}:{self.every}"


def parse_source(text: str) -> Source:
    """``PATH[:ROWS[:EVERY]]`` -> :class:`Source`."""
    path, _, rest = text.partition(":")
    rows_text, _, every_text = rest.partition(":")
    try:
        rows = int(rows_text) if rows_text else None
        every = int(every_text) if every_text else 1
    except ValueError as error:
        raise LatentChessError(f"bad data source {text!r}; expected PATH[:ROWS[:EVERY]]") from error
    return Source(path=Path(path), rows=rows, every=every)


def pad_features(
    active: npt.NDArray[np.int64], width: int, pad: int
) -> npt.NDArray[np.int16] | npt.NDArray[np.int32]:
    """Pad a feature list to ``width`` with ``pad`` (int16, int32 where ``pad`` needs it)."""
    if len(active) > width:
        raise LatentChessError(f"{len(active)} active features exceed the cache width {width}")
    out = np.full(width, pad, dtype=np.int16 if pad <= np.iinfo(np.int16).max else np.int32)
    out[: len(active)] = active
    return out


_Row = tuple[Path, int, list[str], float]  # file, line or record number, fields, White's result


def _is_bin(path: Path) -> bool:
    return path.suffix == ".bin"


_PARQUET_FIELDS = ("fen", "cp_white", "mate_white", "win_prob_white", "best_move")


def _parquet_lines(file: Path) -> Iterator[_Row]:
    """A Parquet shard's rows (1-based row numbers) as CSV fields; result NaN."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(file, columns=list(_PARQUET_FIELDS))
    except (pa.ArrowInvalid, OSError, KeyError) as error:
        raise DataFormatError(f"unreadable Parquet shard: {error}", path=file) from error
    columns = [table.column(name).to_pylist() for name in _PARQUET_FIELDS]
    for number, values in enumerate(zip(*columns, strict=True), start=1):
        fields = ["" if value is None else str(value) for value in values]
        yield file, number, fields, math.nan


def labelled_rows(path: Path) -> Iterator[_Row]:
    """The rows of a CSV, Parquet or ``.bin`` file, or of every ``*.csv[.gz]``, ``*.parquet`` and
    ``*.bin`` in a directory in name order, as CSV fields (self-play records converted; result
    NaN for CSV and Parquet)."""
    from latentchess.data.packed_sfen import read_records

    if not path.exists():
        raise LatentChessError(f"data file {str(path)!r} does not exist")
    files = (
        sorted(
            p for p in path.iterdir() if p.name.endswith((".csv", ".csv.gz", ".bin", ".parquet"))
        )
        if path.is_dir()
        else [path]
    )
    for file in files:
        if file.suffix == ".parquet":
            yield from _parquet_lines(file)
            continue
        if _is_bin(file):
            for number, record in read_records(file):
                white = record.fen.split(" ", 2)[1] == "w"
                cp, mate = record.score_cp, record.mate
                fields = [
                    record.fen,
                    "" if cp is None else str(cp if white else -cp),
                    "" if mate is None else str(mate if white else -mate),
                    "",
                    record.move.uci(),
                ]
                yield file, number, fields, (1 + (record.result if white else -record.result)) / 2
            continue
        opener = gzip.open if file.suffix == ".gz" else open
        with opener(file, "rb") as raw:
            for number, line in enumerate(io.TextIOWrapper(raw, encoding="utf-8"), start=1):
                fields = line.rstrip("\n").split(",")
                if len(fields) < 5:
                    raise DataFormatError(
                        f"expected >= 5 comma-separated fields, got {line.strip()!r}",
                        path=file,
                        line=number,
                    )
                yield file, number, fields, math.nan


def _rows(source: Source) -> Iterator[_Row]:
    """(file, line or record number, fields, White's result) of the selected rows of a source."""
    taken = 0
    for index, row in enumerate(labelled_rows(source.path)):
        if index % source.every:
            continue
        if source.rows is not None and taken >= source.rows:
            return
        taken += 1
        yield row


def _all_features(board: chess.Board) -> tuple[list[int], list[int]]:
    """ALL alone, both perspectives, straight from the piece map (equal to the reference)."""
    white, black = [], []
    for square, piece in board.piece_map().items():
        file, rank, role = square & 7, square >> 3, (piece.piece_type - 1) * 2
        ours_white = 0 if piece.color else 1
        white.append((file * 8 + rank) * 12 + role + ours_white)
        black.append((file * 8 + 7 - rank) * 12 + role + 1 - ours_white)
    return sorted(white), sorted(black)


def _pqr_seed(fen: str) -> int:
    """R's choice: the other legal moves sorted by UCI, this index modulo their number."""
    return int.from_bytes(hashlib.blake2b(fen.encode(), digest_size=8).digest(), "little")


def _uci(bits: int) -> str:
    """A core move (from | to << 6 | promotion << 12) in UCI."""
    promotion = bits >> 12
    return chess.Move(bits & 63, (bits >> 6) & 63, promotion or None).uci()


def _encode(
    board: chess.Board, feature_set: FeatureSet, width: int
) -> npt.NDArray[np.int16]:  # (2, K)
    pad = feature_set.size
    if feature_set.blocks == ("ALL",):
        w, b = _all_features(board)
        white, black = np.asarray(w, dtype=np.int64), np.asarray(b, dtype=np.int64)
    else:
        white, black = position_features(board, feature_set)
    return np.stack([pad_features(white, width, pad), pad_features(black, width, pad)])


def _label(
    fields: list[str], path: Path, number: int, feature_set: FeatureSet, width: int, pqr: bool
) -> tuple[str, tuple[Any, ...] | None]:
    """(filter verdict, (features, stm, score[, pqr features]) or None)."""
    fen, cp_text, mate_text, _, best = fields[:5]
    if mate_text or not cp_text:
        return "mate", None
    try:
        cp = float(cp_text)
        board = chess.Board(fen)
        move = chess.Move.from_uci(best) if best else None
    except ValueError as error:
        raise DataFormatError(f"bad row: {error}", path=path, line=number) from error
    if abs(cp) > MAX_ABS_SCORE:
        return "large_score", None
    if board.is_check():
        return "in_check", None
    if move is None:  # a static-evaluation label: quietness was checked when it was made
        if pqr:
            return "no_best_move", None
        stm = 0 if board.turn == chess.WHITE else 1
        return "kept", (_encode(board, feature_set, width), stm, cp if stm == 0 else -cp)
    if not board.is_legal(move):
        raise DataFormatError(f"illegal best move {best!r} in {fen!r}", path=path, line=number)
    if board.is_capture(move):
        return "capture", None
    stm = 0 if board.turn == chess.WHITE else 1
    score = cp if stm == 0 else -cp
    features = _encode(board, feature_set, width)
    if not pqr:
        return "kept", (features, stm, score)
    others = sorted(m.uci() for m in board.legal_moves if m != move)
    if not others:
        return "single_move", None
    other = chess.Move.from_uci(others[_pqr_seed(fen) % len(others)])
    q, r = board.copy(stack=False), board.copy(stack=False)
    q.push(move)
    r.push(other)
    return "kept", (
        features,
        stm,
        score,
        np.stack([_encode(q, feature_set, width), _encode(r, feature_set, width)]),
    )


_NATIVE_BLOCKS = frozenset(
    {"ALL", "KA", "KA9", "H", "V", "D1", "D2", "PH", "PV", "MB", "MC", "T", "TNK"}
)


def _native_labeller(feature_set: FeatureSet) -> Any:
    """The core's module when it can label rows of this feature set, else ``None``."""
    if not set(feature_set.blocks) <= _NATIVE_BLOCKS:
        return None
    try:
        from latentchess.core import _native
    except ImportError:
        return None
    return _native


def _label_native(
    native: Any,
    fields: list[str],
    path: Path,
    number: int,
    width: int,
    feature_set: FeatureSet,
    pqr: bool,
) -> tuple[str, tuple[Any, ...] | None]:
    """:func:`_label` through the core (same filters, same features; equality is tested)."""
    fen, cp_text, mate_text, _, best = fields[:5]
    if mate_text or not cp_text:
        return "mate", None
    try:
        cp = float(cp_text)
        position = native.Position(fen)
    except ValueError as error:
        raise DataFormatError(f"bad row: {error}", path=path, line=number) from error
    if abs(cp) > MAX_ABS_SCORE:
        return "large_score", None
    if position.in_check():
        return "in_check", None
    bits = 0
    if best:  # rows without a best move are static-evaluation labels, quiet by construction
        try:
            bits = position.parse_uci(best)
            legal = position.is_legal(bits)
        except (ValueError, chess.IllegalMoveError):
            legal = False
        if not legal:
            raise DataFormatError(f"illegal best move {best!r} in {fen!r}", path=path, line=number)
        if position.is_capture(bits):
            return "capture", None
    elif pqr:
        return "no_best_move", None
    stm = position.side_to_move()
    score = cp if stm == 0 else -cp

    def encode(board: Any) -> npt.NDArray[np.int16]:
        return np.stack(
            [
                pad_features(
                    np.asarray(native.nnue_features(board, p, feature_set.name)),
                    width,
                    feature_set.size,
                )
                for p in (0, 1)
            ]
        )

    if not pqr:
        return "kept", (encode(position), stm, score)
    others = sorted(_uci(m) for m in position.legal_moves() if m != bits)
    if not others:
        return "single_move", None
    q, r = position.copy(), position.copy()
    q.push(bits)
    r.push_uci(others[_pqr_seed(fen) % len(others)])
    return "kept", (encode(position), stm, score, np.stack([encode(q), encode(r)]))


@dataclass(frozen=True)
class FeatureCache:
    """An opened cache (arrays memory-mapped read-only)."""

    path: Path
    meta: dict[str, Any]
    features: npt.NDArray[np.int16]  # (n, 2, K)
    stm: npt.NDArray[np.uint8]  # (n,)
    score: npt.NDArray[np.float32]  # (n,)
    pqr: npt.NDArray[np.int16] | None  # (n, 2, 2, K)
    result: npt.NDArray[np.float32] | None = None  # (n,) side to move's; None: an older cache

    @property
    def has_results(self) -> bool:
        """Whether any row knows its game's result."""
        return self.result is not None and bool(np.isfinite(self.result).any())

    @property
    def feature_set(self) -> FeatureSet:
        return parse_feature_set(self.meta["feature_set"])

    def __len__(self) -> int:
        return len(self.stm)


def open_cache(path: str | Path) -> FeatureCache:
    """Open a complete cache directory."""
    path = Path(path)
    meta_file = path / "meta.json"
    if not meta_file.exists():
        raise LatentChessError(f"{str(path)!r} is not a complete NNUE feature cache (no meta.json)")
    meta = json.loads(meta_file.read_text())
    pqr = np.load(path / "pqr.npy", mmap_mode="r") if meta.get("pqr") else None
    return FeatureCache(
        path=path,
        meta=meta,
        features=np.load(path / "features.npy", mmap_mode="r"),
        stm=np.load(path / "stm.npy", mmap_mode="r"),
        score=np.load(path / "score.npy", mmap_mode="r"),
        pqr=pqr,
        result=np.load(path / "result.npy", mmap_mode="r")
        if (path / "result.npy").exists()
        else None,
    )


def _save_atomic_npz(path: Path, **arrays: npt.NDArray[Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        np.savez(handle, **arrays)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _save_atomic_npy(path: Path, array: npt.NDArray[Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npy")
    np.save(tmp, array)
    os.replace(tmp, path)


def build_cache(
    sources: list[Source],
    out: str | Path,
    feature_set: FeatureSet,
    *,
    shard_rows: int = 65536,
    pqr: bool = False,
    progress: bool = True,
    use_native: bool = True,
) -> FeatureCache:
    """Extract features of every kept row once; resumes after the last complete shard.

    Args:
        sources: the CSVs to read, in order.
        out: the cache directory.
        feature_set: the features to extract.
        shard_rows: input rows (before filtering) per shard.
        pqr: also store the features of Q and R for the PQR loss.
        progress: print progress (rows/s, ETA) to stderr.
        use_native: extract through the core (every block, PQR included; equal to the
            reference by test); with ``False``, or without the core, through the reference.
    """
    out = Path(out)
    if (out / "meta.json").exists():
        cache = open_cache(out)
        if cache.meta["feature_set"] != feature_set.name or bool(cache.meta.get("pqr")) != pqr:
            raise LatentChessError(
                f"cache {str(out)!r} holds {cache.meta['feature_set']!r} "
                f"(pqr={cache.meta.get('pqr')}), not {feature_set.name!r} (pqr={pqr}); "
                "use another cache directory"
            )
        wanted = [s.spec for s in sources]
        if cache.meta.get("sources", wanted) != wanted:
            raise LatentChessError(
                f"cache {str(out)!r} was built from {cache.meta['sources']}, not {wanted}; "
                "use another cache directory"
            )
        return cache
    shards = out / "shards"
    shards.mkdir(parents=True, exist_ok=True)
    spec = {
        "feature_set": feature_set.name,
        "sources": [s.spec for s in sources],
        "pqr": pqr,
        "shard_rows": shard_rows,
    }
    spec_file = out / "spec.json"
    if spec_file.exists() and json.loads(spec_file.read_text()) != spec:
        raise LatentChessError(f"{str(out)!r} holds a partial cache of other settings: {spec_file}")
    spec_file.write_text(json.dumps(spec, indent=2) + "\n")
    # No position reaches MB's bound of 768; a threat block's bound (8 per piece) is kept whole.
    width = feature_set.max_active if feature_set.threats else min(feature_set.max_active, 256)
    total_rows = sum(s.rows or 0 for s in sources) or None
    counts: dict[str, int] = {}
    native = _native_labeller(feature_set) if use_native else None
    shard_index, in_shard, buffer = 0, 0, []
    started, seen = time.monotonic(), 0

    def flush() -> None:
        nonlocal shard_index, in_shard, buffer
        file = shards / f"{shard_index:05d}.npz"
        if not file.exists():
            arrays: dict[str, Any] = {
                "features": np.stack([b[0] for b in buffer])
                if buffer
                else np.zeros((0, 2, width), feature_set.index_dtype),
                "stm": np.asarray([b[1] for b in buffer], dtype=np.uint8),
                "score": np.asarray([b[2] for b in buffer], dtype=np.float32),
                "result": np.asarray(results, dtype=np.float32),
                "verdicts": np.asarray(json.dumps(counts_shard)),
            }
            if pqr:
                arrays["pqr"] = (
                    np.stack([b[3] for b in buffer])
                    if buffer
                    else np.zeros((0, 2, 2, width), feature_set.index_dtype)
                )
            _save_atomic_npz(file, **arrays)
        shard_index, in_shard, buffer = shard_index + 1, 0, []
        results.clear()

    results: list[float] = []  # side to move's game result of each kept row
    counts_shard: dict[str, int] = {}
    for source in sources:
        for path, number, fields, white_result in _rows(source):
            seen += 1
            done = (shards / f"{shard_index:05d}.npz").exists()
            if not done:
                try:
                    if native is not None:
                        verdict, item = _label_native(
                            native, fields, path, number, width, feature_set, pqr
                        )
                    else:
                        verdict, item = _label(fields, path, number, feature_set, width, pqr)
                except DataFormatError as error:
                    if not _is_bin(path):
                        raise
                    raise DataFormatError(
                        f"record {number}: {error.problem}", path=path, offset=number * 40
                    ) from error
                counts_shard[verdict] = counts_shard.get(verdict, 0) + 1
                if item is not None:
                    buffer.append(item)
                    results.append(white_result if item[1] == 0 else 1.0 - white_result)
            in_shard += 1
            if in_shard == shard_rows:
                flush()
                counts_shard = {}
            if progress and seen % 20000 == 0:
                rate = seen / max(time.monotonic() - started, 1e-9)
                eta = f", ETA {(total_rows - seen) / rate / 60:.1f} min" if total_rows else ""
                print(f"nnue cache: {seen} rows, {rate:.0f} rows/s{eta}", flush=True)
    if in_shard:
        flush()
    # Consolidate the shards into single arrays (memory-mapped by training).
    parts = [np.load(shards / f"{i:05d}.npz") for i in range(shard_index)]
    for part in parts:
        for key, value in json.loads(str(part["verdicts"])).items():
            counts[key] = counts.get(key, 0) + value
    _save_atomic_npy(out / "features.npy", np.concatenate([p["features"] for p in parts]))
    _save_atomic_npy(out / "stm.npy", np.concatenate([p["stm"] for p in parts]))
    _save_atomic_npy(out / "score.npy", np.concatenate([p["score"] for p in parts]))
    result = np.concatenate(  # shards of a build begun before results were kept have none
        [p["result"] if "result" in p else np.full(len(p["stm"]), np.nan, "f4") for p in parts]
    )
    _save_atomic_npy(out / "result.npy", result)
    if pqr:
        _save_atomic_npy(out / "pqr.npy", np.concatenate([p["pqr"] for p in parts]))
    meta = {
        **spec,
        "rows_read": seen,
        "verdicts": counts,
        "rows": counts.get("kept", 0),
        "rows_with_result": int(np.isfinite(result).sum()),
        "width": width,
        "extractor": "python-reference" if native is None else "native-core",
    }
    tmp = out / ".meta.json.tmp"
    tmp.write_text(json.dumps(meta, indent=2) + "\n")
    os.replace(tmp, out / "meta.json")
    for i in range(shard_index):
        (shards / f"{i:05d}.npz").unlink()
    return open_cache(out)
