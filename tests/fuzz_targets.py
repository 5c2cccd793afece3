"""Fuzz targets: every parser a user feeds, with the contract each must keep on any input.

A target takes one input (text, bytes, lines) and raises ``AssertionError`` when the contract is
broken: the only exception a parser may raise is its documented error type, and the message names
the input (the FEN, the spec, ``file:line``). Strategies make inputs near the valid ones (mutated
FENs, PGN games, EPD lines, puzzle rows, bag records, model configs) as well as arbitrary text
and bytes. ``tests/test_fuzz.py`` runs them with hypothesis: a few dozen examples each in the
normal test run, any number for a soak run (``LATENTCHESS_FUZZ_EXAMPLES``, see README).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import chess
import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from latentchess.encoding import SEQUENCE_LENGTH, VOCAB_SIZE, tokenize
from latentchess.errors import DataFormatError, EngineError, InvalidFenError, ModelFileError

# -- settings -------------------------------------------------------------------------------------

SOAK_EXAMPLES = int(os.environ.get("LATENTCHESS_FUZZ_EXAMPLES", "0"))
"""Examples per target for a soak run; 0: the short, derandomised run of the test suite."""


def fuzz_settings(examples: int) -> settings:
    """``examples`` per target in the test suite (deterministic, no example database), or the
    soak run's count (random, with hypothesis's database so that a failure replays)."""
    common = {
        "deadline": None,
        "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    }
    if SOAK_EXAMPLES:
        return settings(max_examples=SOAK_EXAMPLES, **common)  # type: ignore[arg-type]
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        **common,  # type: ignore[arg-type]
    )


# -- mutation strategies --------------------------------------------------------------------------

_NASTY = [
    "", " ", "\t", "\n", "\r\n", "\x00", "\ufeff", "-", "--", "0", "-1", "999", "1000",
    "99999999999999999999999", "1e400", "nan", "inf", "é", "♔", "KQkq", "w", "b", "e3", "/", "8",
    "9", "pppppppp", "\"", ";", ",", "=", "{", "}", "(", ")", "[", "]", "%", "\\", "'",
]  # fmt: skip


def nasty_text() -> st.SearchStrategy[str]:
    """Short strings that break parsers more often than uniform text does."""
    return st.one_of(st.sampled_from(_NASTY), st.text(max_size=12))


@st.composite
def mutated(draw: st.DrawFn, base: str, separators: str = " ") -> str:
    """``base`` with a few edits: characters replaced, inserted or deleted, fields swapped."""
    text = base
    for _ in range(draw(st.integers(0, 4))):
        action = draw(st.sampled_from(["replace", "insert", "delete", "field", "truncate"]))
        position = draw(st.integers(0, max(len(text), 1) - 1)) if text else 0
        if action == "replace" and text:
            text = text[:position] + draw(nasty_text()) + text[position + 1 :]
        elif action == "insert":
            text = text[:position] + draw(nasty_text()) + text[position:]
        elif action == "delete" and text:
            end = position + draw(st.integers(1, 8))
            text = text[:position] + text[end:]
        elif action == "field":
            sep = draw(st.sampled_from(separators))
            fields = text.split(sep)
            index = draw(st.integers(0, len(fields) - 1))
            choice = draw(st.sampled_from(["drop", "replace", "duplicate"]))
            if choice == "drop" and len(fields) > 1:
                del fields[index]
            elif choice == "replace":
                fields[index] = draw(nasty_text())
            else:
                fields.insert(index, fields[index])
            text = sep.join(fields)
        elif action == "truncate":
            text = text[:position]
    return text


def random_game_fens(seed: int, plies: int) -> list[str]:
    """FENs along a random game (castling, en passant and promotions show up)."""
    rng = np.random.default_rng(seed)
    board = chess.Board()
    fens = [board.fen()]
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(moves[int(rng.integers(len(moves)))])
        fens.append(board.fen())
    return fens


SEED_FENS = [
    *random_game_fens(1, 60)[::6],
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 1000 1200",
    "8/P7/8/8/8/8/8/k1K5 w - - 0 90",
    "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1",
]


def fens() -> st.SearchStrategy[str]:
    """Mutated legal FENs, and arbitrary text."""
    return st.one_of(
        st.sampled_from(SEED_FENS).flatmap(lambda fen: mutated(fen, " /")), st.text(max_size=90)
    )


# -- FEN ------------------------------------------------------------------------------------------


def fen_target(fen: str) -> None:
    """``tokenize`` and the UCI/CLI ``build_position`` accept a FEN or name it in their error."""
    from latentchess.uci import Position, PositionError, build_position

    try:
        tokens = tokenize(fen)
    except InvalidFenError as error:
        assert repr(fen) in str(error), (fen, str(error))
    else:
        assert tokens.shape == (SEQUENCE_LENGTH,) and int(tokens.max()) < VOCAB_SIZE
    try:
        board, _ = build_position(Position(fen))
    except PositionError as error:
        assert repr(fen) in str(error), (fen, str(error))
    else:
        assert board.is_valid() or board.status() & ~_REPAIRABLE == 0, fen
        tokenize(board.fen())  # whatever the engine accepts, the model can read


_REPAIRABLE = (
    chess.STATUS_BAD_CASTLING_RIGHTS
    | chess.STATUS_INVALID_EP_SQUARE
    | chess.STATUS_TOO_MANY_CHECKERS
    | chess.STATUS_IMPOSSIBLE_CHECK
)

# -- UCI ------------------------------------------------------------------------------------------

_UCI_WORDS = [
    "uci", "isready", "ucinewgame", "position", "startpos", "fen", "moves", "go", "stop",
    "ponderhit", "setoption", "name", "value", "debug", "on", "off", "register", "depth", "nodes",
    "movetime", "wtime", "btime", "winc", "binc", "movestogo", "mate", "infinite", "ponder",
    "searchmoves", "e2e4", "e7e5", "g1f3", "0000", "a7a8q", "Depth", "Width", "Mode", "Hash",
    "Move Overhead", "Precision", "Clear Hash", "minimax", "beam", "fp32", "Model",
]  # fmt: skip


_ENGINE_SPECS = ["ab", "ab:hash=2", "latent", "latent:depth=1", "random", "bogus", "ab:warp=1", ""]
"""Values of the ``Engine`` option (``latent`` means the fuzz model: see uci_session_target)."""


@st.composite
def uci_lines(draw: st.DrawFn, engines: bool = False) -> str:
    """A UCI-like command line: known words, numbers, FENs and garbage in any order; with
    ``engines``, also ``setoption name Engine value SPEC`` switches."""
    kinds = ["go", "position", "setoption", "words", "text", *(["engine"] if engines else [])]
    kind = draw(st.sampled_from(kinds))
    if kind == "engine":
        return f"setoption name Engine value {draw(st.sampled_from(_ENGINE_SPECS))}"
    if kind == "go":
        parts = ["go"]
        for _ in range(draw(st.integers(0, 4))):
            parts.append(draw(st.sampled_from(_UCI_WORDS[18:29])))
            parts.append(str(draw(st.one_of(st.integers(-5, 400), st.sampled_from(_NASTY)))))
        return " ".join(parts)
    if kind == "position":
        start = draw(st.one_of(st.just("startpos"), fens().map(lambda f: "fen " + f)))
        moves = draw(st.lists(st.sampled_from(["e2e4", "e7e5", "g1f3", "b8c6", "x", "0000"])))
        return f"position {start}" + (" moves " + " ".join(moves) if moves else "")
    if kind == "setoption":
        names = ["Depth", "Width", "Mode", "Hash", "Move Overhead", "Precision", "Clear Hash"]
        name = draw(st.sampled_from([*names, "Ponder", "Bogus", ""]))
        value = draw(st.one_of(st.integers(-3, 9).map(str), st.sampled_from(_NASTY)))
        return f"setoption name {name} value {value}"
    if kind == "words":
        return " ".join(draw(st.lists(st.sampled_from(_UCI_WORDS + _NASTY), max_size=8)))
    return draw(st.text(max_size=40))


def uci_parse_target(line: str) -> None:
    """``parse_command`` never raises: a command, ``Unknown`` or ``None``."""
    from latentchess.uci import Command, parse_command

    command = parse_command(line)
    assert command is None or isinstance(command, Command)


def uci_session_target(lines: Sequence[str], model_dir: Path, *, switching: bool = False) -> None:
    """A UCI session fed ``lines`` never dies, and answers every ``go`` with exactly one
    ``bestmove``: a legal move where the position has one, else ``0000``. ``switching``: the
    session of ``latentchess uci`` (ab first; the Engine option switches, latent = the fuzz
    model)."""
    import torch

    from latentchess.engines.latent import LatentEngine
    from latentchess.engines.registry import create_engine, parse_engine_spec
    from latentchess.search import SearchConfig
    from latentchess.uci import Go, UciSession, parse_command

    output: list[str] = []
    lock = threading.Lock()

    def write(line: str) -> None:
        with lock:
            output.append(line)

    def factory(text: str) -> LatentEngine | object:  # "latent" is the fuzz model at depth 2
        spec = parse_engine_spec(text)
        if spec.kind == "latent":
            params = {"model": str(model_dir), "precision": "fp32", "depth": "2", **spec.params}
            text = "latent:" + ",".join(f"{key}={value}" for key, value in params.items())
        return create_engine(text, wait=False)  # type: ignore[return-value]

    threads = torch.get_num_threads()
    if switching:
        session = UciSession(write, spec="ab:hash=2", factory=factory)
    else:
        engine = LatentEngine(None, SearchConfig(depth=2), model_path=model_dir, precision="fp32")
        session = UciSession(write, spec="latent", engine=engine)
    asked: list[chess.Board | None] = []  # the position at each go
    try:
        session.handle_line("uci")
        for line in [*lines, "isready"]:
            command = parse_command(line)
            if isinstance(command, Go):
                board = session.board
                asked.append(None if board is None else board.copy())
            if not session.handle_line(line):
                break  # quit
    finally:
        session.close()
        torch.set_num_threads(threads)
    answers = [line for line in output if line.startswith("bestmove")]
    assert len(answers) == len(asked), (lines, output)
    # The session survives internal errors (and says so), but with a sound model there are none.
    internal = ("error handling", "search failed", "go failed", "engine not ready", "option failed")
    assert not [line for line in output if any(word in line for word in internal)], (lines, output)
    for board, answer in zip(asked, answers, strict=True):
        words = answer.split()
        if board is None or not any(board.generate_legal_moves()):
            assert words[1] == "0000", (lines, answer)
            continue
        move = chess.Move.from_uci(words[1])
        assert move in board.legal_moves, (lines, board.fen(), answer)
        if len(words) == 4:
            assert words[2] == "ponder"
            board.push(move)
            assert chess.Move.from_uci(words[3]) in board.legal_moves, (lines, answer)


# -- files: PGN, EPD, puzzle CSV -----------------------------------------------------------------

PGN_GAME = """[Event "Fuzz"]
[Site "?"]
[Date "2024.01.01"]
[Round "1"]
[White "A"]
[Black "B"]
[Result "1-0"]

