"""Errors survive pickling with their attributes, also across a real worker process."""

from __future__ import annotations

import pickle
from pathlib import Path

import chess.engine
import pytest

from latentchess.data._pool import LabellerSpec, run_ordered
from latentchess.encoding import tokenize
from latentchess.errors import (
    DataFormatError,
    EngineError,
    InvalidFenError,
    LatentChessError,
    ModelFileError,
)


def round_trip(error: BaseException) -> BaseException:
    return pickle.loads(pickle.dumps(error))


def test_every_error_type_round_trips_with_its_attributes() -> None:
    """Failed before the fix: InvalidFenError did not unpickle, DataFormatError lost path/line."""
    fen = round_trip(InvalidFenError("8/8/8 w", "expected 8 ranks"))
    assert isinstance(fen, InvalidFenError) and isinstance(fen, ValueError)
    assert (fen.fen, fen.problem) == ("8/8/8 w", "expected 8 ranks")
    assert str(fen) == "invalid FEN '8/8/8 w': expected 8 ranks"
    data = round_trip(DataFormatError("bad EPD line", path=Path("/x/suite.epd"), line=7))
    assert isinstance(data, DataFormatError)
    assert (data.path, data.line, data.offset, data.problem) == (
        "/x/suite.epd",
        7,
        None,
        "bad EPD line",
    )
    assert str(data) == "/x/suite.epd:7: bad EPD line"
    binary = round_trip(DataFormatError("bad record", path="a.bag", offset=12))
    assert (binary.path, binary.offset) == ("a.bag", 12)
    assert str(binary) == "a.bag at byte offset 12: bad record"
    for plain in (ModelFileError("weights missing"), EngineError("crashed"), LatentChessError("x")):
        copy = round_trip(plain)
        assert type(copy) is type(plain) and str(copy) == str(plain)
    noted = InvalidFenError("x", "y")
    noted.add_note("context")
    assert round_trip(noted).__notes__ == ["context"]


def _tokenize_job(labeller: object, fen: str, context: object) -> object:
    return tokenize(fen)


SPEC = LabellerSpec(limit=chess.engine.Limit(depth=1))


def test_worker_errors_reach_the_parent_with_the_worker_traceback() -> None:
    """Failed before the fix: the parent died unpickling InvalidFenError (a TypeError)."""
    with pytest.raises(InvalidFenError) as info:
        run_ordered(
            _tokenize_job,
            SPEC,
            enumerate([chess.STARTING_FEN, "8/8/8 w - - 0 1"]),
            workers=2,
            on_result=lambda index, result: True,
        )
    assert info.value.fen == "8/8/8 w - - 0 1"
    notes = "\n".join(info.value.__notes__)
    assert "labelling worker" in notes and "encoding.py" in notes and "line " in notes
