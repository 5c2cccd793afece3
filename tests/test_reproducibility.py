"""Same results on every CPU: resolved precision and model hash recorded everywhere, checked."""

from __future__ import annotations

import json
from pathlib import Path

import chess
import chess.pgn
import numpy as np
import pytest
import torch

from evaluation_fixtures import FirstMoveEngine
from latentchess.cli import main
from latentchess.engines.latent import LatentEngine
from latentchess.errors import LatentChessError
from latentchess.evaluation.limits import parse_limit
from latentchess.evaluation.match import MatchConfig, Player, run_match
from latentchess.evaluation.openings import Opening
from latentchess.models import Encoder, load_model, save_model
from latentchess.models.inference import PRECISION_ENV
from latentchess.models.io import model_content_hash
from latentchess.search import SearchConfig
from latentchess.training import train
from latentchess.training.curves import read_metrics
from latentchess.training.precision import PROBE_FILE, training_precision
from test_uci import Transcript
from training_fixtures import MICRO, micro_config, synthetic_cache


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two different micro models."""
    root = tmp_path_factory.mktemp("models")
    paths = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        axis = np.random.default_rng(seed).normal(size=MICRO.dim)
        paths.append(save_model(root / f"m{seed}", Encoder(MICRO), axis=axis))
    return paths[0], paths[1]


def _latent(model: Path, precision: str) -> Player:
    def make() -> LatentEngine:
        return LatentEngine.from_options(model, depth=1, width=2, precision=precision)

    return Player(name="latent", make=make, limit=parse_limit("depth=1"))


def test_match_pgn_records_the_model_and_a_resume_refuses_another(
    models: tuple[Path, Path], tmp_path: Path
) -> None:
    first, second = models
    pgn = tmp_path / "match.pgn"
    opponent = Player(name="first", make=FirstMoveEngine, limit=parse_limit("depth=1"))
    openings = [Opening(name="start", fen=chess.STARTING_FEN, moves=())]

    def config(games: int) -> MatchConfig:
        return MatchConfig(games=games, workers=1, max_plies=6, progress=False)

    run_match(_latent(first, "fp32"), opponent, openings, config(2), pgn_path=pgn)
    with pgn.open(encoding="utf-8") as handle:
        headers = [chess.pgn.read_headers(handle) for _ in range(2)]
    assert headers[0]["WhiteModelHash"] == model_content_hash(first)
    assert headers[0]["WhitePrecision"] == "fp32" and "WhiteModelHash" not in headers[1]
    assert headers[1]["BlackModelHash"] == model_content_hash(first)
    for other, precision, wrong in ((second, "fp32", "model"), (first, "bf16", "precision")):
        with pytest.raises(LatentChessError, match=f"now runs {wrong}|at precision 'bf16'"):
            run_match(_latent(other, precision), opponent, openings, config(4), pgn_path=pgn)
    assert len(pgn.read_text(encoding="utf-8").split("[Event ")) == 3  # nothing was added
    resumed = run_match(_latent(first, "fp32"), opponent, openings, config(4), pgn_path=pgn)
    assert resumed.resumed == 2 and len(resumed.games) == 4


def test_json_results_name_model_hash_and_precision(
    models: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = models
    epd = tmp_path / "suite.epd"
    epd.write_text(
        'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - bm e4; id "t.1";\n', "utf-8"
    )
    out = tmp_path / "epd.json"
    spec = f"latent:depth=1,width=2,precision=fp32,model={first}"
    args = ["epd", str(epd), "--engine", spec, "--limit", "depth=1", "--json", str(out)]
    assert main([*args, "--no-progress"]) == 0
    capsys.readouterr()
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["models"] == [
        {"model": str(first), "model_sha256": model_content_hash(first), "precision": "fp32"}
    ]


def test_uci_says_which_model_at_start_and_loudly_when_there_is_none(
    models: tuple[Path, Path], tmp_path: Path
) -> None:
    first, _ = models
    t = Transcript(model=first, config=SearchConfig(depth=1))  # fp32
    t.send("uci", "isready")
    t.wait_for("readyok")
    t.send("isready")  # said once, not at every isready
    t.wait_for("readyok")
    announced = [line for line in t.infos() if "sha256" in line]
    assert announced == [
        f"info string latent: model={first} model_sha256={model_content_hash(first)} precision=fp32"
    ]
    missing = Transcript(model=tmp_path / "missing", config=SearchConfig(depth=1))
    missing.send("uci")
    missing.send("isready")
    ready = missing.lines.index("readyok")
    errors = [i for i, line in enumerate(missing.lines) if "ERROR: latent cannot search" in line]
    assert len(errors) == 1 and errors[0] < ready and "missing" in missing.lines[errors[0]]


def test_training_auto_precision_is_decided_once_and_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fp32 unless bf16 is measured faster; the decision is cached, logged and saved."""
    monkeypatch.delenv(PRECISION_ENV, raising=False)
    synthetic_cache(tmp_path / "data", rows=120)
    cfg = micro_config(tmp_path / "data", tmp_path / "run", precision="auto", steps=2)
    result = train(cfg)
    decision = json.loads((tmp_path / "run" / PROBE_FILE).read_text(encoding="utf-8"))
    assert result.precision == decision["precision"] in ("fp32", "bf16")
    if decision["precision"] == "bf16":
        assert decision["probe"]["bf16_speedup"] >= decision["probe"]["min_speedup"]
    start = next(
        r for r in read_metrics(tmp_path / "run" / "metrics.jsonl") if r["kind"] == "start"
    )
    assert start["precision"] == result.precision
    assert start["precision_decision"]["decided_by"] == decision["decided_by"]
    saved = json.loads((tmp_path / "run" / "model" / "config.json").read_text(encoding="utf-8"))
    assert saved["training"]["precision_used"] == result.precision
    # Cached per run: a resumed run reuses the decision instead of measuring again.
    cached = {**decision, "precision": "bf16", "decided_by": "probe"}
    (tmp_path / "run" / PROBE_FILE).write_text(json.dumps(cached), encoding="utf-8")
    tokens = np.zeros((4, 77), dtype=np.uint8)
    cache = tmp_path / "run" / PROBE_FILE
    assert training_precision("auto", torch.device("cpu"), MICRO, tokens, cache)[0] == "bf16"
    assert training_precision("fp32", torch.device("cpu"), MICRO, tokens, cache)[0] == "fp32"
    monkeypatch.setenv(PRECISION_ENV, "fp32")
    chosen, record = training_precision("auto", torch.device("cpu"), MICRO, tokens, cache)
    assert chosen == "fp32" and record["decided_by"] == "environment"
    assert load_model(tmp_path / "run" / "model").precision == "fp32"
