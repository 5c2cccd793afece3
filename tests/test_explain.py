"""Occlusion explanations (latentchess.explain) and the latent view (latentchess.latent_view)."""

from __future__ import annotations

import json
from pathlib import Path

import chess
import numpy as np
import pytest

from latentchess.cli import main
from latentchess.errors import InvalidFenError
from latentchess.explain import (
    explain_move,
    format_explanation,
    parse_position_and_move,
    plot_explanation,
)
from latentchess.latent_view import fit_latent_view, load_latent_view, reference_positions
from latentchess.models.inference import LatentModel


@pytest.fixture(scope="module")
def fp32_model() -> LatentModel:
    """The shipped default model in fp32 (numbers are compared)."""
    from latentchess.models.io import load_model

    return load_model(None, precision="fp32")


def _by_square(explanation, name: str):
    return next(p for p in explanation.pieces if p.square_name == name)


def test_contribution_is_the_change_without_the_piece(fp32_model: LatentModel) -> None:
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    move = board.parse_san("Bb5")
    explanation = explain_move(fp32_model, board, move)
    before, after = board.copy(), board.copy()
    after.push(move)
    base = fp32_model.score([before, after])
    assert explanation.score_before == pytest.approx(float(base[0]), abs=1e-5)
    assert explanation.change == pytest.approx(float(base[1] - base[0]), abs=1e-5)  # White moved
    for square, square_after in (("f1", "b5"), ("c6", "c6"), ("d1", "d1")):
        without_before = before.copy()
        without_before.remove_piece_at(chess.parse_square(square))
        without_after = after.copy()
        without_after.remove_piece_at(chess.parse_square(square_after))
        occluded = fp32_model.score([without_before, without_after])
        expected = float(base[1] - base[0]) - float(occluded[1] - occluded[0])
        assert _by_square(explanation, square).contribution == pytest.approx(expected, abs=1e-5)
    assert _by_square(explanation, "f1").role == "moved"
    assert {p.piece for p in explanation.pieces}.isdisjoint({"K", "k"})
    assert len(explanation.pieces) == len(board.piece_map()) - 2
    ranked = [abs(p.contribution) for p in explanation.pieces]
    assert ranked == sorted(ranked, reverse=True)


def test_one_batch_black_view_castling_and_en_passant(fp32_model: LatentModel) -> None:
    calls: list[int] = []
    original = fp32_model.score

    def counting(positions, batch_size=1024):  # type: ignore[no-untyped-def]
        positions = list(positions)
        calls.append(len(positions))
        return original(positions, batch_size=batch_size)

    fp32_model.score = counting  # type: ignore[method-assign]
    try:
        castle = chess.Board("r3k2r/pppq1ppp/2npbn2/4p3/4P3/2NPBN2/PPPQ1PPP/R3K2R b KQkq - 0 8")
        explanation = explain_move(fp32_model, castle, chess.Move.from_uci("e8g8"))
    finally:
        fp32_model.score = original  # type: ignore[method-assign]
    pieces = len(castle.piece_map()) - 2
    assert calls == [2 + 2 * pieces]  # ONE batch: both positions and two per piece
    # The castled rook is taken off h8 before and off f8 after.
    before, after = castle.copy(), castle.copy()
    after.push(chess.Move.from_uci("e8g8"))
    before.remove_piece_at(chess.H8)
    after.remove_piece_at(chess.F8)
    full = original([castle, _after(castle, "e8g8")])
    occluded = original([before, after])
    expected = -(float(full[1] - full[0]) - float(occluded[1] - occluded[0]))  # Black's view
    assert _by_square(explanation, "h8").contribution == pytest.approx(expected, abs=1e-5)
    assert explanation.change == pytest.approx(-float(full[1] - full[0]), abs=1e-5)

    en_passant = chess.Board("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2")
    explained = explain_move(fp32_model, en_passant, chess.Move.from_uci("e5d6"))
    assert _by_square(explained, "d5").role == "captured"
    text = format_explanation(explained)
    assert "exd6" in text and "captured" in text


def _after(board: chess.Board, uci: str) -> chess.Board:
    copy = board.copy()
    copy.push(chess.Move.from_uci(uci))
    return copy


