"""README.md and the docs site: every relative link resolves; the README stays a front door.

The README is short (150 lines, no paragraph over 120 words); a number in one of its table rows is
one that the results file or model card the row links to holds. The user-facing text (README,
docs/, the model cards, the results READMEs) speaks of the product: no issue numbers, no paths of
the machines it was built on, and (README and docs) no dates.

`mkdocs build --strict` (run by `make test` before pytest) checks links between the pages of
docs/ and their anchors; it cannot check links to repository files outside docs/ (results under
benchmarks/results/, models/README.md, src/...), nor the links of the README, the model cards and
the results READMEs. These tests do, without building anything.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from latentchess.textfiles import read_text

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 150
MAX_PARAGRAPH_WORDS = 120

# An inline link or image: [text](target) or ![alt](target "title"); text may hold one level of [].
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def _user_facing_files() -> list[Path]:
    results = sorted((ROOT / "benchmarks" / "results").rglob("README.md"))
    return [*_markdown_files(), ROOT / "models" / "README.md", *results]


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code spans blanked."""
    lines = []
    in_fence = False
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            lines.append((number, re.sub(r"`[^`]*`", "``", line)))
    return lines


def relative_links(path: Path) -> list[tuple[int, str]]:
    """Every relative link target of a Markdown file: (line, target) without its #fragment."""
    found = []
    for number, line in _prose_lines(path.read_text(encoding="utf-8")):
        for match in _LINK.finditer(line):
            target = match.group(1)
            if _SCHEME.match(target) or target.startswith("#"):
                continue
            found.append((number, unquote(target.partition("#")[0])))
    return found


def test_link_parser_sees_links_and_skips_code() -> None:
    text = (
        "See [the card](../models/README.md#strength) and ![a plot](umap.png 'UMAP').\n"
        "`[not](a-link.md)` [web](https://example.org) [here](#top)\n"
        "```text\n[in](code.md)\n```\n"
        "[`nested` text](engines/latent.md)\n"
    )
    lines = dict(_prose_lines(text))
    assert 3 not in lines and 4 not in lines
    assert [t for _, line in lines.items() for t in _LINK.findall(line)] == [
        "../models/README.md#strength",
        "umap.png",
        "https://example.org",
        "#top",
        "engines/latent.md",
    ]


