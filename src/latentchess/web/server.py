"""Load the model and its latent view, start a Stockfish referee, and serve the board."""

from __future__ import annotations

import contextlib
import threading
import time
import webbrowser
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import chess.engine

from latentchess.errors import EngineError
from latentchess.web.service import Service, Settings

__all__ = ["ServeConfig", "open_service", "serve"]


@dataclass(frozen=True, kw_only=True)
class ServeConfig:
    """``latentchess serve`` options.

    Attributes:
        host: interface to bind (``127.0.0.1``: this machine only).
        port: TCP port (0: any free port).
        open_browser: open the page in the default browser once the server listens.
        model: model directory (``None``: the default model).
        precision: inference precision of the model.
        settings: limits and permissions of the board.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    open_browser: bool = True
    model: Path | None = None
    precision: str = "auto"
    settings: Settings = field(default_factory=Settings)

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must lie in [0, 65535], got {self.port!r}")


def _find_stockfish() -> Path | None:
    from latentchess.engines.external import find_executable

    try:
        return find_executable("stockfish")
    except EngineError:
        return None


@contextlib.contextmanager
def open_service(
    *, model: Path | None = None, precision: str = "auto", settings: Settings | None = None
) -> Iterator[Service]:
    """The shared service: model, latent view (cached), and a referee Stockfish while open."""
    from latentchess.latent_view import load_latent_view
    from latentchess.models.io import load_model

    settings = settings or Settings()
    loaded = load_model(model, precision=precision)
    view = load_latent_view(loaded)
    stockfish = settings.stockfish or _find_stockfish()
    if stockfish is not None and settings.stockfish is None:
        from dataclasses import replace

        settings = replace(settings, stockfish=stockfish)
    with contextlib.ExitStack() as stack:
        referee = None
        if stockfish is not None:
            referee = stack.enter_context(chess.engine.SimpleEngine.popen_uci(str(stockfish)))
            referee.configure({"Threads": 1, "Hash": 16})
        yield Service(loaded, view, settings, referee)


def serve(config: ServeConfig) -> None:
    """Run the server until interrupted; prints the URL first."""
    import uvicorn

    from latentchess.web.app import create_app

    started = time.monotonic()
    with open_service(
        model=config.model, precision=config.precision, settings=config.settings
    ) as service:
        local = ("127.0.0.1", "localhost", "::1", "[::1]")
        wildcard = config.host in ("0.0.0.0", "::", "")
        app = create_app(service, allowed_hosts=None if wildcard else (config.host, *local))
        server = uvicorn.Server(
            uvicorn.Config(app, host=config.host, port=config.port, log_level="warning")
        )

        def announce() -> None:
            while not server.started and not server.should_exit:
                time.sleep(0.05)
            if not server.started:
                return
            port = config.port
            for listener in getattr(server, "servers", []):
                for sock in listener.sockets:
                    port = sock.getsockname()[1]
            host = config.host if config.host not in ("0.0.0.0", "::") else "127.0.0.1"
            url = f"http://{host}:{port}/"
            print(
                f"latentchess serve: {url} (model {service.model.config.name}, "
                f"{service.model.precision}; ready in {time.monotonic() - started:.1f} s; "
                "Ctrl-C stops)",
                flush=True,
            )
            if config.open_browser:
                webbrowser.open(url)

        threading.Thread(target=announce, daemon=True).start()
        server.run()
