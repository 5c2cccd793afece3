"""Which engines the web board may start, with which parameters, and how they are built.

Only kinds on :data:`ALLOWED_KINDS` that are registered in
:data:`latentchess.engines.registry.ENGINES` can be started from the page, each with a fixed set
of typed, bounded parameters (so no page can pass ``path=`` or a UCI option that writes files).
``uci:`` and ``xboard:`` commands, and free-form specs of any registered kind, are accepted only
when the server was started with ``--allow-external-engines``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import chess
import chess.engine

from latentchess.engines.base import Engine
from latentchess.errors import EngineError

if TYPE_CHECKING:
    from latentchess.models.inference import LatentModel

__all__ = [
    "ALLOWED_KINDS",
    "EXTERNAL_KINDS",
    "Param",
    "OpponentConfig",
    "RequestError",
    "available_kinds",
    "parse_opponent",
    "build_engine",
]

ALLOWED_KINDS = (
    "ab",  # the default engine (latentchess.engines.default) first: the page's menu opens on it
    "latent",
    "hybrid",
    "chessformer",
    "stockfish",
    "sunfish",
    "random",
    "greedy",
)
"""Kinds a page may start, when registered and available."""
EXTERNAL_KINDS = ("uci", "xboard")
"""Kinds that run an arbitrary command: only with ``--allow-external-engines``."""
MIN_MOVETIME_MS = 20


class RequestError(Exception):
    """Bad input from the page: answered with ``status`` and the message, never a traceback."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True, kw_only=True)
class Param:
    """One parameter a page may set for an engine kind.

    Attributes:
        name: the spec key.
        default: value when the page sends none (``None``: left out of the spec).
        minimum: smallest integer accepted (integer parameters).
        maximum: largest integer accepted (integer parameters).
        choices: accepted strings (choice parameters); empty for integers.
    """

    name: str
    default: int | str | None
    minimum: int = 0
    maximum: int = 0
    choices: tuple[str, ...] = ()

    def check(self, kind: str, value: object) -> int | str:
        """The value if acceptable.

        Raises:
            RequestError: wrong type or out of range.
        """
        if self.choices:
            if not isinstance(value, str) or value not in self.choices:
                raise RequestError(
                    f"{kind} parameter {self.name!r} must be one of {list(self.choices)}, "
                    f"got {value!r}"
                )
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value.strip())
        if not isinstance(value, int) or isinstance(value, bool):
            raise RequestError(f"{kind} parameter {self.name!r} must be an integer, got {value!r}")
        if not self.minimum <= value <= self.maximum:
            raise RequestError(
                f"{kind} parameter {self.name!r} must lie in [{self.minimum}, {self.maximum}], "
                f"got {value!r}"
            )
        return value

    def describe(self) -> dict[str, Any]:
        """JSON for the page's form."""
        if self.choices:
            return {"name": self.name, "default": self.default, "choices": list(self.choices)}
        return {
            "name": self.name,
            "default": self.default,
            "min": self.minimum,
            "max": self.maximum,
        }


_SEED = Param(name="seed", default=None, minimum=0, maximum=2**31 - 1)
PARAMS: dict[str, tuple[Param, ...]] = {
    "latent": (
        # No default: the model's declared search (its config.json), as the engine's spec.
        Param(name="depth", default=None, minimum=1, maximum=8),
        Param(name="width", default=None, minimum=1, maximum=8),
        Param(name="mode", default="minimax", choices=("minimax", "beam")),
    ),
    # elo=R: a human-like opponent at Lichess rating R (UCI_LimitStrength, engines/human.py).
    "ab": (Param(name="elo", default=None, minimum=800, maximum=2400),),
    "hybrid": (),
    # DESIGN.md names it `chessformer:elo=N` (a human-like model conditioned on a rating).
    "chessformer": (Param(name="elo", default=None, minimum=400, maximum=3000),),
    # Stockfish 15.1's UCI_Elo range; Skill Level 0-20 reaches lower.
    "stockfish": (
        Param(name="elo", default=1350, minimum=1350, maximum=2850),
        Param(name="skill", default=None, minimum=0, maximum=20),
    ),
    "sunfish": (),
    "random": (_SEED,),
    "greedy": (_SEED,),
}
"""Parameters a page may set per kind (kinds not listed here take none)."""


def available_kinds(*, allow_external: bool = False) -> list[str]:
    """Allow-listed kinds that the registry knows and whose binaries are installed."""
    from latentchess.engines.registry import ENGINES

    kinds = [k for k in ALLOWED_KINDS if k in ENGINES and ENGINES[k].available()]
    if allow_external:
        kinds += [k for k in EXTERNAL_KINDS if k in ENGINES]
    return kinds


