"""The ``.bag`` / ``.bagz`` record container of DeepMind's ChessBench (Ruoss et al. 2024).

A bag is its records concatenated, then an index of N little-endian uint64 *end* offsets, one per
record. The file's last 8 bytes are the last end offset, which is also where the index starts, so
``N = (file_size - index_start) / 8`` and record ``i`` spans ``[end[i-1] (0 for i = 0), end[i])``.
In a ``.bagz`` file every record is compressed on its own with zstd; an empty record is stored as
zero bytes.

Empty bags: a zero-length file is an empty bag (what :func:`write_bag` leaves when given no
records). A non-empty file cannot have an empty index, since its last 8 bytes are themselves an
index entry; so a file of 1 to 7 bytes, or one whose index pointer does not fit the file, is a
truncated or foreign file and raises :class:`~latentchess.errors.DataFormatError` naming the byte
offset. (An 8-byte file holding 0 is a bag of one empty record.)

The reader maps the file and reads only the index entries it needs, so random access into a
multi-gigabyte bag costs two 8-byte reads; streaming reads the index in chunks.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from latentchess.errors import DataFormatError

if TYPE_CHECKING:
    import zstandard

__all__ = ["ZSTD_MAGIC", "RecordLocation", "BagReader", "write_bag"]

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
"""The first four bytes of every zstd frame."""
_INDEX_CHUNK = 1 << 16  # index entries read at once when streaming


@dataclass(frozen=True, slots=True)
class RecordLocation:
    """Where a record is stored, for error messages."""

    path: str | None
    index: int
    start: int
    """File offset of the record's first stored byte."""
    end: int
    """File offset just past the record."""
    compressed: bool
    """True if the stored bytes are a zstd frame (so positions inside it are not file offsets)."""


