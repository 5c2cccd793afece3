"""Engine specs: one short string names any engine a match, ladder or suite can use.

Syntax (like cutechess-cli's ``-engine`` arguments, folded into one token)::

    SPEC   := KIND [":" PARAM ("," PARAM)*]
    PARAM  := KEY "=" VALUE   |   VALUE          (a bare VALUE is the command of uci:/xboard:)

Examples::

    stockfish                     full strength (Threads=1, Hash=16)
    stockfish:elo=1400            UCI_LimitStrength=true, UCI_Elo=1400
    stockfish:skill=3             Skill Level 3 (below the UCI_Elo range)
    stockfish:elo=1800,Hash=64    any other KEY=VALUE is a UCI option of the engine
    sunfish                       the PyPI package's ``sunfish-uci`` (a weak Python engine)
    toga2 / gnuchess / phalanx    Debian engines, when installed (phalanx: time limits only)
    glaurung / sjeng / hoichess   more Debian engines (anchors with published ratings;
                                  sjeng, hoichess: XBoard, time limits only)
    uci:/path/to/engine,Hash=16   any UCI engine; the command may carry arguments (shell words)
    xboard:/usr/games/sjeng       any XBoard engine (time limits only unless time_only=false)
    random:seed=3                 a random mover
    latent:depth=4,width=3,mode=beam,model=DIR   our engine (LatentEngine.from_options)
    ab:eval=hce,depth=10,hash=64                our alpha-beta engine (AlphaBetaEngine)
    chessformer:mode=value,elo=1800   the Chessformer's policy or one-ply value (no search)
    hybrid:mode=verify,k=3                      latent proposes, alpha-beta validates (HybridEngine)

``name=TEXT`` in any spec sets the display name used in PGN headers (default: the spec itself).
Keys of the built-in kinds are case-insensitive; UCI option names are matched case-insensitively
against the engine's declarations. Values cannot contain commas.
"""

from __future__ import annotations

import re
import shlex
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from latentchess.engines.base import Engine
from latentchess.engines.external import ExternalEngine, OptionValue, find_executable
from latentchess.errors import EngineError

__all__ = ["ENGINES", "EngineKind", "EngineSpec", "parse_engine_spec", "create_engine"]


@dataclass(frozen=True, kw_only=True)
class EngineSpec:
    """A parsed engine spec.

    Attributes:
        text: the spec as written (stripped); the default display name.
        kind: key of :data:`ENGINES`.
        args: bare values, in order (the command of ``uci:``/``xboard:``).
        params: ``KEY=VALUE`` pairs, in order (values are strings).
        name: display name (``name=`` or ``text``).
    """

    text: str
    kind: str
    args: tuple[str, ...] = ()
    params: dict[str, str] = field(default_factory=dict)
    name: str = ""

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, kw_only=True)
class EngineKind:
    """One entry of :data:`ENGINES`.

    Attributes:
        name: the KIND word of a spec.
        summary: one line for ``--help`` and ``--list-engines``.
        build: makes the engine from a parsed spec.
        executable: binary the kind needs (for availability listings), if any.
    """

    name: str
    summary: str
    build: Callable[[EngineSpec], Engine]
    executable: str | None = None

    def available(self) -> bool:
        """Whether the binary this kind needs can be found."""
        if self.executable is None:
            return True
        try:
            _locate(self.executable)
        except EngineError:
            return False
        return True


_SPEC_RE = re.compile(r"^(?P<kind>[A-Za-z][\w-]*)(?::(?P<params>.*))?$", re.DOTALL)


