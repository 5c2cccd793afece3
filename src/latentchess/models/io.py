"""Model directories: ``model.safetensors`` (weights) + ``config.json`` (everything else).

No pickle anywhere: weights are safetensors, the rest is JSON, so loading a model from an untrusted
source cannot run code. Layout of ``config.json``::

    {"format": "latentchess-model", "format_version": 1,
     "encoder": {...EncoderConfig.to_dict()...}, "tokenizer": "chessbench-fen-77",
     "axis": [D floats], "git_commit": "...",          # when saved from a git checkout
     "axis_counts": {"white": n, "black": n, "rule": "..."},
     "calibration": {"kind": "logistic", "slope": a, "intercept": b},
     "training": {...}, "metrics": {...}}              # optional metadata, free-form

The encoder is rebuilt from the stored config, then every stored tensor must match it by name and
shape; anything else is a :class:`~latentchess.errors.ModelFileError` naming the file.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from latentchess.encoding import TOKENIZER_VERSION
from latentchess.errors import LatentChessError, ModelFileError
from latentchess.models.config import AnyEncoderConfig, EncoderConfig, encoder_config_from_dict
from latentchess.models.encoder import Encoder
from latentchess.models.gab_encoder import build_encoder
from latentchess.models.inference import HASH_LENGTH, LatentModel
from latentchess.paths import SHIPPED_WEIGHTS, default_model_path
from latentchess.provenance import git_commit as _git_commit

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "WEIGHTS_FILE",
    "CONFIG_FILE",
    "save_model",
    "load_model",
    "read_model_config",
    "default_model_path",
    "model_content_hash",
]

FORMAT = "latentchess-model"
FORMAT_VERSION = 1
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
_RESERVED = frozenset({"format", "format_version", "encoder", "tokenizer", "axis"})
_SHIPPED = SHIPPED_WEIGHTS
_AXIS_PLACEHOLDER = "\x00axis\x00"


def model_content_hash(path: str | Path) -> str:
    """Short sha256 of a model directory's ``model.safetensors`` followed by its ``config.json``.

    Raises:
        ModelFileError: either file is missing or unreadable.
    """
    digest = hashlib.sha256()
    for name in (WEIGHTS_FILE, CONFIG_FILE):
        file = Path(path) / name
        try:
            with file.open("rb") as handle:
                while block := handle.read(1 << 20):
                    digest.update(block)
        except OSError as error:
            raise ModelFileError(f"cannot read {str(file)!r}: {error}") from error
        digest.update(b"\x00")
    return digest.hexdigest()[:HASH_LENGTH]


def save_model(
    path: str | Path,
    encoder: Encoder,
    *,
    axis: npt.ArrayLike,
    metadata: dict[str, Any] | None = None,
) -> Path:
    """Write a model directory atomically.

    A new directory is written under a temporary name and renamed into place; into an existing
    directory each file is replaced atomically (weights first) and other files there are kept.

    Args:
        path: the model directory to create or update.
        encoder: the network (or its ``torch.compile`` wrapper); its weights are stored as
            contiguous float32 tensors.
        axis: ``(D,)`` advantage axis (stored as given, float32).
        metadata: extra JSON-serialisable entries (``axis_counts``, ``calibration``, ``training``,
            ``metrics``...). ``git_commit`` is added when missing and the repo is a git checkout.

    Returns:
        The model directory.

    Raises:
        ValueError: bad axis, a metadata key that clashes with the format's own keys, or metadata
            that JSON cannot represent.
        ModelFileError: ``path`` exists and is not a directory.
    """
    path = Path(path)
    encoder = getattr(encoder, "_orig_mod", encoder)  # torch.compile wrapper -> the module
    axis_array = np.asarray(axis, dtype=np.float32).reshape(-1)
    dim = encoder.config.dim
    if axis_array.shape != (dim,):
        raise ValueError(f"axis must have {dim} values (the embedding dim), got {np.shape(axis)}")
    if not np.isfinite(axis_array).all():
        raise ValueError("axis contains non-finite values")
    metadata = dict(metadata or {})
    clash = _RESERVED & set(metadata)
    if clash:
        raise ValueError(f"metadata keys {sorted(clash)!r} are reserved by the model format")
    if "git_commit" not in metadata and (commit := _git_commit()) is not None:
        metadata["git_commit"] = commit
    document = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "encoder": encoder.config.to_dict(),
        "tokenizer": TOKENIZER_VERSION,
        "axis": _AXIS_PLACEHOLDER,
        **metadata,
    }
    try:
        text = json.dumps(document, indent=2, allow_nan=False) + "\n"
    except (TypeError, ValueError) as error:
        raise ValueError(f"model metadata is not JSON-serialisable: {error}") from error
    # The axis on one line keeps the file readable (D numbers would take D lines).
    text = text.replace(
        json.dumps(_AXIS_PLACEHOLDER), json.dumps([float(x) for x in axis_array]), 1
    )
    tensors = {
        name: t.detach().to("cpu", torch.float32).contiguous().clone()
        for name, t in _stored_state(encoder).items()
    }
    if path.exists() and not path.is_dir():
        raise ModelFileError(f"{str(path)!r} exists and is not a directory")
    path.parent.mkdir(parents=True, exist_ok=True)

    from safetensors.torch import save_file

    if not path.exists():
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
        try:
            tmp.chmod(0o777 & ~_umask())  # mkdtemp makes it private; a model is shareable
            save_file(tensors, str(tmp / WEIGHTS_FILE), metadata={"format": "pt"})
            (tmp / CONFIG_FILE).write_text(text, encoding="utf-8")
            tmp.rename(path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return path
    for name, write in (
        (WEIGHTS_FILE, lambda p: save_file(tensors, str(p), metadata={"format": "pt"})),
        (CONFIG_FILE, lambda p: p.write_text(text, encoding="utf-8")),
    ):
        fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=path)
        os.close(fd)
        try:
            write(Path(tmp_name))
            os.chmod(tmp_name, 0o666 & ~_umask())  # mkstemp made it private
            os.replace(tmp_name, path / name)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
    return path


def read_model_config(path: str | Path) -> dict[str, Any]:
    """Read and validate a model directory's ``config.json`` without touching the weights.

    Returns the whole document; ``document["encoder"]`` is still a dict (see
    :meth:`EncoderConfig.from_dict`).

    Raises:
        ModelFileError: missing directory or file, not JSON, not our format, a newer format
            version, another tokenizer, a bad encoder config or a bad axis.
    """
    path = Path(path)
    if not path.exists():
        raise ModelFileError(f"model directory {str(path)!r} does not exist")
    if not path.is_dir():
        raise ModelFileError(
            f"{str(path)!r} is not a directory (a model is a directory holding "
            f"{CONFIG_FILE} and {WEIGHTS_FILE})"
        )
    file = path / CONFIG_FILE
    if not file.is_file():
        raise ModelFileError(f"{str(file)!r} is missing")
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelFileError(f"{str(file)!r} is not valid JSON: {error}") from error
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        raise ModelFileError(
            f"{str(file)!r} is not a latentchess model config "
            f"(expected format {FORMAT!r}, got {found!r})"
        )
    version = document.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ModelFileError(f"{str(file)!r}: bad format_version {version!r}")
    if version > FORMAT_VERSION:
        raise ModelFileError(
            f"{str(file)!r} has format_version {version}, newer than this latentchess "
            f"supports ({FORMAT_VERSION}); upgrade latentchess"
        )
    tokenizer = document.get("tokenizer")
    if tokenizer != TOKENIZER_VERSION:
        raise ModelFileError(
            f"{str(file)!r} was trained with tokenizer {tokenizer!r}, but this latentchess "
            f"uses {TOKENIZER_VERSION!r}"
        )
    config = _encoder_config(document.get("encoder"), file)
    axis = document.get("axis")
    if not isinstance(axis, list) or len(axis) != config.dim:
        length = len(axis) if isinstance(axis, list) else type(axis).__name__
        raise ModelFileError(
            f"{str(file)!r}: axis must be a list of {config.dim} numbers (the embedding dim), "
            f"got {length}"
        )
    if not all(
        isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in axis
    ):
        raise ModelFileError(f"{str(file)!r}: axis contains non-numeric or non-finite values")
    if not any(axis):
        raise ModelFileError(f"{str(file)!r}: axis is all zeros")
    _check_calibration(document.get("calibration"), file)
    return document


def _check_calibration(calibration: object, file: Path) -> None:
    """A stored calibration must be usable (the engine calls it on every reported score)."""
    if calibration is None:
        return
    if (
        not isinstance(calibration, dict)
        or calibration.get("kind") != "logistic"
        or not all(
            isinstance(calibration.get(key), int | float)
            and not isinstance(calibration.get(key), bool)
            and math.isfinite(calibration[key])
            for key in ("slope", "intercept")
        )
    ):
        raise ModelFileError(
            f"{str(file)!r}: calibration must be {{'kind': 'logistic', 'slope': a, "
            f"'intercept': b}} with finite numbers a and b, got {calibration!r}"
        )


def load_model(
    path: str | Path | None = None,
    *,
    device: str | torch.device | None = None,
    precision: str = "auto",
    threads: int | None = None,
) -> LatentModel:
    """Load a model directory written by :func:`save_model`.

    Args:
        path: the model directory; ``None`` means :func:`default_model_path`.
        device: where to run (default CPU).
        precision: ``"auto"``, ``"fp32"``, ``"bf16"`` or (CUDA) ``"fp16"``; see
            :mod:`latentchess.models.inference` for what ``"auto"`` picks and why.
        threads: PyTorch's (process-wide) CPU thread count, set once here; ``None``: one thread
            (see :mod:`latentchess.models.inference`).

    Raises:
        ModelFileError: see :func:`read_model_config`; also a missing, truncated or corrupt weights
            file, or weights whose names or shapes do not match the stored config.

    A directory of kind ``nnue`` (``config.json`` ``"kind": "nnue"``) is read by
    :func:`latentchess.nnue.io.load_nnue` and returned as its ``NnueModel``.
    """
    path = default_model_path() if path is None else Path(path)
    from latentchess.nnue.io import is_nnue_dir, load_nnue

    if is_nnue_dir(path):  # kind "nnue": an evaluation network, not a SOLIS encoder
        return load_nnue(path)  # type: ignore[return-value]
    document = read_model_config(path)
    config = encoder_config_from_dict(document["encoder"])
    if isinstance(config, EncoderConfig):
        _check_weights_size(path / WEIGHTS_FILE, config)
    encoder = build_encoder(config)
    tensors = _read_weights(path / WEIGHTS_FILE, encoder)
    if getattr(config, "ft_from", None) is not None:  # a sparse encoder on an NNUE's transformer
        try:
            encoder.attach_shared_ft(base=path)
        except LatentChessError as error:
            raise ModelFileError(f"{str(path)!r}: {error}") from error
        encoder.load_state_dict(tensors, strict=False)
    else:
        encoder.load_state_dict(tensors)
    content_hash = model_content_hash(path)
    metadata = {k: v for k, v in document.items() if k not in _RESERVED}
    return LatentModel(
        encoder,
        np.asarray(document["axis"], dtype=np.float32),
        metadata=metadata,
        precision=precision,
        device=device,
        threads=threads,
        path=path,
        content_hash=content_hash,
    )


def _encoder_config(data: object, file: Path) -> AnyEncoderConfig:
    if not isinstance(data, dict):
        raise ModelFileError(f"{str(file)!r}: 'encoder' must be an object, got {data!r}")
    try:
        return encoder_config_from_dict(data)
    except (TypeError, ValueError) as error:
        raise ModelFileError(f"{str(file)!r}: bad encoder config {data!r}: {error}") from error


_SLACK_WEIGHTS = 1 << 24  # 64 MB of float32


def _check_weights_size(file: Path, config: EncoderConfig) -> None:
    """Refuse a config that needs more weights than the file holds, before building the model.

    A config.json with absurd sizes would otherwise allocate (and initialise) gigabytes before
    the shapes are compared. Only the safetensors header is read; the count is a lower bound
    (embedding, attention and MLP matrices, projection). A file whose header does not parse is
    left to :func:`_read_weights` to report.
    """
    try:
        with open(file, "rb") as handle:
            length = int.from_bytes(handle.read(8), "little")
            if not 0 < length <= file.stat().st_size - 8:
                return
            header = json.loads(handle.read(length))
        if not isinstance(header, dict):
            return
        held = sum(
            math.prod(entry["shape"])
            for name, entry in header.items()
            if name != "__metadata__" and isinstance(entry, dict)
        )
    except (OSError, ValueError, TypeError, KeyError):
        return
    h = config.hidden
    needed = config.vocab_size * h + config.layers * (4 * h * h + 2 * h * config.mlp)
    needed += config.dim * h
    # A few MB too many are left to the shape comparison (it names the tensor, and building the
    # model first costs little); only a config that would allocate much more is refused here.
    if needed > held + _SLACK_WEIGHTS:
        raise ModelFileError(
            f"{str(file)!r} holds {held} weights, too few for the at least {needed} of its "
            f"config {config.to_dict()!r} (weights from another model size?)"
        )


def _read_weights(file: Path, encoder: Encoder) -> dict[str, torch.Tensor]:
    """Read a safetensors file and check it against ``encoder``'s parameters by name and shape."""
    if not file.is_file():
        raise ModelFileError(f"{str(file)!r} is missing")
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        tensors = load_file(str(file))
    except (SafetensorError, OSError, ValueError) as error:
        raise ModelFileError(
            f"{str(file)!r} is not a readable safetensors file (truncated or corrupt?): {error}"
        ) from error
    expected = {name: tuple(t.shape) for name, t in _stored_state(encoder).items()}
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if missing or unexpected:
        raise ModelFileError(
            f"{str(file)!r} does not match its config {encoder.config.name!r}: "
            f"missing tensors {missing[:5]!r}{'...' if len(missing) > 5 else ''}, "
            f"unexpected tensors {unexpected[:5]!r}{'...' if len(unexpected) > 5 else ''}"
        )
    for name, shape in expected.items():
        tensor = tensors[name]
        if tuple(tensor.shape) != shape:
            raise ModelFileError(
                f"{str(file)!r}: tensor {name!r} has shape {tuple(tensor.shape)}, but config "
                f"{encoder.config.name!r} expects {shape} (weights from another model size?)"
            )
        if not tensor.is_floating_point():
            raise ModelFileError(f"{str(file)!r}: tensor {name!r} has dtype {tensor.dtype}")
        if not bool(torch.isfinite(tensor).all()):
            bad = int((~torch.isfinite(tensor)).sum())
            raise ModelFileError(
                f"{str(file)!r}: tensor {name!r} holds {bad} non-finite values (NaN/inf): the "
                "weights are broken (a diverged training run?)"
            )
        tensors[name] = tensor.float()
    return tensors


def _stored_state(encoder: Encoder) -> dict[str, torch.Tensor]:
    """The tensors a model file holds (a sparse encoder on an NNUE's transformer leaves it out)."""
    stored = getattr(encoder, "stored_state_dict", None)
    return stored() if stored is not None else encoder.state_dict()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
