"""Matches and data generation on a real Dask cluster on loopback: a scheduler and two worker
processes started with Dask's own CLI, driven through ``latentchess ... --cluster``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import chess.pgn
import pyarrow.parquet as pq
import pytest

import latentchess
from evaluation_fixtures import require_stockfish
from latentchess.cli import main
from latentchess.cluster import parse_cluster
from latentchess.errors import LatentChessError
from latentchess.evaluation.puzzles import PUZZLE_COLUMNS

SRC = Path(latentchess.__file__).resolve().parents[1]
OPENINGS = (
    '[Opening "Italian"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 *\n\n'
    '[Opening "French"]\n\n1. e4 e6 2. d4 d5 *\n\n'
    '[Opening "Queen\'s Gambit"]\n\n1. d4 d5 2. c4 *\n'
)


@dataclass
class Cluster:
    address: str
    workers: list[subprocess.Popen[bytes]]

    def executed(self) -> list[int]:
        """Tasks each live worker has run."""
        from distributed import Client

        with Client(self.address, timeout=30) as client:
            counts = client.run(lambda dask_worker: dask_worker.state.executed_count)
        return sorted(counts.values())


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False"}


@contextlib.contextmanager
def dask_cluster(where: Path, workers: int = 2) -> Iterator[Cluster]:
    """``dask scheduler`` and ``workers`` × ``dask worker --nthreads 1`` on 127.0.0.1."""
    from distributed import Client

    where.mkdir(parents=True, exist_ok=True)
    file = where / "scheduler.json"
    log = (where / "cluster.log").open("wb")
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(file)],
            env=_env(), stdout=log, stderr=log,
        )
    ]  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not file.exists():
            assert time.monotonic() < deadline, "the Dask scheduler did not start"
            time.sleep(0.1)
        address = json.loads(file.read_text())["address"]
        for i in range(workers):
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "dask", "worker", address, "--nthreads", "1",
                     "--no-nanny", "--no-dashboard", "--host", "127.0.0.1", "--name", f"w{i}"],
                    env=_env(), stdout=log, stderr=log,
                )
            )  # fmt: skip
        with Client(address, timeout=30) as client:
            client.wait_for_workers(workers, timeout=60)
        yield Cluster(address=address, workers=processes[1:])
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    with dask_cluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


def read_games(path: Path) -> list[chess.pgn.Game]:
    games = []
    with path.open(encoding="utf-8") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            games.append(game)
    return games


def match_argv(tmp_path: Path, games: int, *extra: str) -> list[str]:
    openings = tmp_path / "openings.pgn"
    openings.write_text(OPENINGS, encoding="utf-8")
    return [
        "match", "ab", "stockfish", "--limit1", "nodes=300", "--limit2", "nodes=100",
        "--games", str(games), "--max-plies", "60", "--openings", str(openings), "--no-progress",
        *extra,
    ]  # fmt: skip


def schedule(games: list[chess.pgn.Game]) -> list[tuple[int, str, str, str]]:
    """(round, White, Black, opening) of every game, in round order."""
    return sorted(
        (int(g.headers["Round"]), g.headers["White"], g.headers["Black"], g.headers["Opening"])
        for g in games
    )


def test_cluster_addresses_are_checked() -> None:
    assert parse_cluster("local:2") == ("local", 2)
    assert parse_cluster("10.0.0.5:8786") == ("tcp", "tcp://10.0.0.5:8786")
    assert parse_cluster("tcp://sched:8786") == ("tcp", "tcp://sched:8786")
    bad_addresses = {"local:0": "at least one", "ray://h:10001": "Dask, not Ray", "x": "expected"}
    for bad, why in bad_addresses.items():
        with pytest.raises(LatentChessError, match=why):
            parse_cluster(bad)
    with pytest.raises(SystemExit):
        main(["match", "ab", "stockfish", "--cluster", "nonsense"])


def test_match_and_sprt_on_a_cluster_play_the_local_schedule(cluster, tmp_path) -> None:
    require_stockfish()
    before = sum(cluster.executed())
    local, remote, report = tmp_path / "local.pgn", tmp_path / "cluster.pgn", tmp_path / "m.json"
    assert main(match_argv(tmp_path, 6, "--pgn", str(local), "--workers", "1")) == 0
    argv = match_argv(tmp_path, 6, "--pgn", str(remote), "--cluster", cluster.address)
    assert main([*argv, "--json", str(report)]) == 0
    played, expected = read_games(remote), read_games(local)
    assert len(played) == len(expected) == 6
    assert schedule(played) == schedule(expected)
    for game in played:
        assert game.headers["Result"] in ("1-0", "0-1", "1/2-1/2") and not game.errors
        game.end().board()  # every move replays legally
    summary = json.loads(report.read_text(encoding="utf-8"))
    assert sum(summary["score"].values()) == 6 and summary["resumed_games"] == 0
    executed = cluster.executed()
    assert sum(executed) - before >= 6 and min(executed) >= 1  # both workers played

    # SPRT over the cluster: whole pairs only, and a rerun resumes (no game played twice).
    sprt = tmp_path / "sprt.pgn"
    argv = match_argv(tmp_path, 4, "--pgn", str(sprt), "--cluster", cluster.address)
    argv += ["--sprt", "0,400", "--alpha", "0.25", "--beta", "0.25"]
    assert main(argv) == 0
    games = read_games(sprt)
    rounds = sorted(int(g.headers["Round"]) for g in games)
    assert len(rounds) % 2 == 0 and rounds == list(range(1, len(rounds) + 1))
    assert all("SPRTStatus" in g.headers for g in games)
    assert main(argv) == 0
    assert len(read_games(sprt)) == len(games)


def test_data_generate_on_a_cluster_makes_the_local_rows(cluster, tmp_path) -> None:
    require_stockfish()
    common = ["data", "generate", "--positions", "40", "--nodes", "60", "--multipv", "2",
              "--max-plies", "16", "--seed", "3", "--no-progress"]  # fmt: skip
    local, remote = tmp_path / "local", tmp_path / "cluster"
    assert main([*common, "--out", str(local), "--workers", "1"]) == 0
    assert main([*common, "--out", str(remote), "--cluster", cluster.address]) == 0

    def rows(directory: Path) -> list[tuple[str, int, int]]:
        table = pq.read_table(sorted(directory.glob("*.parquet")))
        columns = (table.column(c).to_pylist() for c in ("fen", "game", "ply"))
        return sorted(zip(*columns, strict=True))

    assert len(rows(remote)) == 40
    assert rows(remote) == rows(local)  # a game is a function of (seed, g), wherever it runs
    # Resuming to a larger target adds only the missing rows, from the games after the cursor.
    assert main([*common[:3], "60", *common[4:], "--out", str(remote), "--cluster",
                 cluster.address]) == 0  # fmt: skip
    assert len(rows(remote)) == 60 and set(rows(local)) <= set(rows(remote))


PUZZLES = [  # two mates in one and an opening line, each eight times under other ids
    "6k1/p1p2ppp/1pqp2r1/3Q4/8/1P6/P1P2PPP/4RK2 b - - 8 22,c6d5 e1e8,400,116,81,1125,mate mateIn1",
    "r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR b KQkq - 0 1,a7a6 f3f7,900,80,90,100,"
    "mate mateIn1",
    f"{chess.STARTING_FEN},e2e4 e7e5 g1f3 b8c6 f1b5,1700,80,90,100,opening",
]


def test_puzzles_on_a_cluster_give_the_local_report(cluster, tmp_path) -> None:
    require_stockfish()
    csv = tmp_path / "puzzles.csv"
    rows = [f"p{i}{j},{row},https://example.org/{i}{j}," for i in range(8) for j, row in
            enumerate(PUZZLES)]  # fmt: skip
    csv.write_text("\n".join([",".join(PUZZLE_COLUMNS), *rows]) + "\n", encoding="utf-8")
    argv = ["puzzles", "solve", str(csv), "--engine", "stockfish", "--limit", "depth=3",
            "--no-progress"]  # fmt: skip
    local, remote = tmp_path / "local.json", tmp_path / "cluster.json"
    assert main([*argv, "--json", str(local)]) == 0
    assert main([*argv, "--json", str(remote), "--cluster", cluster.address]) == 0
    got, want = (json.loads(path.read_text(encoding="utf-8")) for path in (remote, local))
    assert got["puzzles"] == 24 and got["solved"] >= 16  # the mates at least
    assert (got["solved"], sorted(got["failed"])) == (want["solved"], sorted(want["failed"]))


def _games_in(path: Path) -> int:
    return path.read_text(encoding="utf-8").count("[Result ") if path.exists() else 0


def _wait_for_games(path: Path, count: int, alive: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 120
    while _games_in(path) < count:
        assert alive() and time.monotonic() < deadline, f"fewer than {count} games in {path}"
        time.sleep(0.05)


def test_killed_driver_and_killed_worker_lose_no_finished_game(cluster, tmp_path) -> None:
    """Runs last in this file: it kills one of the module cluster's two workers."""
    require_stockfish()
    pgn = tmp_path / "games.pgn"
    argv = match_argv(tmp_path, 6, "--pgn", str(pgn), "--cluster", cluster.address)
    argv[argv.index("nodes=300")] = "nodes=2000"  # games long enough to kill things mid-run

    # The driver dies mid-run: the finished games stay, byte for byte; a rerun completes.
    driver = subprocess.Popen(
        [sys.executable, "-m", "latentchess", *argv], env=_env(), stderr=subprocess.DEVNULL
    )
    _wait_for_games(pgn, 2, lambda: driver.poll() is None)
    driver.send_signal(signal.SIGKILL)
    driver.wait(timeout=30)
    written = pgn.read_text(encoding="utf-8")
    assert 2 <= _games_in(pgn) < 6
    assert main(argv) == 0
    assert pgn.read_text(encoding="utf-8").startswith(written)
    assert sorted(int(g.headers["Round"]) for g in read_games(pgn)) == list(range(1, 7))

    # A worker dies mid-run: its game is played again on the other one; the match completes.
    pgn2 = tmp_path / "games2.pgn"
    argv[argv.index(str(pgn))] = str(pgn2)
    argv[argv.index("6")] = "10"  # --games
    victim = cluster.workers[0]
    at_kill: list[int] = []

    def kill_a_worker() -> None:
        _wait_for_games(pgn2, 1, lambda: True)
        victim.send_signal(signal.SIGKILL)
        at_kill.append(_games_in(pgn2))

    killer = threading.Thread(target=kill_a_worker)
    killer.start()
    assert main(argv) == 0
    killer.join()
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert at_kill[0] < 10  # the worker died while the match was running
    assert sorted(int(g.headers["Round"]) for g in read_games(pgn2)) == list(range(1, 11))


def test_tune_spsa_on_a_cluster_plays_each_iterations_pairs_there(cluster, tmp_path) -> None:
    from latentchess.evaluation.spsa import load_state

    state = tmp_path / "spsa.json"
    command = ["tune", "spsa", "--state", str(state), "--engine", "ab:eval=hce,hash=2",
               "--params", "reverse_futility_margin", "--iterations", "2", "--pairs", "1",
               "--limit", "nodes=150", "--max-plies", "80", "--balance-cp", "0"]  # fmt: skip
    before = sum(cluster.executed())
    assert main([*command, "--cluster", cluster.address]) == 0
    run = load_state(state)
    assert run.iteration == 2
    assert [e["wins"] + e["draws"] + e["losses"] for e in run.history] == [2, 2]
    after = sum(cluster.executed())
    assert after - before >= 4  # every game ran on the workers
    assert main([*command, "--cluster", cluster.address]) == 0  # resumes: nothing left to play
    assert load_state(state).history == run.history and sum(cluster.executed()) == after
