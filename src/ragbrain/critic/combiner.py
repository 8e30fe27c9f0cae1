"""The critic's last layer at run time: a logistic combiner of the model's logit and features."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def combine(x: torch.Tensor, combiner: dict[str, Any]) -> torch.Tensor:
    """Probabilities from a combiner's input columns (``TransformerCritic.score`` uses it)."""
    import torch

    z = (x - torch.tensor(combiner["mean"])) / torch.tensor(combiner["scale"])
    probs: torch.Tensor = (z @ torch.tensor(combiner["weights"]) + combiner["bias"]).sigmoid()
    return probs
