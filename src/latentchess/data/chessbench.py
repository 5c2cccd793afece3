"""DeepMind ChessBench data (Ruoss et al. 2024): record codings, reading, and import as a dataset.

The files are bags (:mod:`latentchess.data.bag`: records concatenated plus an index of end
offsets; ``.bagz`` compresses each record with zstd), re-exported here as :class:`BagReader` and
:func:`write_bag`. Kinds are told apart by file name (:func:`detect_kind`).

**Records** are Apache Beam tuple codings: a string inside a tuple is ``varint(length)`` + UTF-8,
except the tuple's last component, which runs to the end of the record; a float is an 8-byte
big-endian IEEE double; a varint is unsigned LEB128 (at most 10 bytes).

=====================  =======================  =====================================
kind                   fields                   bytes
=====================  =======================  =====================================
``state_value``        fen, win_prob            varint+FEN, double
``action_value``       fen, move, win_prob      varint+FEN, varint+UCI move, double
``behavioral_cloning`` fen, move                varint+FEN, UCI move to the end
=====================  =======================  =====================================

``win_prob`` is the win probability of the side to move (for an action value: after it plays
``move``).

**Import** (:func:`import_chessbench`) writes a latentchess dataset (:mod:`latentchess.data.store`)
with ``win_prob_white`` in White's view (a value strictly inside (0, 1) is kept at least 2**-24
from either end, so that only a file's exact 0 / 1 become the exact labels the advantage axis
takes for mates), ``cp_white`` from the inverse logistic (null at exactly 0 or 1; ChessBench
values carry no mate information, so ``mate_white`` is always null) and
``source = "chessbench:<file name>"``. A state value becomes one row. Action values become one row
per FEN, grouped within the whole file (records of one FEN are usually adjacent, but that is not
relied on): the position's value is the best move's value, ``best_move`` that move (the first one
read among equal values). Behavioral-cloning records have no values and are refused.

Rows go through the same :class:`~latentchess.data.resume.ResumableWriter` as every other
importer: a position already in the dataset (any file, any run, by
:func:`~latentchess.encoding.fen_key`) or read earlier in the file is skipped, and each file is
one run with the shard prefix ``chessbench_<file stem>``, whose shards record how many records
were handled. A re-run (after a crash or ``kill -9`` too) resumes after the last record written;
a state-value file is committed record by record (a shard every ``shard_rows`` rows), an
action-value file once grouped, and a file with nothing left is skipped. Files are identified
by name and size: two different files with one name cannot share a dataset.
"""

from __future__ import annotations

import logging
import re
import struct
import sys
from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import chess

from latentchess.data.bag import BagReader, RecordLocation, write_bag
from latentchess.data.resume import ResumableWriter, prefix_shards
from latentchess.encoding import tokenize
from latentchess.errors import DataFormatError, LatentChessError
from latentchess.winprob import centipawns, white_perspective

__all__ = [
    "KINDS",
    "Kind",
    "StateValue",
    "ActionValue",
    "BehavioralCloning",
    "Record",
    "RecordLocation",
    "BagReader",
    "write_bag",
    "encode_varint",
    "encode_state_value",
    "encode_action_value",
    "encode_behavioral_cloning",
    "decode_state_value",
    "decode_action_value",
    "decode_behavioral_cloning",
    "decode_record",
    "detect_kind",
    "iter_chessbench",
    "ImportSummary",
    "import_chessbench",
]

Kind = Literal["state_value", "action_value", "behavioral_cloning"]
KINDS: tuple[Kind, ...] = get_args(Kind)
"""The three ChessBench record kinds, as they appear in its file names."""

_MAX_VARINT_BYTES = 10  # 64 bits in 7-bit groups
_P_EDGE = 2.0**-24  # labels strictly inside (0, 1) stay so in float32 (as in data.stockfish)
_LOGGED_ERRORS_PER_FILE = 10
_KEPT_ERRORS = 20

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StateValue:
    """One ``state_value`` record."""

    fen: str
    win_prob: float
    """Win probability of the side to move."""


@dataclass(frozen=True, slots=True)
class ActionValue:
    """One ``action_value`` record."""

    fen: str
    move: str
    """UCI move of the side to move."""
    win_prob: float
    """Win probability of the side to move after it plays ``move``."""