1. e4 e5 2. Nf3 {a comment} Nc6 (2... d6 3. d4) 3. Bc4 Nf6 $1 4. Ng5 d5 5. exd5 Nxd5 6. Nxf7 Kxf7
7. Qf3+ Ke6 8. Nc3 1-0

[Event "Setup"]
[SetUp "1"]
[FEN "4k3/P7/8/8/8/8/8/4K3 w - - 0 1"]
[Result "*"]

1. a8=Q+ Kd7 *
"""

EPD_LINES = """r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - bm Qxf7#; id "mate.1";
2r3k1/5ppp/p3p3/1p1nP3/3P4/P4N2/1P3PPP/2R3K1 w - - bm Rxc8+; am Nd2; id "ECM.2";
1kr5/3n4/q3p2p/p2n2p1/PppB1P2/5BP1/1P2Q2P/3R2K1 w - - bm f5; c0 "f5=10, Be5+=2, Bf2=3, Bg4=2"; id "STS(v1.0) Undermine.001";
8/8/8/8/8/5k2/8/4K2q w - - am Kd2; c0 "Bobby Fischer vs. someone"; id "BK.04";
"""  # noqa: E501

PUZZLE_CSV = """PuzzleId,FEN,Moves,Rating,RatingDeviation,Popularity,NbPlays,Themes,GameUrl,OpeningTags
00sHx,q3k1nr/1pp1nQpp/3p4/1P2p3/4P3/B1PP1b2/B5PP/5K2 b k - 0 17,e8d7 a2e6 d7d8 f7f8,1760,80,83,72,mate mateIn2 middlegame short,https://lichess.org/yyznGmXs/black#34,Italian_Game Italian_Game_Classical_Variation
00sJ9,r3r1k1/p4ppp/2p2n2/1p6/3P1qb1/2NQR3/PPB2PP1/R1B3K1 w - - 5 18,e3g3 e8e1 g1h2 e1c1 a1c1 f4h6 h2g1 h6c1,2671,105,87,325,advantage attraction fork middlegame sacrifice veryLong,https://lichess.org/gyFeQsOE#35,French_Defense French_Defense_Exchange_Variation
"""  # noqa: E501


@st.composite
def text_file(draw: st.DrawFn, base: str) -> bytes:
    """A mutated copy of ``base`` (line by line and as a whole), sometimes with broken bytes."""
    lines = base.splitlines(keepends=True)
    for _ in range(draw(st.integers(0, 3))):
        index = draw(st.integers(0, len(lines) - 1))
        lines[index] = draw(mutated(lines[index], " ,;/"))
    data = "".join(draw(st.permutations(lines)) if draw(st.booleans()) else lines).encode()
    tail = draw(st.sampled_from([b"", b"\x00", b"\xff\xfe", b"\xc3", b"\r", b"\n\n\n"]))
    if draw(st.booleans()):
        return data + tail
    return draw(st.binary(max_size=200)) if draw(st.integers(0, 9)) == 0 else tail + data


def check_data_error(error: DataFormatError, path: Path) -> None:
    """A file's error names the file (and its line where there is one)."""
    assert error.path == str(path), (str(error), path)
    assert str(error).startswith(str(path)), str(error)
    if error.line is not None:
        assert str(error).startswith(f"{path}:{error.line}"), str(error)


