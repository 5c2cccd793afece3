"""Store results files compressed (.xz), each checked to round-trip byte for byte.

    python benchmarks/compress_results.py benchmarks/results/spsa --dry-run
    python benchmarks/compress_results.py benchmarks/results/spsa/nodes8k/games.pgn --git
    python benchmarks/compress_results.py benchmarks/results --recompress --min-bytes 0 --git

Arguments are files (compressed whatever their size) or folders (every file git tracks under
them that is over ``--min-bytes``, default 1 MB, and not compressed yet; largest first). Each
file is written as ``NAME.xz`` (xz -9, one stream), read back and compared with the original
byte for byte, and only then is the original deleted (``--keep`` keeps it). Markdown stays
plain: it is what people read. ``--recompress`` takes gzip and Zstandard files as well and
stores them as ``.xz`` (``a.pgn.gz`` becomes ``a.pgn.xz``; xz -9 keeps games in about 40% of
gzip's bytes).
Mentions of the old name in the ``README.md`` of the file's folder become the new name.
``--git`` also stages all of it: the original leaves git's index, the ``.xz`` and the READMEs
enter it.

A change that compresses a file carries the file's whole text as removed plus the ``.xz`` as
added: the script prints that cost per file and in total, and ``--max-bytes`` leaves alone any
file that would take the total over the budget. ``--dry-run`` prints the plan (the cost counts the
original only: the ``.xz`` size is known once it is written) and changes nothing.

Readers of the project open ``NAME`` and ``NAME.xz`` alike (``latentchess.textfiles``);
``tests/test_repository.py`` fails on a tracked results file over 1 MB that is not compressed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from latentchess.textfiles import compression_of, recompress, strip_compression

MIN_BYTES = 1_000_000
ALREADY_COMPRESSED = {".gz", ".xz", ".zst", ".bz2", ".zip", ".png", ".jpg", ".jpeg", ".webp",
                      ".pdf", ".parquet"}  # fmt: skip
RECOMPRESSIBLE = {".gz", ".zst"}  # text the project reads, worth storing as .xz instead


@dataclass
class Outcome:
    """One file: its sizes and what a change compressing it costs."""

    path: Path
    original: int
    compressed: int | None = None  # None: not written (dry run, or over the budget)
    readmes: tuple[Path, ...] = ()

    @property
    def diff_bytes(self) -> int:
        return self.original + (self.compressed or 0)


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=folder, capture_output=True, text=True, check=True
    ).stdout


KEPT_PLAIN = frozenset({".md", ".sh", ".py"})
"""Text people read or run where it stands: notes and the scripts that made a result."""


def candidates(folder: Path, min_bytes: int, *, recompressing: bool = False) -> list[Path]:
    """Tracked files under ``folder`` over ``min_bytes`` and not compressed (``recompressing``:
    or gzip/Zstandard), largest first."""
    names = _git(folder, "ls-files", "-z", "--", ".").split("\0")
    found = []
    for name in filter(None, names):
        path = folder / name
        suffix = path.suffix.lower()
        if (
            not path.is_file()
            or suffix in KEPT_PLAIN
            or (suffix in ALREADY_COMPRESSED and not (recompressing and suffix in RECOMPRESSIBLE))
        ):
            continue
        if path.stat().st_size > min_bytes:
            found.append(path)
    return sorted(found, key=lambda p: (-p.stat().st_size, str(p)))


def mention_pattern(name: str) -> re.Pattern[str]:
    """``name`` as a whole file name: after a path separator or not inside another name, and not
    already followed by a suffix (``games.pgn`` in ``a/games.pgn`` or ``games.pgn.`` but not in
    ``games.pgn.xz`` or ``old-games.pgn``)."""
    return re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w-]|\.\w)")


def update_readmes(path: Path, new_name: str) -> tuple[Path, ...]:
    """Point the mentions of ``path``'s name in its folder's README.md at ``new_name``."""
    changed = []
    pattern = mention_pattern(path.name)
    for readme in sorted(path.parent.glob("README.md")):
        text = readme.read_text(encoding="utf-8")
        updated = pattern.sub(new_name, text)
        if updated != text:
            readme.write_text(updated, encoding="utf-8")
            changed.append(readme)
    return tuple(changed)


def compress(
    path: Path, *, keep: bool, stage: bool, level: int, budget: int | None = None
) -> Outcome:
    """Compress one file (see the module docstring); raise if the round trip differs.

    With ``budget`` (bytes the change may still take), a file whose original and ``.xz``
    together exceed it is left as it was: the ``.xz`` is deleted and ``compressed`` stays None.
    """
    target = path.with_name(strip_compression(path.name) + ".xz")
    if target.exists():
        raise FileExistsError(f"{target} exists already: remove one of the two copies first")
    outcome = Outcome(path=path, original=path.stat().st_size)
    size = recompress(path, target, level=level)  # checked byte for byte
    if budget is not None and outcome.original + size > budget:
        target.unlink()
        return outcome
    outcome.compressed = size
    outcome.readmes = update_readmes(path, target.name)
    if not keep:
        path.unlink()
    if stage:
        folder = path.parent
        _git(folder, "rm", "-q", "--cached", "--ignore-unmatch", "--", path.name)
        _git(folder, "add", "--", target.name, *(r.name for r in outcome.readmes))
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", type=Path, nargs="+", help="results files or folders")
    parser.add_argument(
        "--min-bytes",
        type=int,
        default=MIN_BYTES,
        help=f"folders: files over this size (default {MIN_BYTES:,})",
    )
    parser.add_argument("--max-bytes", type=int, help="stop before a change over this many bytes")
    parser.add_argument("--level", type=int, default=9, help="xz preset (default 9)")
    parser.add_argument("--keep", action="store_true", help="keep the original files")
    parser.add_argument("--git", action="store_true", help="stage the change in git's index")
    parser.add_argument(
        "--recompress", action="store_true", help="store gzip/Zstandard files as .xz as well"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    args = parser.parse_args(argv)

    files: list[Path] = []
    for path in args.paths:
        if path.is_dir():
            files += candidates(path, args.min_bytes, recompressing=args.recompress)
        elif path.is_file():
            recompressible = args.recompress and path.suffix.lower() in RECOMPRESSIBLE
            if compression_of(path) is not None and not recompressible:
                parser.error(f"{path} is compressed already")
            files.append(path)
        else:
            parser.error(f"no such file or folder: {path}")
    total = 0
    done: list[Outcome] = []
    for path in dict.fromkeys(files):  # once each, in order
        size = path.stat().st_size
        budget = None if args.max_bytes is None else args.max_bytes - total
        if budget is not None and size > budget:
            print(f"{path}: skipped, removing its {size:,} bytes would exceed the budget")
            continue
        if args.dry_run:
            total += size
            done.append(Outcome(path=path, original=size))
            print(f"{path}: {size:,} bytes; a change compressing it costs {size:,} bytes + the .xz")
            continue
        outcome = compress(path, keep=args.keep, stage=args.git, level=args.level, budget=budget)
        if outcome.compressed is None:
            print(f"{path}: skipped, its removal and its .xz would exceed the budget")
            continue
        total += outcome.diff_bytes
        done.append(outcome)
        readmes = ", ".join(str(r) for r in outcome.readmes)
        print(
            f"{path}: {size:,} -> {outcome.compressed:,} bytes (.xz, round trip checked); "
            f"diff {outcome.diff_bytes:,} bytes" + (f"; updated {readmes}" if readmes else "")
        )
    smaller = sum(o.original - (o.compressed or 0) for o in done)
    print(
        f"{len(done)} file(s), diff {total:,} bytes"
        + (" (dry run: the .xz sizes not counted)" if args.dry_run else "")
        + ("" if args.dry_run or args.keep else f", working tree {smaller:,} bytes smaller")
        + (f", budget {args.max_bytes:,}" if args.max_bytes is not None else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
