"""The critic's last layers, fit on held-apart dev queries: the inputs of every dev candidate,
a logistic combiner of the logit, the lexical features and (in the distance layer) the
retriever's cosine distance, then the decision threshold that keeps the target share of
relevant chunks in every data set."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ragbrain.critic.combiner import combine
from ragbrain.critic.features import LexicalFeatures, list_columns
from ragbrain.critic.folder import (
    DISTANCE_INPUTS,
    DISTANCE_LIST_INPUTS,
    PLAIN_INPUTS,
    PLAIN_LIST_INPUTS,
    WITH_DISTANCE,
)
from ragbrain.critic.training.data import QueryCandidates
from ragbrain.critic.training.keep_metrics import keep_stats, roc_auc, threshold_for_recall
from ragbrain.critic.training.recipe import Recipe

if TYPE_CHECKING:
    import torch

Progress = Callable[[int, int], None]


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
            ``benchmarks.lodo`` weights each data set of a mix the same).

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


def tokenize_pairs(
    tokenizer: Any, queries: Sequence[str], texts: Sequence[str], max_length: int
) -> Any:
    """Tokenized (query, text) pairs as the cross-encoder reads them, padded, as tensors."""
    return tokenizer(
        list(queries),
        list(texts),
        truncation="longest_first",
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    )


def dev_inputs(
    model: Any,
    tokenizer: Any,
    features: LexicalFeatures,
    dev: Sequence[QueryCandidates],
    recipe: Recipe,
    progress: Progress | None = None,
) -> tuple[torch.Tensor, list[bool], list[str]]:
    """Combiner inputs (``DISTANCE_LIST_INPUTS``: the plain layer's columns, the candidate's
    cosine distance, then the list columns of its query's list), labels and data-set names for
    every dev query's top-``eval_k`` hits, in their order."""
    import torch

    rows, labels, sets = [], [], []
    with torch.inference_mode():
        for done, item in enumerate(dev, start=1):
            hits = item.candidates[: recipe.eval_k]
            if hits:
                texts = [c.text for c in hits]
                logits = model(
                    **tokenize_pairs(
                        tokenizer, [item.query] * len(texts), texts, recipe.score_length
                    )
                ).logits[:, :1]
                q_ids = tokenizer(item.query, add_special_tokens=False)["input_ids"]
                p_ids = tokenizer(texts, add_special_tokens=False, truncation=True, max_length=512)[
                    "input_ids"
                ]
                distances = torch.tensor([[c.distance] for c in hits])
                x = torch.cat([logits, features.rows(q_ids, p_ids), distances], dim=1)
                rows.append(torch.cat([x, list_columns(x, DISTANCE_INPUTS)], dim=1))
                labels += [c.relevant for c in hits]
                sets += [item.dataset] * len(hits)
            if progress:
                progress(done, len(dev))
    return torch.cat(rows), labels, sets


def fit_layers(
    scorer: Any,
    tokenizer: Any,
    features: LexicalFeatures,
    dev: Sequence[QueryCandidates],
    dev_seen: Sequence[QueryCandidates] | None,
    recipe: Recipe,
    embedding_model: str | None,
    progress: Callable[[str], Progress | None] = lambda _label: None,
) -> dict[str, Any]:
    """Fit a critic's logistic layers and choose their thresholds (see ``train_critic``).

    Returns:
        The calibration keys they own: ``threshold``, ``combiner`` and ``dev`` of the plain
        layer, and ``with_distance`` when ``embedding_model`` is given.
    """
    import torch

    x, labels, sets = dev_inputs(
        scorer,
        tokenizer,
        features,
        dev if dev_seen is None else dev_seen,
        recipe,
        progress("calibrating"),
    )
    layouts: dict[str, tuple[str, ...]] = {
        "plain": PLAIN_LIST_INPUTS if recipe.list_features else PLAIN_INPUTS
    }
    if embedding_model is not None:
        layouts["distance"] = DISTANCE_LIST_INPUTS if recipe.list_features else DISTANCE_INPUTS
    # A list-aware layer learns on the lists it will judge (the retriever's hybrid top eval_k:
    # the mined dense lists are another kind of list); a per-pair layer on the mined candidates.
    fit_x, fit_labels = x, labels
    if not recipe.list_features and dev_seen is not None and dev:
        fit_x, fit_labels, _ = dev_inputs(
            scorer, tokenizer, features, dev, recipe, progress("fitting the layers")
        )
    y = torch.tensor(fit_labels, dtype=torch.float32)
    chosen = {}
    for name, layout in layouts.items():
        combiner = fit_combiner(columns(fit_x, layout), y, layout)
        scores = combine(columns(x, layout), combiner).tolist()
        threshold, report = choose_threshold(scores, labels, sets, recipe.target_recall)
        chosen[name] = {"threshold": threshold, "combiner": combiner, "dev": report}
    layers: dict[str, Any] = dict(chosen["plain"])
    if embedding_model is not None:
        layers[WITH_DISTANCE] = {"embedding_model": embedding_model, **chosen["distance"]}
    return layers


def columns(x: torch.Tensor, names: Sequence[str]) -> torch.Tensor:
    """The columns ``names`` of ``dev_inputs`` rows."""
    return x[:, [DISTANCE_LIST_INPUTS.index(name) for name in names]]
