"""The training loop: a truncated encoder with a fresh one-logit head, a listwise softmax loss
plus BCE, and a checkpoint after each epoch so a stopped run resumes."""

from __future__ import annotations

import json
import logging
import random
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.critic.folder import WEIGHTS_FILE, read_tensors
from ragbrain.critic.training.data import Group
from ragbrain.critic.training.layers import Progress, tokenize_pairs
from ragbrain.critic.training.recipe import Recipe
from ragbrain.critic.training.save import load_trainable, save_trainable

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

CHECKPOINT = "checkpoint"


def new_model(recipe: Recipe, base: Path) -> Any:
    """A base encoder's embeddings and first ``recipe.layers`` layers with a fresh one-logit
    head; ``base`` is a folder with a BERT ``config.json`` and ``model.safetensors``."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(recipe.seed)
    config = BertConfig.from_pretrained(
        base, num_hidden_layers=recipe.layers, num_labels=1, local_files_only=True
    )
    model = BertForSequenceClassification(config)
    tensors = read_tensors(base / WEIGHTS_FILE)
    tensors = {(k if k.startswith("bert.") else f"bert.{k}"): v for k, v in tensors.items()}
    state = model.state_dict()
    model.load_state_dict({k: tensors.get(k, v) for k, v in state.items()}, strict=True)
    model.get_input_embeddings().weight.requires_grad_(False)
    return model


def _loss(logits: torch.Tensor, batch: Sequence[Group], bce_weight: float) -> torch.Tensor:
    """Listwise softmax loss of each positive against its own query's negatives, plus BCE."""
    import torch
    from torch.nn import functional

    labels = torch.tensor([y for g in batch for y in g.labels], dtype=torch.float32)
    loss = bce_weight * functional.binary_cross_entropy_with_logits(logits, labels)
    listwise = []
    start = 0
    for group in batch:
        end = start + len(group.texts)
        if group.labels[0] == 1 and end - start > 1:
            listwise.append(-functional.log_softmax(logits[start:end], dim=0)[0])
        start = end
    if listwise:
        loss = loss + torch.stack(listwise).mean()
    return loss


def _run_key(train: Sequence[Group], recipe: Recipe) -> str:
    """A checkpoint resumes only the same recipe on the same groups."""
    import hashlib

    digest = hashlib.sha256(json.dumps(recipe.training_json(), sort_keys=True).encode())
    for group in train:
        digest.update("\x00".join((group.query, *group.texts)).encode())
    return digest.hexdigest()[:16]


def fit(
    model: Any,
    tokenizer: Any,
    train: Sequence[Group],
    recipe: Recipe,
    work: Path,
    progress: Progress | None = None,
) -> None:
    """Train in place; after each epoch the weights go to ``work/checkpoint`` so a stopped run
    restarts from the last finished epoch (the optimizer's moments start afresh)."""
    import torch

    torch.manual_seed(recipe.seed)
    state_file = work / CHECKPOINT / "state.json"
    key = _run_key(train, recipe)
    done = 0
    if state_file.is_file():
        state = json.loads(state_file.read_text(encoding="utf-8"))
        if state.get("key") == key:
            done = int(state["epochs_done"])
            load_trainable(model, work / CHECKPOINT / WEIGHTS_FILE)
            log.info("Resuming after epoch %d from %s", done, work / CHECKPOINT)
    head = [p for n, p in model.named_parameters() if n.startswith(("classifier", "bert.pooler"))]
    body = [
        p
        for n, p in model.named_parameters()
        if p.requires_grad and not n.startswith(("classifier", "bert.pooler"))
    ]
    optimizer = torch.optim.AdamW(
        [{"params": body, "lr": recipe.lr_encoder}, {"params": head, "lr": recipe.lr_head}],
        weight_decay=0.01,
    )
    steps_per_epoch = -(-len(train) // recipe.batch_groups)
    total = steps_per_epoch * recipe.epochs
    warmup = max(1, int(recipe.warmup * total))

    def schedule(step: int) -> float:
        return min((step + 1) / warmup, max(0.0, (total - step) / max(1, total - warmup)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    with warnings.catch_warnings():  # fast-forwarding a resumed schedule takes no optimizer step
        warnings.filterwarnings("ignore", message=re.escape("Detected call of `lr_scheduler"))
        for _ in range(done * steps_per_epoch):
            scheduler.step()
    model.train()
    for epoch in range(done, recipe.epochs):
        order = list(train)
        random.Random(recipe.seed + epoch).shuffle(order)
        losses = []
        for step in range(steps_per_epoch):
            batch = order[step * recipe.batch_groups : (step + 1) * recipe.batch_groups]
            queries = [g.query for g in batch for _ in g.texts]
            texts = [t for g in batch for t in g.texts]
            inputs = tokenize_pairs(tokenizer, queries, texts, recipe.max_length)
            logits = model(**inputs).logits[:, 0]
            loss = _loss(logits, batch, recipe.bce_weight)
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            losses.append(float(loss.detach()))
            if progress:
                progress(epoch * steps_per_epoch + step + 1, total)
        log.info("epoch %d: mean loss %.4f", epoch + 1, sum(losses) / max(1, len(losses)))
        (work / CHECKPOINT).mkdir(parents=True, exist_ok=True)
        save_trainable(model, work / CHECKPOINT / WEIGHTS_FILE)
        state_file.write_text(json.dumps({"epochs_done": epoch + 1, "key": key}), encoding="utf-8")
    model.eval()
