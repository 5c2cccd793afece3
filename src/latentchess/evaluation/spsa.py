"""SPSA tuning of engine parameters from game results, as OpenBench runs it.

Simultaneous perturbation stochastic approximation (Spall): each iteration perturbs every
parameter at once by ``+-c_k`` (a random sign per parameter), plays game pairs between the two
perturbed sets (``theta + flip * c_k`` against ``theta - flip * c_k``, each opening with both
colours) and moves ``theta`` along the flips by the result. The schedule is OpenBench's (which
takes fishtest's): per parameter, the user gives ``c_end`` and ``r_end``, the perturbation and
learning rate wanted at the last of ``N`` iterations, and

* ``A = a_ratio * N`` (default 10% of the iterations), ``alpha = 0.602``, ``gamma = 0.101``;
* ``c = c_end * N ** gamma`` and ``a = r_end * c_end ** 2 * (A + N) ** alpha``;
* at iteration ``k = 1 .. N``: ``c_k = max(c / k ** gamma, 0.5 for an integer)`` and
  ``r_k = a / (A + k) ** alpha / c_k ** 2`` (so ``c_N = c_end`` and ``r_N = r_end``);
* the engines get ``theta +- flip * c_k``, integers rounded at random (``floor(x + u)`` with one
  uniform ``u`` per parameter for both sides) and clipped to the parameter's range;
* ``theta += r_k * c_k * (wins - losses) * flip`` (the plus side's wins and losses), clipped.

The objective is a seam (:class:`SpsaObjective`): :func:`match_objective` plays real games with
:func:`latentchess.evaluation.match.run_match`; tests pass a pure function. :func:`run_spsa` saves
its :class:`SpsaState` (``theta``, the iteration, the random generator, the history) atomically
to a JSON file after every iteration and continues from it when run again, so a killed run resumes
exactly where it stopped. A tuned set is a hypothesis: keep it only once an SPRT of it against
the defaults (``latentchess match --sprt``) accepts H1.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from latentchess.errors import DataFormatError, LatentChessError

__all__ = [
    "SpsaParameter",
    "SpsaConfig",
    "SpsaState",
    "SpsaObjective",
    "schedule",
    "Perturbation",
    "perturb",
    "spsa_iteration",
    "run_spsa",
    "load_state",
    "match_objective",
    "tuned_values",
    "tuned_spec",
    "report_table",
    "plot_history",
]

STATE_FORMAT = 1
"""Version of the state file's layout."""


@dataclass(frozen=True, kw_only=True)
class SpsaParameter:
    """One parameter under tuning (OpenBench's input line: name, type, start, min, max, c_end,
    r_end).

    Attributes:
        name: how the engine knows it (an engine spec key / UCI option).
        start: the value tuning starts from.
        minimum, maximum: the range; perturbed and tuned values are clipped to it.
        c_end: the perturbation at the last iteration.
        r_end: the learning rate at the last iteration.
        integer: the engine takes whole numbers (rounded at random; ``c_k`` at least 0.5).
    """

    name: str
    start: float
    minimum: float
    maximum: float
    c_end: float
    r_end: float
    integer: bool = True

    def __post_init__(self) -> None:
        if not self.minimum <= self.start <= self.maximum:
            raise LatentChessError(
                f"SPSA parameter {self.name!r}: start {self.start} outside "
                f"[{self.minimum}, {self.maximum}]"
            )
        if self.c_end <= 0 or self.r_end <= 0:
            raise LatentChessError(
                f"SPSA parameter {self.name!r}: c_end and r_end must be positive, got "
                f"{self.c_end}, {self.r_end}"
            )


@dataclass(frozen=True, kw_only=True)
class SpsaConfig:
    """The run's hyperparameters (OpenBench's defaults).

    Attributes:
        iterations: N, the planned iterations (the schedule depends on it).
        pairs: game pairs per iteration (OpenBench's "pairs per").
        alpha: decay exponent of the learning rate.
        gamma: decay exponent of the perturbation.
        a_ratio: A as a fraction of N (stability constant of the learning rate).
        seed: seed of the random generator (flips and integer rounding).
    """

    iterations: int
    pairs: int = 1
    alpha: float = 0.602
    gamma: float = 0.101
    a_ratio: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        if self.iterations < 1:
            raise LatentChessError(f"SPSA needs at least one iteration, got {self.iterations}")
        if self.pairs < 1:
            raise LatentChessError(f"SPSA needs at least one game pair, got {self.pairs}")
        if not (self.alpha > 0 and self.gamma > 0 and self.a_ratio >= 0):
            raise LatentChessError(
                f"SPSA needs alpha > 0, gamma > 0 and a_ratio >= 0, got {self.alpha}, "
                f"{self.gamma}, {self.a_ratio}"
            )