def pgn_target(data: bytes, path: Path) -> None:
    """PGN readers: dataset labelling input (strict and lenient) and opening books."""
    from latentchess.data.positions import read_positions
    from latentchess.data.problems import ProblemLog
    from latentchess.evaluation.openings import read_pgn_openings

    path.write_bytes(data)
    _expect_data_errors(lambda: list(read_positions(path, fmt="pgn", problems=_strict())), path)
    for position in read_positions(path, fmt="pgn", problems=ProblemLog(max_shown=0)):
        assert chess.Board(position.fen).is_valid(), position
    openings = _expect_data_errors(lambda: read_pgn_openings(path), path)
    for opening in openings or []:
        board = chess.Board(opening.fen)
        for uci in opening.moves:
            board.push_uci(uci)  # legal: raises otherwise


def epd_target(data: bytes, path: Path) -> None:
    """EPD readers: test suites (``bm``/``am``/``c0``), dataset input (also read as a FEN list)
    and opening positions."""
    from latentchess.data.positions import read_positions
    from latentchess.data.problems import ProblemLog
    from latentchess.evaluation.epd import read_epd
    from latentchess.evaluation.openings import read_epd_openings

    path.write_bytes(data)
    _expect_data_errors(lambda: read_epd(path, strict=True), path)
    positions, problems = read_epd(path)
    for problem in problems:
        check_data_error(problem, path)
    for position in positions:
        board = chess.Board(position.fen)
        moves = (*position.best_moves, *position.avoid_moves, *position.points)
        assert all(chess.Move.from_uci(m) in board.legal_moves for m in moves), position
    for fmt in ("epd", "fen"):  # dataset input: EPD lines and FEN lists
        _expect_data_errors(
            lambda fmt=fmt: list(read_positions(path, fmt=fmt, problems=_strict())), path
        )
        for position in read_positions(path, fmt=fmt, problems=ProblemLog(max_shown=0)):
            assert chess.Board(position.fen).is_valid(), position
    _expect_data_errors(lambda: read_epd_openings(path), path)