def parse_engine_spec(text: str) -> EngineSpec:
    """Parse ``KIND[:PARAM,...]`` (see the module docstring).

    Raises:
        EngineError: on an unknown kind, an empty parameter or a repeated key.
    """
    stripped = text.strip()
    match = _SPEC_RE.match(stripped)
    if match is None:
        raise EngineError(f"bad engine spec {text!r}: expected KIND[:KEY=VALUE,...]")
    kind = match["kind"].lower()
    if kind not in ENGINES:
        raise EngineError(f"unknown engine kind {match['kind']!r} in {text!r}; known: {_known()}")
    args: list[str] = []
    params: dict[str, str] = {}
    if match["params"] is not None:
        for part in match["params"].split(","):
            part = part.strip()
            if not part:
                raise EngineError(f"empty parameter in engine spec {text!r}")
            key, sep, value = part.partition("=")
            if not sep:
                args.append(part)
                continue
            key = key.strip()
            if not key or any(k.lower() == key.lower() for k in params):
                raise EngineError(f"empty or repeated key {key!r} in engine spec {text!r}")
            params[key] = value.strip()
    name = next((v for k, v in params.items() if k.lower() == "name"), stripped)
    params = {k: v for k, v in params.items() if k.lower() != "name"}
    return EngineSpec(text=stripped, kind=kind, args=tuple(args), params=params, name=name)


_BUILDING = threading.RLock()
"""Held while an engine is built. Builders import their modules lazily (torch only when asked
for), and a match builds its engines in worker threads: a `hybrid` built beside an `ab` once
failed with ``KeyError: 'latentchess.core'`` from inside importlib (2026-11-26, not reproduced in
eleven tries). Building one engine at a time in a process costs nothing a match can measure (each
slot builds its engines once) and leaves each import to one thread; waiting for a model to load
(:meth:`Engine.ready`) stays outside the lock."""


def create_engine(spec: str | EngineSpec, *, wait: bool = True) -> Engine:
    """Start the engine a spec names.

    Args:
        spec: the spec (text or parsed).
        wait: wait until it can search (its model loaded: :meth:`Engine.ready`); the UCI
            session passes False and waits at ``isready``.

    Raises:
        LatentChessError: on a bad spec, a missing binary, a rejected option or (``wait``) a
            model that cannot be loaded.
    """
    parsed = parse_engine_spec(spec) if isinstance(spec, str) else spec
    with _BUILDING:
        engine = ENGINES[parsed.kind].build(parsed)
    if wait:
        try:
            engine.ready()
        except BaseException:
            engine.close()
            raise
    return engine


# --- builders ----------------------------------------------------------------------------------


def _known() -> str:
    return ", ".join(sorted(ENGINES))


def _locate(executable: str) -> Path:
    """Find a binary; console scripts of this venv first (its bin/ is not always on PATH)."""
    beside = Path(sys.executable).parent / executable
    if beside.is_file():
        return beside
    return find_executable(executable)


def _pop(spec: EngineSpec, params: dict[str, str], key: str) -> str | None:
    for k in list(params):
        if k.lower() == key:
            return params.pop(k)
    return None


def _no_args(spec: EngineSpec) -> None:
    if spec.args:
        raise EngineError(
            f"engine spec {spec.text!r}: unexpected bare value(s) {list(spec.args)!r} "
            "(use KEY=VALUE)"
        )


def _build_stockfish(spec: EngineSpec) -> Engine:
    _no_args(spec)
    params = dict(spec.params)
    path = _pop(spec, params, "path") or "stockfish"
    options: dict[str, OptionValue] = {"Threads": 1, "Hash": 16}
    elo = _pop(spec, params, "elo")
    skill = _pop(spec, params, "skill")
    if elo is not None:
        options["UCI_LimitStrength"] = True
        options["UCI_Elo"] = elo
    if skill is not None:
        options["Skill Level"] = skill
    for key in ("threads", "hash"):
        value = _pop(spec, params, key)
        if value is not None:
            options[key.capitalize()] = value
    options.update(params)
    return ExternalEngine(_locate(path), options=options, name=spec.name)