@dataclass(kw_only=True)
class SpsaState:
    """Where a run stands; what the state file holds.

    Attributes:
        parameters: the parameters under tuning.
        config: the hyperparameters.
        theta: current values by name (floats even for integers: the steps are small).
        iteration: iterations completed.
        rng: the random generator's state (``random.Random.getstate``).
        history: one entry per completed iteration: ``iteration``, ``c`` and ``r`` (by name),
            ``flips``, ``plus`` and ``minus`` (the values played), ``wins``/``draws``/
            ``losses`` (the plus side's), ``theta`` (after the update), ``seconds``.
        context: what else identifies the run (engine spec, limit, ...): a resumed run must
            match it.
    """

    parameters: list[SpsaParameter]
    config: SpsaConfig
    theta: dict[str, float]
    iteration: int = 0
    rng: Any = None
    history: list[dict[str, Any]] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def start(
        cls,
        parameters: Sequence[SpsaParameter],
        config: SpsaConfig,
        context: Mapping[str, Any] | None = None,
    ) -> SpsaState:
        """A fresh run at the parameters' start values."""
        names = [parameter.name for parameter in parameters]
        if not names:
            raise LatentChessError("SPSA needs at least one parameter")
        if len(set(names)) != len(names):
            raise LatentChessError(f"SPSA parameters named twice: {names!r}")
        return cls(
            parameters=list(parameters),
            config=config,
            theta={parameter.name: float(parameter.start) for parameter in parameters},
            rng=random.Random(config.seed).getstate(),
            context=dict(context or {}),
        )

    def to_json(self) -> dict[str, Any]:
        """The state as JSON-ready data."""
        version, internal, gauss = self.rng
        # The Mersenne Twister's 625 words as one hex string (8 digits each): one line of JSON.
        words = "".join(f"{word:08x}" for word in internal)
        return {
            "format": STATE_FORMAT,
            "parameters": [asdict(parameter) for parameter in self.parameters],
            "config": asdict(self.config),
            "context": self.context,
            "iteration": self.iteration,
            "theta": self.theta,
            "rng": {"version": version, "state": words, "gauss": gauss},
            "history": self.history,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SpsaState:
        """Inverse of :meth:`to_json` (KeyError/TypeError/ValueError on a malformed one)."""
        if data["format"] != STATE_FORMAT:
            raise ValueError(f"format {data['format']!r}, expected {STATE_FORMAT}")
        rng = data["rng"]
        words = str(rng["state"])
        internal = tuple(int(words[i : i + 8], 16) for i in range(0, len(words), 8))
        if len(internal) != 625:
            raise ValueError(f"a random generator state of 625 words, got {len(internal)}")
        return cls(
            parameters=[SpsaParameter(**parameter) for parameter in data["parameters"]],
            config=SpsaConfig(**data["config"]),
            theta={str(name): float(value) for name, value in data["theta"].items()},
            iteration=int(data["iteration"]),
            rng=(int(rng["version"]), internal, rng["gauss"]),
            history=list(data["history"]),
            context=dict(data["context"]),
        )

    def save(self, path: Path) -> None:
        """Write the state atomically (a killed write leaves the previous file)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            json.dump(self.to_json(), handle, indent=1, allow_nan=False)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)


def load_state(path: Path) -> SpsaState:
    """Read a state file.

    Raises:
        DataFormatError: unreadable or malformed, naming the file.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise DataFormatError(f"cannot read the SPSA state: {error.strerror}", path=path) from None
    except json.JSONDecodeError as error:
        raise DataFormatError(f"not JSON: {error.msg}", path=path, line=error.lineno) from None
    try:
        return SpsaState.from_json(data)
    except (KeyError, TypeError, ValueError, LatentChessError) as error:
        raise DataFormatError(f"not an SPSA state file: {error!r}", path=path) from None


class SpsaObjective(Protocol):
    """Plays ``plus`` against ``minus`` (values by name) for iteration ``iteration`` and returns
    the plus side's ``(wins, draws, losses)`` over ``pairs`` game pairs."""

    def __call__(
        self, plus: Mapping[str, float], minus: Mapping[str, float], iteration: int, pairs: int
    ) -> tuple[int, int, int]: ...


def schedule(parameter: SpsaParameter, config: SpsaConfig, k: int) -> tuple[float, float]:
    """``(c_k, r_k)``: the perturbation and learning rate of iteration ``k`` (1-based)."""
    n = config.iterations
    big_a = config.a_ratio * n
    c = parameter.c_end * n**config.gamma
    a = parameter.r_end * parameter.c_end**2 * (big_a + n) ** config.alpha
    c_k = max(c / k**config.gamma, 0.5 if parameter.integer else 0.0)
    r_k = a / (big_a + k) ** config.alpha / c_k**2
    return c_k, r_k


@dataclass(frozen=True)
class Perturbation:
    """What one iteration plays: the two sides and how they were drawn."""

    plus: dict[str, float]
    minus: dict[str, float]
    flips: dict[str, int]
    c: dict[str, float]
    r: dict[str, float]


def perturb(state: SpsaState, rng: random.Random) -> Perturbation:
    """The next iteration's two sides (draws the flips, then one rounding uniform per integer)."""
    k = state.iteration + 1
    flips = {parameter.name: rng.choice((-1, 1)) for parameter in state.parameters}
    plus: dict[str, float] = {}
    minus: dict[str, float] = {}
    c_values: dict[str, float] = {}
    r_values: dict[str, float] = {}
    for parameter in state.parameters:
        name = parameter.name
        c_k, r_k = schedule(parameter, state.config, k)
        c_values[name], r_values[name] = c_k, r_k
        high = state.theta[name] + flips[name] * c_k
        low = state.theta[name] - flips[name] * c_k
        if parameter.integer:
            shift = rng.random()
            high, low = math.floor(high + shift), math.floor(low + shift)
        plus[name] = min(max(high, parameter.minimum), parameter.maximum)
        minus[name] = min(max(low, parameter.minimum), parameter.maximum)
    return Perturbation(plus, minus, flips, c_values, r_values)


def spsa_iteration(state: SpsaState, objective: SpsaObjective) -> dict[str, Any]:
    """Run the next iteration on ``state`` (updated in place); returns its history entry."""
    rng = random.Random()
    rng.setstate(state.rng)
    drawn = perturb(state, rng)
    began = time.monotonic()
    k = state.iteration + 1
    wins, draws, losses = objective(drawn.plus, drawn.minus, k, state.config.pairs)
    for parameter in state.parameters:
        name = parameter.name
        step = drawn.r[name] * drawn.c[name] * (wins - losses) * drawn.flips[name]
        state.theta[name] = min(max(state.theta[name] + step, parameter.minimum), parameter.maximum)
    state.iteration = k
    state.rng = rng.getstate()
    entry = {
        "iteration": k,
        "c": drawn.c,
        "r": drawn.r,
        "flips": drawn.flips,
        "plus": drawn.plus,
        "minus": drawn.minus,
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "theta": dict(state.theta),
        "seconds": round(time.monotonic() - began, 3),
    }
    state.history.append(entry)
    return entry


def run_spsa(
    state: SpsaState,
    objective: SpsaObjective,
    *,
    path: Path | None = None,
    until: int | None = None,
    progress: bool = True,
    on_iteration: Callable[[SpsaState], None] | None = None,
) -> SpsaState:
    """Iterate until ``until`` (default: the planned iterations), saving to ``path`` after
    every iteration; a progress bar shows the rate and the time left.

    Returns:
        ``state``, advanced.
    """
    last = state.config.iterations if until is None else min(until, state.config.iterations)
    bar = None
    if progress and state.iteration < last:
        from tqdm import tqdm

        bar = tqdm(total=last, initial=state.iteration, desc="spsa", unit="it")
    try:
        while state.iteration < last:
            entry = spsa_iteration(state, objective)
            if path is not None:
                state.save(path)
            if bar is not None:
                bar.set_postfix_str(f"+{entry['wins']}={entry['draws']}-{entry['losses']}")
                bar.update(1)
            if on_iteration is not None:
                on_iteration(state)
    finally:
        if bar is not None:
            bar.close()
    return state


# -- real games ------------------------------------------------------------------------------


def _with_values(spec: str, values: Mapping[str, float], *, name: str | None = None) -> str:
    """``spec`` with ``values`` as keys (replacing its own keys of those names) and an optional
    display ``name`` (replacing its own)."""
    from latentchess.engines.registry import parse_engine_spec

    parsed = parse_engine_spec(spec)
    tuned = {key.lower() for key in values}
    parts = [*parsed.args]
    parts += [f"{k}={v}" for k, v in parsed.params.items() if k.lower() not in tuned]
    parts += [f"{key}={_number(value)}" for key, value in values.items()]
    if name is not None:
        parts.append(f"name={name}")
    return parsed.kind + (":" + ",".join(parts) if parts else "")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def match_objective(
    spec: str,
    limit: Any,
    openings: Sequence[Any],
    *,
    workers: int = 1,
    max_plies: int = 600,
    pool: Any = None,
    pgn: Path | None = None,
) -> SpsaObjective:
    """Plays ``spec`` with the plus values against ``spec`` with the minus values (as spec keys)
    through :func:`~latentchess.evaluation.match.run_match`: iteration ``k`` takes the next
    ``pairs`` openings of ``openings`` (cycling), each with both colours.

    Args:
        spec: the engine spec the values are added to (e.g. ``ab:eval=hce,hash=16``).
        limit: both sides' :class:`~latentchess.evaluation.limits.SideLimit`.
        openings: the opening list.
        workers: games in parallel.
        max_plies: a game still going at this many plies is a draw.
        pool: where the games run (:func:`latentchess.cluster.cluster_pool`: a Dask cluster's
            workers); None: this process's ``workers`` threads.
        pgn: every game is appended here as it finishes (the ``Event`` names the iteration), so
            an iteration killed midway resumes from its finished games.
    """
    import functools

    from latentchess.engines.registry import create_engine, parse_engine_spec
    from latentchess.evaluation.match import MatchConfig, Player, run_match

    if not openings:
        raise LatentChessError("SPSA needs openings to play")

    def objective(
        plus: Mapping[str, float], minus: Mapping[str, float], iteration: int, pairs: int
    ) -> tuple[int, int, int]:
        first = (iteration - 1) * pairs
        chosen = [openings[(first + j) % len(openings)] for j in range(pairs)]
        players = []
        for name, values in (("spsa-plus", plus), ("spsa-minus", minus)):
            text = _with_values(spec, values)
            parsed = parse_engine_spec(text)
            players.append(
                Player(
                    name=name,
                    make=functools.partial(create_engine, parsed),  # pickles to cluster workers
                    limit=limit,
                    spec=text,
                )
            )
        config = MatchConfig(
            games=2 * pairs,
            workers=workers,
            event=f"latentchess tune spsa, iteration {iteration}",
            max_plies=max_plies,
            progress=False,
        )
        return run_match(players[0], players[1], chosen, config, pgn_path=pgn, pool=pool).score

    return objective


# -- results ---------------------------------------------------------------------------------


def tuned_values(state: SpsaState) -> dict[str, float]:
    """The current values, integers rounded."""
    return {
        parameter.name: round(state.theta[parameter.name])
        if parameter.integer
        else state.theta[parameter.name]
        for parameter in state.parameters
    }


def tuned_spec(spec: str, state: SpsaState, *, name: str | None = None) -> str:
    """``spec`` with the tuned values as keys (in place of its own), optionally renamed: what
    ``latentchess match --sprt`` should test against ``spec`` before the values are kept."""
    return _with_values(spec, tuned_values(state), name=name)


def report_table(state: SpsaState) -> str:
    """A text table: each parameter's start, current value, range and this point's c and r."""
    k = max(1, state.iteration)
    rows = [("parameter", "start", "value", "min", "max", "c_k", "r_k")]
    for parameter in state.parameters:
        c_k, r_k = schedule(parameter, state.config, k)
        value = state.theta[parameter.name]
        rows.append(
            (
                parameter.name,
                _number(parameter.start),
                f"{value:.2f}",
                _number(parameter.minimum),
                _number(parameter.maximum),
                f"{c_k:.3f}",
                f"{r_k:.5f}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    games = sum(entry["wins"] + entry["draws"] + entry["losses"] for entry in state.history)
    header = (
        f"SPSA iteration {state.iteration}/{state.config.iterations}, {games} games "
        f"({state.config.pairs} pairs per iteration)"
    )
    return "\n".join([header, *lines])


def plot_history(state: SpsaState, path: Path) -> Path:
    """One panel per parameter: its value over the iterations (the start dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    count = len(state.parameters)
    columns = min(4, count)
    rows = math.ceil(count / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.4 * rows), squeeze=False)
    iterations = [0] + [entry["iteration"] for entry in state.history]
    for index, parameter in enumerate(state.parameters):
        axis = axes[index // columns][index % columns]
        values = [parameter.start] + [entry["theta"][parameter.name] for entry in state.history]
        axis.plot(iterations, values, linewidth=1.2)
        axis.axhline(parameter.start, color="grey", linestyle="--", linewidth=0.8)
        axis.set_title(parameter.name, fontsize=8)
        axis.tick_params(labelsize=7)
        axis.ticklabel_format(axis="y", useOffset=False)
    for index in range(count, rows * columns):
        axes[index // columns][index % columns].axis("off")
    figure.suptitle(f"SPSA: {state.iteration} of {state.config.iterations} iterations", fontsize=9)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return path