@dataclass(frozen=True, kw_only=True)
class OpponentConfig:
    """A validated opponent: what to build and how long it may think.

    Attributes:
        kind: engine kind.
        params: validated parameters (spec keys).
        movetime_ms: thinking time per move.
        spec: a free-form spec (only with ``--allow-external-engines``), else ``""``.
    """

    kind: str
    params: dict[str, int | str]
    movetime_ms: int
    spec: str = ""

    @property
    def limit(self) -> chess.engine.Limit:
        """The python-chess limit of one move."""
        return chess.engine.Limit(time=self.movetime_ms / 1000)

    def spec_text(self) -> str:
        """The engine spec string (the PGN's player name)."""
        if self.spec:
            return self.spec
        if not self.params:
            return self.kind
        return self.kind + ":" + ",".join(f"{k}={v}" for k, v in self.params.items())

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "params": dict(self.params),
            "movetime_ms": self.movetime_ms,
            "spec": self.spec_text(),
        }


def parse_opponent(
    data: object, *, max_movetime_ms: int, allow_external: bool = False
) -> OpponentConfig:
    """Validate the page's ``{"kind", "params", "movetime_ms"}`` (or ``{"spec"}``).

    Raises:
        RequestError: anything not on the allow-list, unknown parameters, values out of range.
    """
    if not isinstance(data, dict):
        raise RequestError(f"expected a JSON object for the opponent, got {data!r}")
    unknown = set(data) - {"kind", "params", "movetime_ms", "spec"}
    if unknown:
        raise RequestError(f"unknown opponent field(s) {sorted(unknown)!r}")
    movetime = data.get("movetime_ms", 500)
    if (
        not isinstance(movetime, int)
        or isinstance(movetime, bool)
        or not MIN_MOVETIME_MS <= movetime <= max_movetime_ms
    ):
        raise RequestError(
            f"movetime_ms must be an integer in [{MIN_MOVETIME_MS}, {max_movetime_ms}], "
            f"got {movetime!r}"
        )
    if "spec" in data:
        return _free_spec(data["spec"], movetime, allow_external)
    kind = data.get("kind")
    kinds = available_kinds(allow_external=False)
    if not isinstance(kind, str) or kind not in kinds:
        raise RequestError(f"engine kind {kind!r} is not allowed here; choose from {kinds}")
    raw = data.get("params", {})
    if not isinstance(raw, dict):
        raise RequestError(f"params must be a JSON object, got {raw!r}")
    allowed = {p.name: p for p in PARAMS.get(kind, ())}
    extra = set(raw) - set(allowed)
    if extra:
        raise RequestError(
            f"unknown {kind} parameter(s) {sorted(extra)!r}; allowed: {sorted(allowed)}"
        )
    params: dict[str, int | str] = {}
    for name, param in allowed.items():
        value = raw.get(name, param.default)
        if value is None or value == "":
            continue
        params[name] = param.check(kind, value)
    if kind == "stockfish" and "skill" in params and "elo" not in raw:
        params.pop("elo", None)  # a skill level alone: no UCI_Elo on top
    if kind == "ab" and "elo" in params:
        params = {"limit_strength": "true", **params}  # ab:limit_strength=true,elo=R
    return OpponentConfig(kind=kind, params=params, movetime_ms=movetime)


def _free_spec(spec: object, movetime: int, allow_external: bool) -> OpponentConfig:
    if not allow_external:
        raise RequestError(
            "free-form engine specs (uci:, xboard:, options) need the server to be started "
            "with --allow-external-engines"
        )
    from latentchess.engines.registry import parse_engine_spec

    if not isinstance(spec, str) or not spec.strip() or len(spec) > 500:
        raise RequestError(f"spec must be a non-empty string of at most 500 characters: {spec!r}")
    try:
        parsed = parse_engine_spec(spec)
    except EngineError as error:
        raise RequestError(str(error)) from None
    return OpponentConfig(kind=parsed.kind, params={}, movetime_ms=movetime, spec=parsed.text)


def build_engine(config: OpponentConfig, model: LatentModel) -> Engine:
    """Start the engine (blocking: run it off the event loop).

    ``latent`` shares the server's loaded model instead of loading it again.

    Raises:
        EngineError: the engine cannot be started.
    """
    if config.kind == "latent" and not config.spec:
        from latentchess.engines.latent import LatentEngine

        # The engine's own path: the model's declared search under the page's settings; threads=0
        # leaves the server's torch threads as they are.
        return LatentEngine.from_options(
            model, **config.params, cache_size=200_000, threads=0, name=config.spec_text()
        )
    from latentchess.engines.registry import create_engine

    return create_engine(config.spec_text())
