"""MkDocs hook: links from a docs page to repository files outside ``docs/``.

The pages link to the numbers where they live (``../benchmarks/results/...``,
``../models/README.md``, ``../src/latentchess/...``), relative to the page, so the links also work
when the Markdown is read on a forge or in an editor. MkDocs only knows the files under ``docs/``
and would report each of these as "not found", which ``--strict`` turns into an error. This hook
takes them over:

* ``on_page_markdown``: a link whose target resolves outside ``docs/`` must name an existing file or
  directory of the repository, else a warning (an error under ``--strict``); an existing one is
  rewritten to ``repo-file:PATH`` so that MkDocs leaves it alone. Links between pages are not
  touched: MkDocs checks those (and their anchors) itself.
* ``on_page_content``: ``repo-file:PATH`` becomes the path from the built page to the repository
  file, so the links work in a local build (``site/`` in the checkout, opened from disk).

Fenced code blocks are skipped. ``tests/test_docs.py`` checks the same links without building.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

log = logging.getLogger("mkdocs.hooks.repo_links")

_SCHEME = "repo-file:"
# An inline link or image: [text](target) or ![alt](target "title"); text may hold one level of [].
_LINK = re.compile(r"(!?\[(?:[^\[\]]|\[[^\]]*\])*\]\()([^)\s]+)((?:\s+(?:\"[^\"]*\"|'[^']*'))?\))")
_FENCE = re.compile(r"^\s*(```|~~~)")
_REWRITTEN = re.compile(r'(href|src)="repo-file:([^"#]*)(#[^"]*)?"')


def _roots(config: Any) -> tuple[Path, Path]:
    docs_dir = Path(config["docs_dir"]).resolve()
    repo_root = Path(config["config_file_path"]).resolve().parent
    return docs_dir, repo_root


def _rewrite_target(target: str, page_dir: Path, docs_dir: Path, repo_root: Path, src: str) -> str:
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith(("#", "/")):
        return target  # external, an anchor on this page, or absolute (MkDocs reports those)
    path, _, fragment = target.partition("#")
    resolved = (page_dir / unquote(path)).resolve()
    if resolved == docs_dir or docs_dir in resolved.parents:
        return target  # another page or an image of the site: MkDocs checks it
    if repo_root not in resolved.parents:
        log.warning("Doc file '%s' links to '%s', outside the repository", src, target)
        return target
    if not resolved.exists():
        log.warning(
            "Doc file '%s' links to '%s', but %s does not exist in the repository",
            src,
            target,
            resolved.relative_to(repo_root).as_posix(),
        )
        return target
    rel = resolved.relative_to(repo_root).as_posix() + ("/" if resolved.is_dir() else "")
    return _SCHEME + rel + (f"#{fragment}" if fragment else "")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    docs_dir, repo_root = _roots(config)
    page_dir = (docs_dir / page.file.src_uri).parent
    out: list[str] = []
    in_fence = False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line):
            in_fence = not in_fence
        if in_fence or _FENCE.match(line):
            out.append(line)
            continue
        out.append(
            _LINK.sub(
                lambda m: (
                    m.group(1)
                    + _rewrite_target(m.group(2), page_dir, docs_dir, repo_root, page.file.src_uri)
                    + m.group(3)
                ),
                line,
            )
        )
    return "".join(out)


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    _, repo_root = _roots(config)
    page_out_dir = (Path(config["site_dir"]).resolve() / page.file.dest_uri).parent

    def local(m: re.Match[str]) -> str:
        rel = os.path.relpath(repo_root / m.group(2), page_out_dir).replace(os.sep, "/")
        if m.group(2).endswith("/"):
            rel += "/"
        return f'{m.group(1)}="{rel}{m.group(3) or ""}"'

    return _REWRITTEN.sub(local, html)
