"""Collect the feature-set study (``benchmarks/nnue_feature_study.sh``) into a table, JSON and plot.

    python benchmarks/nnue_study_report.py OUT_DIR [--nodes 20000] [--time 50ms] [--speed]

Reads OUT_DIR/train-*/ (config, metrics), OUT_DIR/pqr-ALL/, OUT_DIR/pqr-scratch-ALL/ and
OUT_DIR/match-*.json; writes
OUT_DIR/table.md, OUT_DIR/study.json and OUT_DIR/study.png. The thesis's numbers (Lombardo 2024,
slides "Axis encoding / Pairwise axes / Mobility: resultados") sit beside ours. ``--speed`` first
measures each network's search speed (``ab:eval=...`` nodes/s on the same positions, the networks
interleaved in one process; run it on a quiet machine) into OUT_DIR/speed.json.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from latentchess.nnue.features import parse_feature_set
from latentchess.textfiles import find_text, read_text

# Thesis: (validation loss, Elo relative to ALL, its +- as printed). Its pairwise rows are labelled
# with icons; the horizontal pair icon (o-o) is read as PH, the other as PV.
THESIS: dict[str, tuple[float, float, float]] = {
    "ALL": (0.003134, 0.0, 0.0),
    "ALL+H+V": (0.003082, -27.1, 4.1),
    "ALL+D1+D2": (0.003087, -26.1, 3.8),
    "ALL+H+V+D1+D2": (0.003067, -58.7, 3.7),
    "H+V+D1+D2": (0.003907, -183.5, 4.1),
    "H+V": (0.005810, -384.3, 5.1),
    "D1+D2": (0.006707, -444.1, 5.1),
    "ALL+PH": (0.003033, -38.2, 4.8),
    "ALL+PV": (0.002946, -8.4, 5.0),
    "ALL+PH+PV": (0.002868, -37.6, 4.9),
    "ALL+MB": (0.002824, -260.9, 5.4),
    "ALL+MC": (0.003032, -280.9, 5.6),
}


def _run_row(run: Path) -> dict[str, Any]:
    config = json.loads((run / "model" / "config.json").read_text())
    started = json.loads((run / "config.json").read_text())
    train = [
        json.loads(line)
        for line in (run / "metrics.jsonl").read_text().splitlines()
        if '"train"' in line
    ]
    return {
        "features": config["data"]["feature_set"],
        "n": parse_feature_set(config["data"]["feature_set"]).size,
        "lr": started["lr"],
        "steps": config["metrics"]["step"],
        "val_loss": config["metrics"]["val_loss"],
        "positions_per_s": sum(t["positions_per_s"] for t in train) / max(1, len(train)),
        "train_minutes": train[-1]["elapsed_s"] / 60 if train else None,
    }


def measure_speed(out: Path, names: list[str], positions: int, seconds: float) -> dict[str, float]:
    """Nodes/s of ``ab:eval=<network>`` for each name, on the same random-walk positions."""
    import chess
    import chess.engine

    from latentchess.engines.registry import create_engine

    rng, boards = random.Random(2), []
    while len(boards) < positions:
        board = chess.Board()
        for _ in range(rng.randrange(8, 40)):
            board.push(rng.choice(list(board.legal_moves)))
            if board.is_game_over():
                break
        if not board.is_game_over():
            boards.append(board)
    engines = {name: create_engine(f"ab:eval={out / f'train-{name}' / 'model'}") for name in names}
    nodes = dict.fromkeys(names, 0)
    spent = dict.fromkeys(names, 0.0)
    try:
        for board in boards:
            for name, engine in engines.items():  # interleaved: drifts in load hit all alike
                tick = time.perf_counter()
                info = engine.analyse(board, chess.engine.Limit(time=seconds))
                spent[name] += time.perf_counter() - tick
                nodes[name] += int(info.nodes or 0)
    finally:
        for engine in engines.values():
            close = getattr(engine, "close", None)
            if close is not None:
                close()
    return {name: nodes[name] / spent[name] for name in names}


def _match(out: Path, name: str, limit: str) -> dict[str, Any] | None:
    path = find_text(out / f"match-{name}-{limit.replace('=', '')}.json")  # or .json.xz
    if not path.is_file():
        return None
    doc = json.loads(read_text(path))
    games = doc.get("game_count", doc.get("games"))  # newer records count, older ones list
    return {"games": len(games) if isinstance(games, list) else games, "score": doc["score"],
            **doc["elo"]}  # fmt: skip


def _elo_text(match: dict[str, Any] | None) -> str:
    if match is None:
        return "-"
    low, high = (float(match[k]) for k in ("lower", "upper"))  # "-inf" when a side never won
    if not math.isfinite(float(match["diff"])):  # a clean sweep has no finite estimate
        score = match["score"]
        return f"{float(match['diff']):+} (+{score['wins']} ={score['draws']} -{score['losses']})"
    return f"{float(match['diff']):+.0f} [{low:+.0f}, {high:+.0f}]"


def _speed_text(row: dict[str, Any]) -> str:
    if row["nodes_per_s"] is None:
        return "-"
    return f"{row['nodes_per_s'] / 1e3:,.0f} k ({row['speed_vs_all']:.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--nodes", type=int, default=20000)
    parser.add_argument("--time", default="50ms")
    parser.add_argument("--speed", action="store_true", help="measure nodes/s first")
    parser.add_argument("--positions", type=int, default=8, help="--speed positions")
    parser.add_argument("--seconds", type=float, default=1.0, help="--speed time per position")
    args = parser.parse_args()
    out: Path = args.out
    found = {
        p.parent.parent.name.removeprefix("train-") for p in out.glob("train-*/model/config.json")
    }
    # the thesis's rows in its order, then sets it did not have (king buckets, threats)
    trained = [n for n in THESIS if n in found] + sorted(found - set(THESIS))
    if args.speed:
        speed = measure_speed(out, trained, args.positions, args.seconds)
        (out / "speed.json").write_text(
            json.dumps(
                {"positions": args.positions, "seconds": args.seconds, "nodes_per_s": speed},
                indent=1,
            )
        )
    speed_file = out / "speed.json"
    speeds = json.loads(speed_file.read_text())["nodes_per_s"] if speed_file.is_file() else {}
    rows = []
    for name in trained:
        run = out / f"train-{name}"
        row = _run_row(run)
        row["nodes_per_s"] = speeds.get(name)
        row["speed_vs_all"] = (
            speeds[name] / speeds["ALL"] if name in speeds and "ALL" in speeds else None
        )
        row["nodes"] = _match(out, name, f"nodes={args.nodes}")
        row["time"] = _match(out, name, args.time) if args.time else None
        row["thesis"] = (
            dict(zip(("val_loss", "elo", "pm"), THESIS[name], strict=True))
            if name in THESIS
            else None
        )
        rows.append(row)
    pqr: dict[str, dict[str, Any]] = {}  # PQR fine-tuned (thesis +141) and from scratch (-235)
    for tag, run in (("pqr", "pqr-ALL"), ("pqr-scratch", "pqr-scratch-ALL")):
        if (out / run / "model" / "config.json").is_file():
            pqr[tag] = _run_row(out / run) | {
                "nodes": _match(out, tag, f"nodes={args.nodes}"),
                "time": _match(out, tag, args.time),
            }

    lines = [
        f"| feature set | N | lr | held-out loss | train pos/s | search nodes/s (vs ALL) "
        f"| Elo vs ALL, {args.nodes} nodes | Elo vs ALL, {args.time} | thesis loss | thesis Elo |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        thesis = row["thesis"]
        theirs = "- | -"
        if thesis is not None:
            pm = f" +- {thesis['pm']}" if thesis["pm"] else ""
            theirs = f"{thesis['val_loss']:.6f} | {thesis['elo']:+.1f}{pm}"
        lines.append(
            f"| {row['features']} | {row['n']} | {row['lr']:.3g} | {row['val_loss']:.6f} "
            f"| {row['positions_per_s']:,.0f} | {_speed_text(row)} | {_elo_text(row['nodes'])} | "
            f"{_elo_text(row['time'])} | {theirs} |"
        )
    for tag, label, thesis_elo in (
        ("pqr", "ALL, PQR fine-tuned", "+141 +- 6"),
        ("pqr-scratch", "ALL, PQR from scratch", "-235"),
    ):
        if tag in pqr:
            row = pqr[tag]
            lines.append(
                f"| {label} | 768 | {row['lr']:.3g} | (PQR loss) | "
                f"{row['positions_per_s']:,.0f} | as ALL | {_elo_text(row['nodes'])} | "
                f"{_elo_text(row['time'])} | - | {thesis_elo} |"
            )
    (out / "table.md").write_text("\n".join(lines) + "\n")
    (out / "study.json").write_text(
        json.dumps({"nodes": args.nodes, "time": args.time, "rows": rows, "pqr": pqr}, indent=1)
    )
    print("\n".join(lines))

    played = [r for r in rows if r["nodes"] or r["time"]]
    if played:
        fig, (left, right) = plt.subplots(1, 2, figsize=(12, 0.45 * len(rows) + 1.5))
        names = [r["features"] for r in rows]
        ys = range(len(rows))
        left.barh(ys, [r["val_loss"] for r in rows], color="tab:blue")
        left.set_yticks(list(ys), names)
        left.invert_yaxis()
        left.set_xlabel("held-out target-score loss (lower is better)")
        left.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
        for offset, key, colour in ((-0.18, "nodes", "tab:green"), (0.18, "time", "tab:orange")):
            for y, row in zip(ys, rows, strict=True):
                m = row[key]
                if m is None:
                    continue
                right.errorbar(
                    m["diff"],
                    y + offset,
                    # an infinite bound (one side never won) is drawn to the plot's edge
                    xerr=[
                        [m["diff"] - max(float(m["lower"]), -800.0)],
                        [min(float(m["upper"]), 800.0) - m["diff"]],
                    ],
                    fmt="o",
                    color=colour,
                    label=(f"{args.nodes} nodes" if key == "nodes" else args.time)
                    if y == next(i for i, r in enumerate(rows) if r[key])
                    else None,
                )
        theirs = [(y, r["thesis"]["elo"]) for y, r in zip(ys, rows, strict=True) if r["thesis"]]
        right.scatter(
            [elo for _, elo in theirs],
            [y for y, _ in theirs],
            marker="x",
            color="black",
            label="thesis",
        )
        right.axvline(0, color="grey", lw=0.8)
        right.set_yticks(list(ys), names)
        right.invert_yaxis()
        right.set_xlabel("Elo vs ALL (95% interval)")
        right.legend(loc="lower left")
        fig.suptitle("NNUE feature sets, same data and steps (ours) and the thesis's table")
        fig.tight_layout()
        fig.savefig(out / "study.png", dpi=110)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