def test_bad_input_is_named() -> None:
    with pytest.raises(InvalidFenError, match="'not a fen'"):
        parse_position_and_move("not a fen", "e2e4")
    with pytest.raises(InvalidFenError, match="not a legal position"):
        parse_position_and_move("8/8/8/8/8/8/8/8 w - - 0 1", "e2e4")
    with pytest.raises(chess.IllegalMoveError, match="'e2e5'"):
        parse_position_and_move("startpos", "e2e5")
    with pytest.raises(chess.IllegalMoveError, match="'Qh5'"):
        parse_position_and_move("startpos", "Qh5")
    board, move = parse_position_and_move("startpos", "Nf3")
    assert move == chess.Move.from_uci("g1f3") and board.fullmove_number == 1


def test_explain_command_text_and_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "heat.png"
    assert main(["explain", "startpos", "e4", "--png", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "axis score (White's view)" in printed and "e2" in printed and str(out) in printed
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["explain", "startpos", "Nf3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["move"] == "g1f3"
    assert main(["explain", "startpos", "e2e5"]) == 2
    assert "'e2e5'" in capsys.readouterr().err
    assert main(["explain", "8/8/8/8/8/8/8/8 w - - 0 1", "e2e4"]) == 2
    assert "not a legal position" in capsys.readouterr().err


def test_plot_explanation_writes_png(fp32_model: LatentModel, tmp_path: Path) -> None:
    board = chess.Board()
    explanation = explain_move(fp32_model, board, chess.Move.from_uci("d2d4"))
    path = plot_explanation(explanation, tmp_path / "sub" / "d4.png")
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_latent_view_fitted_once_cached_and_refitted_when_damaged(
    fp32_model: LatentModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    directory = tmp_path / "latentchess" / "latent-view"
    fens, probs = reference_positions()
    assert len(fens) == 2000 and np.all((probs >= 0) & (probs <= 1))
    positions = (fens[:300], probs[:300])  # a subset keeps the test quick
    first = load_latent_view(fp32_model, positions=positions)
    files = list(directory.glob("*.npz"))
    assert len(files) == 1 and not list(directory.glob("*.tmp"))
    again = load_latent_view(fp32_model, positions=positions)
    np.testing.assert_array_equal(first.components, again.components)
    assert len(first.points) == 300
    # New positions are placed with the fitted transform: the reference set lands on its points.
    np.testing.assert_allclose(
        first.transform(fp32_model.embed(fens[:16])), first.points[:16], atol=1e-4
    )
    assert first.axis_2d[0] > 0  # the axis points right
    assert 0 < float(np.linalg.norm(first.axis_2d)) <= 1 + 1e-5
    assert first.explained[0] >= first.explained[1] > 0
    # A damaged cache file is refitted and replaced atomically.
    files[0].write_bytes(b"not an npz")
    refitted = load_latent_view(fp32_model, positions=positions)
    np.testing.assert_allclose(refitted.points, first.points, atol=1e-4)
    assert np.load(files[0])["digest"] == first.digest


def test_latent_view_key_follows_model_content(fp32_model: LatentModel) -> None:
    import copy

    from latentchess.latent_view import model_digest

    other = copy.deepcopy(fp32_model)
    other.axis = other.axis * -1.0
    other.path = None  # in memory: the weights and the axis are the content
    assert model_digest(other) != model_digest(fp32_model)
    other.axis = fp32_model.axis
    assert model_digest(other) != model_digest(fp32_model)  # file content vs in-memory content
    loaded_again = copy.deepcopy(fp32_model)
    loaded_again.encoder = loaded_again.encoder.to(__import__("torch").bfloat16)
    assert model_digest(loaded_again) == model_digest(fp32_model)  # same files, any precision
    fens, probs = reference_positions()
    assert model_digest(fp32_model, (fens[:5], probs[:5])) != model_digest(fp32_model)
    with pytest.raises(ValueError, match="need >= 3 positions"):
        fit_latent_view(fp32_model, (fens[:2], probs[:2]))


def test_command_precisions_match_the_model_layer() -> None:
    from latentchess.cli.web import _PRECISIONS
    from latentchess.models.inference import PRECISIONS

    assert _PRECISIONS == PRECISIONS
