"""The latent search and the sparse encoder on the native core (C++, no Python per node).

When a model's encoder is the sparse one (:mod:`latentchess.models.sparse_encoder`), the core
evaluates it itself: the feature transformer quantised to int16 as the NNUE's (at scale 1024 when
the accumulators provably fit, else 127: ``latent_encoder.h``; the scores differ from PyTorch's
float32 ones by the rounding, tests/test_native_latent.py and docs/sparse-encoder.md state by how
much) and its accumulators updated through make/unmake. :class:`NativeSearcher` runs
the SOLIS search of :mod:`latentchess.search.tree` in C++ over it (same tree, values and moves as
the Python search given the same scores; what differs is named in ``latent_search.h``: no score
cache, leaf parents score one child at a time until a cutoff), so the speed buys depth, width and
time, not another evaluation.

``native`` (the latent engine's spec key): ``auto`` uses the core's encoder and search when the
model is sparse, the core has them and no root policy is set; ``true`` requires them (an error
otherwise); ``false`` keeps PyTorch and the Python search.
"""

from __future__ import annotations

import inspect
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chess
import numpy as np
import numpy.typing as npt

from latentchess.core.nnue import set_latent_assembler
from latentchess.errors import EngineError, ModelFileError
from latentchess.search.base import MAX_DEPTH, RootMove, SearchConfig, SearchResult
from latentchess.search.cache import EmbeddingCache

if TYPE_CHECKING:
    from latentchess.models.inference import LatentModel

__all__ = [
    "NATIVE_CHOICES",
    "native_available",
    "is_sparse",
    "load_native_encoder",
    "native_encoder",
    "NativeScorer",
    "NativeSearcher",
]

NATIVE_CHOICES = ("auto", "true", "false")


def _core() -> Any:
    from latentchess.core import _native

    return _native


def native_available() -> bool:
    """Whether the built core has the sparse encoder and the latent search."""
    try:
        return hasattr(_core(), "LatentSearch")
    except ImportError:  # pragma: no cover - the core is part of the install
        return False


def is_sparse(model: LatentModel) -> bool:
    """Whether ``model``'s encoder is the sparse one (the core can evaluate it)."""
    from latentchess.models.config import SPARSE_KIND

    return getattr(model.config, "kind", None) == SPARSE_KIND


def load_native_encoder(path: str | Path, accumulator_scale: int = 0) -> Any:
    """The core's encoder of the sparse model in directory ``path``.

    ``accumulator_scale``: 0 (automatic: 1024 when the accumulators fit int16, else 127) or the
    scale itself (127 is the NNUE's).

    Raises:
        ModelFileError: not a model directory, not a sparse encoder, or weights that do not match
            its config.
    """
    from latentchess.models.config import SPARSE_KIND
    from latentchess.models.io import WEIGHTS_FILE, read_model_config

    document = read_model_config(path)
    encoder = document["encoder"]
    if encoder.get("kind") != SPARSE_KIND:
        raise ModelFileError(
            f"{str(path)!r} holds a {encoder.get('kind', 'transformer')!r} encoder; the native "
            f"core evaluates only {SPARSE_KIND!r} ones"
        )
    if encoder.get("ft_from") is not None:  # the transformer is an NNUE's: assembled in Python
        from latentchess.models.io import load_model
        from latentchess.nnue.model import L1_SCALE

        model = load_model(path, precision="fp32")
        # Its rows are the NNUE's int16 ones over L1_SCALE (``load_nnue`` dequantises every
        # network at that scale), so at that scale the core's accumulators are exact (float
        # rounding of the dense layers aside; 1024 or 512 would round each row again).
        return _from_weights(model, accumulator_scale or L1_SCALE)
    axis = np.asarray(document["axis"], dtype=np.float32)
    try:
        native = _core().LatentEncoder.load(
            str(Path(path) / WEIGHTS_FILE),
            str(encoder.get("feature_set", "ALL")),
            axis,
            accumulator_scale=accumulator_scale,
        )
    except ValueError as error:
        raise ModelFileError(str(error)) from error
    for field in ("l1", "hidden", "dim"):
        if field in encoder and int(encoder[field]) != getattr(native, field):
            raise ModelFileError(
                f"{str(path)!r}: config.json says {field}={encoder[field]}, the weights "
                f"{getattr(native, field)}"
            )
    return native


