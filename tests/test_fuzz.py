"""Property-based fuzzing of every parser a user feeds (targets in ``tests/fuzz_targets.py``).

The normal run tries a few dozen derandomised examples per target (about half a minute in all);
a soak run tries any number of random ones::

    LATENTCHESS_FUZZ_EXAMPLES=100000 .venv/bin/python -m pytest tests/test_fuzz.py -x

The ``test_regression_*`` cases are inputs the fuzzing found, kept as plain examples.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from fuzz_targets import (
    EPD_LINES,
    PGN_GAME,
    PUZZLE_CSV,
    bag_files,
    bag_records,
    bag_target,
    engine_spec_target,
    engine_specs,
    epd_target,
    fen_target,
    fens,
    fuzz_settings,
    model_configs,
    model_dir_target,
    pgn_target,
    puzzle_target,
    record_target,
    text_file,
    uci_lines,
    uci_parse_target,
    uci_session_target,
    weight_files,
)
from latentchess.models import Encoder, EncoderConfig
from latentchess.models.io import save_model

MICRO = EncoderConfig(name="micro", layers=1, hidden=32, heads=4, mlp=64, dim=16)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    axis = np.random.default_rng(0).normal(size=MICRO.dim)
    return save_model(tmp_path_factory.mktemp("fuzz-model") / "micro", Encoder(MICRO), axis=axis)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory the examples overwrite (hypothesis reruns a test body, not its fixtures)."""
    return tmp_path_factory.mktemp("fuzz")


@fuzz_settings(100)
@given(fens())
def test_fuzz_fen(fen: str) -> None:
    fen_target(fen)


@fuzz_settings(150)
@given(uci_lines())
def test_fuzz_uci_command_lines(line: str) -> None:
    uci_parse_target(line)


@fuzz_settings(25)
@given(st.lists(uci_lines(), max_size=8))
def test_fuzz_uci_session(model_dir: Path, lines: list[str]) -> None:
    uci_session_target(lines, model_dir)


@fuzz_settings(25)
@given(st.lists(uci_lines(engines=True), max_size=8))
def test_fuzz_uci_engine_switching(model_dir: Path, lines: list[str]) -> None:
    uci_session_target(lines, model_dir, switching=True)


@fuzz_settings(60)
@given(text_file(PGN_GAME))
def test_fuzz_pgn(scratch: Path, data: bytes) -> None:
    pgn_target(data, scratch / "games.pgn")


@fuzz_settings(80)
@given(text_file(EPD_LINES))
def test_fuzz_epd(scratch: Path, data: bytes) -> None:
    epd_target(data, scratch / "suite.epd")


@fuzz_settings(80)
@given(text_file(PUZZLE_CSV))
def test_fuzz_puzzle_csv(scratch: Path, data: bytes) -> None:
    puzzle_target(data, scratch / "puzzles.csv")


@fuzz_settings(200)
@given(bag_records())
def test_fuzz_chessbench_records(record: tuple[str, bytes]) -> None:
    record_target(*record)


@fuzz_settings(40)
@given(bag_files(), st.booleans())
def test_fuzz_chessbench_bags(
    scratch: Path, bag: tuple[list[bytes], int, int, bytes], compressed: bool
) -> None:
    bag_target(*bag, compressed, scratch)


@fuzz_settings(60)
@given(engine_specs())
def test_fuzz_engine_specs(model_dir: Path, text: str) -> None:
    engine_spec_target(text, model_dir)


@pytest.fixture(scope="module")
def model_files(model_dir: Path) -> tuple[dict, bytes]:
    config = json.loads((model_dir / "config.json").read_text())
    return config, (model_dir / "model.safetensors").read_bytes()


@fuzz_settings(60)
@given(data=st.data())
def test_fuzz_model_directories(
    scratch: Path, model_files: tuple[dict, bytes], data: st.DataObject
) -> None:
    config, weights = model_files
    model_dir_target(
        data.draw(model_configs(config)), data.draw(weight_files(weights)), scratch / "model"
    )


# -- what the fuzzing found -----------------------------------------------------------------------


