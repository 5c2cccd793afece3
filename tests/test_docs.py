"""README.md and the docs site: every relative link resolves; the README stays a front door.

`mkdocs build --strict` (run by `make test` before pytest) checks links between the pages of
docs/ and their anchors; it cannot check links to repository files outside docs/ (results under
benchmarks/results/, models/README.md, src/...), nor the README's. These tests do, without
building anything.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 260

# An inline link or image: [text](target) or ![alt](target "title"); text may hold one level of [].
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


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


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
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
