"""Model files, LatentModel inference, precisions, ONNX export and the models CLI."""

from __future__ import annotations

import json
import pickle
import random
import re
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest
import torch

import latentchess
from latentchess import cli
from latentchess.encoding import TOKENIZER_VERSION, tokenize_batch
from latentchess.errors import InvalidFenError, ModelFileError
from latentchess.models import (
    MODEL_CONFIGS,
    Encoder,
    EncoderConfig,
    LatentModel,
    default_model_path,
    load_model,
    save_model,
)
from latentchess.models.inference import PRECISION_ENV, resolve_precision
from latentchess.paths import DEFAULT_MODEL

SMALL = EncoderConfig(name="test", layers=2, hidden=32, heads=4, mlp=64, dim=16)


def _parameter_formula(c: EncoderConfig) -> int:
    """Trainable parameters counted by hand from the architecture description."""
    embeddings = c.vocab_size * c.hidden + c.hidden + (c.seq_len + 1) * c.hidden
    attention = 3 * c.hidden * c.hidden + 3 * c.hidden + c.hidden * c.hidden + c.hidden
    feed_forward = c.hidden * c.mlp + c.mlp + c.mlp * c.hidden + c.hidden
    layer = attention + feed_forward + 2 * 2 * c.hidden  # two LayerNorms
    head = 2 * c.hidden + c.hidden * c.dim + c.dim
    return embeddings + c.layers * layer + head


def _positions(n: int, seed: int = 0) -> list[chess.Board]:
    """``n`` distinct boards from random games (a varied, legal token distribution)."""
    rng = random.Random(seed)
    boards: list[chess.Board] = []
    board = chess.Board()
    while len(boards) < n:
        moves = list(board.legal_moves)
        if not moves or board.ply() > 120:
            board = chess.Board()
            continue
        board.push(rng.choice(moves))
        boards.append(board.copy(stack=False))
    return boards


def _encoder(config: EncoderConfig = SMALL, seed: int = 0) -> Encoder:
    torch.manual_seed(seed)
    encoder = Encoder(config)
    # nn.TransformerEncoder starts every layer as a copy of one; give each its own weights so
    # the tests see a generic network.
    with torch.no_grad():
        for p in encoder.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return encoder.eval()


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return _encoder()


@pytest.fixture(scope="module")
def axis() -> np.ndarray:
    return np.random.default_rng(1).normal(size=SMALL.dim).astype(np.float32) * 3.0


@pytest.fixture()
def model_dir(tmp_path: Path, encoder: Encoder, axis: np.ndarray) -> Path:
    metadata = {
        "axis_counts": {"white": 12, "black": 9, "rule": "mate labels"},
        "calibration": {"kind": "logistic", "slope": 5.0, "intercept": 0.25},
        "metrics": {"val_loss": 1.25},
    }
    return save_model(tmp_path / "model", encoder, axis=axis, metadata=metadata)


# -- configurations -------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MODEL_CONFIGS))
def test_parameter_counts_match_formula(name: str) -> None:
    config = MODEL_CONFIGS[name]
    with torch.device("meta"):
        encoder = Encoder(config)
    assert encoder.num_parameters() == _parameter_formula(config)


def test_models_command_prints_every_config(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "L", "H", "N", "M", "D", "params"]
    table = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    from latentchess.models.config import GAB_ENCODER_CONFIGS, SPARSE_ENCODER_CONFIGS

    assert set(table) == set(MODEL_CONFIGS) | set(GAB_ENCODER_CONFIGS) | set(SPARSE_ENCODER_CONFIGS)
    for name, c in MODEL_CONFIGS.items():
        expected = [c.layers, c.hidden, c.heads, c.mlp, c.dim, f"{_parameter_formula(c):,}"]
        assert table[name] == [str(v) for v in expected]


# -- saving and loading ---------------------------------------------------------------------