def _uci_builder(
    executable: str,
    *,
    extra_args: tuple[str, ...] = (),
    protocol: str = "uci",
    defaults: dict[str, OptionValue] | None = None,
    time_limits_only: bool = False,
) -> Callable[[EngineSpec], Engine]:
    def build(spec: EngineSpec) -> Engine:
        _no_args(spec)
        params = dict(spec.params)
        path = _pop(spec, params, "path") or executable
        engine = ExternalEngine(
            [_locate(path), *extra_args],
            protocol=protocol,  # type: ignore[arg-type]
            name=spec.name,
            time_limits_only=time_limits_only,
        )
        try:
            options: dict[str, OptionValue] = {}
            for key, value in (defaults or {}).items():
                if any(key.lower() == k.lower() for k in engine.declared_options):
                    options[key] = value
            options.update(params)
            engine.configure(options)
        except BaseException:
            engine.close()
            raise
        return engine

    return build


def _generic_builder(protocol: str) -> Callable[[EngineSpec], Engine]:
    def build(spec: EngineSpec) -> Engine:
        if len(spec.args) != 1:
            raise EngineError(
                f"engine spec {spec.text!r}: expected exactly one command, as in "
                f"'{protocol}:/path/to/engine,Option=value'"
            )
        try:
            argv = shlex.split(spec.args[0])
        except ValueError as error:  # unbalanced quotes
            raise EngineError(f"engine spec {spec.text!r}: bad command: {error}") from None
        if not argv:
            raise EngineError(f"engine spec {spec.text!r}: the command is empty")
        params = dict(spec.params)
        default = "true" if protocol == "xboard" else "false"
        time_only = (_pop(spec, params, "time_only") or default).lower() in ("1", "true", "yes")
        return ExternalEngine(
            argv,
            protocol=protocol,  # type: ignore[arg-type]
            options=dict(params),
            name=spec.name,
            time_limits_only=time_only,
        )

    return build


def _build_random(spec: EngineSpec) -> Engine:
    from latentchess.engines.baselines import GreedyCaptureEngine, RandomEngine

    _no_args(spec)
    params = dict(spec.params)
    seed = _pop(spec, params, "seed") or "0"
    if params:
        raise EngineError(f"engine spec {spec.text!r}: unknown key(s) {sorted(params)!r}")
    kind = GreedyCaptureEngine if spec.kind == "greedy" else RandomEngine
    try:
        return kind(seed=int(seed), name=spec.name)
    except ValueError as error:
        raise EngineError(f"engine spec {spec.text!r}: seed must be an integer") from error


def _build_from_model(spec: EngineSpec, from_options: Callable[..., Any]) -> Engine:
    """A model-backed engine: ``model=DIR`` plus typed options, errors naming the spec."""
    params = dict(spec.params)
    model = _pop(spec, params, "model")
    options = {key.lower(): _coerce(value) for key, value in params.items()}
    try:
        engine = from_options(model, **options)
    except (TypeError, ValueError, EngineError) as error:  # EngineError: say which spec
        raise EngineError(f"engine spec {spec.text!r}: {error}") from error
    engine.name = spec.name
    return engine


def _build_latent(spec: EngineSpec) -> Engine:
    _no_args(spec)
    from latentchess.engines.latent import LatentEngine  # imports torch: only when asked for

    return _build_from_model(spec, LatentEngine.from_options)


def _build_ab(spec: EngineSpec) -> Engine:
    _no_args(spec)
    from latentchess.engines.ab import AlphaBetaEngine  # loads the native core: only when asked

    return AlphaBetaEngine.from_options(spec.name, **spec.params)


def _build_chessformer(spec: EngineSpec) -> Engine:
    _no_args(spec)
    from latentchess.engines.chessformer import ChessformerEngine  # imports torch when asked

    return _build_from_model(spec, ChessformerEngine.from_options)


def _build_hybrid(spec: EngineSpec) -> Engine:
    _no_args(spec)
    from latentchess.engines.hybrid import HybridEngine  # imports torch: only when asked for

    return HybridEngine.from_options(spec.name, **spec.params)


def _coerce(value: str) -> str | int | float | bool:
    """``"4"`` -> 4, ``"0.5"`` -> 0.5, ``"true"`` -> True; anything else stays a string."""
    if re.fullmatch(r"[+-]?\d+", value):
        return int(value)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", value):
        return float(value)
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


