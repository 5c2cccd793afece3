"""Unit tests of the training building blocks: loss, positives, split, schedule, axis, metrics."""

from __future__ import annotations

import math
import random
import warnings
from pathlib import Path

import chess
import numpy as np
import pytest
import torch

from latentchess.data.store import ShardWriter
from latentchess.encoding import detokenize
from latentchess.errors import DataFormatError
from latentchess.models.config import get_config
from latentchess.training.axis import (
    AxisFallbackWarning,
    advantage_axis,
    fit_calibration,
    select_axis_positions,
)
from latentchess.training.config import TrainConfig, lr_factor
from latentchess.training.data import (
    HOLDOUT_BLOCK,
    AnchorOrder,
    open_training_data,
    split_holdout,
)
from latentchess.training.losses import positive_mask, supcon_loss, within_delta
from latentchess.training.metrics import axis_cosine, pair_accuracy, spearman
from latentchess.training.positives import PositiveSampler


def _loop_supcon(z: torch.Tensor, labels: list[float], delta: float, tau: float) -> float:
    """SupCon L_out written out anchor by anchor, straight from the formula."""
    n = len(labels)
    terms = []
    for i in range(n):
        positives = [j for j in range(n) if j != i and abs(labels[j] - labels[i]) < delta]
        if not positives:
            continue
        denominator = sum(math.exp(float(z[i] @ z[a]) / tau) for a in range(n) if a != i)
        total = sum(math.log(math.exp(float(z[i] @ z[p]) / tau) / denominator) for p in positives)
        terms.append(-total / len(positives))
    return sum(terms) / len(terms)


def test_supcon_matches_loop_including_anchors_without_positives() -> None:
    torch.manual_seed(0)
    z = torch.nn.functional.normalize(torch.randn(14, 8, dtype=torch.float64), dim=1)
    # 0.9 and 0.3 have no neighbour within delta: anchors without positives.
    labels = [0.0, 0.0, 0.02, 0.5, 0.53, 0.56, 0.605, 0.9, 0.3, 1.0, 1.0, 0.97, 0.2, 0.22]
    for delta, tau in ((0.05, 0.07), (0.12, 0.5)):
        gaps = np.abs(np.subtract.outer(labels, labels))
        assert np.abs(gaps - delta).min() > 1e-3  # no pair on the boundary: no rounding question
        expected = _loop_supcon(z, labels, delta, tau)
        got = supcon_loss(z, torch.tensor(labels), delta=delta, temperature=tau)
        assert got.item() == pytest.approx(expected, rel=1e-5)


def test_supcon_gradient_and_degenerate_batch() -> None:
    z = torch.nn.functional.normalize(torch.randn(6, 4), dim=1).requires_grad_()
    loss = supcon_loss(z, torch.tensor([0.0, 0.2, 0.4, 0.6, 0.8, 1.0]))  # nobody has a positive
    loss.backward()
    assert loss.item() == 0.0
    assert z.grad is not None and torch.count_nonzero(z.grad) == 0
    z2 = torch.nn.functional.normalize(torch.randn(6, 4), dim=1).requires_grad_()
    supcon_loss(z2, torch.tensor([0.5] * 6)).backward()
    assert z2.grad is not None and torch.isfinite(z2.grad).all()


def test_positive_mask_is_within_delta_without_diagonal() -> None:
    labels = torch.tensor([0.1, 0.14, 0.16, 0.2, 0.1])
    mask = positive_mask(labels, 0.05)
    expected = within_delta(labels.numpy()[:, None], labels.numpy()[None, :], 0.05)
    np.fill_diagonal(expected, False)
    assert mask.numpy().tolist() == expected.tolist()
    assert mask[0, 4] and not mask[0, 2] and not mask.diagonal().any()


def test_sampler_positives_are_within_delta_and_never_the_anchor() -> None:
    rng = np.random.default_rng(1)
    labels = rng.random(3000).astype(np.float32)
    labels[:200] = 1.0  # ties: other positions with the anchor's exact label are candidates
    labels[200] = 0.5 + 1e-7
    sampler = PositiveSampler(labels, 0.05)
    anchors = rng.permutation(3000)
    positives = sampler.sample(anchors, 5, rng)
    assert positives.shape == (3000, 5)
    assert within_delta(labels[anchors][:, None], labels[positives], 0.05).all()
    assert (positives != anchors[:, None]).all()
    brute = within_delta(labels[:, None], labels[None, :], 0.05).sum(axis=1) - 1
    assert sampler.candidate_counts().tolist() == brute.tolist()
    # Every candidate of a narrow window gets drawn: uniform over the window, not one end of it.
    isolated = np.array([0.0, 0.3, 0.31, 0.32, 0.9], dtype=np.float32)
    small = PositiveSampler(isolated, 0.05)
    drawn = small.sample(np.full(200, 2), 1, rng).ravel()
    assert set(drawn.tolist()) == {1, 3}