def test_round_trip_is_bit_exact(model_dir: Path, encoder: Encoder, axis: np.ndarray) -> None:
    boards = _positions(40)
    loaded = load_model(model_dir, precision="fp32")
    direct = LatentModel.from_encoder(_encoder(), axis, precision="fp32")
    assert loaded.precision == "fp32" and loaded.path == model_dir
    assert loaded.config == SMALL
    np.testing.assert_array_equal(loaded.axis, axis)
    np.testing.assert_array_equal(loaded.embed(boards), direct.embed(boards))
    assert loaded.metadata["axis_counts"] == {"white": 12, "black": 9, "rule": "mate labels"}
    assert loaded.metadata["metrics"] == {"val_loss": 1.25}
    for name, tensor in encoder.state_dict().items():
        assert torch.equal(loaded.encoder.state_dict()[name], tensor), name


def test_model_directory_holds_only_safetensors_and_json(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert sorted(p.name for p in model_dir.iterdir()) == ["config.json", "model.safetensors"]

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("pickle must never be used to load a model")

    monkeypatch.setattr(torch, "load", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    model = load_model(model_dir)
    assert model.embed(_positions(2)).shape == (2, SMALL.dim)


def test_config_json_layout(model_dir: Path, axis: np.ndarray) -> None:
    document = json.loads((model_dir / "config.json").read_text())
    assert document["format"] == "latentchess-model"
    assert document["format_version"] == 1
    assert document["tokenizer"] == TOKENIZER_VERSION
    assert EncoderConfig.from_dict(document["encoder"]) == SMALL
    np.testing.assert_array_equal(np.asarray(document["axis"], dtype=np.float32), axis)


def test_save_into_existing_directory_replaces_files_and_keeps_others(
    model_dir: Path, axis: np.ndarray
) -> None:
    (model_dir / "notes.txt").write_text("keep me")
    other = _encoder(seed=5)
    save_model(model_dir, other, axis=-axis, metadata={"metrics": {"val_loss": 0.5}})
    loaded = load_model(model_dir, precision="fp32")
    np.testing.assert_array_equal(loaded.axis, -axis)
    assert loaded.metadata["metrics"] == {"val_loss": 0.5}
    assert "calibration" not in loaded.metadata
    assert torch.equal(loaded.encoder.projection.weight, other.projection.weight)
    assert (model_dir / "notes.txt").read_text() == "keep me"
    assert not [p for p in model_dir.iterdir() if p.name.endswith(".tmp")]


def test_save_compiled_encoder_stores_plain_names(tmp_path: Path, axis: np.ndarray) -> None:
    class Compiled(torch.nn.Module):
        """Stands in for torch.compile's wrapper (importing the compiler takes ~20 s)."""

        def __init__(self, module: Encoder) -> None:
            super().__init__()
            self._orig_mod = module  # state_dict names gain "_orig_mod.", as with torch.compile

    encoder = _encoder()
    compiled = Compiled(encoder)
    assert next(iter(compiled.state_dict())).startswith("_orig_mod.")
    saved = save_model(tmp_path / "m", compiled, axis=axis)  # type: ignore[arg-type]
    loaded = load_model(saved, precision="fp32")
    assert set(loaded.encoder.state_dict()) == set(encoder.state_dict())


def test_save_rejects_bad_arguments(tmp_path: Path, encoder: Encoder, axis: np.ndarray) -> None:
    with pytest.raises(ValueError, match="axis must have 16 values"):
        save_model(tmp_path / "a", encoder, axis=axis[:5])
    with pytest.raises(ValueError, match="non-finite"):
        save_model(tmp_path / "b", encoder, axis=np.full(SMALL.dim, np.nan))
    with pytest.raises(ValueError, match=r"\['axis'\] are reserved"):
        save_model(tmp_path / "c", encoder, axis=axis, metadata={"axis": [1.0]})
    with pytest.raises(ValueError, match="JSON"):
        save_model(tmp_path / "d", encoder, axis=axis, metadata={"bad": object()})
    (tmp_path / "file").write_text("x")
    with pytest.raises(ModelFileError, match="not a directory"):
        save_model(tmp_path / "file", encoder, axis=axis)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # no debris left behind


def _edit_config(model_dir: Path, **changes: object) -> None:
    file = model_dir / "config.json"
    document = json.loads(file.read_text())
    document.update(changes)
    file.write_text(json.dumps(document))


def test_load_missing_things(tmp_path: Path, model_dir: Path) -> None:
    with pytest.raises(ModelFileError, match=r"does not exist"):
        load_model(tmp_path / "nowhere")
    with pytest.raises(ModelFileError, match=r"is not a directory"):
        load_model(model_dir / "config.json")
    (model_dir / "model.safetensors").unlink()
    with pytest.raises(ModelFileError, match=r"model\.safetensors' is missing"):
        load_model(model_dir)
    (model_dir / "config.json").unlink()
    with pytest.raises(ModelFileError, match=r"config\.json' is missing"):
        load_model(model_dir)


def test_load_truncated_safetensors(model_dir: Path) -> None:
    weights = model_dir / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match=r"model\.safetensors.*truncated or corrupt"):
        load_model(model_dir)
    weights.write_bytes(b"\x00" * 5)
    with pytest.raises(ModelFileError, match="not a readable safetensors file"):
        load_model(model_dir)


def test_load_weights_of_another_size(model_dir: Path) -> None:
    _edit_config(model_dir, encoder={**SMALL.to_dict(), "hidden": 64, "dim": 16})
    with pytest.raises(ModelFileError, match=r"tensor '.*' has shape .* expects"):
        load_model(model_dir)
    _edit_config(model_dir, encoder={**SMALL.to_dict(), "layers": 3})
    with pytest.raises(ModelFileError, match=r"missing tensors \['layers\.layers\.2\."):
        load_model(model_dir)


def test_load_rejects_foreign_or_broken_config(model_dir: Path) -> None:
    file = model_dir / "config.json"
    original = file.read_text()
    file.write_text('{"format": "latentchess-model", "format_ver')
    with pytest.raises(ModelFileError, match=r"config\.json' is not valid JSON"):
        load_model(model_dir)
    file.write_text(json.dumps({"architectures": ["BertModel"]}))
    with pytest.raises(ModelFileError, match=r"not a latentchess model config.*got None"):
        load_model(model_dir)
    file.write_text(json.dumps([1, 2]))
    with pytest.raises(ModelFileError, match="not a latentchess model config"):
        load_model(model_dir)
    file.write_text(original)
    _edit_config(model_dir, format_version=2)
    with pytest.raises(ModelFileError, match="format_version 2, newer"):
        load_model(model_dir)
    file.write_text(original)
    _edit_config(model_dir, tokenizer="fen-64-squares")
    with pytest.raises(ModelFileError, match=r"tokenizer 'fen-64-squares'.*chessbench-fen-77"):
        load_model(model_dir)
    file.write_text(original)
    _edit_config(model_dir, encoder={**SMALL.to_dict(), "heads": 5})
    with pytest.raises(ModelFileError, match="bad encoder config"):
        load_model(model_dir)
    _edit_config(model_dir, encoder={**SMALL.to_dict(), "colour": "blue"})
    with pytest.raises(ModelFileError, match="unknown EncoderConfig keys"):
        load_model(model_dir)


def test_load_rejects_bad_axis(model_dir: Path) -> None:
    _edit_config(model_dir, axis=[0.5] * 7)
    with pytest.raises(ModelFileError, match=r"axis must be a list of 16 numbers.*got 7"):
        load_model(model_dir)
    _edit_config(model_dir, axis=[0.5] * 16)
    file = model_dir / "config.json"
    file.write_text(file.read_text().replace('"axis": [0.5', '"axis": [NaN', 1))
    with pytest.raises(ModelFileError, match="non-finite"):
        load_model(model_dir)
    _edit_config(model_dir, axis=[0.0] * 16)
    with pytest.raises(ModelFileError, match="all zeros"):
        load_model(model_dir)


def test_default_model_path_follows_environment(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LATENTCHESS_MODEL", raising=False)
    shipped = Path(latentchess.__file__).resolve().parent / "weights" / DEFAULT_MODEL
    assert default_model_path() == shipped and (shipped / "model.safetensors").is_file()
    monkeypatch.setenv("LATENTCHESS_MODEL", str(model_dir))
    assert default_model_path() == model_dir
    assert load_model().path == model_dir
    assert latentchess.load_model is load_model  # lazy top-level export


# -- inference ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model(encoder: Encoder, axis: np.ndarray) -> LatentModel:
    return LatentModel.from_encoder(encoder, axis, precision="fp32")


def test_embed_fen_and_board_agree(model: LatentModel) -> None:
    boards = _positions(12)
    from_boards = model.embed(boards)
    np.testing.assert_array_equal(from_boards, model.embed([b.fen() for b in boards]))
    np.testing.assert_array_equal(from_boards, model.embed_tokens(tokenize_batch(boards)))
    # A batch of one runs other kernels than a batch of 12: equal up to float rounding.
    single = model.embed(boards[3])
    assert single.shape == (1, SMALL.dim)
    np.testing.assert_allclose(single, from_boards[3:4], atol=1e-6)
    np.testing.assert_array_equal(model.embed(boards[3].fen()), single)


def test_embed_any_count(model: LatentModel) -> None:
    assert model.embed([]).shape == (0, SMALL.dim)
    assert model.embed([]).dtype == np.float32
    assert model.score([]).shape == (0,)
    boards = _positions(11)
    whole = model.embed(boards, batch_size=64)
    chunked = model.embed(boards, batch_size=4)  # 4 + 4 + 3
    assert chunked.shape == (11, SMALL.dim)
    np.testing.assert_allclose(chunked, whole, atol=1e-6)
    np.testing.assert_allclose(model.embed(iter(boards)), whole, atol=1e-6)  # any iterable


def test_embeddings_are_unit_vectors(model: LatentModel) -> None:
    embeddings = model.embed(_positions(30))
    assert embeddings.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-6)


def test_score_is_cosine_with_axis(model: LatentModel, axis: np.ndarray) -> None:
    boards = _positions(25)
    embeddings = model.embed(boards).astype(np.float64)
    expected = embeddings @ axis / (np.linalg.norm(embeddings, axis=1) * np.linalg.norm(axis))
    scores = model.score(boards)
    assert scores.shape == (25,) and scores.dtype == np.float32
    np.testing.assert_allclose(scores, expected, atol=1e-6)
    np.testing.assert_array_equal(model.score_tokens(tokenize_batch(boards)), scores)


def test_win_probability(encoder: Encoder, axis: np.ndarray) -> None:
    cos = np.array([-1.0, -0.2, 0.0, 0.3, 1.0], dtype=np.float32)
    calibrated = LatentModel.from_encoder(
        encoder, axis, metadata={"calibration": {"kind": "logistic", "slope": 4, "intercept": -1}}
    )
    expected = 1.0 / (1.0 + np.exp(-(4.0 * cos.astype(np.float64) - 1.0)))
    np.testing.assert_allclose(calibrated.win_probability(cos), expected, rtol=1e-6)
    assert isinstance(calibrated.win_probability(0.5), float)
    assert calibrated.win_probability(0.5) == pytest.approx(1 / (1 + np.exp(-1.0)))
    assert calibrated.win_probability(1e6) == 1.0  # no overflow warning for extreme inputs
    uncalibrated = LatentModel.from_encoder(encoder, axis)
    np.testing.assert_allclose(uncalibrated.win_probability(cos), (cos + 1) / 2)
    broken = LatentModel.from_encoder(encoder, axis, metadata={"calibration": {"kind": "isotonic"}})
    with pytest.raises(ValueError, match="isotonic"):
        broken.win_probability(cos)


def test_bad_inputs_are_reported(model: LatentModel, encoder: Encoder) -> None:
    with pytest.raises(InvalidFenError, match="not a fen"):
        model.embed(["not a fen"])
    with pytest.raises(ValueError, match=r"shape \(N, 77\), got \(3, 70\)"):
        model.embed_tokens(np.zeros((3, 70), dtype=np.uint8))
    with pytest.raises(ValueError, match=r"\[0, 31\), got range \[40, 40\]"):
        model.embed_tokens(np.full((2, 77), 40, dtype=np.uint8))
    with pytest.raises(ValueError, match="unknown precision 'fp8'"):
        LatentModel.from_encoder(encoder, np.ones(SMALL.dim), precision="fp8")
    with pytest.raises(ValueError, match="axis must have 16 values"):
        LatentModel.from_encoder(encoder, np.ones(3))


# -- precision ------------------------------------------------------------------------------


def test_auto_precision_on_cpu(axis: np.ndarray, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-memory models stay fp32 under ``auto`` on every CPU; the environment overrides it."""
    monkeypatch.delenv(PRECISION_ENV, raising=False)
    model = LatentModel.from_encoder(_encoder(), axis)
    assert model.device == torch.device("cpu")
    assert model.precision == "fp32" and model.precision_check is None
    monkeypatch.setenv(PRECISION_ENV, "bf16")
    assert LatentModel.from_encoder(_encoder(), axis).precision == "bf16"
    assert LatentModel.from_encoder(_encoder(), axis, precision="fp32").precision == "fp32"
    monkeypatch.setenv(PRECISION_ENV, "fp64")
    with pytest.raises(ValueError, match=r"LATENTCHESS_PRECISION='fp64' is not a precision"):
        LatentModel.from_encoder(_encoder(), axis)


def test_bf16_fidelity(axis: np.ndarray) -> None:
    config = MODEL_CONFIGS["tiny"]
    rng = np.random.default_rng(2)
    tiny_axis = rng.normal(size=config.dim).astype(np.float32)
    boards = _positions(24, seed=3)  # few: bf16 is emulated (slow) on CPUs without AMX
    fp32 = LatentModel.from_encoder(_encoder(config), tiny_axis, precision="fp32", threads=1)
    bf16 = LatentModel.from_encoder(_encoder(config), tiny_axis, precision="bf16", threads=1)
    assert bf16.precision == "bf16"
    reference, reduced = fp32.embed(boards), bf16.embed(boards)
    assert reduced.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(reduced, axis=1), 1.0, atol=1e-6)
    cosine = (reference * reduced).sum(axis=1)
    assert cosine.min() >= 0.999, f"bf16 cosine to fp32: min {cosine.min():.5f}"


def test_threads_and_mode_are_set_once_per_model(
    axis: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No call toggles the process-wide thread count or a module's train/eval mode."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        model = LatentModel.from_encoder(_encoder(), axis, precision="fp32")
        assert model.threads == 1 and torch.get_num_threads() == 1  # the default, set once
        pinned = LatentModel.from_encoder(_encoder(), axis, precision="fp32", threads=2)
        assert torch.get_num_threads() == 2  # set once, at construction
        calls: list[object] = []
        monkeypatch.setattr(torch, "set_num_threads", lambda n: calls.append(("threads", n)))
        original_train = torch.nn.Module.train

        def train(module: torch.nn.Module, mode: bool = True) -> torch.nn.Module:
            calls.append(("train", mode))
            return original_train(module, mode)

        monkeypatch.setattr(torch.nn.Module, "train", train)
        tokens = tokenize_batch(_positions(66))  # small calls and one above the old 64 switch
        for m in (pinned, model):
            m.embed_tokens(tokens[:5])
            m.embed_tokens(tokens, batch_size=33)
        assert calls == [] and torch.get_num_threads() == 2
    finally:
        monkeypatch.undo()
        torch.set_num_threads(before)


def test_from_encoder_leaves_a_training_encoder_alone(axis: np.ndarray) -> None:
    encoder = _encoder().train()
    shared = LatentModel.from_encoder(encoder, axis, precision="fp32")
    before = shared.embed(_positions(3))
    assert encoder.training and not shared.encoder.training  # its own eval-mode structure
    np.testing.assert_array_equal(shared.embed(_positions(3)), before)  # no dropout
    with torch.no_grad():
        encoder.projection.bias.add_(1.0)  # a training step
    assert not np.allclose(shared.embed(_positions(3)), before)  # follows the live weights
    LatentModel.from_encoder(encoder, axis, precision="bf16")
    assert encoder.projection.weight.dtype == torch.float32  # the copy was cast, not the original


def test_int8_precision_fidelity(axis: np.ndarray) -> None:
    # tiny's widths with two layers: int8 error depends on the widths; export time on depth.
    config = EncoderConfig(name="tiny-2", layers=2, hidden=128, heads=8, mlp=256, dim=128)
    tiny_axis = np.random.default_rng(4).normal(size=config.dim).astype(np.float32)
    boards = _positions(48, seed=5)
    fp32 = LatentModel.from_encoder(_encoder(config), tiny_axis, precision="fp32", threads=1)
    int8 = LatentModel.from_encoder(_encoder(config), tiny_axis, precision="int8", threads=1)
    assert int8.precision == "int8"
    reference, reduced = fp32.embed(boards), int8.embed(boards, batch_size=20)
    assert reduced.shape == reference.shape and reduced.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(reduced, axis=1), 1.0, atol=1e-6)
    cosine = (reference * reduced).sum(axis=1)
    assert cosine.min() >= 0.999, f"int8 cosine to fp32: min {cosine.min():.5f}"
    assert int8.embed([]).shape == (0, config.dim)
    with pytest.raises(ValueError, match="'int8' runs on the CPU only"):
        resolve_precision("int8", torch.device("cuda"))


def test_bad_threads_and_precisions_are_refused(axis: np.ndarray) -> None:
    with pytest.raises(ValueError, match="threads must be a positive int"):
        LatentModel.from_encoder(_encoder(), axis, threads=0)
    with pytest.raises(ValueError, match="'fp16' needs a CUDA device"):
        LatentModel.from_encoder(_encoder(), axis, precision="fp16")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_cuda_autocast_matches_cpu(encoder: Encoder, axis: np.ndarray) -> None:
    boards = _positions(32)
    cpu = LatentModel.from_encoder(_encoder(), axis, precision="fp32").embed(boards)
    gpu = LatentModel.from_encoder(_encoder(), axis, device="cuda")
    assert gpu.precision == "bf16"
    assert ((gpu.embed(boards) * cpu).sum(axis=1)).min() >= 0.999


# -- CLI: model-info and ONNX ---------------------------------------------------------------


def test_model_info_command(model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["model-info", str(model_dir)]) == 0
    out = capsys.readouterr().out
    assert f"{_parameter_formula(SMALL):,}" in out
    assert "white=12, black=9" in out
    assert "val_loss: 1.25" in out
    assert "slope=5" in out
    assert cli.main(["model-info", str(model_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"] == {"val_loss": 1.25}
    assert cli.main(["model-info", str(model_dir / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_export_onnx_parity(
    model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import onnx

    from latentchess.models.export import onnx_session

    out = tmp_path / "encoder.onnx"
    assert cli.main(["export-onnx", "--model", str(model_dir), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    match = re.search(r"max abs diff ([0-9.e+-]+)", printed)
    assert match is not None, printed
    assert float(match.group(1)) < 1e-4
    # Independently: real positions, a batch size other than the export example's.
    boards = _positions(37)
    session = onnx_session(out)
    got = session.run(None, {"tokens": tokenize_batch(boards)})[0]
    want = load_model(model_dir, precision="fp32").embed(boards)
    assert got.shape == (37, SMALL.dim)
    assert np.abs(got - want).max() < 1e-4
    stored = {p.key: p.value for p in onnx.load(str(out)).metadata_props}
    assert (
        json.loads(stored["latentchess"])["axis"]
        == json.loads((model_dir / "config.json").read_text())["axis"]
    )


def test_export_onnx_int8(model_dir: Path, tmp_path: Path) -> None:
    from latentchess.models.export import check_onnx, export_onnx

    model = load_model(model_dir, precision="fp32")
    out = export_onnx(model.encoder, tmp_path / "int8.onnx", int8=True)
    check = check_onnx(out, model.encoder, tokenize_batch(_positions(16)))
    assert check.positions == 16
    # Lossy, but per-channel 7-bit weights keep it close (the benchmark's bar is 0.999).
    assert check.min_cosine > 0.995, check


def test_auto_precision_on_cpu_keeps_ranking_fidelity(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever ``auto`` picks on this CPU ranks sibling moves like fp32 (same verdict anywhere)."""
    from latentchess.models import autoprecision as ap
    from latentchess.models import inference

    monkeypatch.delenv(PRECISION_ENV, raising=False)
    monkeypatch.setattr(inference, "_AUTO_DECISIONS", {})
    auto = load_model(model_dir)
    reference = load_model(model_dir, precision="fp32")
    assert reference.precision_check is None  # an explicit precision is never second-guessed
    assert auto.precision in ("fp32", "int8", "bf16")
    assert auto.precision_check is not None and auto.precision_check.startswith(auto.precision)
    tokens, groups, white = ap.probe_positions()
    fidelity = ap.ranking_fidelity(
        reference.embed_tokens(tokens), auto.embed_tokens(tokens), auto._unit_axis, groups, white
    )
    assert fidelity.passed, fidelity
    again = load_model(model_dir)  # e.g. another match worker: the same decision, not re-measured
    assert again.precision == auto.precision and "earlier load" in again.precision_check
    # An impossible ranking bar: every reduced precision fails it, so auto stays fp32.
    monkeypatch.setattr(inference, "_AUTO_DECISIONS", {})
    monkeypatch.setattr(ap, "MIN_TOP1_AGREEMENT", 1.01)
    strict = load_model(model_dir)
    assert strict.precision == "fp32", strict.precision_check
    assert "fails fidelity" in strict.precision_check or "not tried" in strict.precision_check


def test_ranking_fidelity_is_more_than_cosine() -> None:
    """Embeddings within cosine 0.9999 of fp32 that reorder sibling moves fail the check."""
    from latentchess.models import autoprecision as ap

    rng = np.random.default_rng(0)
    axis = np.zeros(16, dtype=np.float32)
    axis[0] = 1.0
    groups = [slice(5 * i, 5 * i + 5) for i in range(10)]
    reference = rng.normal(size=(50, 16)).astype(np.float32)
    reference[:, 0] = np.tile(np.linspace(0.0, 0.02, 5), 10)  # siblings 0.005 apart on the axis
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    swapped = reference.copy()
    swapped[:, 0] = reference[:, 0][np.tile([4, 3, 2, 1, 0], 10) + np.repeat(np.arange(10) * 5, 5)]
    cosine = (reference * swapped).sum(axis=1) / np.linalg.norm(swapped, axis=1)
    assert cosine.min() > 0.9995
    fidelity = ap.ranking_fidelity(reference, swapped, axis, groups, [True] * 10)
    assert fidelity.min_cosine > 0.9995 and not fidelity.passed
    assert fidelity.top1_agreement == 0.0 and fidelity.pair_agreement < 0.05
    same = ap.ranking_fidelity(reference, reference, axis, groups, [False] * 10)
    assert same.passed and same.top1_agreement == 1.0 and same.pair_agreement == 1.0


def test_broken_weights_are_a_clear_error(model_dir: Path, tmp_path: Path) -> None:
    """NaN weights: refused at load; NaN scores from an in-memory model raise, never IndexError."""
    from latentchess.engines.latent import LatentEngine
    from latentchess.errors import LatentChessError

    model = load_model(model_dir, precision="fp32")
    broken = _encoder(model.config)
    with torch.no_grad():
        for parameter in broken.parameters():
            parameter.fill_(float("nan"))
    with pytest.raises(ValueError, match="non-finite"):
        save_model(tmp_path / "unused", broken, axis=model.axis * np.nan)
    nan_model = LatentModel.from_encoder(broken, model.axis, precision="fp32")
    with pytest.raises(ModelFileError, match="non-finite embeddings for 3 of 3 positions"):
        nan_model.score(_positions(3))
    engine = LatentEngine(nan_model)
    with pytest.raises(LatentChessError, match="non-finite embeddings"):
        engine.play(chess.Board(), chess.engine.Limit(depth=2))
    saved = save_model(tmp_path / "nan", broken, axis=model.axis)
    with pytest.raises(ModelFileError, match=r"model.safetensors.*holds \d+ non-finite values"):
        load_model(saved)


def test_content_hash_names_the_files(model_dir: Path, tmp_path: Path) -> None:
    from latentchess.models.io import model_content_hash

    model = load_model(model_dir, precision="fp32")
    assert re.fullmatch(r"[0-9a-f]{12}", model.content_hash)
    assert model.content_hash == model_content_hash(model_dir)
    assert model.provenance() == {
        "model": str(model_dir),
        "model_sha256": model.content_hash,
        "precision": "fp32",
    }
    copy = save_model(tmp_path / "copy", model.encoder, axis=model.axis, metadata={"note": 1})
    assert model_content_hash(copy) != model.content_hash  # another config.json
    in_memory = LatentModel.from_encoder(model.encoder, model.axis, precision="fp32")
    assert re.fullmatch(r"[0-9a-f]{12}", in_memory.content_hash)
