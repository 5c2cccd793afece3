"""Ray against Dask for spreading games over machines, measured on loopback.

Usage: python benchmarks/bench_cluster_backends.py --out benchmarks/results/cluster

For each backend (Dask's ``distributed``, Ray), each in fresh child processes of this script:

- install size: bytes on disk of the package and every dependency it brings that latentchess
  itself does not need (from the installed distributions' file lists);
- import time: ``import distributed`` / ``import ray`` in a fresh interpreter (median of 3);
- start-up: a local cluster of 2 worker processes (1 thread each) on 127.0.0.1, connected, and the
  first trivial task's result back in the driver;
- per-task overhead: 1,000 trivial tasks (``x + 1``) submitted at once and gathered, and 200 done
  one after another (submit, wait, submit: how a match hands out games), seconds per task;
- idle memory: resident set (RSS) of each worker process after one task, and of the whole tree of
  processes the local cluster started (scheduler, nannies, raylet, GCS, ...);
- a worker's death: a task that kills its own worker process (``os._exit``) -- what the driver
  gets, and after how long; and a task whose worker is SIGKILLed from outside while it sleeps --
  whether the task is rerun elsewhere and still returns.

The machine is shared: record ``uptime`` beside the numbers (the script does).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.metadata
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BACKENDS = {"dask": "distributed", "ray": "ray"}


# --- install size --------------------------------------------------------------------------------


def _requires(name: str) -> set[str]:
    """Installed distributions ``name`` needs (no extras), recursively, ``name`` included."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if current in seen:
            continue
        try:
            dist = importlib.metadata.distribution(current)
        except importlib.metadata.PackageNotFoundError:
            continue
        seen.add(current)
        for requirement in dist.requires or []:
            if "extra ==" in requirement:
                continue
            if ";" in requirement and "python_version" not in requirement:
                continue
            match = re.match(r"[A-Za-z0-9_.\-]+", requirement)
            if match:
                todo.append(match[0])
    return seen


def _size(name: str) -> int:
    dist = importlib.metadata.distribution(name)
    total = 0
    for file in dist.files or []:
        path = Path(str(dist.locate_file(file)))
        if path.is_file():
            total += path.stat().st_size
    return total


def install_size(package: str) -> dict[str, Any]:
    base = _requires("latentchess")
    extra = sorted(_requires(package) - base)
    sizes = {name: _size(name) for name in extra}
    return {"distributions": sizes, "total_mb": round(sum(sizes.values()) / 2**20, 1)}


# --- measurements in a child process -------------------------------------------------------------


def _import_time(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return float(out.strip().splitlines()[-1])


def _tree_rss(pid: int) -> tuple[int, int]:
    """(processes, total RSS bytes) of ``pid``'s descendants."""
    import psutil

    children = psutil.Process(pid).children(recursive=True)
    total = 0
    for child in children:
        with contextlib.suppress(psutil.Error):  # it exited meanwhile
            total += child.memory_info().rss
    return len(children), total


def _inc(x: int) -> int:
    return x + 1


def _rss() -> tuple[int, int]:
    import psutil

    return os.getpid(), psutil.Process().memory_info().rss


def _die() -> int:
    os._exit(1)


def _sleep_then_pid(path: str, seconds: float) -> int:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()}\n")
    time.sleep(seconds)
    return os.getpid()


def _child_dask(scratch: Path) -> dict[str, Any]:
    import logging

    from distributed import Client, LocalCluster

    result: dict[str, Any] = {}
    began = time.perf_counter()
    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=logging.CRITICAL,
    )
    client = Client(cluster)
    client.submit(_inc, 0, pure=False).result()
    result["start_and_first_task_s"] = time.perf_counter() - began

    began = time.perf_counter()
    client.gather(client.map(_inc, range(1000), pure=False))
    result["batch_1000_per_task_ms"] = (time.perf_counter() - began) / 1000 * 1e3
    began = time.perf_counter()
    for i in range(200):
        client.submit(_inc, i, pure=False).result()
    result["sequential_200_per_task_ms"] = (time.perf_counter() - began) / 200 * 1e3

    time.sleep(1.0)
    workers = client.run(_rss)
    result["worker_rss_mb"] = [round(rss / 2**20, 1) for _, rss in workers.values()]
    processes, total = _tree_rss(os.getpid())
    result["cluster_processes"] = processes
    result["cluster_rss_mb"] = round(total / 2**20, 1)

    began = time.perf_counter()
    try:
        client.submit(_die, pure=False).result(timeout=120)
        result["self_kill"] = "returned?"
    except Exception as error:  # what the driver is told
        result["self_kill"] = f"{type(error).__module__}.{type(error).__name__}: {error}"[:300]
    result["self_kill_report_s"] = time.perf_counter() - began
    client.wait_for_workers(2, timeout=60)

    pids = scratch / "dask_pids.txt"
    began = time.perf_counter()
    future = client.submit(_sleep_then_pid, str(pids), 3.0, pure=False)
    while not pids.exists():
        time.sleep(0.05)
    victim = int(pids.read_text().split()[0])
    os.kill(victim, signal.SIGKILL)
    try:
        finished_on = future.result(timeout=120)
        result["external_kill"] = f"rerun on another worker, result returned (pid {finished_on})"
    except Exception as error:
        result["external_kill"] = f"{type(error).__module__}.{type(error).__name__}: {error}"[:300]
    result["external_kill_total_s"] = time.perf_counter() - began
    client.close()
    cluster.close()
    return result