ENGINES: dict[str, EngineKind] = {
    kind.name: kind
    for kind in (
        EngineKind(
            name="stockfish",
            summary="Stockfish (elo=N: UCI_LimitStrength; skill=N: Skill Level; UCI options)",
            build=_build_stockfish,
            executable="stockfish",
        ),
        EngineKind(
            name="sunfish",
            summary="sunfish-uci from the PyPI package (a weak Python engine)",
            build=_uci_builder("sunfish-uci"),
            executable="sunfish-uci",
        ),
        EngineKind(
            name="toga2",
            summary="Toga II (Debian package toga2), own book off",
            build=_uci_builder("toga2", defaults={"OwnBook": False, "Hash": 16}),
            executable="toga2",
        ),
        EngineKind(
            name="gnuchess",
            summary="GNU Chess in UCI mode (Debian package gnuchess), own book off",
            build=_uci_builder("gnuchess", extra_args=("--uci",), defaults={"OwnBook": False}),
            executable="gnuchess",
        ),
        EngineKind(
            name="phalanx",
            summary="Phalanx over XBoard (Debian package phalanx), own book and learning off, "
            "16 MB hash; time limits only",
            # -b- and -l-: rating lists play without an engine's own book or learning file.
            build=_uci_builder(
                "phalanx",
                extra_args=("-b-", "-l-", "-t", "16384"),
                protocol="xboard",
                time_limits_only=True,
            ),
            executable="phalanx",
        ),
        EngineKind(
            name="glaurung",
            summary="Glaurung 2.2 (Debian package glaurung), one thread, own book off",
            # Its defaults are 2 threads and OwnBook=true: both off the rating lists' conditions.
            build=_uci_builder("glaurung", defaults={"Threads": 1, "OwnBook": False, "Hash": 16}),
            executable="glaurung",
        ),
        EngineKind(
            name="sjeng",
            summary="Sjeng 11.2 over XBoard (Debian package sjeng, no book for normal chess); "
            "time limits only",
            build=_uci_builder("sjeng", protocol="xboard", time_limits_only=True),
            executable="sjeng",
        ),
        EngineKind(
            name="hoichess",
            summary="HoiChess over XBoard (Debian package hoichess, its own book on); "
            "time limits only",
            build=_uci_builder("hoichess", protocol="xboard", time_limits_only=True),
            executable="hoichess",
        ),
        EngineKind(
            name="uci",
            summary="any UCI engine: uci:COMMAND[,Option=value...]",
            build=_generic_builder("uci"),
        ),
        EngineKind(
            name="xboard",
            summary="any XBoard engine: xboard:COMMAND[,option=value...] (time limits only)",
            build=_generic_builder("xboard"),
        ),
        EngineKind(
            name="random",
            summary="uniformly random legal moves (random:seed=N)",
            build=_build_random,
        ),
        EngineKind(
            name="greedy",
            summary="mate in one, else the best capture (MVV-LVA), else random (greedy:seed=N)",
            build=_build_random,
        ),
        EngineKind(
            name="ab",
            summary="our alpha-beta engine (C++ core): ab[:eval=nnue|hce|pesto|latent|DIR,...]",
            build=_build_ab,
        ),
        EngineKind(
            name="hybrid",
            summary="latent + alpha-beta: hybrid[:mode=verify|order|horizon,k=N,eval=hce,"
            "qs=0|1,revise=0|1,policy=human|DIR,eval=latent|nnue|hce|pesto,...]",
            build=_build_hybrid,
        ),
        EngineKind(
            name="latent",
            summary="our engine: latent[:model=DIR,depth=N,width=K,mode=minimax|beam,"
            "qs=0|1,revise=0|1,policy=human|DIR,eval=latent|nnue|hce|pesto,...]",
            build=_build_latent,
        ),
        EngineKind(
            name="chessformer",
            summary="Chessformer without search: chessformer[:model=DIR,mode=policy|value,"
            "elo=N,selfelo=N,oppoelo=N,temperature=T,top_p=P,time_control=auto|BAND|BASE+INC]",
            build=_build_chessformer,
        ),
    )
}
"""Every engine kind a spec can name; CLI help and ``--list-engines`` come from here."""
