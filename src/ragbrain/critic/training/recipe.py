"""The training recipe: every knob of `ragbrain critic train`, with the defaults that ship."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ragbrain.critic.folder import DEFAULT_BASE


@dataclass(frozen=True)
class Recipe:
    """How a critic is trained; recorded whole in the calibration file it produces."""

    base: str = DEFAULT_BASE
    """The encoder the critic is cut from (``critic.folder.BASES``, each model profile's
    ``critic_base``; the default model's by default). Its tokenizer and frozen word embeddings
    come with it."""
    layers: int = 2
    """Encoder layers kept from the base (the rest are cut: speed; <= 2 keeps the folder
    <= 10 MB)."""
    max_length: int = 96
    """Tokens per (query, chunk) pair for the cross-encoder in training."""
    score_length: int = 64
    """Tokens per pair when the critic judges (dev calibration and run time). Cutting the
    96-token model to 64 at scoring time kept its dev ROC AUC and saves a third of the forward
    pass; the lexical features read 512 tokens either way."""
    epochs: int = 4
    batch_groups: int = 6
    """Groups per optimizer step; a group is one positive and its query's negatives."""
    lr_encoder: float = 1e-4
    lr_head: float = 2e-3
    warmup: float = 0.06
    bce_weight: float = 0.5
    """Weight of the pointwise BCE term next to the listwise (softmax) term."""
    hard_negatives: int = 3
    random_negatives: int = 1
    positives_per_query: int = 1
    max_queries: int = 1000
    """Queries sampled per data set (train + dev together), so big sets do not dominate; for
    ``--from-corpus``, pseudo-queries sampled from the folder's chunks."""
    dev_fraction: float = 0.3
    mine_k: int = 20
    """Dense candidates mined per query for hard negatives."""
    eval_k: int = 10
    """Candidates per query the critic judges at run time: the threshold is chosen on the
    retriever's hybrid top ``eval_k`` of each dev query (the logistic layer on the mined top
    ``eval_k``)."""
    target_recall: float = 0.92
    """The threshold keeps at least this share of relevant dev chunks in every data set (a
    margin over the 90% goal: dev sets are small)."""
    list_features: bool = True
    """Whether the logistic layers also read the list columns (``features.LIST_NAMES``: each
    chunk's rank, its gaps to its list's best logit, BM25 and distance, and the list's spread);
    they are then fit on the retriever's hybrid top ``eval_k`` of the dev queries, where the
    threshold is chosen. False: per-pair layers fit on the mined top ``eval_k``."""
    quantize: bool = True
    """Ship for int8 dynamic quantization of the linear layers at load time."""
    seed: int = 13

    def to_json(self) -> dict[str, Any]:
        """The recipe as a plain dict."""
        return asdict(self)

    def training_json(self) -> dict[str, Any]:
        """The knobs that shape the trained weights (the rest only calibrate them)."""
        return {k: v for k, v in self.to_json().items() if k not in CALIBRATION_ONLY}


#: Recipe fields read after training only: changing them re-calibrates, it does not retrain.
CALIBRATION_ONLY = ("score_length", "eval_k", "target_recall", "list_features", "quantize")