def puzzle_target(data: bytes, path: Path) -> None:
    """The Lichess puzzle CSV reader, strict and lenient."""
    from latentchess.evaluation.puzzles import read_puzzles

    path.write_bytes(data)
    _expect_data_errors(lambda: read_puzzles(path, strict=True), path)
    result = _expect_data_errors(lambda: read_puzzles(path), path)
    if result is not None:
        puzzles, problems = result
        for problem in problems:
            check_data_error(problem, path)
        for puzzle in puzzles:
            board = chess.Board(puzzle.fen)
            for uci in puzzle.moves:
                board.push_uci(uci)


def _strict() -> object:
    from latentchess.data.problems import ProblemLog

    return ProblemLog(strict=True)


def _expect_data_errors(call: Callable[[], object], path: Path) -> object:
    try:
        return call()
    except DataFormatError as error:
        check_data_error(error, path)
        return None


# -- ChessBench records and bags ------------------------------------------------------------------


@st.composite
def bag_records(draw: st.DrawFn) -> tuple[str, bytes]:
    """A record kind and bytes: valid encodings, mutated ones, or arbitrary bytes."""
    from latentchess.data.chessbench import (
        encode_action_value,
        encode_behavioral_cloning,
        encode_state_value,
    )

    kind = draw(st.sampled_from(["state_value", "action_value", "behavioral_cloning"]))
    fen = draw(st.one_of(st.sampled_from(SEED_FENS), fens()))
    move = draw(st.sampled_from(["e2e4", "a7a8q", "", "zz", "é"]))
    p = draw(st.one_of(st.floats(allow_nan=True), st.sampled_from([0.0, 0.5, 1.0])))
    data = {
        "state_value": lambda: encode_state_value(fen, p),
        "action_value": lambda: encode_action_value(fen, move, p),
        "behavioral_cloning": lambda: encode_behavioral_cloning(fen, move),
    }[kind]()
    choice = draw(st.integers(0, 3))
    if choice == 1:
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + draw(st.binary(max_size=4)) + data[cut + draw(st.integers(0, 3)) :]
    elif choice == 2:
        data = draw(st.binary(max_size=40))
    return kind, data


