"""The native alpha-beta engine: speed against Stockfish, stop latency, time use under clocks.

Sections:

1. ``speed``: search nodes per second of ``ab`` (hand-crafted evaluation) and of Stockfish 15.1
   (its NNUE, ``Threads=1``, ``Hash=16``) on the same positions (the ``bench`` set) for the same
   move time each, interleaved position by position so both see the same machine load. Reported:
   each engine's total nodes / total search time, and the ratio.
2. ``stop``: latency from ``stop`` to the answer, (a) in-process (``StopSignal.set()`` until the
   search call returns) and (b) over a pipe to ``latentchess uci --engine ab`` (``stop`` written
   until the ``bestmove`` line is read), after ``go infinite`` ran for a random 50-300 ms.
3. ``clock``: self-play games under sudden-death-with-increment clocks (in-process, every move's
   wall time measured around the search call); per move, the time used against the time
   manager's hard limit and against the clock, as a distribution; a clock that falls ends its
   game (counted as a flag).

The machine is shared; the load average is recorded at the start and the end. Usage::

    .venv/bin/python benchmarks/bench_ab.py --out benchmarks/results/ab_search
    .venv/bin/python benchmarks/bench_ab.py --quick --out runs/ab
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import chess
import chess.engine

from latentchess.core.alphabeta import AlphaBeta, StopSignal
from latentchess.core.bench import bench_boards
from latentchess.engines.ab import AlphaBetaEngine

REPO = Path(__file__).resolve().parents[1]


def _git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {
        "n": len(ordered),
        "mean": statistics.fmean(ordered),
        "p50": at(0.5),
        "p90": at(0.9),
        "p99": at(0.99),
        "max": ordered[-1],
    }


# -- 1. speed -------------------------------------------------------------------------------------


def _process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), robust to a crowded machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_speed(movetime: float, positions: int) -> dict[str, Any]:
    boards = bench_boards()[:positions]
    ours = AlphaBeta("hce", hash_mb=16)
    totals = {"ab": [0, 0.0], "stockfish": [0, 0.0]}
    cpu = {"ab": 0.0, "stockfish": 0.0}
    with chess.engine.SimpleEngine.popen_uci("/usr/games/stockfish") as stockfish:
        stockfish.configure({"Threads": 1, "Hash": 16})
        version = stockfish.id.get("name", "stockfish")
        pid = stockfish.transport.get_pid()  # type: ignore[attr-defined]
        for index, board in enumerate(boards):
            ours.new_game()
            began = time.process_time()
            outcome = ours.search(board, chess.engine.Limit(time=movetime), move_overhead_ms=0)
            cpu["ab"] += time.process_time() - began
            totals["ab"][0] += outcome.nodes
            totals["ab"][1] += outcome.time_s
            stockfish.protocol.send_line("ucinewgame")  # type: ignore[attr-defined]
            began = _process_cpu_seconds(pid)
            info = stockfish.analyse(board, chess.engine.Limit(time=movetime))
            cpu["stockfish"] += _process_cpu_seconds(pid) - began
            totals["stockfish"][0] += int(info.get("nodes", 0))
            totals["stockfish"][1] += float(info.get("time", movetime))
            print(
                f"speed {index + 1}/{len(boards)}: ab {outcome.nodes} nodes, "
                f"stockfish {info.get('nodes')} nodes",
                file=sys.stderr,
            )
    nps = {name: int(nodes / seconds) for name, (nodes, seconds) in totals.items()}
    cpu_nps = {name: int(totals[name][0] / max(cpu[name], 1e-9)) for name in totals}
    return {
        "cpu_s": {name: round(value, 3) for name, value in cpu.items()},
        "nps_cpu_time": cpu_nps,
        "ratio_ab_to_stockfish_cpu_time": round(cpu_nps["ab"] / max(1, cpu_nps["stockfish"]), 3),
        "movetime_s": movetime,
        "positions": len(boards),
        "stockfish_version": version,
        "nodes": {name: value[0] for name, value in totals.items()},
        "time_s": {name: round(value[1], 3) for name, value in totals.items()},
        "nps": nps,
        "ratio_ab_to_stockfish": round(nps["ab"] / max(1, nps["stockfish"]), 3),
    }


# -- 2. stop latency ------------------------------------------------------------------------------


def bench_stop_in_process(repeats: int, rng: random.Random) -> list[float]:
    engine = AlphaBeta("hce", hash_mb=16)
    latencies = []
    for _ in range(repeats):
        stop = StopSignal()
        done = threading.Event()
        ended: list[float] = []

        def search(
            signal: StopSignal = stop, ended: list[float] = ended, done: threading.Event = done
        ) -> None:
            engine.search(chess.Board(), chess.engine.Limit(), infinite=True, stop=signal)
            ended.append(time.perf_counter())
            done.set()

        thread = threading.Thread(target=search)
        thread.start()
        time.sleep(rng.uniform(0.05, 0.3))
        began = time.perf_counter()
        stop.set()
        done.wait(5.0)
        thread.join()
        latencies.append((ended[0] - began) * 1000.0)
    return latencies


def bench_stop_over_pipe(repeats: int, rng: random.Random) -> list[float]:
    command = [sys.executable, "-m", "latentchess", "uci", "--engine", "ab"]
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )
    assert process.stdin is not None and process.stdout is not None

    def send(line: str) -> None:
        process.stdin.write(line + "\n")  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]

    def read_until(prefix: str) -> str:
        while True:
            line = process.stdout.readline()  # type: ignore[union-attr]
            if not line:
                raise RuntimeError("engine closed its output")
            if line.startswith(prefix):
                return line

    latencies = []
    try:
        send("uci")
        read_until("uciok")
        send("isready")
        read_until("readyok")
        for _ in range(repeats):
            send("position startpos")
            send("go infinite")
            time.sleep(rng.uniform(0.05, 0.3))
            began = time.perf_counter()
            send("stop")
            read_until("bestmove")
            latencies.append((time.perf_counter() - began) * 1000.0)
        send("quit")
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
    return latencies


# -- 3. clocks ------------------------------------------------------------------------------------


def bench_clock(base: float, increment: float, games: int, max_plies: int) -> dict[str, Any]:
    rows: list[dict[str, float]] = []
    flags = 0
    for game in range(games):
        engines = {color: AlphaBetaEngine(name=f"ab-{color}") for color in chess.COLORS}
        board = chess.Board()
        rng = random.Random(game)
        for _ in range(2):  # two random opening moves per side vary the games
            board.push(rng.choice(list(board.legal_moves)))
            board.push(rng.choice(list(board.legal_moves)))
        clocks = {color: base for color in chess.COLORS}
        while not board.is_game_over(claim_draw=True) and len(board.move_stack) < max_plies:
            turn = board.turn
            limit = chess.engine.Limit(
                white_clock=clocks[chess.WHITE],
                black_clock=clocks[chess.BLACK],
                white_inc=increment,
                black_inc=increment,
            )
            began = time.perf_counter()
            outcome = engines[turn].search(board, limit)
            spent = time.perf_counter() - began
            remaining = clocks[turn] - spent
            rows.append(
                {
                    "clock_before_s": clocks[turn],
                    "spent_s": spent,
                    "hard_s": outcome.hard_s or 0.0,
                    "soft_s": outcome.soft_s or 0.0,
                }
            )
            if remaining < 0:
                flags += 1  # the game is lost on time: it ends here, as in a match
                break
            clocks[turn] = remaining + increment
            assert outcome.best_move is not None
            board.push(outcome.best_move)
        print(f"clock {base}+{increment}: game {game + 1}/{games} done", file=sys.stderr)
    over_hard_ms = [1000.0 * (r["spent_s"] - r["hard_s"]) for r in rows]
    used_of_clock = [r["spent_s"] / r["clock_before_s"] for r in rows]
    return {
        "base_s": base,
        "increment_s": increment,
        "games": games,
        "moves": len(rows),
        "flags": flags,
        "spent_minus_hard_limit_ms": _quantiles(over_hard_ms),
        "spent_over_soft_target": _quantiles(
            [r["spent_s"] / r["soft_s"] for r in rows if r["soft_s"] > 0]
        ),
        "fraction_of_clock_used": _quantiles(used_of_clock),
        "min_clock_left_s": round(min(r["clock_before_s"] - r["spent_s"] for r in rows), 4),
    }


# -- report ---------------------------------------------------------------------------------------


def _markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Alpha-beta engine (`ab`): speed, stop latency, time use",
        "",
        f"Command: `{result['command']}`  ",
        f"Commit: `{result['commit']}`; machine: {result['machine']}; load average "
        f"{result['load_start']} at the start, {result['load_end']} at the end (shared machine).",
        "",
    ]
    speed = result.get("speed")
    if speed:
        lines += [
            "## Search speed against Stockfish (one thread, same positions, same move time)",
            "",
            f"{speed['positions']} bench positions, {speed['movetime_s']} s each, interleaved; "
            f"{speed['stockfish_version']} with its NNUE, Threads=1, Hash=16.",
            "",
            "| engine | nodes | wall s | nodes / wall s | CPU s | nodes / CPU s |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name in ("ab", "stockfish"):
            lines.append(
                f"| {name} | {speed['nodes'][name]:,} | {speed['time_s'][name]} | "
                f"{speed['nps'][name]:,} | {speed['cpu_s'][name]} | "
                f"{speed['nps_cpu_time'][name]:,} |"
            )
        lines += [
            "",
            f"Ratio ab / Stockfish: **{speed['ratio_ab_to_stockfish']}x** per wall second, "
            f"**{speed['ratio_ab_to_stockfish_cpu_time']}x** per CPU second (the CPU-time "
            "figures do not depend on how crowded the machine is).",
            "",
        ]
    stop = result.get("stop")
    if stop:
        lines += [
            "## Stop latency (ms, `go infinite` then `stop` after 50-300 ms)",
            "",
            "| path | n | mean | p50 | p90 | p99 | max |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for name, q in stop.items():
            lines.append(
                f"| {name} | {q['n']} | {q['mean']:.2f} | {q['p50']:.2f} | {q['p90']:.2f} | "
                f"{q['p99']:.2f} | {q['max']:.2f} |"
            )
        lines.append("")
    for clock in result.get("clock", []):
        over = clock["spent_minus_hard_limit_ms"]
        used = clock["fraction_of_clock_used"]
        ratio = clock["spent_over_soft_target"]
        lines += [
            f"## Time use under a {clock['base_s']}+{clock['increment_s']} clock (self-play)",
            "",
            f"{clock['games']} games, {clock['moves']} moves, **{clock['flags']} flags**; "
            f"least clock left after a move: {clock['min_clock_left_s']} s.",
            "",
            "| per move | mean | p50 | p90 | p99 | max |",
            "|---|---:|---:|---:|---:|---:|",
            f"| time used - hard limit (ms) | {over['mean']:.2f} | {over['p50']:.2f} | "
            f"{over['p90']:.2f} | {over['p99']:.2f} | {over['max']:.2f} |",
            f"| time used / soft target | {ratio['mean']:.2f} | {ratio['p50']:.2f} | "
            f"{ratio['p90']:.2f} | {ratio['p99']:.2f} | {ratio['max']:.2f} |",
            f"| time used / clock left | {used['mean']:.3f} | {used['p50']:.3f} | "
            f"{used['p90']:.3f} | {used['p99']:.3f} | {used['max']:.3f} |",
            "",
        ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for JSON and .md")
    parser.add_argument("--quick", action="store_true", help="fewer positions, repeats, games")
    parser.add_argument("--sections", default="speed,stop,clock", help="comma-separated")
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    rng = random.Random(0)
    result: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", "benchmarks/bench_ab.py", *sys.argv[1:]]),
        "commit": _git_commit(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "load_start": [round(x, 2) for x in os.getloadavg()],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    name = (
        "ab_search"
        if sections == {"speed", "stop", "clock"}
        else "ab_search_" + "_".join(sorted(sections))
    )

    def save() -> None:  # after every section, so a failure later keeps what was measured
        result["load_end"] = [round(x, 2) for x in os.getloadavg()]
        (args.out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
        (args.out / f"{name}.md").write_text(_markdown(result))

    if "speed" in sections:
        result["speed"] = bench_speed(0.2 if args.quick else 1.0, 8 if args.quick else 32)
        save()
    if "stop" in sections:
        repeats = 10 if args.quick else 50
        result["stop"] = {
            "in-process (StopSignal)": _quantiles(bench_stop_in_process(repeats, rng)),
            "UCI over a pipe": _quantiles(bench_stop_over_pipe(repeats, rng)),
        }
        save()
    if "clock" in sections:
        settings = [(10.0, 0.1, 1 if args.quick else 4), (1.0, 0.01, 1 if args.quick else 4)]
        result["clock"] = [bench_clock(b, i, g, 200) for b, i, g in settings]
    save()
    print(_markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
