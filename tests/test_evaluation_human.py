"""eval-human's protocol: skipped plies, clock rules, speeds, held-out players, bands, intervals,
JSON and plot, on small PGNs made here and the shipped human Chessformer."""

from __future__ import annotations

import json
import random
from pathlib import Path

import chess.pgn
import numpy as np
import pytest

from chessformer_fixtures import random_game
from latentchess.cli import main
from latentchess.data.moves import read_pgn_moves
from latentchess.evaluation.human import (
    HumanProtocol,
    band_label,
    band_labels,
    band_table,
    lichess_speed,
    protocol_mask,
    read_game_headers,
    training_players,
)

PLIES = 30


def _game(
    rng: random.Random, white: str, black: str, elo: int, tc: str, clocks: dict[int, float] | None
) -> chess.pgn.Game:
    """A random game of PLIES plies; every move's [%clk] is 100 s except the plies in ``clocks``
    (None: no clock comments at all)."""
    while True:
        game = random_game(rng, PLIES)
        if len(list(game.mainline_moves())) == PLIES:
            break
    game.headers.update(
        White=white,
        Black=black,
        WhiteElo=str(elo),
        BlackElo=str(elo + 50),
        TimeControl=tc,
        Site=f"https://lichess.org/{white}{black}{tc}",
        Result="1-0",
    )
    if clocks is not None:
        for ply, node in enumerate(game.mainline()):
            node.set_clock(clocks.get(ply, 100.0))
    return game


def _write(path: Path, games: list[chess.pgn.Game]) -> Path:
    path.write_text("".join(f"{game}\n\n" for game in games))
    return path


@pytest.fixture(scope="module")
def pgns(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    rng = random.Random(3)
    folder = tmp_path_factory.mktemp("human")
    games = [
        _game(rng, "ann", "bob", 1300, "180+2", {20: 20.0}),  # blitz; low clock at ply 20
        _game(rng, "cat", "dan", 2100, "60+0", None),  # bullet: not blitz
        _game(rng, "eve", "trained", 2500, "300+0", None),  # a player of the training PGN
        _game(rng, "fay", "gus", 1700, "300+3", None),  # blitz without clocks
    ]
    training = [_game(rng, "trained", "someone", 1500, "600+0", None)]
    return _write(folder / "games.pgn", games), _write(folder / "train.pgn", training)


def test_speeds_and_bands() -> None:
    assert [lichess_speed(t) for t in ("15+0", "60+1", "180+2", "300+3", "300+5", "1800+0")] == [
        "ultrabullet",
        "bullet",
        "blitz",
        "blitz",
        "rapid",
        "classical",
    ]
    assert lichess_speed("-") == "correspondence" and lichess_speed("?") is None
    edges = (1400, 2000, 2400)
    assert band_labels(edges) == ["<1400", "1400-1999", "2000-2399", ">=2400"]
    assert [band_label(e, edges) for e in (1399, 1400, 1999, 2000, 2400, 3000)] == [
        "<1400",
        "1400-1999",
        "1400-1999",
        "2000-2399",
        ">=2400",
        ">=2400",
    ]
    with pytest.raises(ValueError, match="ascending"):
        HumanProtocol(band_edges=(2000, 1400))
    with pytest.raises(ValueError, match="unknown speed"):
        HumanProtocol(speeds=("blits",))


def test_protocol_filters_count_by_hand(pgns: tuple[Path, Path]) -> None:
    games, train = pgns
    data = read_pgn_moves(games, progress=False)
    assert np.isnan(data.clock[data.game == 1]).all()
    assert data.clock[(data.game == 0)][20] == 20.0
    headers = read_game_headers(games)
    seen = training_players([train])
    assert "trained" in seen.names and [h.speed for h in headers] == [
        "blitz",
        "bullet",
        "blitz",
        "blitz",
    ]
    keep, counts = protocol_mask(data, HumanProtocol(), headers, seen)
    # game 0: plies 10..19 (truncated at the low clock); game 3: plies 10..29 (no clocks, kept)
    assert counts["games_with_a_training_player"] == 1 and counts["games_of_another_speed"] == 1
    assert counts["positions_after_low_clock"] == PLIES - 20
    assert counts["games_without_clocks_kept"] == 1
    assert counts["positions_kept"] == keep.sum() == 10 + (PLIES - 10)
    assert set(data.game[keep].tolist()) == {0, 3}
    # Maia-2's rule drops only the low-clock position; no filter keeps everything
    keep, _ = protocol_mask(data, HumanProtocol(clock_rule="position"), headers, seen)
    assert keep.sum() == (PLIES - 10 - 1) + (PLIES - 10)
    everything = HumanProtocol(skip_plies=0, min_clock=0, speeds=())
    keep, counts = protocol_mask(data, everything, headers)
    assert keep.all() and counts["positions_kept"] == 4 * PLIES


def test_intervals() -> None:
    protocol = HumanProtocol(band_edges=(1400,), bootstrap=500)
    hits = np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1])
    elos = np.array([1000] * 10 + [1500] * 2)
    games = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 6])
    table = band_table(hits, elos, games, protocol)
    low = table["<1400"]
    assert low["accuracy"] == 0.5 and low["positions"] == 10 and low["games"] == 5
    # Wilson for 5 of 10 at 95%: 0.2366 .. 0.7634
    assert low["wilson95"] == pytest.approx([0.2366, 0.7634], abs=1e-4)
    assert low["ci95"][0] < 0.5 < low["ci95"][1]
    assert table[">=1400"]["ci95"] == [1.0, 1.0]  # every resample of an all-correct band
    assert table["all"]["positions"] == 12 and table["all"]["games"] == 7
    one_game = band_table(hits[:2], elos[:2], games[:2], protocol)["<1400"]
    assert one_game["ci95"] is None and one_game["wilson95"] is not None