def _child_ray(scratch: Path) -> dict[str, Any]:
    import ray

    result: dict[str, Any] = {}
    began = time.perf_counter()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level="ERROR",
        _node_ip_address="127.0.0.1",
    )
    inc = ray.remote(num_cpus=1)(_inc)
    ray.get(inc.remote(0))
    result["start_and_first_task_s"] = time.perf_counter() - began

    began = time.perf_counter()
    ray.get([inc.remote(i) for i in range(1000)])
    result["batch_1000_per_task_ms"] = (time.perf_counter() - began) / 1000 * 1e3
    began = time.perf_counter()
    for i in range(200):
        ray.get(inc.remote(i))
    result["sequential_200_per_task_ms"] = (time.perf_counter() - began) / 200 * 1e3

    time.sleep(1.0)
    rss = ray.remote(num_cpus=1)(_rss)
    workers = dict(ray.get([rss.remote() for _ in range(8)]))
    result["worker_rss_mb"] = [round(v / 2**20, 1) for v in workers.values()]
    processes, total = _tree_rss(os.getpid())
    result["cluster_processes"] = processes
    result["cluster_rss_mb"] = round(total / 2**20, 1)

    die = ray.remote(num_cpus=1)(_die)
    began = time.perf_counter()
    try:
        ray.get(die.remote(), timeout=120)
        result["self_kill"] = "returned?"
    except Exception as error:
        result["self_kill"] = f"{type(error).__module__}.{type(error).__name__}: {error}"[:300]
    result["self_kill_report_s"] = time.perf_counter() - began

    pids = scratch / "ray_pids.txt"
    sleeper = ray.remote(num_cpus=1)(_sleep_then_pid)
    began = time.perf_counter()
    ref = sleeper.remote(str(pids), 3.0)
    while not pids.exists():
        time.sleep(0.05)
    victim = int(pids.read_text().split()[0])
    os.kill(victim, signal.SIGKILL)
    try:
        finished_on = ray.get(ref, timeout=120)
        result["external_kill"] = f"rerun on another worker, result returned (pid {finished_on})"
    except Exception as error:
        result["external_kill"] = f"{type(error).__module__}.{type(error).__name__}: {error}"[:300]
    result["external_kill_total_s"] = time.perf_counter() - began
    ray.shutdown()
    return result


def _run_child(backend: str, scratch: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", backend, "--scratch", str(scratch)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{backend} child failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(lines[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/cluster"))
    parser.add_argument("--child", choices=sorted(BACKENDS))
    parser.add_argument("--scratch", type=Path, default=Path("runs/bench_cluster"))
    args = parser.parse_args()
    args.scratch.mkdir(parents=True, exist_ok=True)
    if args.child:
        for leftover in args.scratch.glob(f"{args.child}_pids.txt"):
            leftover.unlink()
        child = _child_dask if args.child == "dask" else _child_ray
        print(json.dumps(child(args.scratch)))
        return 0
    load_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    results: dict[str, Any] = {}
    for backend, module in BACKENDS.items():
        results[backend] = {
            "version": importlib.metadata.version(module),
            "install": install_size(module),
            "import_s": statistics.median(_import_time(module) for _ in range(3)),
            **_run_child(backend, args.scratch),
        }
        print(backend, json.dumps(results[backend], indent=1), file=sys.stderr)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    report = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": commit,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "uptime_before": load_before,
        "uptime_after": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "command": "python benchmarks/bench_cluster_backends.py --out " + str(args.out),
        "backends": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "backends.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
