"""``latentchess uci``: one conversation whose engine the ``Engine`` option can change.

The engine is named by a spec (:mod:`latentchess.engines.registry`), at start-up by ``--engine``
(default :data:`~latentchess.engines.default.DEFAULT_ENGINE_SPEC`) and later by
``setoption name Engine value SPEC``. The latent planner (``latent[:model=DIR,depth=N,...]``)
runs in its own :class:`~latentchess.uci.session.UciSession` (model hash and precision at
start-up, ``Model``/``Depth``/``Width``/``Mode``/``Precision`` options, ``go mate``, the
background model load that ``isready`` waits for); every other engine in a
:class:`~latentchess.uci.spec_session.SpecSession`. Everything but ``setoption name Engine`` is
passed to the current session.

Switching stops any search (its ``bestmove`` is sent), builds the new session, hands it the
current position, and replays the options set so far that the new engine also declares (``Hash``,
``Move Overhead``...) unless its spec sets them (``latent:depth=2`` keeps depth 2). A spec that
cannot be parsed or started is refused with an ``info string`` and the current engine stays.
``uci`` announces the ``Engine`` option first, then the current engine's own options; after a
switch, ``uci`` again lists the new engine's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from latentchess.engines.default import DEFAULT_ENGINE_SPEC, LATENT_ENGINE_KIND
from latentchess.errors import EngineError, LatentChessError
from latentchess.search import SearchConfig
from latentchess.uci.protocol import SetOption, Uci, parse_command
from latentchess.uci.session import UciSession

if TYPE_CHECKING:
    from latentchess.engines.registry import EngineSpec

__all__ = ["EngineSwitchSession", "LatentDefaults", "ENGINE_OPTION"]

ENGINE_OPTION = "Engine"
"""The UCI option that names the engine by its spec."""

_OPTION_NAME = re.compile(r"^option name (?P<name>.+?) type ")
_LATENT_KEYS = ("model", "precision", "threads")
"""Spec keys of ``latent`` besides :class:`SearchConfig` fields."""


@dataclass(frozen=True, kw_only=True)
class LatentDefaults:
    """What a ``latent`` spec starts from (its own ``KEY=VALUE`` pairs win).

    Attributes:
        model: model directory (``None``: the default model).
        config: search settings (``depth``, ``width``, ``mode``...).
        threads: torch CPU threads.
        precision: model precision (``auto``, ``fp32``, ``bf16``).
    """

    model: str | Path | None = None
    config: SearchConfig = field(default_factory=SearchConfig)
    threads: int = 1
    precision: str = "auto"


class EngineSwitchSession:
    """A UCI conversation around the engine a spec names, switchable by the ``Engine`` option.

    Args:
        write: receives each output line.
        spec: the engine at start-up.
        latent: what a ``latent`` spec starts from.

    Raises:
        EngineError: the start-up spec cannot be parsed or its engine cannot be started.
    """

    def __init__(
        self,
        write: Callable[[str], None],
        *,
        spec: str = DEFAULT_ENGINE_SPEC,
        latent: LatentDefaults | None = None,
    ) -> None:
        self.write = write
        self.latent = latent or LatentDefaults()
        self.spec = spec.strip()
        self.session = self._build(self.spec)
        self._options: dict[str, SetOption] = {}  # by lower-case name, in the order set
        self._uci_seen = False

    def info(self, text: str) -> None:
        """Send ``info string TEXT`` (one line)."""
        self.session.info(text)

    # -- building ---------------------------------------------------------------------------------

    def _build(self, text: str) -> UciSession:
        from latentchess.engines.registry import create_engine, parse_engine_spec

        spec = parse_engine_spec(text)
        if spec.kind == LATENT_ENGINE_KIND:
            return self._latent_session(spec)
        from latentchess.uci.spec_session import SpecSession

        engine = create_engine(spec)
        session = SpecSession(self.write, engine=engine, name=f"latentchess {spec.text}")
        session.leading_options = [self._engine_option_line()]
        return session

    def _latent_session(self, spec: EngineSpec) -> UciSession:
        from latentchess.engines.latent import search_config_from_options

        if spec.args:
            raise EngineError(
                f"engine spec {spec.text!r}: unexpected bare value(s) {list(spec.args)!r}"
            )
        params = {key.lower(): value for key, value in spec.params.items()}
        known = sorted({*_LATENT_KEYS, *SearchConfig.__dataclass_fields__} - {"draw_score"})
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise EngineError(
                f"engine spec {spec.text!r}: unknown key(s) {unknown}; known: {known}"
            )
        try:
            config = search_config_from_options(params, self.latent.config)
            threads = int(params.get("threads", self.latent.threads))
        except (EngineError, ValueError) as error:
            raise EngineError(f"engine spec {spec.text!r}: {error}") from None
        model = params.get("model")
        if model is not None and not Path(model).expanduser().is_dir():
            raise EngineError(f"engine spec {spec.text!r}: no model directory {model!r}")
        session = UciSession(
            self.write,
            model=model or self.latent.model,
            config=config,
            threads=threads,
            precision=params.get("precision", self.latent.precision),
        )
        session.leading_options = [self._engine_option_line()]
        return session

    def _engine_option_line(self) -> str:
        return f"option name {ENGINE_OPTION} type string default {self.spec}"

    # -- the conversation ------------------------------------------------------------------------

    def handle_line(self, line: str) -> bool:
        """Handle one input line; False after ``quit``. Never raises: errors become info lines."""
        try:
            command = parse_command(line)
        except Exception as error:  # a GUI must never see the engine die
            self.info(f"error handling {line.strip()!r}: {type(error).__name__}: {error}")
            return True
        if isinstance(command, SetOption) and command.name.strip().lower() == "engine":
            try:
                self._switch(command)
            except Exception as error:  # never die over an option
                self.info(f"Engine option failed ({type(error).__name__}: {error})")
            return True
        if isinstance(command, SetOption):
            self._options[command.name.strip().lower()] = command
        if isinstance(command, Uci):
            self._uci_seen = True
        return self.session.handle_line(line)

    def _switch(self, command: SetOption) -> None:
        from latentchess.engines.registry import parse_engine_spec

        text = (command.value or "").strip()
        if not text:
            self.info(
                f"option 'Engine' needs an engine spec (e.g. 'ab', 'latent'); still {self.spec}"
            )
            return
        if text == self.spec:
            return
        old = self.session
        old.handle_line("stop")  # the search running now answers its go first
        previous, self.spec = self.spec, text
        try:
            new = self._build(text)
        except Exception as error:  # a bad spec, a missing binary: the current engine stays
            self.spec = previous
            reason = str(error) if isinstance(error, LatentChessError) else repr(error)
            self.info(f"Engine {text!r} refused: {reason}; still playing {previous}")
            return
        new.board, new.position_error, new.debug = old.board, old.position_error, old.debug
        old.close()
        self.session = new
        declared = [
            match["name"]
            for line in new._option_lines()
            if (match := _OPTION_NAME.match(line)) is not None
        ]
        # The spec's own keys win over earlier options of the same name (latent:depth=2, Depth).
        named = {key.lower() for key in parse_engine_spec(text).params}
        lowered = {name.lower() for name in declared} - named
        for name, option in self._options.items():
            if name in lowered:
                new.handle(option)
        if self._uci_seen:
            new.start_loading()  # the latent model loads now; isready waits for it
            shown = ", ".join(declared)
            self.info(f"engine now {text} (options: {shown}; send 'uci' to list them)")

    def close(self) -> None:
        """Stop any search (sending its ``bestmove``) and close the engine."""
        self.session.close()