def native_encoder(model: LatentModel, accumulator_scale: int = 0) -> Any:
    """The core's encoder of a loaded sparse model: from its directory, or from its weights when
    it was built in memory (``accumulator_scale``: see :func:`load_native_encoder`).

    Raises:
        ValueError: the model is not sparse.
        ModelFileError: its directory's weights do not load.
    """
    if not is_sparse(model):
        raise ValueError(f"{model!r} is not a sparse encoder model")
    if model.path is not None:  # float32 from the files, whatever precision ``model`` runs at
        return load_native_encoder(model.path, accumulator_scale)
    return _from_weights(model, accumulator_scale)


def _from_weights(model: LatentModel, accumulator_scale: int) -> Any:
    """The core's encoder built from a loaded sparse model's tensors."""
    state = {
        name: tensor.detach().to("cpu").float().contiguous().numpy()
        for name, tensor in model.encoder.state_dict().items()
    }
    return _core().LatentEncoder(
        model.config.feature_set,
        state["ft.weight"],
        state["ft_bias"],
        state["l2.weight"],
        state["l2.bias"],
        state["l2_stm"],
        state["out.weight"],
        state["out.bias"],
        model.axis,
        accumulator_scale=accumulator_scale,
    )


class NativeScorer:
    """Boards -> axis scores (White's view) with the core's encoder (a search ``Scorer``).

    Each board is refreshed from its FEN (the clocks do not enter the sparse encoder).
    """

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder

    def __call__(self, boards: Any) -> npt.NDArray[np.float32]:
        return np.asarray(self.encoder.score_fens([board.fen() for board in boards]))


def _history_keys(board: chess.Board) -> list[int]:
    """Polyglot keys of the positions since the last irreversible move, the root included."""
    from latentchess.search.searcher import _history

    return [key for key, count in _history(board).items() for _ in range(count)]


class NativeSearcher:
    """:class:`~latentchess.search.searcher.Searcher`'s interface over the core's latent search.

    Holds the core's search (its move hints persist across moves, as the Python searcher's);
    ``cache`` is an empty :class:`EmbeddingCache` (the core keeps no score cache), there for the
    engine's ``hashfull`` and ``Clear Hash``.

    Args:
        encoder: the core's encoder (:func:`native_encoder`).
        config: search settings (``cache_size`` and ``frontier_batch`` have no effect;
            ``leaf_chunk > 0`` means leaf parents stop at a cutoff).
    """

    def __init__(self, encoder: Any, config: SearchConfig | None = None) -> None:
        self.encoder = encoder
        self.config = config or SearchConfig()
        self.cache = EmbeddingCache(1)
        self.seconds_per_position = 0.0
        self.root_policy: Callable[[chess.Board], list[chess.Move]] | None = None
        self._search = _latent_search(
            encoder,
            mode=self.config.mode,
            width=self.config.width,
            alpha_beta=self.config.alpha_beta,
            leaf_cutoffs=self.config.leaf_chunk > 0,
            draw_score=self.config.draw_score,
            qs=self.config.qs,
            revise=self.config.revise,
            partial=self.config.partial,
            reduce=self.config.reduce,
            **leaf_evaluator(self.config.eval),
        )

    def new_game(self) -> None:
        """Forget the move hints."""
        self._search.clear_hints()

    def search(
        self,
        board: chess.Board,
        *,
        depth: int | None = None,
        deadline: float | None = None,
        soft_deadline: float | None = None,
        stop: threading.Event | None = None,
        max_nodes: int | None = None,
        on_iteration: Callable[[SearchResult], None] | None = None,
        exact_root: bool = False,
        iterate: bool = True,
    ) -> SearchResult:
        """As :meth:`Searcher.search`; ``nodes`` counts the positions the core embedded.

        ``stop`` is polled every 256 embedded positions (about a millisecond).
        """
        depth = self.config.depth if depth is None else depth
        if not 1 <= depth <= MAX_DEPTH:
            raise ValueError(f"search depth must lie in [1, {MAX_DEPTH}], got {depth!r}")
        now = time.monotonic()
        callback = None
        if on_iteration is not None:

            def callback(raw: dict[str, Any]) -> None:
                on_iteration(_result(raw))

        raw = self._search.search(
            _core().Position(board.fen()),
            _history_keys(board),
            depth,
            deadline_s=-1.0 if deadline is None else max(deadline - now, 0.0),
            soft_deadline_s=-1.0 if soft_deadline is None else max(soft_deadline - now, 0.0),
            max_nodes=-1 if max_nodes is None else int(max_nodes),
            exact_root=exact_root,
            iterate=iterate,
            on_iteration=callback,
            poll=None if stop is None else stop.is_set,
        )
        result = _result(raw)
        if result.nodes and result.time_s > 0:
            self.seconds_per_position = result.time_s / result.nodes
        return result