@dataclass(frozen=True, slots=True)
class BehavioralCloning:
    """One ``behavioral_cloning`` record: the move Stockfish chose."""

    fen: str
    move: str
    """UCI move."""


Record = StateValue | ActionValue | BehavioralCloning


class _CorruptRecordError(Exception):
    """Internal: a record's bytes do not decode; ``position`` is relative to the record."""

    def __init__(self, problem: str, position: int) -> None:
        super().__init__(problem)
        self.problem = problem
        self.position = position


def _record_error(corrupt: _CorruptRecordError, location: RecordLocation | None) -> DataFormatError:
    problem, pos = corrupt.problem, corrupt.position
    if location is None:
        return DataFormatError(f"{problem} at byte {pos} of the record", offset=pos)
    if location.compressed:
        return DataFormatError(
            f"record {location.index} (stored at bytes {location.start}..{location.end}): "
            f"{problem} at byte {pos} of the decompressed record",
            path=location.path,
            offset=location.start,
        )
    return DataFormatError(
        f"record {location.index} (bytes {location.start}..{location.end}): {problem}",
        path=location.path,
        offset=location.start + pos,
    )


def encode_varint(value: int) -> bytes:
    """Unsigned LEB128: 7 bits per byte, low group first, high bit set on all but the last."""
    if not 0 <= value < 1 << 64:
        raise ValueError(f"varint value must lie in [0, 2**64), got {value!r}")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = 0
    for i in range(_MAX_VARINT_BYTES):
        if pos + i >= len(data):
            raise _CorruptRecordError(
                f"varint runs past the end of the record ({len(data)} bytes)", pos
            )
        byte = data[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            if value >= 1 << 64:
                raise _CorruptRecordError(f"varint value {value} does not fit in 64 bits", pos)
            return value, pos + i + 1
    raise _CorruptRecordError(f"varint longer than {_MAX_VARINT_BYTES} bytes", pos)


def _read_text(data: bytes, start: int, end: int, what: str) -> str:
    try:
        return data[start:end].decode("utf-8")
    except UnicodeDecodeError as error:
        raise _CorruptRecordError(
            f"{what} is not UTF-8 ({error.reason})", start + error.start
        ) from None


def _read_string(data: bytes, pos: int, what: str) -> tuple[str, int]:
    length, start = _read_varint(data, pos)
    end = start + length
    if end > len(data):
        raise _CorruptRecordError(
            f"{what} of length {length} runs past the end of the record ({len(data)} bytes)", pos
        )
    return _read_text(data, start, end, what), end


def _read_final_double(data: bytes, pos: int) -> float:
    if len(data) - pos != 8:
        raise _CorruptRecordError(
            f"expected an 8-byte double to end the record, found {len(data) - pos}", pos
        )
    return float(struct.unpack_from(">d", data, pos)[0])


def _parse_state_value(data: bytes) -> StateValue:
    fen, pos = _read_string(data, 0, "FEN")
    return StateValue(fen, _read_final_double(data, pos))


def _parse_action_value(data: bytes) -> ActionValue:
    fen, pos = _read_string(data, 0, "FEN")
    move, pos = _read_string(data, pos, "move")
    return ActionValue(fen, move, _read_final_double(data, pos))


def _parse_behavioral_cloning(data: bytes) -> BehavioralCloning:
    fen, pos = _read_string(data, 0, "FEN")
    return BehavioralCloning(fen, _read_text(data, pos, len(data), "move"))


_PARSERS: dict[Kind, Callable[[bytes], Record]] = {
    "state_value": _parse_state_value,
    "action_value": _parse_action_value,
    "behavioral_cloning": _parse_behavioral_cloning,
}


def decode_record(kind: Kind, data: bytes, location: RecordLocation | None = None) -> Record:
    """Decode one record of ``kind``.

    Args:
        kind: one of :data:`KINDS`.
        data: the record's (decompressed) bytes.
        location: where it came from (see :meth:`BagReader.location`), named in errors.

    Raises:
        DataFormatError: the bytes do not follow the coding; names the record index and offset.
    """
    if kind not in _PARSERS:
        raise ValueError(f"unknown ChessBench record kind {kind!r}; expected one of {KINDS}")
    try:
        return _PARSERS[kind](data)
    except _CorruptRecordError as corrupt:
        raise _record_error(corrupt, location) from None


def decode_state_value(data: bytes, location: RecordLocation | None = None) -> StateValue:
    """Decode a ``state_value`` record (see :func:`decode_record`)."""
    record = decode_record("state_value", data, location)
    assert isinstance(record, StateValue)
    return record


def decode_action_value(data: bytes, location: RecordLocation | None = None) -> ActionValue:
    """Decode an ``action_value`` record (see :func:`decode_record`)."""
    record = decode_record("action_value", data, location)
    assert isinstance(record, ActionValue)
    return record


def decode_behavioral_cloning(
    data: bytes, location: RecordLocation | None = None
) -> BehavioralCloning:
    """Decode a ``behavioral_cloning`` record (see :func:`decode_record`)."""
    record = decode_record("behavioral_cloning", data, location)
    assert isinstance(record, BehavioralCloning)
    return record


def _encode_string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return encode_varint(len(raw)) + raw


def encode_state_value(fen: str, win_prob: float) -> bytes:
    """Encode a ``state_value`` record (``win_prob``: the side to move's)."""
    return _encode_string(fen) + struct.pack(">d", win_prob)


def encode_action_value(fen: str, move: str, win_prob: float) -> bytes:
    """Encode an ``action_value`` record (``win_prob``: the mover's, after ``move``)."""
    return _encode_string(fen) + _encode_string(move) + struct.pack(">d", win_prob)


def encode_behavioral_cloning(fen: str, move: str) -> bytes:
    """Encode a ``behavioral_cloning`` record."""
    return _encode_string(fen) + move.encode("utf-8")


def detect_kind(path: str | Path) -> Kind:
    """The record kind named in a ChessBench file name (``action_value-00000-of-02148_data.bag``).

    Raises:
        DataFormatError: the name contains none (or several) of :data:`KINDS`.
    """
    name = Path(path).name
    found = [kind for kind in KINDS if kind in name]
    if len(found) != 1:
        raise DataFormatError(
            f"cannot tell the record kind from the file name {name!r}: expected exactly one of "
            f"{', '.join(KINDS)} in it; pass the kind explicitly (--kind)",
            path=path,
        )
    return found[0]


def iter_chessbench(path: str | Path, *, kind: Kind | None = None) -> Iterator[Record]:
    """Stream the decoded records of a ChessBench bag (kind detected from the name by default)."""
    kind = detect_kind(path) if kind is None else kind
    with BagReader(path) as reader:
        for i, data in reader.items():
            try:
                yield _PARSERS[kind](data)
            except _CorruptRecordError as corrupt:
                raise _record_error(corrupt, reader.location(i)) from None


# --------------------------------------------------------------------------------------------
# Import into a dataset


@dataclass(frozen=True, slots=True)
class ImportSummary:
    """What :func:`import_chessbench` did."""

    out_dir: Path
    files_read: int
    """Files read in this run (wholly, or on from where an earlier run stopped)."""
    files_skipped: int
    """Files with nothing left to import: done (up to ``limit``) by an earlier run, or empty."""
    records_read: int
    records_bad: int
    """Records skipped as undecodable, with an invalid FEN, move or win probability."""
    rows_written: int
    shards_written: int
    errors: tuple[str, ...]
    """The first few bad-record messages."""
    records_duplicate: int = 0
    """Usable records whose position the dataset already held (or the file gave before)."""


_STEM_UNSAFE = re.compile(r"[^A-Za-z0-9_.]")


def _shard_prefix(path: Path) -> str:
    stem = path.name.removesuffix(".bagz").removesuffix(".bag")
    return "chessbench_" + _STEM_UNSAFE.sub("_", stem)


def _row(fen: str, p_side_to_move: float, move: str | None, source: str) -> dict[str, Any]:
    if 0.0 < p_side_to_move < 1.0:
        # Exactly 0.0 / 1.0 only where the file has them: for Black to move, 1 - p rounds a
        # p below 1e-16 to exactly 1.0, a fake White "mate" (White's side has no such rounding).
        p_side_to_move = min(max(p_side_to_move, _P_EDGE), 1.0 - _P_EDGE)
    p_white = white_perspective(
        p_side_to_move, chess.WHITE if fen.split()[1] == "w" else chess.BLACK
    )
    cp = round(centipawns(p_white)) if 0.0 < p_white < 1.0 else None
    return {
        "fen": fen,
        "win_prob_white": p_white,
        "cp_white": cp,
        "best_move": move,
        "source": source,
    }


def _validated(record: Record, known_fens: Container[str]) -> Record:
    """Raise ``ValueError`` (InvalidFenError included) if a decoded record is unusable.

    FENs in ``known_fens`` were validated before (an action-value file repeats each FEN once per
    legal move; tokenizing dominates the import's time).
    """
    if record.fen not in known_fens:
        tokenize(record.fen)
    if isinstance(record, ActionValue | BehavioralCloning):
        chess.Move.from_uci(record.move)
    if not isinstance(record, BehavioralCloning) and not 0.0 <= record.win_prob <= 1.0:
        raise ValueError(f"win probability {record.win_prob!r} is not in [0, 1]")
    return record


class _FileImport:
    """Imports one bag: reads its usable records, counting and reporting the bad ones."""

    def __init__(
        self,
        reader: BagReader,
        kind: Kind,
        writer: ResumableWriter,
        strict: bool,
        errors: list[str],
    ) -> None:
        self.reader = reader
        self.kind = kind
        self.writer = writer
        self.strict = strict
        self.errors = errors  # shared by the files of one import
        self.source = f"chessbench:{reader.path.name}"
        self.read = self.bad = self.duplicates = 0

    def records(
        self, start: int, stop: int, bar: Any, known_fens: Container[str] = ()
    ) -> Iterator[tuple[int, Record | None]]:
        """``(index, record)`` for records ``start..stop-1``; ``None`` for a bad one (counted).

        See :func:`_validated` for ``known_fens``.
        """
        parse = _PARSERS[self.kind]
        for i, stored in self.reader.iter_stored(start, stop):
            self.read += 1
            if (i + 1 - start) % 4096 == 0:
                bar.update(4096)
            try:
                record = _validated(parse(self.reader.decompress_record(i, stored)), known_fens)
            except _CorruptRecordError as corrupt:
                self._bad(_record_error(corrupt, self.reader.location(i)))
            except ValueError as error:  # DataFormatError from zstd, InvalidFenError, moves, p
                if not isinstance(error, DataFormatError):
                    location = self.reader.location(i)
                    error = DataFormatError(
                        f"record {i} (bytes {location.start}..{location.end}): {error}",
                        path=self.reader.path,
                        offset=location.start,
                    )
                self._bad(error)
            else:
                yield i, record
                continue
            yield i, None
        bar.update((stop - start) % 4096)

    def _bad(self, error: DataFormatError) -> None:
        if self.strict:
            raise error
        self.bad += 1
        if self.bad <= _LOGGED_ERRORS_PER_FILE:
            logger.warning("skipping bad record: %s", error)
        if len(self.errors) < _KEPT_ERRORS:
            self.errors.append(str(error))

    def state_values(self, start: int, stop: int, bar: Any) -> None:
        """Commit records ``start..stop-1`` one by one (the cursor counts records handled)."""
        writer = self.writer
        for i, record in self.records(start, stop, bar):
            rows = []
            if isinstance(record, StateValue):
                if writer.claim(record.fen):
                    rows.append(_row(record.fen, record.win_prob, None, self.source))
                else:
                    self.duplicates += 1
            writer.commit(rows, cursor=i + 1)

    def action_values(self, stop: int, bar: Any) -> None:
        """Group records ``0..stop-1`` per FEN (best move's value) and commit them at once."""
        best: dict[str, tuple[float, str]] = {}  # fen -> (win prob, move), mover's view
        for _, r in self.records(0, stop, bar, known_fens=best):
            if not isinstance(r, ActionValue):
                continue
            if r.fen not in best or r.win_prob > best[r.fen][0]:
                best[r.fen] = (r.win_prob, r.move)
        rows = []
        for fen, (p, move) in best.items():
            if self.writer.claim(fen):
                rows.append(_row(fen, p, move, self.source))
            else:
                self.duplicates += 1
        self.writer.commit(rows, cursor=stop)


def _check_inputs(files: list[Path], kinds: list[Kind]) -> None:
    for path, kind in zip(files, kinds, strict=True):
        if kind not in KINDS:
            raise ValueError(f"unknown ChessBench record kind {kind!r}; expected one of {KINDS}")
        if kind == "behavioral_cloning":
            raise DataFormatError(
                "behavioral_cloning records carry no win probabilities, so they cannot become "
                "dataset rows; read them with BagReader and decode_behavioral_cloning instead",
                path=path,
            )
        if not path.is_file():
            raise DataFormatError("no such file", path=path)
    prefixes = [_shard_prefix(p) for p in files]
    if len(set(prefixes)) != len(prefixes):
        raise DataFormatError(f"two input files share a name: {[str(p) for p in files]}")


def import_chessbench(
    paths: Sequence[str | Path],
    out_dir: str | Path,
    *,
    kind: Kind | None = None,
    limit: int | None = None,
    strict: bool = False,
    shard_rows: int = 100_000,
    progress: bool = True,
) -> ImportSummary:
    """Import ChessBench ``state_value`` or ``action_value`` bags into a dataset (resumable).

    See the module docstring for the rows written, the positions skipped as duplicates and how
    shards record progress.

    Args:
        paths: ``.bag`` / ``.bagz`` files.
        out_dir: dataset directory (created if missing; may already hold other shards).
        kind: record kind of every file; ``None`` detects each file's from its name.
        limit: read at most the first ``limit`` records of each file.
        strict: raise on the first bad record instead of skipping it.
        shard_rows: rows per shard.
        progress: show a tqdm progress bar per file on stderr.

    Raises:
        DataFormatError: undetectable kind, a behavioral-cloning file, a corrupt container (always
            fatal), a resume into shards of another file of the same name, or with ``strict`` a
            bad record; names the file and byte offset.
        LatentChessError: an action-value file already imported with a smaller ``limit``.
    """
    from tqdm import tqdm

    if isinstance(paths, str | Path):
        paths = [paths]
    files = [Path(p) for p in paths]
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit!r}")
    if shard_rows < 1:
        raise ValueError(f"shard_rows must be >= 1, got {shard_rows!r}")
    kinds = [detect_kind(p) if kind is None else kind for p in files]
    _check_inputs(files, kinds)

    out = Path(out_dir)
    errors: list[str] = []
    jobs: list[_FileImport] = []
    rows = shards = skipped = 0
    seen: set[str] | None = None  # the dataset's positions, loaded once for all files
    for path, file_kind in zip(files, kinds, strict=True):
        with BagReader(path) as reader:
            prefix = _shard_prefix(path)
            identity = {
                "command": "import-chessbench",
                "input": path.name,
                "input_bytes": path.stat().st_size,
                "kind": file_kind,
            }
            writer = ResumableWriter(out, prefix, identity, shard_rows=shard_rows, seen=seen)
            seen = writer.seen
            shards_before = len(prefix_shards(out, prefix)) if out.is_dir() else 0
            stop = len(reader) if limit is None else min(limit, len(reader))
            resume = writer.cursor
            if file_kind == "action_value" and 0 < resume < stop:
                raise LatentChessError(
                    f"{path}: action values of its first {resume} records were already "
                    f"imported into {out}; importing {stop} would group them again, so "
                    f"import into a fresh directory"
                )
            if resume >= stop:
                logger.info("%s: records 0..%d already imported, skipping", path, stop)
                skipped += 1
                continue
            job = _FileImport(reader, file_kind, writer, strict, errors)
            jobs.append(job)
            with tqdm(
                total=stop - resume,
                desc=path.name,
                unit="rec",
                unit_scale=True,
                disable=not progress,
                file=sys.stderr,
            ) as bar:
                try:
                    if file_kind == "state_value":
                        job.state_values(resume, stop, bar)
                    else:
                        job.action_values(stop, bar)
                finally:
                    writer.close()  # what was committed stays: a re-run resumes after it
                    rows += writer.rows - writer.resumed_rows
                    shards += len(prefix_shards(out, prefix)) - shards_before
            if job.bad > _LOGGED_ERRORS_PER_FILE:
                logger.warning("%s: %d bad records skipped in all", path, job.bad)
    return ImportSummary(
        out_dir=out,
        files_read=len(jobs),
        files_skipped=skipped,
        records_read=sum(job.read for job in jobs),
        records_bad=sum(job.bad for job in jobs),
        rows_written=rows,
        shards_written=shards,
        errors=tuple(errors),
        records_duplicate=sum(job.duplicates for job in jobs),
    )