def record_target(kind: str, data: bytes) -> None:
    """``decode_record`` decodes or raises ``DataFormatError`` naming the byte position."""
    from latentchess.data.chessbench import decode_record

    try:
        decode_record(kind, data)  # type: ignore[arg-type]
    except DataFormatError as error:
        assert "byte" in str(error), str(error)


@st.composite
def bag_files(draw: st.DrawFn) -> tuple[list[bytes], int, int, bytes]:
    """A bag's records (valid state values, some replaced by fuzzed records) and a corruption:
    ``(records, mode, position, junk)``; mode 0 none, 1 bytes replaced, 2 truncated, 3 junk."""
    from latentchess.data.chessbench import encode_state_value

    records = [
        draw(bag_records())[1] if draw(st.integers(0, 3)) == 0 else encode_state_value(fen, 0.5)
        for fen in draw(st.lists(st.sampled_from(SEED_FENS), max_size=5))
    ]
    mode = draw(st.integers(0, 3))
    return records, mode, draw(st.integers(0, 1 << 12)), draw(st.binary(min_size=1, max_size=9))


def bag_target(
    records: list[bytes], mode: int, position: int, junk: bytes, compressed: bool, directory: Path
) -> None:
    """Bag reading and import: ``DataFormatError`` naming the file, or a clean import."""
    from latentchess.data.chessbench import BagReader, import_chessbench, iter_chessbench, write_bag

    path = directory / ("state_value_data.bagz" if compressed else "state_value_data.bag")
    write_bag(path, records)
    data = path.read_bytes()
    position = position % max(len(data), 1)
    if mode == 1:
        data = data[:position] + junk + data[position + 1 :]
    elif mode == 2:
        data = data[:position]
    elif mode == 3:
        data = junk
    path.write_bytes(data)
    try:
        with BagReader(path) as reader:
            for _ in reader.items():
                pass
    except DataFormatError as error:
        check_data_error(error, path)
    _expect_data_errors(lambda: list(iter_chessbench(path)), path)
    for strict in (True, False):
        out = directory / f"dataset-{strict}"
        try:
            import_chessbench([path], out, strict=strict, progress=False)
        except DataFormatError as error:
            check_data_error(error, path)
        finally:
            _remove_tree(out)


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


# -- engine specs ---------------------------------------------------------------------------------

_SPEC_KINDS = ["stockfish", "sunfish", "uci", "xboard", "random", "greedy", "latent", "bogus", ""]


@st.composite
def engine_specs(draw: st.DrawFn) -> str:
    kind = draw(st.one_of(st.sampled_from(_SPEC_KINDS), st.text(max_size=6)))
    params = draw(
        st.lists(
            st.one_of(
                st.tuples(
                    st.sampled_from(["seed", "depth", "width", "mode", "name", "elo", "x", ""]),
                    nasty_text(),
                ).map(lambda kv: f"{kv[0]}={kv[1]}"),
                nasty_text(),
            ),
            max_size=4,
        )
    )
    separator = draw(st.sampled_from([":", "", "::", " : "]))
    return kind + (separator + ",".join(params) if params or separator == ":" else "")


