"""Where units of work run: threads of this process, or the workers of a Dask cluster.

Matches (a game), SPRT runs (a game; pairs are kept whole by the match's dispatch), ladders (their
matches), puzzle runs (a chunk of puzzles) and ``data generate`` (a game) hand independent units
to a :class:`WorkPool` and take the results back in the driver, which alone writes the PGN, JSON
or Parquet shards (appended and flushed as each unit finishes). A lost worker therefore loses only
the units it was running, which the scheduler runs again elsewhere; a lost driver loses nothing
written, and the same command run again resumes from the files.

Addresses (``--cluster``):

- none: a pool of ``workers`` threads in this process (what every command did before);
- ``local:N``: a Dask ``LocalCluster`` on 127.0.0.1 with N worker processes of one thread each,
  started here and stopped at the end;
- ``tcp://HOST:PORT`` (or ``HOST:PORT``): a running Dask scheduler (``dask scheduler`` on one
  host, ``dask worker tcp://HOST:PORT --nthreads 1`` on others; docs: ``docs/cluster.md``).

Dask rather than Ray: measured in ``benchmarks/results/cluster/`` (a tenth of the install, a
fraction of the start-up and idle memory; the per-task cost that Ray wins is noise next to a game).

Units pickle what they need (engine specs as strings, limits, an opening, a config) and build
costly things -- engines, Stockfish labellers -- through :func:`worker_resource`: one per run tag,
thread and key in whichever process runs the unit, made on first use and kept for the run's next
units, closed by :meth:`WorkPool.release` at the end of the run (on every worker of a cluster).
Workers import latentchess from their own install, so it must be the same version everywhere.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

from latentchess.errors import LatentChessError

__all__ = [
    "WorkPool",
    "ThreadPool",
    "DaskPool",
    "open_pool",
    "cluster_pool",
    "add_cluster_argument",
    "parse_cluster",
    "worker_resource",
    "discard_resource",
    "release_resources",
    "new_tag",
]

R = TypeVar("R")

CLUSTER_HELP = (
    "run the units of work on a Dask cluster: tcp://HOST:PORT (a running `dask scheduler`), or "
    "local:N (start N local worker processes); default: threads of this process"
)


class _Closable(Protocol):
    def close(self) -> None: ...


# --- worker-side resources ----------------------------------------------------------------------

_RESOURCES: dict[tuple[str, int, object], Any] = {}
_RELEASED: set[str] = set()  # runs that ended: a unit still running makes nothing new for them
_RESOURCES_LOCK = threading.Lock()


def new_tag(kind: str) -> str:
    """A fresh run tag (names the run's resources on every worker)."""
    return f"{kind}-{uuid.uuid4().hex[:12]}"


def worker_resource(tag: str, key: object, make: Callable[[], R]) -> R:
    """This thread's resource ``key`` of run ``tag`` in this process, made on first use.

    A unit of work runs on one thread, and threads of a pool run one unit at a time, so a
    resource (an engine: one search at a time) is never shared by two running units.
    """
    full = (tag, threading.get_ident(), key)
    with _RESOURCES_LOCK:
        if full in _RESOURCES:
            return _RESOURCES[full]  # type: ignore[no-any-return]
        if tag in _RELEASED:
            raise LatentChessError(f"run {tag!r} has ended; its units make no new {key!r}")
    made = make()
    with _RESOURCES_LOCK:
        if tag in _RELEASED:  # the run ended while this was being made
            _close_quietly(made)
            raise LatentChessError(f"run {tag!r} has ended; its units make no new {key!r}")
        _RESOURCES[full] = made
    return made


def discard_resource(tag: str, key: object) -> None:
    """Close and forget this thread's resource (it crashed or is in an unknown state)."""
    with _RESOURCES_LOCK:
        resource = _RESOURCES.pop((tag, threading.get_ident(), key), None)
    _close_quietly(resource)


def release_resources(tag: str) -> int:
    """Close every resource of run ``tag`` in this process; returns how many there were."""
    with _RESOURCES_LOCK:
        _RELEASED.add(tag)
        mine = [full for full in _RESOURCES if full[0] == tag]
        resources = [_RESOURCES.pop(full) for full in mine]
    for resource in resources:
        _close_quietly(resource)
    return len(resources)


def _close_quietly(resource: object) -> None:
    close = getattr(resource, "close", None)
    if close is not None:
        with contextlib.suppress(Exception):  # closing a crashed engine may fail: nothing to do
            close()


# --- pools ---------------------------------------------------------------------------------------


class WorkPool(Protocol):
    """Runs units of work; results come back as :class:`concurrent.futures.Future` objects."""

    address: str | None

    @property
    def slots(self) -> int:
        """Units that run at once (threads here, or worker threads of the cluster now)."""
        ...

    def submit(self, fn: Callable[..., R], /, *args: Any) -> concurrent.futures.Future[R]:
        """Run ``fn(*args)``; on a cluster ``fn`` and ``args`` must pickle."""
        ...

    def release(self, tag: str) -> None:
        """Close the resources of run ``tag`` everywhere (see :func:`worker_resource`)."""
        ...


class ThreadPool:
    """``workers`` threads of this process (no cluster)."""

    address: str | None = None

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise LatentChessError(f"workers must be at least 1, got {workers}")
        self.workers = workers
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=workers)

    @property
    def slots(self) -> int:
        return self.workers

    def submit(self, fn: Callable[..., R], /, *args: Any) -> concurrent.futures.Future[R]:
        return self._executor.submit(fn, *args)

    def release(self, tag: str) -> None:
        release_resources(tag)

    def shutdown(self, *, wait: bool) -> None:
        """Stop the threads; without ``wait``, queued units are cancelled."""
        self._executor.shutdown(wait=wait, cancel_futures=not wait)


