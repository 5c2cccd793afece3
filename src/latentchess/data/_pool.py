"""Run labelling jobs on one Stockfish per worker process and hand results back in task order.

A *job* is a top-level function ``job(labeller, payload, context) -> result``; the parent feeds
``(index, payload)`` tasks lazily, keeps at most ``2 * workers`` in flight, and calls
``on_result(index, result)`` strictly in the order the tasks were given (so a run commits a prefix
of its tasks, which is what makes resuming exact). ``on_result`` returns False to stop early;
workers then abandon their current task at the next position (``context.stopped()``).

Near the end of a run the work still in flight is often enough: when ``should_finish()`` turns
True the pool stops handing out tasks and asks running jobs to return what they have so far
(``context.finishing()``); once those results are in, it carries on if ``on_result`` still wants
more. This keeps the last games of a generation run from being thrown away.

Workers watch their parent: if it is killed (``kill -9``), they quit at the next position and
their Stockfish exits with them, so no orphan keeps burning a core.

On a cluster (``pool``: :mod:`latentchess.cluster`), a task is the unit of work: it runs on a
cluster worker with that worker thread's Stockfish of the run (kept for the run's next tasks) and
returns its whole result (no ticks, no early finish: a task in flight when the run has enough is
simply not committed). Results are still committed strictly in task order by this process, so a
lost worker (its tasks run again elsewhere) or a lost driver loses nothing committed.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.process
import pickle
import queue
import signal
import traceback
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import chess.engine

from latentchess.cluster import WorkPool, new_tag, worker_resource
from latentchess.data.stockfish import Labeller
from latentchess.errors import EngineError, LatentChessError

__all__ = ["LabellerSpec", "JobContext", "run_ordered"]


@dataclass(frozen=True, kw_only=True)
class LabellerSpec:
    """Picklable recipe for a :class:`Labeller` in a worker process."""

    limit: chess.engine.Limit
    binary: str | Path | None = None
    hash_mb: int = 16
    multipv: int = 1
    max_retries: int = 3

    def open(self) -> Labeller:
        return Labeller(
            self.limit,
            binary=self.binary,
            hash_mb=self.hash_mb,
            multipv=self.multipv,
            max_retries=self.max_retries,
        )


class JobContext(Protocol):
    """What a job may ask of the pool while it runs."""

    def tick(self, n: int = 1) -> None:
        """Report ``n`` more positions labelled (drives the progress bar)."""

    def stopped(self) -> bool:
        """True when the run no longer needs this task's result."""

    def finishing(self) -> bool:
        """True when the job should return its partial result now."""


@dataclass
class _LocalContext:
    on_tick: Callable[[int], None]
    should_finish: Callable[[], bool]

    def tick(self, n: int = 1) -> None:
        self.on_tick(n)

    def stopped(self) -> bool:
        return False

    def finishing(self) -> bool:
        return self.should_finish()


@dataclass
class _WorkerContext:
    results: Any  # multiprocessing queue
    stop: Any  # multiprocessing event
    finish: Any  # multiprocessing event
    _parent: Any = field(default_factory=multiprocessing.parent_process)

    def tick(self, n: int = 1) -> None:
        self.results.put(("tick", n))

    def stopped(self) -> bool:
        return self.stop.is_set() or (self._parent is not None and not self._parent.is_alive())

    def finishing(self) -> bool:
        return self.finish.is_set()


Job = Callable[[Labeller, Any, JobContext], Any]


