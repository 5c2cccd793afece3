"""Text files stored plain or compressed, told apart by the name's last suffix.

``.gz`` (gzip), ``.xz`` (xz) and ``.zst`` (Zstandard, through the ``zstandard`` package) are
decompressed on the fly; any other name is read as plain UTF-8. Every reader and writer of games
and positions goes through here, so ``games.pgn``, ``games.pgn.gz`` and ``games.pgn.xz`` are the
same file to the project.

Appending (:func:`append_text`) writes one whole gzip member, xz stream or zstd frame per call,
compressed in memory and handed to the operating system in one write: the formats allow
concatenated members, so the file stays readable after every call, and a writer killed between
calls (a match stopped with Ctrl-C) leaves every earlier call's text readable. Each call compresses
its text alone, so a file built game by game is larger than one compressed at once;
:func:`recompress` turns it into one stream, checked byte for byte.

Corrupt or truncated compressed data raises :class:`~latentchess.errors.DataFormatError` naming
the file, wherever it is met while reading.
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import io
import lzma
import os
import shutil
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, Literal, TextIO

from latentchess.errors import DataFormatError

__all__ = [
    "COMPRESSED_SUFFIXES",
    "Compression",
    "compression_of",
    "strip_compression",
    "open_text",
    "read_text",
    "write_text",
    "append_text",
    "find_text",
    "glob_text",
    "recompress",
]

Compression = Literal["gz", "xz", "zst"]

COMPRESSED_SUFFIXES: dict[str, Compression] = {".gz": "gz", ".xz": "xz", ".zst": "zst"}
"""File name suffix -> compression format."""

_CHUNK = 1 << 20


def compression_of(path: str | Path) -> Compression | None:
    """The compression of ``path`` by its last suffix (case-insensitive), or None for plain."""
    return COMPRESSED_SUFFIXES.get(Path(path).suffix.lower())


def strip_compression(name: str | Path) -> str:
    """A file name without its compression suffix: ``games.pgn.xz`` -> ``games.pgn``."""
    name = Path(name).name
    if compression_of(name) is not None:
        return name[: -len(Path(name).suffix)]
    return name


def _zstandard(path: Path) -> Any:
    try:
        import zstandard
    except ImportError as error:
        raise DataFormatError(
            "reading or writing .zst needs the 'zstandard' package (pip install zstandard)",
            path=path,
        ) from error
    return zstandard


def _corruption_errors() -> tuple[type[BaseException], ...]:
    errors: tuple[type[BaseException], ...] = (
        gzip.BadGzipFile,
        EOFError,
        zlib.error,
        lzma.LZMAError,
    )
    try:
        import zstandard
    except ImportError:
        return errors
    return (*errors, zstandard.ZstdError)


class _CheckedReader(io.RawIOBase):
    """Reads a decompressing stream, turning its errors into a DataFormatError naming the file."""

    def __init__(self, stream: IO[bytes] | io.RawIOBase, path: Path, kind: Compression) -> None:
        super().__init__()
        self._stream = stream
        self._path = path
        self._kind = kind
        self._corrupt = _corruption_errors()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        try:
            data = self._stream.read(len(buffer))
        except self._corrupt as error:
            raise DataFormatError(
                f"corrupt or truncated {self._kind} data: {error}", path=self._path
            ) from error
        except OSError as error:
            raise DataFormatError(f"cannot read: {error}", path=self._path) from error
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._stream.close()
        super().close()


class _Concatenated(io.RawIOBase):
    """Decompresses concatenated xz streams or zstd frames, one decompressor each, failing on
    anything after a stream that is not another whole stream: ``lzma`` ignores such trailing data
    (a damaged second game would silently end the file) and ``zstandard``'s stream reader stops
    quietly inside a truncated frame."""

    def __init__(self, raw: IO[bytes], new_decompressor: Callable[[], Any], kind: str) -> None:
        super().__init__()
        self._raw = raw
        self._new = new_decompressor
        self._kind = kind
        self._stream: Any = None  # the stream being decompressed, None between streams
        self._pending = bytearray()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._pending:
            data = self._raw.read(_CHUNK)
            if not data:
                if self._stream is not None:
                    raise EOFError(f"the file ends inside a {self._kind} stream")
                return 0
            while data:
                if self._stream is None:
                    if self._kind == "xz":  # stream padding: zero bytes between streams
                        data = data.lstrip(b"\0")
                        if not data:
                            break
                    self._stream = self._new()
                self._pending += self._stream.decompress(data)
                data = b""
                if self._stream.eof:
                    data, self._stream = self._stream.unused_data, None
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        del self._pending[:size]
        return size

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


def _open_binary(path: Path) -> IO[bytes]:
    """The decompressed bytes of ``path``; DataFormatError for corrupt data or a missing file."""
    kind = compression_of(path)
    try:
        if kind is None:
            return open(path, "rb")
        if path.stat().st_size == 0:
            return io.BytesIO()  # a file created empty (touch): no text yet, not corrupt
        if kind == "gz":
            stream: IO[bytes] | io.RawIOBase = gzip.open(path, "rb")  # noqa: SIM115
        elif kind == "xz":
            stream = _Concatenated(open(path, "rb"), lzma.LZMADecompressor, kind)  # noqa: SIM115
        else:
            new = _zstandard(path).ZstdDecompressor().decompressobj
            stream = _Concatenated(open(path, "rb"), new, kind)  # noqa: SIM115
    except OSError as error:
        raise DataFormatError(f"cannot read: {error.strerror or error}", path=path) from error
    return io.BufferedReader(_CheckedReader(stream, path, kind), buffer_size=_CHUNK)


def open_text(path: str | Path, *, errors: str = "replace") -> TextIO:
    """Open a plain or compressed text file for reading (UTF-8, universal newlines).

    Args:
        path: the file; ``.gz``, ``.xz`` and ``.zst`` are decompressed as they are read.
        errors: how undecodable bytes are handled (``"replace"``: never fail on them).

    Raises:
        DataFormatError: naming the file, when it cannot be opened, or (while reading) when its
            compressed data is corrupt or truncated, or ``.zst`` without ``zstandard``.
    """
    path = Path(path)
    return io.TextIOWrapper(_open_binary(path), encoding="utf-8", errors=errors)


def read_text(path: str | Path) -> str:
    """The whole text of a plain or compressed file (see :func:`open_text`)."""
    with open_text(path) as handle:
        return handle.read()


def _compress(data: bytes, kind: Compression | None, path: Path, *, level: int | None) -> bytes:
    if kind is None:
        return data
    if kind == "gz":
        return gzip.compress(data, compresslevel=9 if level is None else level, mtime=0)
    if kind == "xz":
        return lzma.compress(data, preset=6 if level is None else level)
    zstandard = _zstandard(path)
    compressor = zstandard.ZstdCompressor(level=19 if level is None else level)
    return bytes(compressor.compress(data))


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) as the whole file, compressed by the name's suffix in one stream.

    Written to a temporary file beside it and renamed into place, so a reader never sees half a
    file and a killed writer leaves the old one. Returns the path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = _compress(text.encode("utf-8"), compression_of(path), path, level=None)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(blob)
        os.chmod(name, 0o644)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return path


def append_text(path: str | Path, text: str, *, sync: bool = False) -> None:
    """Append ``text`` (UTF-8) to a plain or compressed file, creating it and its folder.

    A compressed file gets one whole gzip member, xz stream or zstd frame per call, written with a
    single ``write`` to a file opened for appending, so the file is readable after every call.

    Args:
        path: the file; compression by its suffix (:func:`compression_of`).
        text: what to add.
        sync: ``fsync`` the file before returning (a finished game survives a power cut).
    """
    path = Path(path)
    if not text:
        return
    blob = _compress(text.encode("utf-8"), compression_of(path), path, level=None)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        view = memoryview(blob)
        while view:  # one write in practice; a short write on a full disk continues it
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def find_text(path: str | Path) -> Path:
    """Where a text file named ``path`` is stored: ``path`` itself, or else its one compressed copy
    (``path`` with ``.gz``, ``.xz`` or ``.zst`` added), or else ``path`` (for a file to create).

    Records that name ``games.pgn`` keep working once it is stored as ``games.pgn.xz``.

    Raises:
        DataFormatError: when the file is there twice (see :func:`glob_text`).
    """
    path = Path(path)
    if compression_of(path) is not None:
        return path
    found = glob_text(path.parent, glob.escape(path.name))
    return found[0] if found else path


def glob_text(folder: str | Path, pattern: str) -> list[Path]:
    """Files of ``folder`` matching ``pattern`` plain or compressed, sorted by name.

    ``glob_text(folder, "*.pgn")`` finds ``a.pgn``, ``b.pgn.gz``, ``c.pgn.xz`` and ``d.pgn.zst``.

    Raises:
        DataFormatError: when one file is there twice (``a.pgn`` and ``a.pgn.xz``): reading both
            would count its games twice.
    """
    folder = Path(folder)
    patterns = [pattern + suffix for suffix in ("", *COMPRESSED_SUFFIXES)]
    paths = {path for each in patterns for path in folder.glob(each)}
    found: dict[Path, Path] = {}
    for path in sorted(paths):
        if not path.is_file():
            continue
        key = path.parent / strip_compression(path)
        if key in found:
            raise DataFormatError(
                f"stored twice, as {found[key].name!r} and {path.name!r}: keep one", path=key
            )
        found[key] = path
    return sorted(found.values())


@contextlib.contextmanager
def _compressing(
    out: IO[bytes], kind: Compression | None, path: Path, level: int
) -> Iterator[IO[bytes]]:
    """A writer compressing into ``out`` as one stream, finished when the block ends."""
    if kind is None:
        yield out
    elif kind == "gz":
        with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=level, mtime=0) as writer:
            yield writer  # type: ignore[misc]
    elif kind == "xz":
        with lzma.LZMAFile(out, "wb", preset=level) as writer:
            yield writer  # type: ignore[misc]
    else:
        compressor = _zstandard(path).ZstdCompressor(level=level, write_content_size=False)
        with compressor.stream_writer(out, closefd=False) as writer:
            yield writer


def _same_bytes(first: Path, second: Path) -> bool:
    """Whether two (possibly compressed) files decompress to the same bytes."""
    with _open_binary(first) as a, _open_binary(second) as b:
        while True:
            chunk = a.read(_CHUNK)
            if chunk != b.read(len(chunk) or 1):
                return False
            if not chunk:
                return True


def recompress(src: str | Path, dst: str | Path, *, level: int | None = None) -> int:
    """Write ``src``'s content to ``dst`` compressed by ``dst``'s suffix, as one stream, and check
    that ``dst`` decompresses to ``src``'s bytes exactly before it takes ``dst``'s name.

    ``src`` may itself be compressed (a file appended game by game becomes one stream). ``src`` is
    left in place; removing it is the caller's choice.

    Args:
        src: the file to read (plain, ``.gz``, ``.xz`` or ``.zst``).
        dst: the file to write; must differ from ``src``.
        level: compression level (default: xz 9, gzip 9, zstd 19).

    Returns:
        The size of ``dst`` in bytes.

    Raises:
        DataFormatError: for unreadable or corrupt input, or when the round trip differs.
        ValueError: when ``src`` and ``dst`` are the same file.
    """
    src, dst = Path(src), Path(dst)
    if src.resolve() == dst.resolve():
        raise ValueError(f"recompress needs another destination than its source {str(src)!r}")
    kind = compression_of(dst)
    if level is None:
        level = 19 if kind == "zst" else 9
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=dst.suffix, dir=dst.parent)
    tmp = Path(name)
    try:
        with (
            os.fdopen(fd, "wb") as out,
            _open_binary(src) as reader,
            _compressing(out, kind, dst, level) as writer,
        ):
            while chunk := reader.read(_CHUNK):
                writer.write(chunk)
        if not _same_bytes(src, tmp):
            raise DataFormatError(
                f"the compressed copy {str(dst)!r} does not decompress to the same bytes", path=src
            )
        shutil.copymode(src, tmp)  # mkstemp made it private
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)
    return dst.stat().st_size