def test_eval_human_json_and_plot(pgns: tuple[Path, Path], tmp_path: Path) -> None:
    games, train = pgns
    out = tmp_path / "bands.json"
    args = ["eval-human", str(games), "--exclude-players-of", str(train), "--no-progress"]
    assert main([*args, "--json", str(out), "--plot", str(tmp_path / "bands.png")]) == 0
    result = json.loads(out.read_text())
    assert result["positions"] == 10 + (PLIES - 10) and result["games"] == 2
    assert result["filters"]["games_with_a_training_player"] == 1
    assert result["protocol"]["bands"] == ["<1400", "1400-1999", "2000-2399", ">=2400"]
    bands = result["by_band"]
    assert sum(b["positions"] for b in bands.values()) == result["positions"]
    weighted = sum(b["accuracy"] * b["positions"] for b in bands.values() if b["positions"])
    assert weighted / result["positions"] == pytest.approx(result["accuracy"])
    assert bands[">=2400"]["positions"] == 0 and bands[">=2400"]["accuracy"] is None
    assert result["ci95"][0] <= result["accuracy"] <= result["ci95"][1]
    assert bands["<1400"]["games"] == 1 and bands["<1400"]["ci95"] is None  # one game: no bootstrap
    assert (tmp_path / "bands.png").stat().st_size > 10_000
    # every position of every game, the plot of two results
    every = tmp_path / "every.json"
    flags = ["--skip-plies", "0", "--min-clock", "0", "--time-control", "any"]
    assert main([*args[:2], *flags, "--no-progress", "--json", str(every)]) == 0
    assert json.loads(every.read_text())["positions"] == 4 * PLIES
    png = tmp_path / "two.png"
    assert main(["plot", "human-bands", str(out), str(every), "--out", str(png)]) == 0
    assert png.stat().st_size > 10_000


def test_old_move_caches_load_without_clocks(pgns: tuple[Path, Path], tmp_path: Path) -> None:
    data = read_pgn_moves(pgns[0], progress=False)
    data.save(tmp_path / "new.npz")
    with np.load(tmp_path / "new.npz") as arrays:
        old = {k: arrays[k] for k in arrays.files if k != "clock"}
    np.savez(tmp_path / "old.npz", **old)
    loaded = type(data).load(tmp_path / "old.npz")
    assert np.isnan(loaded.clock).all() and len(loaded.clock) == len(data)
    assert np.array_equal(type(data).load(tmp_path / "new.npz").clock, data.clock, equal_nan=True)
