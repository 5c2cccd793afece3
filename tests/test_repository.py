"""The repository stays lean: results files over 1 MB are stored compressed (``.xz``, see
``benchmarks/compress_results.py``), every compressed file is what its name says, and the tracked
tree stays under 60 MB so that a clone, and a copy of the tree sent to another machine, stay small.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = "benchmarks/results"
LIMIT = 1_000_000  # bytes: "over 1 MB"
TREE_LIMIT = 60_000_000  # bytes: the whole tracked tree
COMPRESSED = {
    # compressed text, named by its compression (the readers decompress these by suffix)
    ".gz": b"\x1f\x8b",
    ".xz": b"\xfd7zXZ\x00",
    ".zst": b"\x28\xb5\x2f\xfd",
    ".bz2": b"BZh",
    ".zip": b"PK",
    # formats compressed inside
    ".png": b"\x89PNG",
    ".jpg": b"\xff\xd8",
    ".jpeg": b"\xff\xd8",
    ".webp": b"RIFF",
    ".pdf": b"%PDF",
    ".parquet": b"PAR1",
}
"""Suffixes of files that are already compressed, with the bytes such a file starts with."""


def tracked(under: str = ".") -> dict[str, int]:
    """Tracked files under ``under`` (``git ls-files``; every file without git) and their sizes
    in the working tree (a tracked file deleted there is left out)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", under],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
        names = [name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):  # a source tree without git
        names = [p.relative_to(ROOT).as_posix() for p in (ROOT / under).rglob("*")]
    sizes = {}
    for name in names:
        path = ROOT / name
        if path.is_file() and not path.is_symlink():
            sizes[name] = path.stat().st_size
    return sizes


def tracked_results() -> dict[str, int]:
    return tracked(RESULTS)


def compressed(name: str) -> bool:
    return Path(name).suffix.lower() in COMPRESSED


def uncompressed_large(sizes: dict[str, int]) -> list[str]:
    """Files over the limit that are not stored compressed."""
    return sorted(n for n, size in sizes.items() if size > LIMIT and not compressed(n))


def test_large_results_files_are_compressed() -> None:
    offenders = uncompressed_large(tracked_results())
    assert offenders == [], (
        "results files over 1 MB must be stored compressed: run "
        "`python benchmarks/compress_results.py --git FILE...` on " + ", ".join(offenders)
    )


def test_the_check_catches_what_it_should() -> None:
    big, small = LIMIT + 1, LIMIT
    sizes = {"r/a.pgn": big, "r/b.pgn.xz": big, "r/c.pgn": small, "r/d.png": big}
    assert uncompressed_large(sizes) == ["r/a.pgn"]


def test_the_tracked_tree_stays_small() -> None:
    sizes = tracked()
    total = sum(sizes.values())
    largest = sorted(sizes, key=sizes.__getitem__, reverse=True)[:5]
    assert total < TREE_LIMIT, (
        f"the tracked tree is {total:,} bytes, over {TREE_LIMIT:,}: compress results "
        f"(benchmarks/compress_results.py); the largest files: {largest}"
    )


def test_compressed_results_are_what_their_names_say() -> None:
    wrong = []
    for name, size in tracked_results().items():
        magic = COMPRESSED.get(Path(name).suffix.lower())
        if magic is None or size == 0:
            continue
        with open(ROOT / name, "rb") as handle:
            if handle.read(len(magic)) != magic:
                wrong.append(name)
    assert wrong == [], f"not in the format their suffix names: {wrong}"