class DaskPool:
    """The workers of a Dask cluster, through a connected ``distributed.Client``."""

    def __init__(self, client: Any, address: str) -> None:
        self.client = client
        self.address = address
        self._executor = client.get_executor(pure=False)

    @property
    def slots(self) -> int:
        # Asked each time: workers may join or leave during a run.
        return max(1, sum(self.client.nthreads().values()))

    def submit(self, fn: Callable[..., R], /, *args: Any) -> concurrent.futures.Future[R]:
        return self._executor.submit(fn, *args)  # type: ignore[no-any-return]

    def release(self, tag: str) -> None:
        with contextlib.suppress(Exception):  # a worker gone meanwhile has nothing left to close
            self.client.run(release_resources, tag)
        release_resources(tag)  # units the driver ran itself (none today)


def parse_cluster(address: str) -> tuple[str, int | str]:
    """``("local", N)`` or ``("tcp", "tcp://HOST:PORT")`` from a ``--cluster`` address.

    Raises:
        LatentChessError: an address of another form (quoted in the message).
    """
    if match := re.fullmatch(r"local:(\d+)", address):
        workers = int(match[1])
        if workers < 1:
            raise LatentChessError(f"local cluster needs at least one worker, got {address!r}")
        return "local", workers
    if address.startswith("ray://"):
        raise LatentChessError(
            f"cluster address {address!r}: latentchess runs on Dask, not Ray (see "
            "benchmarks/results/cluster); start `dask scheduler` and pass tcp://HOST:8786"
        )
    if re.fullmatch(r"(tcp://)?[A-Za-z0-9_.\-\[\]:]+:\d+", address):
        return "tcp", address if address.startswith("tcp://") else f"tcp://{address}"
    raise LatentChessError(
        f"bad cluster address {address!r}: expected tcp://HOST:PORT (a Dask scheduler) or "
        "local:N (N local worker processes)"
    )


@contextlib.contextmanager
def open_pool(address: str | None, workers: int) -> Iterator[WorkPool]:
    """The pool for ``--cluster ADDRESS`` (None: ``workers`` threads here); closed on exit.

    Raises:
        LatentChessError: a bad address, Dask missing, or a scheduler that cannot be reached or
            has no worker within a minute.
    """
    if address is None:
        pool = ThreadPool(workers)
        try:
            yield pool
        finally:
            pool.shutdown(wait=False)
        return
    kind, where = parse_cluster(address)
    try:
        import dask.config
        from distributed import Client, LocalCluster
    except ImportError as error:
        raise LatentChessError(
            "--cluster needs Dask's distributed package: pip install 'latentchess[cluster]'"
        ) from error
    if kind == "local":
        # Dask's statistical profiler samples every thread's stack each 10 ms, which cost about
        # a fifth of a game's time here (benchmarks/results/cluster): off (workers inherit it).
        with dask.config.set({"distributed.worker.profile.enabled": False}):
            local = LocalCluster(
                n_workers=int(where),
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
        with local, Client(local) as client:
            yield DaskPool(client, address)
        return
    try:
        client = Client(str(where), timeout=30)
    except OSError as error:
        raise LatentChessError(f"cannot reach the Dask scheduler at {where!r}: {error}") from error
    with client:
        try:
            client.wait_for_workers(1, timeout=60)
        except TimeoutError as error:
            raise LatentChessError(
                f"the Dask scheduler at {where!r} has no worker after 60 s: start one with "
                f"`dask worker {where} --nthreads 1` (docs/cluster.md)"
            ) from error
        yield DaskPool(client, str(where))


@contextlib.contextmanager
def cluster_pool(address: str | None) -> Iterator[WorkPool | None]:
    """:func:`open_pool` for ``--cluster ADDRESS``; None without one (the command's own
    threads or processes, exactly as without a cluster)."""
    if address is None:
        yield None
        return
    with open_pool(address, 1) as pool:
        yield pool


def cluster_address(text: str) -> str:
    """A ``--cluster`` address (``tcp://HOST:PORT`` or ``local:N``), or an argparse error."""
    import argparse

    try:
        parse_cluster(text)
    except LatentChessError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def add_cluster_argument(parser: Any) -> None:
    """``--cluster ADDRESS`` on an argparse parser (validated by :func:`parse_cluster`)."""
    parser.add_argument("--cluster", type=cluster_address, metavar="ADDRESS", help=CLUSTER_HELP)