def _worker_main(
    job: Job, spec: LabellerSpec, tasks: Any, results: Any, stop: Any, finish: Any
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    context = _WorkerContext(results, stop, finish)
    try:
        with spec.open() as labeller:
            while not context.stopped():
                try:
                    task = tasks.get(timeout=0.5)
                except queue.Empty:
                    continue
                if task is None:
                    break
                index, payload = task
                result = job(labeller, payload, context)
                if context.stopped():
                    break
                results.put(("done", index, result))
    except BaseException as error:  # report anything, then exit: the parent decides what to do
        where = traceback.format_exc()  # the worker's file:line, lost in pickling otherwise
        try:
            blob = pickle.dumps(error)
        except Exception:
            blob = pickle.dumps(EngineError(f"{type(error).__name__}: {error}"))
        results.put(("error", blob, where))


def _worker_error(blob: bytes, where: str) -> BaseException:
    """The error a worker reported, with the worker's traceback attached as a note."""
    try:
        error: BaseException = pickle.loads(blob)
    except Exception as unpickling:  # a third-party error that does not survive pickling
        error = EngineError(f"labelling worker failed; its error could not be read: {unpickling}")
    if not isinstance(error, LatentChessError):
        cause = error
        error = EngineError(f"labelling worker failed: {cause!r}")
        error.__cause__ = cause
    error.add_note(f"raised in a labelling worker process:\n{where.rstrip()}")
    return error


def run_ordered(
    job: Job,
    spec: LabellerSpec,
    tasks: Iterable[tuple[int, Any]],
    *,
    workers: int,
    on_result: Callable[[int, Any], bool],
    on_tick: Callable[[int], None] = lambda n: None,
    should_finish: Callable[[], bool] = lambda: False,
    pool: WorkPool | None = None,
) -> None:
    """Run ``job`` over ``tasks`` on ``workers`` Stockfish processes; results in task order.

    With ``workers == 1`` everything runs in this process (no multiprocessing at all); with a
    ``pool`` (a cluster), on its workers instead (``job`` and the payloads must pickle).

    Raises:
        EngineError: a worker died or Stockfish kept crashing; other errors a job raised are
            re-raised here.
    """
    if pool is not None:
        _run_on_pool(job, spec, tasks, pool=pool, on_result=on_result)
        return
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    if workers == 1:
        with spec.open() as labeller:
            context = _LocalContext(on_tick, should_finish)
            for index, payload in tasks:
                if not on_result(index, job(labeller, payload, context)):
                    return
        return
    ctx = multiprocessing.get_context("spawn")  # no fork of a parent that has threads (tqdm)
    task_queue = ctx.Queue()
    result_queue = ctx.Queue()
    stop = ctx.Event()
    finish = ctx.Event()
    processes = [
        ctx.Process(
            target=_worker_main,
            args=(job, spec, task_queue, result_queue, stop, finish),
            daemon=True,
            name=f"latentchess-labeller-{i}",
        )
        for i in range(workers)
    ]
    for process in processes:
        process.start()
    task_iter = iter(tasks)
    in_flight: deque[int] = deque()
    finished: dict[int, Any] = {}
    exhausted = False

    def dispatch() -> None:
        nonlocal exhausted
        while not exhausted and not finish.is_set() and len(in_flight) < 2 * workers:
            try:
                index, payload = next(task_iter)
            except StopIteration:
                exhausted = True
                return
            task_queue.put((index, payload))
            in_flight.append(index)

    try:
        dispatch()
        while in_flight:
            if not finish.is_set() and should_finish():
                finish.set()
            try:
                message = result_queue.get(timeout=1.0)
            except queue.Empty:
                dead = [p for p in processes if not p.is_alive()]
                if dead:
                    raise EngineError(
                        f"labelling worker {dead[0].name} exited with status {dead[0].exitcode}"
                    ) from None
                continue
            kind = message[0]
            if kind == "tick":
                on_tick(message[1])
            elif kind == "error":
                raise _worker_error(message[1], message[2])
            else:
                finished[message[1]] = message[2]
                while in_flight and in_flight[0] in finished:
                    index = in_flight.popleft()
                    if not on_result(index, finished.pop(index)):
                        return
                if not in_flight and finish.is_set():
                    finish.clear()  # what was in flight was not enough after all: carry on
                dispatch()
    finally:
        stop.set()
        for _ in processes:
            task_queue.put(None)
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
                process.join(timeout=5)
        task_queue.cancel_join_thread()
        result_queue.cancel_join_thread()


class _PoolContext:
    """A cluster task's context: it runs to the end (see the module docstring)."""

    def tick(self, n: int = 1) -> None:
        pass

    def stopped(self) -> bool:
        return False

    def finishing(self) -> bool:
        return False


@dataclass(frozen=True)
class _PoolTask:
    """``job(labeller, payload)`` on a cluster worker, with that thread's labeller of the run."""

    tag: str
    job: Job
    spec: LabellerSpec

    def __call__(self, payload: Any) -> Any:
        labeller = worker_resource(self.tag, "labeller", self.spec.open)
        return self.job(labeller, payload, _PoolContext())


def _run_on_pool(
    job: Job,
    spec: LabellerSpec,
    tasks: Iterable[tuple[int, Any]],
    *,
    pool: WorkPool,
    on_result: Callable[[int, Any], bool],
) -> None:
    """:func:`run_ordered` on a cluster: at most ``2 * pool.slots`` tasks in flight."""
    import concurrent.futures

    unit = _PoolTask(new_tag("labelling"), job, spec)
    task_iter = iter(tasks)
    in_flight: dict[concurrent.futures.Future[Any], int] = {}
    order: deque[int] = deque()
    finished: dict[int, Any] = {}
    exhausted = False
    try:
        while True:
            while not exhausted and len(in_flight) < 2 * pool.slots:
                try:
                    index, payload = next(task_iter)
                except StopIteration:
                    exhausted = True
                    break
                in_flight[pool.submit(unit, payload)] = index
                order.append(index)
            if not in_flight:
                return
            ready, _ = concurrent.futures.wait(
                in_flight, return_when=concurrent.futures.FIRST_COMPLETED
            )
            for future in ready:
                finished[in_flight.pop(future)] = future.result()
            while order and order[0] in finished:
                index = order.popleft()
                if not on_result(index, finished.pop(index)):
                    return
    finally:
        for future in in_flight:
            future.cancel()
        pool.release(unit.tag)
