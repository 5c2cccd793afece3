"""Perft nodes/s of the native core against python-chess and Stockfish's ``go perft``.

All three count the same trees, bulk counted at depth 1 (the size of the legal move list;
python-chess via ``legal_moves.count()``, Stockfish's ``go perft`` does the same), one thread,
in the same run. Two tables:

* the six suite positions at a depth python-chess can do in seconds (all three engines);
* the same positions one or two plies deeper (core and Stockfish only: long enough to time well).

Stockfish runs as a UCI process; its time is from sending ``go perft`` to reading
``Nodes searched`` (one pipe round trip included, negligible at these sizes). Core and Stockfish
alternate (core, Stockfish, core, Stockfish) and the faster of each pair is kept, so a load spike
from another job on this shared machine hits neither alone. The node counts are checked equal.

Run (from the repository root): ``.venv/bin/python benchmarks/bench_perft.py``; writes
benchmarks/results/perft.json and perft.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import chess

from latentchess.core import Board
from latentchess.core.suite import PERFT_SUITE
from latentchess.data.stockfish import find_stockfish

RESULTS = Path(__file__).resolve().parent / "results"
SHALLOW = {
    "start": 5,
    "kiwipete": 4,
    "position3": 5,
    "position4": 4,
    "position5": 4,
    "position6": 4,
}
DEEP = {
    "start": 6,
    "kiwipete": 5,
    "position3": 7,
    "position4": 6,
    "position5": 5,
    "position6": 5,
}


class Stockfish:
    """A Stockfish process spoken to over UCI, for ``go perft``."""

    def __init__(self, binary: Path) -> None:
        self.process = subprocess.Popen(
            [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.send("uci")
        self.name = next(
            line[len("id name ") :] for line in self.lines() if line.startswith("id name ")
        )
        self.wait_for("uciok")
        self.send("setoption name Threads value 1")
        self.send("isready")
        self.wait_for("readyok")

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def lines(self):  # type: ignore[no-untyped-def]
        assert self.process.stdout is not None
        for line in self.process.stdout:
            yield line.strip()

    def wait_for(self, prefix: str) -> str:
        for line in self.lines():
            if line.startswith(prefix):
                return line
        raise RuntimeError(f"stockfish ended before {prefix!r}")

    def perft(self, fen: str, depth: int) -> tuple[int, float]:
        self.send(f"position fen {fen}")
        self.send("isready")
        self.wait_for("readyok")
        began = time.perf_counter()
        self.send(f"go perft {depth}")
        line = self.wait_for("Nodes searched")
        return int(line.split(":")[1]), time.perf_counter() - began

    def close(self) -> None:
        self.send("quit")
        self.process.wait(timeout=10)


def python_chess_perft(board: chess.Board, depth: int) -> int:
    if depth == 1:
        return board.legal_moves.count()
    nodes = 0
    for move in board.legal_moves:
        board.push(move)
        nodes += python_chess_perft(board, depth - 1)
        board.pop()
    return nodes


def core_perft(fen: str, depth: int) -> tuple[int, float]:
    board = Board(fen)
    began = time.perf_counter()
    nodes = board.perft(depth)
    return nodes, time.perf_counter() - began


def _cpu() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        match = re.search(r"model name\s*:\s*(.+)", cpuinfo.read_text())
        if match:
            return match.group(1)
    return platform.processor() or "unknown"


def measure(fens: dict[str, str], depths: dict[str, int], stockfish: Stockfish, *, python: bool):
    """Rows of ``{position, depth, nodes, <engine>_s}`` and totals per engine."""
    rows = []
    for name, depth in depths.items():
        fen = fens[name]
        row: dict[str, Any] = {"position": name, "depth": depth}
        core_times, sf_times = [], []
        for _ in range(2):
            nodes, seconds = core_perft(fen, depth)
            core_times.append(seconds)
            sf_nodes, sf_seconds = stockfish.perft(fen, depth)
            sf_times.append(sf_seconds)
            if sf_nodes != nodes:
                raise RuntimeError(f"{name} depth {depth}: core {nodes} != stockfish {sf_nodes}")
        row.update(nodes=nodes, core_s=min(core_times), stockfish_s=min(sf_times))
        if python:
            board = chess.Board(fen)
            began = time.perf_counter()
            py_nodes = python_chess_perft(board, depth)
            row["python_chess_s"] = time.perf_counter() - began
            if py_nodes != nodes:
                raise RuntimeError(f"{name} depth {depth}: core {nodes} != python-chess {py_nodes}")
        print(
            "  "
            + ", ".join(
                f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()
            ),
            flush=True,
        )
        rows.append(row)
    totals: dict[str, float] = {"nodes": sum(r["nodes"] for r in rows)}
    for engine in ("core", "stockfish", "python_chess"):
        if f"{engine}_s" in rows[0]:
            seconds = sum(r[f"{engine}_s"] for r in rows)
            totals[f"{engine}_s"] = seconds
            totals[f"{engine}_nodes_per_s"] = totals["nodes"] / seconds
    return rows, totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    fens = {case.name: case.fen for case in PERFT_SUITE}
    stockfish = Stockfish(find_stockfish())
    load_start = os.getloadavg()
    try:
        print("same depth, three engines:", flush=True)
        shallow_rows, shallow = measure(fens, SHALLOW, stockfish, python=True)
        print("deeper, core and Stockfish:", flush=True)
        deep_rows, deep = measure(fens, DEEP, stockfish, python=False)
    finally:
        stockfish.close()
    machine = {
        "cpu": _cpu(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "chess": chess.__version__,
        "stockfish": stockfish.name,
        "load_average_at_start": list(load_start),
        "load_average_at_end": list(os.getloadavg()),
        "core_build": os.environ.get("LATENTCHESS_CPU", "native"),
    }
    record = {
        "command": "python benchmarks/bench_perft.py",
        "machine": machine,
        "same_depth": {"rows": shallow_rows, "totals": shallow},
        "deep": {"rows": deep_rows, "totals": deep},
        "ratios": {
            "core_over_python_chess": shallow["core_nodes_per_s"]
            / shallow["python_chess_nodes_per_s"],
            "core_over_stockfish_same_depth": shallow["core_nodes_per_s"]
            / shallow["stockfish_nodes_per_s"],
            "core_over_stockfish_deep": deep["core_nodes_per_s"] / deep["stockfish_nodes_per_s"],
        },
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "perft.json").write_text(json.dumps(record, indent=2) + "\n")
    ratios = record["ratios"]

    def rate(value: float) -> str:
        return f"{value / 1e6:,.1f} M"

    lines = [
        "# Perft speed: native core vs python-chess vs Stockfish",
        "",
        "Command: `.venv/bin/python benchmarks/bench_perft.py`",
        "",
        f"Machine: {machine['cpu']}, {machine['cores']} cores (shared with other jobs; load "
        f"{load_start[0]:.2f} at start, {machine['load_average_at_end'][0]:.2f} at end), "
        f"Python {machine['python']}, python-chess {machine['chess']}, {machine['stockfish']}. "
        "One thread each; bulk counting at depth 1 for all three; core built with "
        f"`-march={machine['core_build']}`.",
        "",
        f"**Core / python-chess: {ratios['core_over_python_chess']:,.0f}x. Core / Stockfish: "
        f"{ratios['core_over_stockfish_deep']:.2f}x** (deep table; "
        f"{ratios['core_over_stockfish_same_depth']:.2f}x at the shallow depths).",
        "",
        "Same depth, all three (nodes/s over the six positions):",
        "",
        "| position | depth | nodes | core s | Stockfish s | python-chess s |",
        "|---|---|---|---|---|---|",
    ]
    for r in shallow_rows:
        lines.append(
            f"| {r['position']} | {r['depth']} | {r['nodes']:,} | {r['core_s']:.3f} | "
            f"{r['stockfish_s']:.3f} | {r['python_chess_s']:.2f} |"
        )
    lines.append(
        f"| **nodes/s** | | {shallow['nodes']:,.0f} | {rate(shallow['core_nodes_per_s'])} | "
        f"{rate(shallow['stockfish_nodes_per_s'])} | {rate(shallow['python_chess_nodes_per_s'])} |"
    )
    lines += [
        "",
        "Deeper, core and Stockfish (faster of two alternating runs each):",
        "",
        "| position | depth | nodes | core s | Stockfish s |",
        "|---|---|---|---|---|",
    ]
    for r in deep_rows:
        lines.append(
            f"| {r['position']} | {r['depth']} | {r['nodes']:,} | {r['core_s']:.2f} | "
            f"{r['stockfish_s']:.2f} |"
        )
    lines.append(
        f"| **nodes/s** | | {deep['nodes']:,.0f} | {rate(deep['core_nodes_per_s'])} | "
        f"{rate(deep['stockfish_nodes_per_s'])} |"
    )
    (args.out / "perft.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[6:8]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
