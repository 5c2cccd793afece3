"""The web board's HTTP API: every endpoint, with good and bad input, through Starlette's client."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import pytest
from starlette.testclient import TestClient

from latentchess.latent_view import fit_latent_view, reference_positions
from latentchess.web.app import create_app
from latentchess.web.opponents import RequestError, available_kinds, parse_opponent
from latentchess.web.service import Service, Settings
from latentchess.web.sessions import SessionStore

STOCKFISH = shutil.which("stockfish") or shutil.which("stockfish", path="/usr/games")
ITALIAN = "r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3"


@pytest.fixture(scope="module")
def service() -> Iterator[Service]:
    from latentchess.models.io import load_model

    assert STOCKFISH is not None, "Stockfish is not installed (run `make setup`)"
    model = load_model(None, precision="fp32")
    fens, probs = reference_positions()
    view = fit_latent_view(model, (fens[:200], probs[:200]))
    settings = Settings(max_think_s=5.0, stockfish=Path(STOCKFISH), referee_nodes=2000)
    with chess.engine.SimpleEngine.popen_uci(STOCKFISH) as referee:
        yield Service(model, view, settings, referee)


@pytest.fixture(scope="module")
def client(service: Service) -> Iterator[TestClient]:
    with TestClient(create_app(service, sessions=SessionStore(max_sessions=4))) as test_client:
        yield test_client


def _new(client: TestClient) -> dict:
    response = client.post("/api/sessions")
    assert response.status_code == 200
    return response.json()


def _error(response, status: int, *needles: str) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.text
    message = response.json()["error"]
    assert "Traceback" not in response.text
    for needle in needles:
        assert needle in message, message


def test_page_static_files_and_pieces(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "/static/app.js" in page.text
    for name, kind in (("app.js", "javascript"), ("board.js", "javascript"), ("style.css", "css")):
        response = client.get(f"/static/{name}")
        assert response.status_code == 200 and kind in response.headers["content-type"]
    piece = client.get("/pieces/wN.svg")
    assert piece.status_code == 200 and piece.text.startswith("<svg")
    _error(client.get("/pieces/xQ.svg"), 404, "'xQ'")
    _error(client.get("/static/../app.py"), 404)
    _error(client.get("/static/secret.txt"), 404, "'secret.txt'")
    _error(client.get("/no/such/page"), 404, "/no/such/page")
    _error(client.put("/api/sessions"), 405)


def test_info_lists_only_allowed_engines(client: TestClient) -> None:
    info = client.get("/api/info").json()
    kinds = [engine["kind"] for engine in info["engines"]]
    assert {"latent", "stockfish", "random", "greedy"} <= set(kinds)
    assert not {"uci", "xboard", "toga2", "gnuchess", "phalanx"} & set(kinds)
    assert kinds == available_kinds()
    latent = next(e for e in info["engines"] if e["kind"] == "latent")
    assert {p["name"] for p in latent["params"]} == {"depth", "width", "mode"}
    assert info["model"]["dim"] == 64 and info["max_think_ms"] == 5000


def test_view(client: TestClient) -> None:
    view = client.get("/api/view").json()
    assert len(view["points"]) == len(view["win_prob"]) == 200
    assert view["axis"][0] > 0 and 0 < sum(view["explained"]) <= 1


def test_moves_undo_redo_and_trajectory(client: TestClient) -> None:
    state = _new(client)
    sid = state["id"]
    assert len(state["legal"]) == 20 and len(state["trajectory"]) == 1
    first = state["trajectory"][0]
    assert first["ply"] == 0 and -1 <= first["axis"] <= 1 and 0 <= first["referee"] <= 1
    for uci in ("e2e4", "e7e5", "g1f3"):
        state = client.post(f"/api/sessions/{sid}/move", json={"uci": uci}).json()
    assert state["sans"] == ["e4", "e5", "Nf3"] and state["turn"] == "black"
    assert [t["ply"] for t in state["trajectory"]] == [0, 1, 2, 3]
    assert state["trajectory"][3]["fen"] == state["fen"] and state["last_move"] == "g1f3"
    state = client.post(f"/api/sessions/{sid}/undo").json()
    assert state["sans"] == ["e4", "e5"] and state["can_redo"]
    state = client.post(f"/api/sessions/{sid}/redo").json()
    assert state["sans"] == ["e4", "e5", "Nf3"] and not state["can_redo"]
    assert client.get(f"/api/sessions/{sid}").json()["fen"] == state["fen"]
    _error(client.post(f"/api/sessions/{sid}/redo"), 409, "nothing to redo")
    _error(client.post(f"/api/sessions/{sid}/move", json={"uci": "e2e4"}), 422, "'e2e4'")
    _error(client.post(f"/api/sessions/{sid}/move", json={"uci": "zz99"}), 400, "'zz99'")
    _error(client.post(f"/api/sessions/{sid}/move", json={"uci": 42}), 400, "42")
    _error(client.post(f"/api/sessions/{sid}/move", json={"move": "b8c6"}), 400, "'move'")
    as_json = {"Content-Type": "application/json"}
    move = f"/api/sessions/{sid}/move"
    _error(client.post(move, content=b"{not json", headers=as_json), 400, "not JSON")
    _error(client.post(move, content=b"[1, 2]", headers=as_json), 400, "JSON object")
    big = b'{"uci": "' + b"x" * 300_000 + b'"}'
    _error(client.post(move, content=big, headers=as_json), 413, "larger")
    # Another site's page cannot drive the board: no form posts, no cross-origin fetches.
    form = {"Content-Type": "text/plain"}
    _error(client.post(move, content=b'{"uci": "b8c6"}', headers=form), 415, "text/plain")
    evil = {"Origin": "http://evil.example"}
    _error(client.post(move, json={"uci": "b8c6"}, headers=evil), 403, "evil.example")
    assert client.get(f"/api/sessions/{sid}").json()["sans"] == ["e4", "e5", "Nf3"]
    _error(client.post("/api/sessions/nope/move", json={"uci": "b8c6"}), 404, "'nope'")


def test_new_game_from_fen_and_game_over(client: TestClient) -> None:
    sid = _new(client)["id"]
    state = client.post(f"/api/sessions/{sid}/new", json={"fen": ITALIAN}).json()
    assert state["fen"] == ITALIAN and state["turn"] == "black" and state["sans"] == []
    assert state["first_move_number"] == 3
    _error(client.post(f"/api/sessions/{sid}/undo"), 409, "nothing to undo")
    _error(client.post(f"/api/sessions/{sid}/new", json={"fen": "banana"}), 400, "'banana'")
    no_king = "8/8/8/8/8/8/8/4K3 w - - 0 1"
    _error(client.post(f"/api/sessions/{sid}/new", json={"fen": no_king}), 400, "no black king")
    _error(client.post(f"/api/sessions/{sid}/new", json={"fen": 7}), 400, "fen must be")
    _error(client.post(f"/api/sessions/{sid}/new", json={"fen": "x", "y": 1}), 400, "'y'")
    mate = "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"
    state = client.post(f"/api/sessions/{sid}/new", json={"fen": mate}).json()
    assert state["result"] == "0-1" and state["termination"] == "checkmate"
    assert state["legal"] == [] and state["check"] == "e1"
    _error(client.post(f"/api/sessions/{sid}/engine-move"), 409, "over")


def test_pgn_import_and_export(client: TestClient) -> None:
    sid = _new(client)["id"]
    pgn = '[Event "Test"]\n[White "Ann"]\n[Black "Bob"]\n\n1. d4 d5 2. c4 e6 3. Nc3 *\n'
    state = client.post(f"/api/sessions/{sid}/pgn", json={"pgn": pgn}).json()
    assert state["sans"] == ["d4", "d5", "c4", "e6", "Nc3"] and len(state["trajectory"]) == 6
    exported = client.get(f"/api/sessions/{sid}/pgn")
    assert exported.status_code == 200 and "pgn" in exported.headers["content-type"]
    game = chess.pgn.read_game(__import__("io").StringIO(exported.text))
    assert game is not None and game.headers["White"] == "Ann" and game.headers["Event"] == "Test"
    assert [m.uci() for m in game.mainline_moves()] == ["d2d4", "d7d5", "c2c4", "e7e6", "b1c3"]
    _error(client.post(f"/api/sessions/{sid}/pgn", json={"pgn": ""}), 400, "non-empty")
    _error(
        client.post(f"/api/sessions/{sid}/pgn", json={"pgn": "1. e4 e5 2. Ke3 Kd7 3. Qxf7"}), 400
    )
    _error(client.post(f"/api/sessions/{sid}/pgn", json={"pgn": "x" * 210_000}), 400, "larger")
    _error(client.get("/api/sessions/nope/pgn"), 404)


def test_opponent_validation() -> None:
    ok = parse_opponent({"kind": "stockfish", "params": {"elo": 1500}}, max_movetime_ms=5000)
    assert ok.spec_text() == "stockfish:elo=1500" and ok.movetime_ms == 500
    skill = parse_opponent({"kind": "stockfish", "params": {"skill": 3}}, max_movetime_ms=5000)
    assert skill.spec_text() == "stockfish:skill=3"
    bad = [
        ({"kind": "uci", "params": {}}, "not allowed"),
        ({"kind": "stockfish", "params": {"path": "/bin/sh"}}, "'path'"),
        ({"kind": "stockfish", "params": {"Debug Log File": "/tmp/x"}}, "'Debug Log File'"),
        ({"kind": "stockfish", "params": {"elo": 99999}}, "[1350, 2850]"),
        ({"kind": "latent", "params": {"depth": "deep"}}, "'deep'"),
        ({"kind": "latent", "params": {"mode": "rm -rf"}}, "'rm -rf'"),
        ({"kind": "latent", "params": {"model": "/etc"}}, "'model'"),
        ({"kind": "random", "movetime_ms": 10**9}, "movetime_ms"),
        ({"kind": "random", "extra": 1}, "'extra'"),
        ({"spec": "uci:/bin/sh"}, "--allow-external-engines"),
        ("latent", "JSON object"),
    ]
    for data, needle in bad:
        with pytest.raises(RequestError, match=None) as caught:
            parse_opponent(data, max_movetime_ms=5000)
        assert needle in caught.value.message and caught.value.status == 400
    external = parse_opponent(
        {"spec": "uci:/usr/games/stockfish,Hash=8"}, max_movetime_ms=5000, allow_external=True
    )
    assert external.kind == "uci" and external.spec_text() == "uci:/usr/games/stockfish,Hash=8"
    assert "uci" in available_kinds(allow_external=True)


def test_the_latent_opponent_and_analysis_search_as_the_model_declares(service: Service) -> None:
    """The shipped model declares qs and its width: the page's opponent and the analysis take
    them (the engine's path), and a width set on the page overrides the declared one."""
    from latentchess.engines.latent import declared_search
    from latentchess.web.opponents import build_engine
    from latentchess.web.sessions import Session

    declared = declared_search(service.model)
    assert declared.qs and declared.width != 3  # what the web board used to hard-code
    latent = parse_opponent({"kind": "latent"}, max_movetime_ms=5000)
    engine = build_engine(latent, service.model)
    assert engine.searcher.config.qs and engine.searcher.config.width == declared.width
    # Qxf7+?? at depth 1 is what the search without qs plays here (Kxf7 wins the queen).
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5Q2/PPPP1PPP/RNB1KBNR w KQkq - 2 3")
    assert engine.play(board, chess.engine.Limit(depth=1)) != chess.Move.from_uci("f3f7")
    narrow = parse_opponent({"kind": "latent", "params": {"width": 3}}, max_movetime_ms=5000)
    config = build_engine(narrow, service.model).searcher.config
    assert config.width == 3 and config.qs
    session = Session(id="declared")
    service._latent_analysis(session, board, 0.2, threading.Event(), lambda *_: None)
    analysis = session.analysis_engine.searcher.config
    assert analysis.qs and analysis.width == declared.width
    assert analysis.depth == service.settings.analysis_depth


def test_engine_moves_from_the_allow_list(client: TestClient) -> None:
    sid = _new(client)["id"]
    client.post(f"/api/sessions/{sid}/move", json={"uci": "e2e4"})
    for opponent in (
        {"kind": "latent", "params": {"depth": 2}, "movetime_ms": 2000},
        {"kind": "stockfish", "params": {"elo": 1400}, "movetime_ms": 50},
        {"kind": "random", "params": {"seed": 1}, "movetime_ms": 50},
    ):
        answer = client.post(f"/api/sessions/{sid}/opponent", json=opponent)
        assert answer.status_code == 200 and answer.json()["opponent"]["kind"] == opponent["kind"]
        before = client.get(f"/api/sessions/{sid}").json()
        state = client.post(f"/api/sessions/{sid}/engine-move").json()
        assert state["engine_move"] in before["legal"]
        assert state["ucis"] == [*before["ucis"], state["engine_move"]]
    latent_ply = next(t for t in state["trajectory"] if t["engine"] is not None)
    assert latent_ply["ply"] == 1 and 0 <= latent_ply["engine"] <= 1  # the latent engine's eval
    assert latent_ply["engine_eval"]["engine"].startswith("latent:depth=2")
    assert latent_ply["engine_eval"]["pv"][0] == state["sans"][1]
    # Stockfish (weakened: its move is not its PV's) and random report no evaluation.
    assert [t["ply"] for t in state["trajectory"] if t["engine_eval"] is not None] == [1]
    pgn = client.get(f"/api/sessions/{sid}/pgn").text
    assert '[White "stockfish:elo=1400"]' in pgn and '[Black "random:seed=1"]' in pgn
    _error(client.post(f"/api/sessions/{sid}/opponent", json={"kind": "xboard"}), 400, "allowed")


def test_ab_moves_come_with_their_evaluation(client: TestClient) -> None:
    """The default engine's move carries its score, depth and PV, like the latent engine's."""
    sid = _new(client)["id"]
    opponent = {"kind": "ab", "movetime_ms": 100}
    assert client.post(f"/api/sessions/{sid}/opponent", json=opponent).status_code == 200
    client.post(f"/api/sessions/{sid}/engine-move")  # White, from the start position
    client.post(f"/api/sessions/{sid}/move", json={"uci": "g8f6"})
    state = client.post(f"/api/sessions/{sid}/engine-move").json()
    evals = [t for t in state["trajectory"] if t["engine_eval"] is not None]
    assert [t["ply"] for t in evals] == [0, 2]
    for entry in evals:
        e = entry["engine_eval"]
        assert e["engine"] == "ab" and e["move"] == state["sans"][entry["ply"]]
        assert e["depth"] >= 1 and e["pv"][0] == e["move"]
        assert e["mate"] is None and isinstance(e["cp"], int) and abs(e["cp"]) < 300
        assert entry["engine"] == e["win_prob"] and 0 < e["win_prob"] < 1
    # Black to move, mated in one by ab: the score is from White's view (a White mate: positive).
    fool = "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2"
    client.post(f"/api/sessions/{sid}/new", json={"fen": fool})
    state = client.post(f"/api/sessions/{sid}/engine-move").json()
    e = state["trajectory"][0]["engine_eval"]
    assert e["move"] == "Qh4#" and e["mate"] == -1 and e["cp"] is None and e["win_prob"] == 0.0


def test_a_new_move_cancels_the_running_search(client: TestClient, service: Service) -> None:
    sid = _new(client)["id"]
    slow = {"kind": "latent", "params": {"depth": 8, "width": 8}, "movetime_ms": 5000}
    assert client.post(f"/api/sessions/{sid}/opponent", json=slow).status_code == 200
    answers: list = []
    thread = threading.Thread(
        target=lambda: answers.append(client.post(f"/api/sessions/{sid}/engine-move"))
    )
    started = time.monotonic()
    thread.start()
    deadline = time.monotonic() + 3
    while service.running == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert service.running >= 1
    state = client.post(f"/api/sessions/{sid}/move", json={"uci": "d2d4"}).json()
    thread.join(10)
    assert time.monotonic() - started < 4.5  # far less than the 5 s it was allowed
    _error(answers[0], 409, "superseded")
    assert state["sans"] == ["d4"]
    assert client.get(f"/api/sessions/{sid}").json()["sans"] == ["d4"]  # no stale engine move


def _events(client: TestClient, path: str, stop_after: str | None = None) -> list[tuple[str, dict]]:
    events = []
    with client.stream("GET", path) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        event = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                events.append((event, json.loads(line[6:])))
                if event == stop_after:
                    break
    return events


def test_analysis_stream(client: TestClient, service: Service) -> None:
    sid = _new(client)["id"]
    client.post(f"/api/sessions/{sid}/new", json={"fen": ITALIAN})
    events = _events(client, f"/api/sessions/{sid}/analysis?ms=1500")
    names = [name for name, _ in events]
    assert names[0] == "start" and names[1] == "candidates" and names[-1] == "done"
    assert "iteration" in names and "latent" in names and "alphabeta" in names
    data = dict(events)
    legal = chess.Board(ITALIAN).legal_moves.count()
    assert len(data["candidates"]["moves"]) == legal
    assert all(-1 <= m["axis"] <= 1 for m in data["candidates"]["moves"])
    assert len(data["latent"]["moves"]) == legal and data["latent"]["pv"]
    alpha_beta = data["alphabeta"]["moves"]
    assert {m["uci"] for m in alpha_beta} == {m.uci() for m in chess.Board(ITALIAN).legal_moves}
    # White's view, like the axis columns: Black to move, so Stockfish's first line is among the
    # lowest (the others may come from an earlier iteration when time runs out).
    scores = sorted(m["cp"] for m in alpha_beta if m["cp"] is not None)
    assert alpha_beta[0]["cp"] <= scores[len(scores) // 2]
    _error(client.get(f"/api/sessions/{sid}/analysis?ms=abc"), 400, "'abc'")
    _error(client.get(f"/api/sessions/{sid}/analysis?ms=999999"), 400, "999999")
    _error(client.get("/api/sessions/nope/analysis"), 404)
    # Leaving early (the tab closes the stream) stops the search long before its 5 s.
    started = time.monotonic()
    first = _events(client, f"/api/sessions/{sid}/analysis?ms=5000", stop_after="candidates")
    assert first[-1][0] == "candidates"
    while service.running and time.monotonic() - started < 4:
        time.sleep(0.05)
    assert service.running == 0 and time.monotonic() - started < 4


def test_explain_endpoint(client: TestClient) -> None:
    answer = client.post("/api/explain", json={"fen": ITALIAN, "move": "g8f6"})
    assert answer.status_code == 200
    data = answer.json()
    assert data["san"] == "Nf6" and len(data["pieces"]) == len(chess.Board(ITALIAN).piece_map()) - 2
    moved = next(p for p in data["pieces"] if p["role"] == "moved")
    assert moved["square"] == "g8"
    _error(client.post("/api/explain", json={"fen": ITALIAN, "move": "e2e4"}), 422, "'e2e4'")
    _error(client.post("/api/explain", json={"fen": "nonsense", "move": "e2e4"}), 400, "'nonsense'")
    _error(client.post("/api/explain", json={"fen": ITALIAN}), 400, "move must be")
    _error(client.get("/api/explain"), 405)


def test_sessions_are_isolated_capped_and_closed(client: TestClient) -> None:
    one, two = _new(client)["id"], _new(client)["id"]
    client.post(f"/api/sessions/{one}/move", json={"uci": "c2c4"})
    assert client.get(f"/api/sessions/{two}").json()["sans"] == []
    assert client.get(f"/api/sessions/{one}").json()["sans"] == ["c4"]
    assert client.post(f"/api/sessions/{one}/close").json() == {"closed": one}
    _error(client.get(f"/api/sessions/{one}"), 404, "expired or closed")
    assert client.delete(f"/api/sessions/{two}").status_code == 200
    _error(client.delete(f"/api/sessions/{two}"), 404)
    ids = [_new(client)["id"] for _ in range(5)]  # the store keeps 4: the oldest goes
    _error(client.get(f"/api/sessions/{ids[0]}"), 404)
    assert client.get(f"/api/sessions/{ids[-1]}").status_code == 200


def test_dns_rebinding_is_refused(service: Service) -> None:
    app = create_app(service, allowed_hosts=("127.0.0.1", "localhost"))
    with TestClient(app, base_url="http://127.0.0.1:8000") as local:
        assert local.get("/api/info").status_code == 200
    with TestClient(app, base_url="http://rebound.example:8000") as rebound:
        answer = rebound.get("/api/info")
        assert answer.status_code == 400 and "Traceback" not in answer.text
