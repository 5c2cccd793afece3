"""End to end: ``latentchess serve`` in a subprocess, driven in Debian's headless Chromium.

Playwright for Python drives the system browser (``executable_path``; no browser is ever
downloaded). The test plays a move by clicking, waits for the engine's reply, checks the
trajectory and axis plot grow, explains a move, exports the PGN and writes a screenshot to
``$LATENTCHESS_ARTIFACTS`` (default: the test's temporary directory).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import chess.pgn
import pytest

CHROMIUM = next(
    (p for p in ("/usr/bin/chromium", shutil.which("chromium") or "") if p and Path(p).exists()),
    None,
)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no Chromium: install Debian's 'chromium' package (scripts/setup.sh does)",
    ),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``latentchess serve --port 0 --no-browser`` with a fresh cache; yields its URL."""
    cache = tmp_path_factory.mktemp("cache")
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "latentchess", "serve", "--port", "0", "--no-browser"),
            *("--precision", "fp32", "--max-think", "5"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 120
        url = None
        lines = []
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            found = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
            if found:
                url = found.group(1)
                break
        assert url, f"no URL printed: {''.join(lines)!r}"
        assert list((cache / "latentchess" / "latent-view").glob("*.npz"))  # fitted and cached
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


def _status(url: str) -> int:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_play_watch_explain_and_export(server: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=30_000)  # engine replies on a loaded 2-core machine
    artifacts = Path(os.environ.get("LATENTCHESS_ARTIFACTS", tmp_path))
    artifacts.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1320, "height": 1000})
            page.set_default_timeout(30_000)
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(server)
            expect(page.locator("body[data-ready='1']")).to_have_count(1)
            expect(page.locator("#map-background circle")).to_have_count(2000)
            expect(page.locator("#trajectory circle")).to_have_count(1)
            # A quick opponent: the latent engine at depth 2 plays Black.
            page.select_option("#engine-kind", "latent")
            page.fill("#param-depth", "2")
            page.fill("#movetime", "1500")
            page.click("#apply-opponent")
            expect(page.locator("#opponent-spec")).to_contain_text("latent:depth=2")

            def click(square: str) -> None:
                page.click(f"#board-svg rect[data-square='{square}']", force=True)

            click("e2")
            expect(page.locator("#board-svg circle.hint")).to_have_count(2)  # e3, e4
            click("e4")
            # The engine replies: two moves in the list, the trajectory and axis plot grow.
            expect(page.locator("#moves button.move")).to_have_count(2)
            expect(page.locator("#trajectory circle")).to_have_count(3)
            expect(page.locator("#axis-plot polyline.axis-line")).to_have_count(1)
            # Its own evaluation: a dot on the axis plot, captioned with score, depth and PV.
            expect(page.locator("#engine-eval")).to_contain_text("latent:depth=2")
            expect(page.locator("#axis-plot circle.engine-dot title")).to_have_count(1)
            assert (
                page.locator("#board-svg image[data-square='e4']").get_attribute("data-piece")
                == "P"
            )
            # Drag a knight for the second move.
            start = page.locator("#board-svg rect[data-square='g1']").bounding_box()
            end = page.locator("#board-svg rect[data-square='f3']").bounding_box()
            assert start and end
            page.mouse.move(start["x"] + 30, start["y"] + 30)
            page.mouse.down()
            page.mouse.move(end["x"] + 30, end["y"] + 30, steps=6)
            page.mouse.up()
            expect(page.locator("#moves button.move")).to_have_count(4)
            expect(page.locator("#trajectory circle")).to_have_count(5)
            # Live analysis fills the candidate table with axis and alpha-beta columns.
            expect(page.locator("#analysis-state")).to_have_text("done", timeout=20_000)
            assert page.locator("#candidates tbody tr").count() > 3
            assert page.locator("#pv").inner_text().strip()
            # Explain the engine's last move: text and a heat map on the board.
            page.click("#explain-last")
            expect(page.locator("#explain-text table tr")).not_to_have_count(0)
            assert page.locator("#board-svg rect.heat").count() > 10
            page.screenshot(path=str(artifacts / "web-board.png"))
            # An earlier move (1. e4) is explained in text; its squares are not the board's now.
            page.locator("#moves button.move").first.click()
            expect(page.locator("#explain-title")).to_have_text("e4")
            expect(page.locator("#board-svg rect.heat")).to_have_count(0)
            expect(page.locator("#explain-text")).to_contain_text("An earlier move")
            # Export the PGN and read it back.
            page.click("#export-pgn")
            expect(page.locator("#pgn-output")).to_contain_text("1. e4")
            game = chess.pgn.read_game(__import__("io").StringIO(page.inner_text("#pgn-output")))
            assert game is not None and len(list(game.mainline_moves())) == 4
            assert game.headers["Black"].startswith("latent:depth=2")
            assert errors == []
            # Undo and redo, flip, clocks.
            page.click("#undo")
            expect(page.locator("#moves button.move")).to_have_count(3)
            page.click("#redo")
            expect(page.locator("#moves button.move")).to_have_count(4)
            a1 = page.locator("#board-svg rect[data-square='a1']").bounding_box()
            page.click("#flip")
            flipped = page.locator("#board-svg rect[data-square='a1']").bounding_box()
            assert a1 and flipped and flipped["y"] < a1["y"] and flipped["x"] > a1["x"]
            page.click("#flip")
            page.click(".setup summary")
            page.check("#clocks-on")
            expect(page.locator("#clocks")).to_be_visible()
            # A new game from a FEN against the default engine, ab, and a promotion chosen in the
            # dialog (an under-promotion).
            page.select_option("#engine-kind", "ab")
            page.fill("#movetime", "200")
            page.click("#apply-opponent")
            expect(page.locator("#opponent-spec")).to_contain_text("playing: ab,")
            page.fill("#fen-input", "8/P6k/8/8/8/8/6p1/K7 w - - 0 1")
            page.click("#new-game")
            expect(page.locator("#fen")).to_have_text("8/P6k/8/8/8/8/6p1/K7 w - - 0 1")
            expect(page.locator("#moves button.move")).to_have_count(0)
            click("a7")
            click("a8")
            page.click(".promotion button[data-piece='n']")
            expect(page.locator("#moves button.move").first).to_have_text("a8=N")
            expect(page.locator("#moves button.move")).to_have_count(2)  # the engine replied
            # ab's evaluation of the move it played, where the latent engine's is shown.
            expect(page.locator("#engine-eval")).to_contain_text(
                re.compile(r"^ab played .* · d\d+")
            )
            expect(page.locator("#engine-eval")).to_contain_text("PV ")
            dot = page.locator("#axis-plot circle.engine-dot[data-ply='1'] title")
            expect(dot).to_contain_text("ply 1: ab played")
            assert errors == []
            # Closing the tab ends its session on the server (sendBeacon on pagehide).
            session = page.locator("body").get_attribute("data-session")
            page.close(run_before_unload=True)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and _status(f"{server}api/sessions/{session}") != 404:
                time.sleep(0.1)
            assert _status(f"{server}api/sessions/{session}") == 404
        finally:
            browser.close()
