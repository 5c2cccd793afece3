"""The repository stays lean: results files over 1 MB are stored compressed.

Large uncompressed results that predate the rule are listed in
``benchmarks/results/uncompressed-legacy.txt``; that list may only shrink.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = "benchmarks/results"
LEGACY = ROOT / RESULTS / "uncompressed-legacy.txt"
LIMIT = 1_000_000  # bytes: "over 1 MB"
LEGACY_MAX = 47  # entries when the list was made: it may only shrink
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


def tracked_results() -> dict[str, int]:
    """Tracked files under benchmarks/results (``git ls-files``; every file without git) and
    their sizes in the working tree (a tracked file deleted there is left out)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--", RESULTS],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
        names = [name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):  # a source tree without git
        names = [p.relative_to(ROOT).as_posix() for p in (ROOT / RESULTS).rglob("*")]
    sizes = {}
    for name in names:
        path = ROOT / name
        if path.is_file():
            sizes[name] = path.stat().st_size
    return sizes


def compressed(name: str) -> bool:
    return Path(name).suffix.lower() in COMPRESSED


def legacy_list() -> list[str]:
    lines = LEGACY.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def unlisted_large(sizes: dict[str, int], legacy: list[str]) -> list[str]:
    """Uncompressed files over the limit that the legacy list does not excuse."""
    listed = set(legacy)
    return sorted(
        n for n, size in sizes.items() if size > LIMIT and not compressed(n) and n not in listed
    )


def stale_entries(sizes: dict[str, int], legacy: list[str]) -> list[str]:
    """Listed paths that are gone, compressed or no longer over the limit."""
    return [n for n in legacy if n not in sizes or sizes[n] <= LIMIT or compressed(n)]


def test_large_results_files_are_compressed() -> None:
    offenders = unlisted_large(tracked_results(), legacy_list())
    assert offenders == [], (
        "results files over 1 MB must be stored compressed: run "
        "`python benchmarks/compress_results.py --git FILE...` on " + ", ".join(offenders)
    )


def test_the_legacy_list_only_shrinks() -> None:
    entries = legacy_list()
    assert len(entries) == len(set(entries)), "a path is listed twice"
    assert entries == sorted(entries), f"keep {LEGACY.name} sorted"
    assert len(entries) <= LEGACY_MAX, f"{LEGACY.name} may only shrink; compress new files"
    stale = stale_entries(tracked_results(), entries)
    assert stale == [], (
        f"delete these lines of {LEGACY.name}: gone, compressed or no longer over 1 MB: "
        + ", ".join(stale)
    )


def test_the_checks_catch_what_they_should() -> None:
    big, small = LIMIT + 1, LIMIT
    sizes = {"r/a.pgn": big, "r/b.pgn.xz": big, "r/c.pgn": small, "r/d.png": big, "r/e.pgn": big}
    assert unlisted_large(sizes, ["r/e.pgn"]) == ["r/a.pgn"]
    assert unlisted_large(sizes, ["r/a.pgn", "r/e.pgn"]) == []
    legacy = ["r/a.pgn", "r/b.pgn.xz", "r/c.pgn", "r/gone.pgn"]
    assert stale_entries(sizes, legacy) == ["r/b.pgn.xz", "r/c.pgn", "r/gone.pgn"]


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