def test_regression_puzzle_csv_with_broken_bytes_and_huge_fields(scratch: Path) -> None:
    """Found by test_fuzz_puzzle_csv: bytes that are not UTF-8 raised UnicodeDecodeError, and a
    field beyond the csv module's limit raised csv.Error, instead of DataFormatError."""
    path = scratch / "broken.csv"
    path.write_bytes(PUZZLE_CSV.encode() + b"\xff\xfe\n")
    puzzle_target(path.read_bytes(), path)
    path.write_bytes(PUZZLE_CSV.encode() + b'x,"' + b"y" * 200_000 + b'",e2e4,1\n')
    puzzle_target(path.read_bytes(), path)


def test_regression_engine_spec_with_unbalanced_quotes() -> None:
    """Found reading the builders the fuzzing may not start: shlex's ValueError escaped."""
    from latentchess.engines.registry import create_engine
    from latentchess.errors import EngineError

    with pytest.raises(EngineError, match=r"engine spec \"uci:'/usr/games/stockfish\""):
        create_engine("uci:'/usr/games/stockfish")


def test_regression_model_config_with_absurd_sizes(
    scratch: Path, model_files: tuple[dict, bytes]
) -> None:
    """Found writing test_fuzz_model_directories (a mutated config may ask for any size): the
    model was built before its shapes were compared with the weights file, so hidden=2**16
    raised RuntimeError (cannot allocate 100 GB) and smaller absurd sizes took gigabytes."""
    config, weights = model_files
    for hidden in (2**40, 2**16):
        huge = json.loads(json.dumps(config))
        huge["encoder"].update(hidden=hidden, mlp=hidden)
        model_dir_target(json.dumps(huge), weights, scratch / "huge-model")


def test_regression_pgn_game_with_a_bad_fen_header(scratch: Path) -> None:
    """Found by test_fuzz_pgn (soak): read_positions called game.board() before looking at
    game.errors, so a game whose FEN header does not parse raised ValueError."""
    bad = PGN_GAME.replace("4k3/P7/8/8/8/8/8/4K3", "43/P7/8/8/8/8/8/4K3")
    path = scratch / "bad-fen-header.pgn"
    pgn_target(bad.encode(), path)


def test_regression_model_with_an_unusable_calibration(
    scratch: Path, model_files: tuple[dict, bytes]
) -> None:
    """Found probing the model-directory target by hand, and by test_fuzz_model_directories in
    a soak run: a config.json whose calibration is not two finite numbers loaded, then failed
    with ValueError (or gave NaN probabilities) the first time the engine reported a score."""
    config, weights = model_files
    logistic = {"kind": "logistic", "slope": 7.0, "intercept": 0.0}
    for calibration in ("x", dict(logistic, slope="a"), dict(logistic, intercept=float("nan"))):
        broken = dict(config, calibration=calibration)
        model_dir_target(json.dumps(broken), weights, scratch / "calibrated-model")


def test_regression_latent_spec_with_an_unknown_option(model_dir: Path) -> None:
    """Found by test_fuzz_engine_specs (soak): the latent engine's EngineError for an unknown
    option did not name the spec it came from."""
    engine_spec_target("latent:seed=", model_dir)


def test_regression_pgn_with_an_unbalanced_parenthesis(scratch: Path) -> None:
    """Found by test_fuzz_pgn (soak): python-chess's parser raises IndexError on a ')' that
    closes no variation; the dataset reader and the opening-book reader let it through."""
    broken = PGN_GAME.replace("7. Qf3+", "e4)0. Qf3+")
    pgn_target(broken.encode(), scratch / "unbalanced.pgn")


def test_regression_weights_with_a_null_header(
    scratch: Path, model_files: tuple[dict, bytes]
) -> None:
    """Found by test_fuzz_model_directories (soak), in this branch's own size pre-check: a
    safetensors header that is JSON but not an object raised AttributeError."""
    config, _ = model_files
    weights = (4).to_bytes(8, "little") + b"null"
    model_dir_target(json.dumps(config), weights, scratch / "null-header-model")


def test_regression_epd_with_a_number_for_a_move(scratch: Path) -> None:
    """Found by test_fuzz_epd (soak): python-chess reads 'bm 5' as an integer operand and
    parse_epd_line iterated it (TypeError) instead of reporting the line."""
    broken = EPD_LINES.replace("bm f5;", "bm 5;")
    epd_target(broken.encode(), scratch / "number-move.epd")