@pytest.mark.parametrize("path", _user_facing_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    links = relative_links(path)
    missing = [
        f"{path.relative_to(ROOT)}:{line}: {target}"
        for line, target in links
        if target.startswith("/") or not (path.parent / target).exists()
    ]
    assert not missing, "links to files that do not exist:\n" + "\n".join(missing)
    for _, target in links:  # every link stays inside the checkout
        assert ROOT in (path.parent / target).resolve().parents or target in ("", ".")


def test_docs_exist_and_link_to_the_numbers() -> None:
    pages = sorted(DOCS.rglob("*.md"))
    assert len(pages) >= 10
    targets = {(p.parent / t).resolve() for p in pages for _, t in relative_links(p)}
    assert (ROOT / "models" / "README.md").resolve() in targets
    assert any((ROOT / "benchmarks" / "results") in t.parents for t in targets)
    for image in DOCS.glob("*.png"):  # every shipped figure is shown somewhere
        assert image.resolve() in targets, f"{image.name} is not used by any page"


def test_every_page_is_in_the_nav() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = set(re.findall(r"^\s*-\s+(?:[^:\n]+:\s+)?([\w/.-]+\.md)\s*$", config, re.MULTILINE))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert pages == nav


def test_readme_is_a_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"
    # The title, then the two commands before anything else.
    body = [line for line in lines[1:] if line.strip()]
    assert lines[0].startswith("# ")
    assert body[0] == "```bash"
    block = body[1 : body.index("```", 1)]
    commands = [line.split("#")[0].strip() for line in block]
    assert commands == ["make demo", "make test"]
    # One table of engines, each row with a measured number linked to its results.
    rows = [line for line in lines if line.startswith("| `")]
    engine_rows = [row for row in rows if "benchmarks/results/" in row or "models/README.md" in row]
    assert len(engine_rows) >= 4
    for row in engine_rows:
        assert re.search(r"\d", row)


def paragraphs(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each prose paragraph: no code blocks, tables, headings or images."""
    found: list[tuple[int, str]] = []
    current: list[str] = []
    start = 0
    previous = -1
    for number, line in _prose_lines(text):
        stripped = line.strip()
        prose = stripped and not stripped.startswith(("|", "#", "![", "<"))
        if not prose or number != previous + 1:
            if current:
                found.append((start, " ".join(current)))
            current = []
        if prose:
            if not current:
                start = number
            current.append(stripped)
        previous = number
    if current:
        found.append((start, " ".join(current)))
    return found


def test_paragraphs_split_on_blank_lines_code_and_tables() -> None:
    text = "one two\nthree\n\nfour\n```\nfive\n```\nsix\n| a | b |\nseven\n"
    assert paragraphs(text) == [(1, "one two three"), (4, "four"), (8, "six"), (10, "seven")]


def test_readme_paragraphs_are_short() -> None:
    long = [
        f"README.md:{line}: {len(text.split())} words"
        for line, text in paragraphs(README.read_text(encoding="utf-8"))
        if len(text.split()) > MAX_PARAGRAPH_WORDS
    ]
    assert not long, f"paragraphs over {MAX_PARAGRAPH_WORDS} words:\n" + "\n".join(long)


_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)*")  # a version (4.1.0) is one number


def numbers(text: str) -> set[str]:
    """The numbers written in a text, thousands separators dropped: '1,270' and '1270' agree."""
    return {match.replace(",", "") for match in _NUMBER.findall(text)}


def _holds(text: str, number: str) -> bool:
    plain = re.sub(r"(?<=\d),(?=\d{3})", "", text)
    return re.search(rf"(?<![\d.]){re.escape(number)}(?!\d|\.\d)", plain) is not None


def test_number_check_reads_numbers_as_written() -> None:
    assert numbers("2629 [2543, 2715] at 10+0.1, 1,270 games, v5") == {
        "2629",
        "2543",
        "2715",
        "10",
        "0.1",
        "1270",
        "5",
    }
    assert _holds("over 1,270 games at 10+0.1", "1270") and _holds("10+0.1", "0.1")
    assert numbers("Drofa 4.1.0") == {"4.1.0"} and _holds("Drofa 4.1.0 (3298)", "4.1.0")
    assert (
        not _holds("2629.5", "2629") and not _holds("12629", "2629") and not _holds("0.15", "0.1")
    )


def test_readme_table_numbers_are_in_the_files_they_link() -> None:
    text = README.read_text(encoding="utf-8")
    rows = [(n, line) for n, line in _prose_lines(text) if line.startswith("|")]
    checked = 0
    problems = []
    for number, row in rows:
        files = [
            README.parent / unquote(target.partition("#")[0])
            for target in _LINK.findall(row)
            if not _SCHEME.match(target) and not target.startswith("#")
        ]
        files = [f for f in files if f.is_file() and f.suffix != ".png"]
        if not files:
            continue
        checked += 1
        sources = "\n".join(read_text(f) for f in files)  # plain or compressed (.xz)
        # The row's own words, without the link targets (a path like `sparse-64/` is no claim).
        words = re.sub(r"\]\([^)]*\)", "]", row)
        missing = sorted(n for n in numbers(words) if not _holds(sources, n))
        if missing:
            problems.append(f"README.md:{number}: {missing} not in {[str(f) for f in files]}")
    assert checked >= 6, "the README's tables should link their numbers to results files"
    assert not problems, "README numbers its linked files do not hold:\n" + "\n".join(problems)


_ISSUE = re.compile(r"\bissues?\s+#?\d+|\bissue-\d+", re.IGNORECASE)
_MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:tmp|work|root|home)/")
_DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")


def _offending_lines(paths: list[Path], pattern: re.Pattern[str]) -> list[str]:
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if pattern.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    return found


def test_patterns_of_user_facing_text() -> None:
    assert _ISSUE.search("as issue 28 asks") and _ISSUE.search("(Issue #30)")
    assert not _ISSUE.search("which issues that command")
    assert _MACHINE_PATH.search("--out /tmp/run")
    assert _MACHINE_PATH.search("(`/home/user/latentchess`)")
    assert not _MACHINE_PATH.search("runs/tmp/x https://example.org/home/ /usr/share/doc")
    assert _DATE.search("since 2026-11-26") and not _DATE.search("commit 2026112")


def test_user_facing_text_names_no_issue_and_no_machine_path() -> None:
    paths = _user_facing_files()
    assert len(paths) > 50
    found = _offending_lines(paths, _ISSUE) + _offending_lines(paths, _MACHINE_PATH)
    assert not found, "issue numbers or build-machine paths in user-facing text:\n" + "\n".join(
        found
    )


def test_readme_and_docs_carry_no_dates() -> None:
    found = _offending_lines(_markdown_files(), _DATE)
    assert not found, "dated remarks in README.md or docs/:\n" + "\n".join(found)