def test_sampler_handles_anchors_without_candidates_and_sorts_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    labels = np.array([0.0, 0.5, 1.0, 0.52, 0.2], dtype=np.float32)
    sampler = PositiveSampler(labels, 0.05)
    assert sampler.candidate_counts([0, 1, 2, 3, 4]).tolist() == [0, 1, 0, 1, 0]

    def no_sorting(*args: object, **kwargs: object) -> None:
        raise AssertionError("the sampler sorted again")

    for name in ("argsort", "sort", "lexsort"):
        monkeypatch.setattr(np, name, no_sorting)
    positives = sampler.sample(np.array([0, 1, 2, 3, 4]), 3, np.random.default_rng(0))
    assert positives.tolist() == [[0] * 3, [3] * 3, [2] * 3, [1] * 3, [4] * 3]
    with pytest.raises(IndexError):
        sampler.sample(np.array([5]), 1, np.random.default_rng(0))


def test_holdout_split_is_deterministic_disjoint_and_blockwise() -> None:
    split = split_holdout(10_000, fraction=0.05, maximum=20_000, seed=3)
    again = split_holdout(10_000, fraction=0.05, maximum=20_000, seed=3)
    other = split_holdout(10_000, fraction=0.05, maximum=20_000, seed=4)
    assert np.array_equal(split.holdout, again.holdout)
    assert not np.array_equal(split.holdout, other.holdout)
    assert len(split.holdout) == 500
    assert np.intersect1d(split.train, split.holdout).size == 0
    assert len(split.train) + len(split.holdout) == 10_000
    # Whole blocks (the last one trimmed, or the short block at the end), not scattered rows.
    assert len(np.unique(split.holdout // HOLDOUT_BLOCK)) <= math.ceil(500 / HOLDOUT_BLOCK) + 1
    assert len(split_holdout(10**6, fraction=0.5, maximum=1234, seed=0).holdout) == 1234
    with pytest.raises(DataFormatError):
        split_holdout(1, fraction=0.5, maximum=10, seed=0)


def test_anchor_order_visits_every_position_once_per_epoch() -> None:
    order = AnchorOrder(size=10, batch_size=4, seed=0)
    stream = np.concatenate([order.anchors(step) for step in range(5)])  # 20 = two epochs
    assert sorted(stream[:10].tolist()) == list(range(10))
    assert sorted(stream[10:].tolist()) == list(range(10))
    assert not np.array_equal(stream[:10], stream[10:])
    assert np.array_equal(AnchorOrder(10, 4, 0).anchors(3), order.anchors(3))  # stateless


def test_lr_schedule() -> None:
    kwargs = {"steps": 100, "warmup": 10}
    assert lr_factor(0, schedule="cosine", **kwargs) == pytest.approx(0.1)
    assert lr_factor(9, schedule="cosine", **kwargs) == pytest.approx(1.0)
    assert lr_factor(55, schedule="cosine", **kwargs) == pytest.approx(0.5)
    assert lr_factor(100, schedule="cosine", **kwargs) == pytest.approx(0.0)
    assert lr_factor(99, schedule="constant", **kwargs) == 1.0


def test_train_config_validates_and_lists_resume_differences() -> None:
    cfg = TrainConfig(data="d", out="o", steps=100)
    assert cfg.warmup_steps == 2 and cfg.views_per_step == 128 * 6
    for bad in ({"batch_size": 0}, {"schedule": "linear"}, {"delta": 0.0}, {"precision": "fp8"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            TrainConfig(data="d", out="o", **bad)  # type: ignore[arg-type]
    saved = cfg.to_dict()
    assert TrainConfig(data="x", out="y", steps=100, eval_every=7).resume_differences(saved) == []
    diffs = TrainConfig(data="d", out="o", steps=100, lr=0.5).resume_differences(saved)
    assert len(diffs) == 1 and diffs[0].startswith("lr:")
    assert TrainConfig(data="d", out="o", steps=200).resume_differences(saved)
    constant = TrainConfig(data="d", out="o", steps=100, schedule="constant")
    longer = TrainConfig(data="d", out="o", steps=200, schedule="constant")
    assert longer.resume_differences(constant.to_dict()) == []
    with pytest.raises(ValueError, match="optimizer"):
        TrainConfig(data="d", out="o", optimizer="lion")
    adamw = TrainConfig(data="d", out="o", steps=100, optimizer="adamw")
    assert [d.split(":")[0] for d in adamw.resume_differences(saved)] == ["optimizer"]
    # Checkpoints from before the optimizer and the GAB pool/head settings resume unchanged.
    gab = TrainConfig(data="d", out="o", steps=100, model=get_config("gab-nano"))
    old = gab.to_dict()
    del old["optimizer"], old["model"]["pool"], old["model"]["head"]
    assert gab.resume_differences(old) == []


def test_axis_selection_counts_cap_and_fallback() -> None:
    labels = np.array([1.0] * 30 + [0.0] * 20 + [0.5] * 10 + [0.995, 0.004])
    selection = select_axis_positions(labels, max_per_side=25, seed=0)
    assert selection.counts() == {
        "white": 25,
        "black": 20,
        "rule": selection.rule,
        "available_white": 30,
        "available_black": 20,
    }
    assert (labels[selection.white] == 1.0).all() and (labels[selection.black] == 0.0).all()
    assert "forced mates" in selection.rule
    few_mates = np.array([1.0, 0.0, 0.995, 0.992, 0.004, 0.5, 0.3])
    with pytest.warns(AxisFallbackWarning, match="only 1 White and 1 Black"):
        fallback = select_axis_positions(few_mates, min_per_side=2)
    assert fallback.white.tolist() == [0, 2, 3] and fallback.black.tolist() == [1, 4]
    assert "fallback" in fallback.rule
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AxisFallbackWarning)
        with pytest.raises(DataFormatError, match="cannot build an advantage axis"):
            select_axis_positions(np.array([0.5, 0.6, 0.0]))


def test_advantage_axis_and_cosine() -> None:
    white = np.array([[1.0, 0.0], [0.0, 1.0]])
    black = np.array([[-1.0, 0.0]])
    axis = advantage_axis(white, black)
    assert axis.tolist() == [1.5, 0.5]
    cos = axis_cosine(np.array([[1.0, 0.0], [0.0, -1.0]]), axis)
    assert cos[0] == pytest.approx(1.5 / math.hypot(1.5, 0.5))
    assert cos[1] == pytest.approx(-0.5 / math.hypot(1.5, 0.5))


def test_calibration_recovers_a_known_logistic() -> None:
    x = np.linspace(-0.9, 0.9, 400)
    p = 1.0 / (1.0 + np.exp(-(6.0 * x - 0.7)))
    fit = fit_calibration(x, p)
    assert fit["kind"] == "logistic" and fit["positions"] == 400
    assert fit["slope"] == pytest.approx(6.0, abs=1e-3)
    assert fit["intercept"] == pytest.approx(-0.7, abs=1e-3)


def test_ordering_metrics() -> None:
    labels = np.linspace(0.0, 1.0, 50)
    assert pair_accuracy(labels * 3, labels, delta=0.05) == 1.0
    assert pair_accuracy(-labels, labels, delta=0.05) == 0.0
    assert pair_accuracy(np.zeros(50), labels, delta=0.05) == 0.5  # ties count one half
    assert spearman(labels**3, labels) == pytest.approx(1.0)
    assert math.isnan(spearman(np.zeros(5), np.arange(5)))


def test_training_data_from_a_parquet_dataset_builds_the_cache_once(tmp_path: Path) -> None:
    rng = random.Random(0)
    board, rows = chess.Board(), []
    while len(rows) < 60:
        moves = list(board.legal_moves)
        if not moves:
            board = chess.Board()
            continue
        board.push(rng.choice(moves))
        rows.append({"fen": board.fen(), "win_prob_white": rng.random(), "source": "test"})
    ShardWriter(tmp_path / "dataset").write(rows)
    cache = open_training_data(tmp_path / "dataset", tmp_path / "cache", progress=False)
    assert len(cache) == 60
    assert detokenize(cache.tokens[7]) == rows[7]["fen"]
    assert cache.win_prob_white[7] == pytest.approx(rows[7]["win_prob_white"], abs=1e-6)
    assert open_training_data(tmp_path / "cache", tmp_path / "unused").path == tmp_path / "cache"
    with pytest.raises(DataFormatError, match="expected a training cache"):
        open_training_data(tmp_path / "missing", tmp_path / "c2")
