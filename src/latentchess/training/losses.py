"""The supervised contrastive loss (SupCon, Khosla et al. 2020) with win-probability positives.

Paper section 3.3: two positions are a positive pair when their White-perspective win probabilities
differ by less than ``delta``; every other pair in the batch is a negative. The loss is the
``L_out`` form of SupCon, with every view of the batch taking its turn as the anchor::

    loss_i = -1/|P(i)| * sum_{p in P(i)} log( exp(z_i.z_p / tau) / sum_{a != i} exp(z_i.z_a / tau) )
    loss   = mean of loss_i over the anchors i with |P(i)| > 0

Labels of views. The reference SOLIS code gives all views of one anchor the anchor's label. Here
every view carries its *own* label and the mask compares the labels of all views with each other,
which is what section 3.3 describes ("we compare the win probabilities of all samples"). The
difference matters for pairs of sampled positives: two positives of one anchor can be up to
``2 * delta`` apart, and a positive of anchor A can fall within ``delta`` of anchor B. With the
anchor's label both cases would be mislabelled; with the views' own labels the mask is exactly the
pair relation the model is meant to learn. An anchor and its own sampled positives are always a
positive pair, because the sampler (:mod:`latentchess.training.positives`) uses the same
predicate, :func:`within_delta`.

Anchors without any positive in the batch (possible only for views whose label has no neighbour)
carry no SupCon term and are left out of the mean, rather than producing ``0/0``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor

__all__ = ["supcon_loss", "positive_mask", "within_delta"]


def within_delta(
    anchor: npt.ArrayLike, other: npt.ArrayLike, delta: float
) -> npt.NDArray[np.bool_]:
    """The positive-pair predicate: ``anchor - delta < other < anchor + delta`` in float64.

    Written with the thresholds ``anchor -/+ delta`` rather than ``abs(other - anchor)``: the
    sampler
    finds the same set by binary search on those thresholds, so the mask and the sampler never
    disagree at the boundary because of rounding.
    """
    a = np.asarray(anchor, dtype=np.float64)
    b = np.asarray(other, dtype=np.float64)
    return (b > a - delta) & (b < a + delta)


def positive_mask(labels: Tensor, delta: float) -> Tensor:
    """Pairwise positive mask of a batch.

    Args:
        labels: ``(N,)`` White-perspective win probabilities of the views.
        delta: the positive margin.

    Returns:
        ``(N, N)`` bool tensor, ``[i, j]`` true when view ``j`` is a positive of anchor ``i``
        (the same predicate as :func:`within_delta`); the diagonal is false.
    """
    p = labels.to(torch.float64)
    anchor = p[:, None]  # (N, 1)
    mask = (p[None, :] > anchor - delta) & (p[None, :] < anchor + delta)  # (N, N)
    mask.fill_diagonal_(False)
    return mask


def supcon_loss(
    embeddings: Tensor, labels: Tensor, *, delta: float = 0.05, temperature: float = 0.07
) -> Tensor:
    """SupCon ``L_out`` loss over all views as anchors, vectorised.

    Args:
        embeddings: ``(N, D)`` L2-normalised embeddings of every view in the (global) batch.
        labels: ``(N,)`` win probabilities (White's view) of the same views.
        delta: views closer than this in win probability are positives.
        temperature: softmax temperature tau on the cosine similarities.

    Returns:
        Scalar tensor: the mean loss over anchors that have at least one positive (zero, still
        attached to the graph, when no anchor has one).
    """
    if embeddings.ndim != 2 or labels.shape != embeddings.shape[:1]:
        raise ValueError(
            f"expected embeddings (N, D) and labels (N,), got {tuple(embeddings.shape)} "
            f"and {tuple(labels.shape)}"
        )
    z = embeddings.float()
    n = z.shape[0]
    logits = (z @ z.T) / temperature  # (N, N) cosine / tau
    self_pair = torch.eye(n, dtype=torch.bool, device=z.device)
    logits = logits.masked_fill(self_pair, float("-inf"))  # A(i) excludes the anchor itself
    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)  # (N, N)
    positives = positive_mask(labels.to(z.device), delta)  # (N, N)
    n_positives = positives.sum(dim=1)  # (N,)
    # where() rather than multiplication: the diagonal holds -inf and -inf * 0 is nan.
    positive_log_prob = torch.where(positives, log_prob, torch.zeros_like(log_prob)).sum(dim=1)
    has_positive = n_positives > 0
    if not bool(has_positive.any()):
        return z.sum() * 0.0
    per_anchor = -positive_log_prob[has_positive] / n_positives[has_positive]  # (N',)
    return per_anchor.mean()