class BagReader:
    """Random access to the records of a ``.bag`` / ``.bagz`` file through a read-only mmap.

    Only the 8-byte index entries of the records asked for are read, so opening a file of any
    size is instant. Supports ``len``, indexing (negative too), iteration and ``with``.

    Args:
        path: the bag file.
        compressed: whether records are zstd frames; ``None`` means yes for a ``.bagz`` suffix,
            otherwise yes if the first record starts with the zstd magic number.

    Raises:
        DataFormatError: the file is too short or its index pointer is inconsistent.
    """

    def __init__(self, path: str | Path, *, compressed: bool | None = None) -> None:
        self.path = Path(path)
        self._map: mmap.mmap | None = None
        self._closed = False
        with open(self.path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size:
                self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        self.size = size
        if size == 0:
            index_start = 0
        elif size < 8:
            self.close()
            raise DataFormatError(
                f"a {size}-byte file is too short for the 8-byte index pointer", path=path, offset=0
            )
        else:
            assert self._map is not None
            index_start = int.from_bytes(self._map[size - 8 :], "little")
            problem = None
            if index_start > size - 8:
                problem = (
                    f"index pointer {index_start} in the last 8 bytes lies beyond the records "
                    f"region (file has {size} bytes): truncated file or not a bag"
                )
            elif (size - index_start) % 8:
                problem = (
                    f"index from byte {index_start} to the end ({size - index_start} bytes) is "
                    f"not a whole number of 8-byte entries: truncated file or not a bag"
                )
            if problem:
                self.close()
                raise DataFormatError(problem, path=path, offset=size - 8)
        self._index_start = index_start
        self._count = (size - index_start) // 8
        self._dctx: zstandard.ZstdDecompressor | None = None
        self.compressed = False
        if compressed is None:
            compressed = self.path.suffix == ".bagz" or (
                self._count > 0 and self._stored(0).startswith(ZSTD_MAGIC)
            )
        self.compressed = compressed

    def __len__(self) -> int:
        return self._count

    def __repr__(self) -> str:
        return f"BagReader({str(self.path)!r}, records={self._count})"

    def __enter__(self) -> BagReader:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release the memory map (idempotent)."""
        self._closed = True
        if self._map is not None:
            self._map.close()
            self._map = None

    def _open_map(self) -> mmap.mmap:
        if self._closed:
            raise ValueError(f"{self.path}: I/O on a closed BagReader")
        assert self._map is not None  # only an empty file has no map, and it has no records
        return self._map

    def _index_entry(self, i: int) -> int:
        first = self._index_start + 8 * i
        return int.from_bytes(self._open_map()[first : first + 8], "little")

    def _check_bounds(self, i: int, start: int, end: int) -> None:
        if not start <= end <= self._index_start:
            raise DataFormatError(
                f"index entry {i} says record {i} spans bytes {start}..{end}, outside the records "
                f"region 0..{self._index_start} or backwards: corrupt index",
                path=self.path,
                offset=self._index_start + 8 * i,
            )

    def _normalize(self, i: int) -> int:
        if not isinstance(i, int):
            raise TypeError(f"bag indices must be integers, got {type(i).__name__}")
        j = i + self._count if i < 0 else i
        if not 0 <= j < self._count:
            raise IndexError(f"record index {i} out of range for a bag of {self._count} records")
        return j

    def location(self, i: int) -> RecordLocation:
        """Where record ``i`` is stored (negative ``i`` counts from the end)."""
        i = self._normalize(i)
        start = self._index_entry(i - 1) if i else 0
        end = self._index_entry(i)
        self._check_bounds(i, start, end)
        return RecordLocation(str(self.path), i, start, end, self.compressed)

    def _stored(self, i: int) -> bytes:
        location = self.location(i)
        return self._open_map()[location.start : location.end]

    def decompress_record(self, i: int, data: bytes) -> bytes:
        """Decompress record ``i``'s stored bytes (a no-op for an uncompressed bag).

        Raises:
            DataFormatError: not a complete zstd frame; names the record and its offset.
        """
        if not self.compressed or not data:
            return data
        import zstandard

        if self._dctx is None:
            self._dctx = zstandard.ZstdDecompressor()
        try:
            if zstandard.frame_content_size(data) >= 0:
                return self._dctx.decompress(data)
            # Frames written in streaming mode do not record their size; decompress() needs it.
            stream = self._dctx.decompressobj()
            out = stream.decompress(data)
            if not stream.eof:
                raise zstandard.ZstdError("frame is truncated")
            return out
        except zstandard.ZstdError as error:
            location = self.location(i)
            raise DataFormatError(
                f"record {i} (bytes {location.start}..{location.end}) is not a valid zstd frame: "
                f"{error}",
                path=self.path,
                offset=location.start,
            ) from None

    def __getitem__(self, i: int) -> bytes:
        """The (decompressed) bytes of record ``i``; raises IndexError when out of range."""
        j = self._normalize(i)
        return self.decompress_record(j, self._stored(j))

    def iter_stored(self, start: int, stop: int) -> Iterator[tuple[int, bytes]]:
        """Stream ``(index, stored bytes)`` for records ``start`` up to ``stop`` (clamped).

        The bytes are as stored (still compressed in a ``.bagz``: see :meth:`decompress_record`);
        the index is read 65,536 entries at a time and checked as it goes.

        Raises:
            DataFormatError: an index entry points outside the records or before its predecessor.
        """
        import numpy as np

        start, stop = max(start, 0), min(stop, self._count)
        if start >= stop:
            return
        records = self._open_map()
        previous = self._index_entry(start - 1) if start > 0 else 0
        for chunk_start in range(start, stop, _INDEX_CHUNK):
            count = min(_INDEX_CHUNK, stop - chunk_start)
            first = self._index_start + 8 * chunk_start
            # A copy (slicing), not a view: a view would keep the map from being closed.
            ends = np.frombuffer(records[first : first + 8 * count], dtype="<u8")
            starts = np.concatenate((np.array([previous], dtype="<u8"), ends[:-1]))
            bad = np.flatnonzero((starts > ends) | (ends > self._index_start))
            if bad.size:
                k = int(bad[0])
                self._check_bounds(chunk_start + k, int(starts[k]), int(ends[k]))
            for k, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
                yield chunk_start + k, records[a:b]
            previous = int(ends[-1])

    def items(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, bytes]]:
        """Stream ``(index, record bytes)`` for records ``start`` up to ``stop`` (default: all)."""
        for i, data in self.iter_stored(start, self._count if stop is None else stop):
            yield i, self.decompress_record(i, data)

    def __iter__(self) -> Iterator[bytes]:
        for _, data in self.items():
            yield data


def write_bag(
    path: str | Path, records: Iterable[bytes], *, compress: bool | None = None, level: int = 3
) -> int:
    """Write records as a bag file, atomically (a temporary file renamed into place).

    Args:
        path: output file.
        records: the records' bytes, in order.
        compress: zstd-compress each record (``.bagz``); ``None`` means by the ``.bagz`` suffix.
        level: zstd compression level.

    Returns:
        The number of records written. No records give a zero-length file (an empty bag).
    """
    import numpy as np

    path = Path(path)
    if compress is None:
        compress = path.suffix == ".bagz"
    compressor = None
    if compress:
        import zstandard

        compressor = zstandard.ZstdCompressor(level=level)
    ends: list[int] = []
    offset = 0
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as handle:
            for record in records:
                data = compressor.compress(record) if compressor and record else bytes(record)
                handle.write(data)
                offset += len(data)
                ends.append(offset)
            handle.write(np.asarray(ends, dtype="<u8").tobytes())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return len(ends)