def engine_spec_target(text: str, model_dir: Path) -> None:
    """``parse_engine_spec`` parses or raises ``EngineError`` quoting the spec; building the
    in-process kinds (random, greedy, latent) fails only with ``EngineError`` (or
    ``ModelFileError`` for a latent model that does not load). External engines are not
    started: a fuzzed command line could run anything."""
    from latentchess.engines.registry import create_engine, parse_engine_spec

    try:
        spec = parse_engine_spec(text)
    except EngineError as error:
        assert repr(text) in str(error), (text, str(error))
        return
    if spec.kind not in ("random", "greedy", "latent"):
        return
    if spec.kind == "latent":
        params = {k: v for k, v in spec.params.items() if k.lower() != "model"}
        parts = [*spec.args, *(f"{key}={value}" for key, value in params.items())]
        text = ",".join([f"latent:model={model_dir}", *parts])
        try:
            spec = parse_engine_spec(text)
        except EngineError:
            return
    try:
        engine = create_engine(spec)
    except EngineError as error:
        assert spec.text in str(error) or repr(spec.text) in str(error), (text, str(error))
    except ModelFileError as error:
        assert str(model_dir) in str(error), (text, str(error))
    else:
        board = chess.Board()
        assert engine.play(board, chess.engine.Limit(depth=1)) in board.legal_moves
        engine.close()


# -- model directories ----------------------------------------------------------------------------


def json_values() -> st.SearchStrategy[object]:
    scalars = st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=8)
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=8,
    )


@st.composite
def model_configs(draw: st.DrawFn, base: dict) -> str:
    """A model's ``config.json``: the real one with fields replaced, dropped or added, or junk."""
    document = json.loads(json.dumps(base))
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return draw(st.one_of(st.text(max_size=40), json_values().map(json.dumps)))
    if draw(st.booleans()):  # a calibration, as training stores it, maybe broken
        calibration = {"kind": "logistic", "slope": 6.9, "intercept": 0.02, "positions": 10}
        for key in draw(st.lists(st.sampled_from(sorted(calibration)), max_size=2)):
            calibration[key] = draw(st.one_of(json_values(), st.floats()))
        document["calibration"] = calibration
    for _ in range(draw(st.integers(0, 3))):
        section = document
        if draw(st.booleans()) and isinstance(document.get("encoder"), dict):
            section = document["encoder"]
        key = draw(st.sampled_from([*sorted(section), "calibration", "extra"]))
        edit = draw(st.sampled_from(["value", "drop", "number"]))
        if edit == "drop":
            section.pop(key, None)
        elif edit == "number":
            section[key] = draw(
                st.one_of(st.integers(-2, 2**40), st.floats(), st.sampled_from([0, 1, 77, 78]))
            )
        else:
            section[key] = draw(json_values())
    text = json.dumps(document, allow_nan=True)
    if choice == 1:
        text = text[: draw(st.integers(0, len(text)))]
    return text


@st.composite
def weight_files(draw: st.DrawFn, base: bytes) -> bytes:
    """A ``model.safetensors``: the real one, truncated, with bytes changed, or junk."""
    choice = draw(st.integers(0, 6))
    if choice in (0, 5, 6):  # the real weights: the config decides
        return base
    if choice == 1:
        return base[: draw(st.integers(0, len(base)))]
    if choice == 2:
        header = int.from_bytes(base[:8], "little")
        position = draw(st.integers(0, min(len(base), 8 + header) - 1))  # mostly the JSON header
        return base[:position] + draw(st.binary(min_size=1, max_size=6)) + base[position + 1 :]
    if choice == 3:
        header = draw(
            st.one_of(st.binary(max_size=40), json_values().map(lambda v: json.dumps(v).encode()))
        )
        return len(header).to_bytes(8, "little") + header + draw(st.binary(max_size=16))
    return draw(st.binary(max_size=64))


def model_dir_target(config: str, weights: bytes, directory: Path) -> None:
    """``load_model`` loads a model that scores positions, or raises ``ModelFileError`` naming
    the directory."""
    from latentchess.models.io import load_model

    directory.mkdir(exist_ok=True)
    (directory / "config.json").write_text(config, encoding="utf-8", errors="surrogatepass")
    (directory / "model.safetensors").write_bytes(weights)
    try:
        model = load_model(directory, precision="fp32")
    except ModelFileError as error:
        assert str(directory) in str(error), str(error)
        return
    scores = model.score([chess.STARTING_FEN, "4k3/8/8/8/8/8/8/4K2Q b - - 0 1"])
    assert scores.shape == (2,) and np.isfinite(scores).all(), scores
    p = model.win_probability(0.25)
    assert 0.0 <= p <= 1.0, p
