"""The web board's HTTP API (Starlette) and static page.

Endpoints (JSON unless said otherwise; errors are ``{"error": message}`` with a 4xx status):

==========================================  ===================================================
``GET  /``                                   the page
``GET  /static/{file}``                      its script and style sheet (package data)
``GET  /pieces/{wK..bP}.svg``                piece images (python-chess's SVG set)
``GET  /api/info``                           model, engines allowed with their parameters
``GET  /api/view``                           the latent view: reference points, axis, variance
``POST /api/sessions``                       a new session (a new game): its state
``GET  /api/sessions/{id}``                  the state: board, legal moves, trajectory
``POST /api/sessions/{id}/move``             ``{"uci"}``: play a move
``POST /api/sessions/{id}/undo`` / ``redo``  take back / replay a move
``POST /api/sessions/{id}/new``              ``{"fen"}``: new game from a position
``POST /api/sessions/{id}/pgn``              ``{"pgn"}``: import a game
``GET  /api/sessions/{id}/pgn``              export the game (``application/x-chess-pgn``)
``POST /api/sessions/{id}/opponent``         ``{"kind", "params", "movetime_ms"}``
``POST /api/sessions/{id}/engine-move``      the opponent moves (409 when superseded)
``GET  /api/sessions/{id}/analysis?ms=``     server-sent events: candidates, iterations,
                                             latent result, Stockfish MultiPV, done
``POST /api/sessions/{id}/close``            stop its search and free it (``sendBeacon``)
``DELETE /api/sessions/{id}``                the same
``POST /api/explain``                        ``{"fen", "move"}``: occlusion explanation
==========================================  ===================================================
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import chess
import chess.svg
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from latentchess.web.opponents import (
    PARAMS,
    RequestError,
    available_kinds,
    parse_opponent,
)
from latentchess.web.service import Service
from latentchess.web.sessions import Session, SessionStore, parse_fen, parse_move, parse_pgn

__all__ = ["create_app"]

_log = logging.getLogger("latentchess.web")
_STATIC = {"app.js": "text/javascript", "board.js": "text/javascript", "style.css": "text/css"}
_PIECES = {f"{c}{p.upper()}": (c == "w", p) for c in "wb" for p in "kqrbnp"}
_MAX_BODY = 256_000

Handler = Callable[[Request], Awaitable[Response]]


def _static(name: str) -> bytes:
    return resources.files("latentchess.web").joinpath("static", name).read_bytes()


def create_app(
    service: Service,
    *,
    sessions: SessionStore | None = None,
    allowed_hosts: Sequence[str] | None = None,
) -> Starlette:
    """The ASGI application serving one loaded model to any number of browser tabs.

    Args:
        service: the model, view and referee shared by every session.
        sessions: the session store (default: 32 sessions, an hour of idleness).
        allowed_hosts: ``Host`` header names accepted (against DNS rebinding); None: any.
    """
    store = sessions if sessions is not None else SessionStore()

    def guarded(handler: Handler) -> Handler:
        async def run(request: Request) -> Response:
            try:
                if request.method not in ("GET", "HEAD"):
                    # Another site's page must not drive this server (a form post, a fetch).
                    origin = request.headers.get("origin")
                    if origin is not None and urlsplit(origin).netloc != request.headers.get(
                        "host"
                    ):
                        raise RequestError(f"cross-origin request from {origin!r} refused", 403)
                return await handler(request)
            except RequestError as error:
                return JSONResponse({"error": error.message}, status_code=error.status)
            except HTTPException:
                raise
            except Exception:  # never a traceback to the page; the log keeps it
                _log.exception("internal error on %s %s", request.method, request.url.path)
                return JSONResponse({"error": "internal server error"}, status_code=500)

        return run

    async def body(request: Request) -> dict[str, Any]:
        raw = await request.body()
        if len(raw) > _MAX_BODY:
            raise RequestError(f"request body larger than {_MAX_BODY} bytes", status=413)
        if not raw:
            return {}
        kind = request.headers.get("content-type", "")
        if not kind.startswith("application/json"):
            raise RequestError(f"expected Content-Type application/json, got {kind!r}", 415)
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as error:
            raise RequestError(f"request body is not JSON: {error}") from None
        if not isinstance(data, dict):
            raise RequestError(f"expected a JSON object, got {type(data).__name__}")
        return data

    def fields(data: dict[str, Any], *names: str) -> None:
        unknown = set(data) - set(names)
        if unknown:
            raise RequestError(f"unknown field(s) {sorted(unknown)!r}; expected {list(names)}")

    def session_of(request: Request) -> Session:
        return store.get(request.path_params["sid"])

    async def state(session: Session) -> JSONResponse:
        return JSONResponse(await run_in_threadpool(service.game_state, session))

    # -- pages ---------------------------------------------------------------------------------

    async def index(request: Request) -> Response:
        return HTMLResponse(_static("index.html"))

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            raise RequestError(f"no static file {name!r}", status=404)
        return Response(_static(name), media_type=_STATIC[name])

    async def piece(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _PIECES:
            raise RequestError(f"no piece {name!r}; expected one of {sorted(_PIECES)}", 404)
        white, symbol = _PIECES[name]
        svg = chess.svg.piece(chess.Piece.from_symbol(symbol.upper() if white else symbol))
        return Response(
            svg,
            media_type="image/svg+xml",
            headers={"Cache-Control": "max-age=86400"},
        )

    # -- model -------------------------------------------------------------------------------

    async def info(request: Request) -> Response:
        model = service.model
        kinds = available_kinds(allow_external=False)
        return JSONResponse(
            {
                "model": {
                    "name": model.config.name,
                    "path": str(model.path) if model.path else None,
                    "dim": model.config.dim,
                    "precision": model.precision,
                },
                "engines": [
                    {"kind": k, "params": [p.describe() for p in PARAMS.get(k, ())]} for k in kinds
                ],
                "allow_external": service.settings.allow_external,
                "max_think_ms": int(service.settings.max_think_s * 1000),
                "stockfish": service.settings.stockfish is not None,
            }
        )

    async def view(request: Request) -> Response:
        v = service.view
        return JSONResponse(
            {
                "points": [[round(float(x), 4), round(float(y), 4)] for x, y in v.points],
                "win_prob": [round(float(p), 3) for p in v.win_prob_white],
                "axis": [round(float(a), 4) for a in v.axis_2d],
                "explained": [round(float(e), 4) for e in v.explained],
                "method": "PCA of the embeddings of 2,000 Stockfish-labelled positions",
            }
        )

    async def explain(request: Request) -> Response:
        from latentchess.explain import explain_move

        data = await body(request)
        fields(data, "fen", "move")
        board = parse_fen(data.get("fen"))
        move = parse_move(board, data.get("move"))
        result = await run_in_threadpool(explain_move, service.model, board, move)
        return JSONResponse(
            {
                "fen": result.fen,
                "move": result.move,
                "san": result.san,
                "score_before": round(result.score_before, 5),
                "score_after": round(result.score_after, 5),
                "change": round(result.change, 5),
                "win_prob_before": round(result.win_prob_before, 4),
                "win_prob_after": round(result.win_prob_after, 4),
                "pieces": [
                    {
                        "square": p.square_name,
                        "piece": p.piece,
                        "role": p.role,
                        "contribution": round(p.contribution, 5),
                    }
                    for p in result.pieces
                ],
            }
        )

    # -- sessions ------------------------------------------------------------------------------

    async def create(request: Request) -> Response:
        session, evicted = store.create()
        for old in evicted:
            await run_in_threadpool(service.close_session, old)
        return await state(session)

    async def get_state(request: Request) -> Response:
        return await state(session_of(request))

    async def move(request: Request) -> Response:
        session = session_of(request)
        data = await body(request)
        fields(data, "uci")
        with session.lock:
            board = session.board.copy(stack=False)
        session.push(parse_move(board, data.get("uci")))
        return await state(session)

    async def undo(request: Request) -> Response:
        session = session_of(request)
        session.undo()
        return await state(session)

    async def redo(request: Request) -> Response:
        session = session_of(request)
        session.redo_move()
        return await state(session)

    async def new(request: Request) -> Response:
        session = session_of(request)
        data = await body(request)
        fields(data, "fen")
        board = parse_fen(data.get("fen", "startpos"))
        await run_in_threadpool(session.new_game, board)
        return await state(session)

    async def import_pgn(request: Request) -> Response:
        session = session_of(request)
        data = await body(request)
        fields(data, "pgn")
        board, headers = parse_pgn(data.get("pgn"))
        await run_in_threadpool(session.new_game, board, headers)
        return await state(session)

    async def export_pgn(request: Request) -> Response:
        session = session_of(request)
        return Response(
            session.pgn(),
            media_type="application/x-chess-pgn",
            headers={"Content-Disposition": 'attachment; filename="latentchess-game.pgn"'},
        )

    async def opponent(request: Request) -> Response:
        session = session_of(request)
        data = await body(request)
        config = parse_opponent(
            data,
            max_movetime_ms=int(service.settings.max_think_s * 1000),
            allow_external=service.settings.allow_external,
        )
        session.cancel_search()
        with session.lock:
            session.opponent = config
        return JSONResponse({"opponent": config.to_json()})

    async def engine_move(request: Request) -> Response:
        session = session_of(request)
        generation, stop = session.begin_search()
        played = await run_in_threadpool(service.engine_move, session, generation, stop)
        if played is None:
            raise RequestError("the engine's search was superseded by another request", 409)
        payload = await run_in_threadpool(service.game_state, session)
        payload["engine_move"] = played
        return JSONResponse(payload)

    async def analysis(request: Request) -> Response:
        session = session_of(request)
        text = request.query_params.get("ms", "2000")
        limit_ms = int(service.settings.max_think_s * 1000)
        if not text.isdigit() or not 100 <= int(text) <= limit_ms:
            raise RequestError(f"ms must be an integer in [100, {limit_ms}], got {text!r}")
        budget = int(text) / 1000
        with session.lock:
            board = session.board.copy()
        generation, stop = session.begin_search()
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()

        def emit(event: str, data: dict[str, Any]) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, (event, data))

        def work() -> None:
            try:
                service.analyse(session, board, budget, stop, emit)
            except Exception as error:  # reported to the page as an event, logged here
                _log.exception("analysis failed on %s", board.fen())
                emit("error", {"error": f"analysis failed: {type(error).__name__}"})
                emit("done", {"stopped": True})

        async def events() -> AsyncIterator[str]:
            task = loop.run_in_executor(None, work)
            try:
                yield f"event: start\ndata: {json.dumps({'fen': board.fen()})}\n\n"
                while True:
                    try:
                        event, data = await asyncio.wait_for(queue.get(), timeout=0.5)
                    except TimeoutError:
                        if await request.is_disconnected():
                            break
                        continue
                    yield f"event: {event}\ndata: {json.dumps(data)}\n\n"
                    if event == "done":
                        break
            finally:
                stop.set()  # the tab went away or the stream ended: stop thinking
                if session.is_current(generation):
                    session.cancel_search()
                with contextlib.suppress(Exception):
                    await asyncio.shield(task)

        return StreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def close(request: Request) -> Response:
        session = store.pop(request.path_params["sid"])
        if session is None:
            raise RequestError(f"no session {request.path_params['sid']!r}", status=404)
        session.cancel_search()
        await run_in_threadpool(service.close_session, session)
        return JSONResponse({"closed": session.id})

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal server error"
        return JSONResponse({"error": f"{detail}: {request.method} {request.url.path}"}, status)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        for session in store.all():
            store.pop(session.id)
            await run_in_threadpool(service.close_session, session)

    sid = "/api/sessions/{sid:str}"
    routes = [
        Route("/", guarded(index)),
        Route("/static/{name:str}", guarded(static)),
        Route("/pieces/{name:str}.svg", guarded(piece)),
        Route("/api/info", guarded(info)),
        Route("/api/view", guarded(view)),
        Route("/api/explain", guarded(explain), methods=["POST"]),
        Route("/api/sessions", guarded(create), methods=["POST"]),
        Route(sid, guarded(get_state), methods=["GET"]),
        Route(sid, guarded(close), methods=["DELETE"]),
        Route(sid + "/close", guarded(close), methods=["POST"]),
        Route(sid + "/move", guarded(move), methods=["POST"]),
        Route(sid + "/undo", guarded(undo), methods=["POST"]),
        Route(sid + "/redo", guarded(redo), methods=["POST"]),
        Route(sid + "/new", guarded(new), methods=["POST"]),
        Route(sid + "/pgn", guarded(import_pgn), methods=["POST"]),
        Route(sid + "/pgn", guarded(export_pgn), methods=["GET"]),
        Route(sid + "/opponent", guarded(opponent), methods=["POST"]),
        Route(sid + "/engine-move", guarded(engine_move), methods=["POST"]),
        Route(sid + "/analysis", guarded(analysis), methods=["GET"]),
    ]
    middleware = []
    if allowed_hosts is not None:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    return Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: not_found, 404: not_found, 405: not_found},
        lifespan=lifespan,
    )
