"""Calibration on held-apart dev queries: a logistic combiner of the logit, the lexical features
and (in the distance layer) the retriever's cosine distance, then the decision threshold that
keeps the target share of relevant chunks in every data set."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragbrain.critic.training.keep_metrics import keep_stats, roc_auc, threshold_for_recall

if TYPE_CHECKING:
    import torch


def fit_combiner(
    x: torch.Tensor,
    y: torch.Tensor,
    inputs: Sequence[str],
    l2: float = 1e-3,
    weights: torch.Tensor | None = None,
) -> dict[str, Any]:
    """Fit an L2-regularised logistic regression on standardised columns (full-batch LBFGS).

    Args:
        x: (n, len(inputs)) inputs, one column per name in ``inputs``.
        y: (n,) 0/1 labels.
        inputs: The columns' names, recorded so that loading can check them.
        weights: (n,) non-negative row weights for the loss (None: every row counts once;
            ``benchmarks.critic_layers`` weights each data set of a mix the same).

    Returns:
        A ``combiner`` entry of ``calibration.json``.
    """
    import torch

    mean = x.mean(dim=0)
    scale = x.std(dim=0).clamp_min(1e-6)
    z = (x - mean) / scale
    coef = torch.zeros(x.shape[1], requires_grad=True)
    bias = torch.zeros(1, requires_grad=True)
    optimizer = torch.optim.LBFGS([coef, bias], max_iter=200, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            z @ coef + bias, y, reduction="mean" if weights is None else "none"
        )
        if weights is not None:
            loss = (loss * weights).sum() / weights.sum()
        loss = loss + l2 * (coef**2).sum()
        loss.backward()  # type: ignore[no-untyped-call]
        return loss

    optimizer.step(closure)  # type: ignore[no-untyped-call]
    return {
        "inputs": list(inputs),
        "mean": mean.tolist(),
        "scale": scale.tolist(),
        "weights": coef.detach().tolist(),
        "bias": float(bias.detach()),
    }


def choose_threshold(
    scores: Sequence[float], labels: Sequence[bool], sets: Sequence[str], recall: float
) -> tuple[float, dict[str, Any]]:
    """The highest threshold keeping ``recall`` of relevant dev chunks in *every* data set
    that has any, and the per-set dev figures at that threshold."""
    names = sorted(set(sets))
    per_set = {}
    for name in names:
        idx = [i for i, s in enumerate(sets) if s == name]
        per_set[name] = ([scores[i] for i in idx], [labels[i] for i in idx])
    threshold = min(threshold_for_recall(s, y, recall) for s, y in per_set.values() if any(y))
    threshold = min(max(threshold, 0.0), 1.0)
    report = {
        name: {
            "auc": roc_auc(s, y),
            **keep_stats(s, y, threshold).as_dict(),
        }
        for name, (s, y) in per_set.items()
    }
    return threshold, report
