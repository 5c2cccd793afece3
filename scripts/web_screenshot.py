"""Play a game on a running web board in headless Chromium and screenshot it (docs/web-board.png).

Usage::

    .venv/bin/latentchess serve --no-browser --port 8765 &
    .venv/bin/python scripts/web_screenshot.py --url http://127.0.0.1:8765/ --out docs/web-board.png

White's moves are clicked on the board (each is Stockfish's choice at depth 6, standing in for a
player); Black is the latent engine at depth 4, 1 s per move, as chosen in the page's form. After
``--moves`` White moves the last move is explained and the page is captured, then reduced to
``--colors`` colours (Pillow, which matplotlib brings) so that the shipped figure stays small.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import chess
import chess.engine

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--moves", type=int, default=9, help="White moves to play")
    parser.add_argument(
        "--colors", type=int, default=128, help="palette size of the PNG (0: keep full colour)"
    )
    args = parser.parse_args()
    from playwright.sync_api import expect, sync_playwright

    stockfish = shutil.which("stockfish") or shutil.which("stockfish", path="/usr/games")
    assert stockfish, "Stockfish is needed to choose White's moves"
    started = time.monotonic()
    with (
        chess.engine.SimpleEngine.popen_uci(stockfish) as chooser,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1320, "height": 1000})
        page.set_default_timeout(60_000)
        page.goto(args.url)
        expect(page.locator("body[data-ready='1']")).to_have_count(1)
        page.select_option("#engine-kind", "latent")
        page.fill("#param-depth", "4")
        page.fill("#movetime", "1000")
        page.click("#apply-opponent")
        board = chess.Board()
        for number in range(args.moves):
            move = chooser.play(board, chess.engine.Limit(depth=6)).move
            assert move is not None
            for square in (move.from_square, move.to_square):
                name = chess.square_name(square)
                page.click(f"#board-svg rect[data-square='{name}']", force=True)
            if move.promotion:
                page.click(f".promotion button[data-piece='{chess.piece_symbol(move.promotion)}']")
            expect(page.locator("#moves button.move")).to_have_count(2 * number + 2)
            ucis = page.evaluate("() => app.state.ucis")
            board = chess.Board()
            for uci in ucis:
                board.push_uci(uci)
            print(f"{board.fullmove_number - 1}. {' '.join(ucis[-2:])}", flush=True)
            if board.is_game_over():
                break
        expect(page.locator("#analysis-state")).to_have_text("done", timeout=30_000)
        page.click("#explain-last")
        expect(page.locator("#explain-text table tr")).not_to_have_count(0)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(args.out))
        browser.close()
    if args.colors:
        from PIL import Image

        with Image.open(args.out) as image:
            palette = image.convert("RGB").quantize(
                colors=args.colors, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
            )
        palette.save(args.out, optimize=True)
    print(f"{args.out} written after {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