def leaf_evaluator(name: str) -> dict[str, Any]:
    """The core's leaf-evaluator options for :attr:`SearchConfig.eval` ``name``: none for
    ``latent`` (the encoder's axis), else the alpha-beta evaluator's core name and the WDL model
    that maps its centipawns to W - L: the network's own ``wdl.json``, and the shipped network's
    for the hand-crafted evaluations (their centipawns are on the same pawn-100 scale; the search's
    choices depend on the map only through the material term of the model).

    Raises:
        EngineError: an unknown evaluator, a latent model other than the engine's own, or no WDL
            model to map it with.
    """
    from latentchess.core.nnue import BUILTIN_EVALUATORS, default_nnue_path, resolve_evaluator
    from latentchess.wdl import WdlModel

    if name == "latent":
        return {}
    if name.startswith("latent:") or (
        name not in BUILTIN_EVALUATORS and not name.startswith("nnue") and _is_latent_dir(name)
    ):
        raise EngineError(
            f"eval={name!r}: the latent search is scored by its own model's axis (eval=latent); "
            "give the model with model=DIR"
        )
    core_name = resolve_evaluator(name)
    directory = core_name[len("nnue:") :] if core_name.startswith("nnue:") else default_nnue_path()
    wdl = WdlModel.load(directory) or WdlModel.load(default_nnue_path())
    if wdl is None:
        raise EngineError(f"eval={name!r} needs a WDL model (wdl.json) to map centipawns to W - L")
    return {"evaluator": core_name, "wdl_a": list(wdl.a), "wdl_b": list(wdl.b)}


def _is_latent_dir(name: str) -> bool:
    from latentchess.core.nnue import is_sparse_latent_dir

    return is_sparse_latent_dir(Path(name).expanduser())


def _latent_search(encoder: Any, **options: Any) -> Any:
    """The core's ``LatentSearch`` over ``encoder`` with ``options``.

    Raises:
        EngineError: the compiled core predates one of the options (its sources are older than
            the Python ones): it must be rebuilt.
    """
    search = _core().LatentSearch
    try:
        return search(encoder, **options)
    except TypeError as error:
        unknown = sorted(set(options) - _keywords(search))
        if not unknown:
            raise
        raise EngineError(
            f"the native core is older than the Python sources: its latent search has no "
            f"option {', '.join(unknown)}; rebuild it with `make setup` "
            "(or `bash scripts/build_native.sh`)"
        ) from error


def _keywords(function: Any) -> set[str]:
    """The argument names ``function`` accepts: a Python signature's, or the ones a pybind11
    docstring's signatures name (``__init__(self: T, encoder: E, mode: str = ...)``)."""
    try:
        return set(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        doc = getattr(getattr(function, "__init__", function), "__doc__", None) or ""
        return set(re.findall(r"[(,]\s*(\w+):", doc))


def _result(raw: dict[str, Any]) -> SearchResult:
    move = raw["move"]
    return SearchResult(
        move=None if move is None else chess.Move.from_uci(move),
        value=float(raw["value"]),
        pv=[chess.Move.from_uci(m) for m in raw["pv"]],
        depth=int(raw["depth"]),
        mode=str(raw["mode"]),
        nodes=int(raw["nodes"]),
        time_s=float(raw["time_s"]),
        completed=bool(raw["completed"]),
        partial=bool(raw.get("partial", False)),
        root_moves=[
            RootMove(move=chess.Move.from_uci(uci), static=static, value=value, exact=exact)
            for uci, static, value, exact in raw["root_moves"]
        ],
    )


set_latent_assembler(load_native_encoder)  # ab:eval=DIR of a model on an NNUE's transformer
