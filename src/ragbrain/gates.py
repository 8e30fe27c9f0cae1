"""Which gate threshold a run uses: the store's calibration, the model's shipped one, or 0.55.

A cosine-distance threshold only means something for the embedding model it was chosen for, so
``RetrievalContext.gate_threshold`` defaults to None and each run resolves it, most specific
first:

1. the threshold ``ragbrain calibrate`` wrote into the store (its own model and notes);
2. the threshold shipped here for the store's embedding model, calibrated on labelled data
   with the command recorded beside it;
3. ``DEFAULT_GATE_THRESHOLD``, the original design's 0.55, for any other model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragbrain.context import DEFAULT_GATE_THRESHOLD
from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL, E5_SMALL, model_name_of

if TYPE_CHECKING:
    from ragbrain.store import Store


@dataclass(frozen=True)
class ShippedGate:
    """A threshold calibrated for one embedding model, and how to reproduce it."""

    threshold: float
    auc: float
    data: str
    command: str


SHIPPED_GATES: dict[str, ShippedGate] = {
    DEFAULT_EMBEDDING_MODEL: ShippedGate(
        threshold=0.455,
        auc=0.731,
        data="SciFact train (809 queries) + NFCorpus dev (324 queries), pooled",
        command="ragbrain calibrate --data ../shared/data/scifact "
        "--data ../shared/data/nfcorpus@dev --samples 1000",
    ),
    # e5-small's distances are compressed (relevant and irrelevant best hits both near
    # 0.1-0.2), so MiniLM's 0.455 would never fire. The same data and rule as MiniLM's, on
    # the default (ONNX) backend; results in benchmarks/results/eval/e5-small/.
    E5_SMALL: ShippedGate(
        threshold=0.129,
        auc=0.750,
        data="SciFact train (809 queries) + NFCorpus dev (324 queries), pooled",
        command="ragbrain calibrate --embedding e5-small --data ../shared/data/scifact "
        "--data ../shared/data/nfcorpus@dev --samples 1000 --out benchmarks/results/eval/e5-small",
    ),
}


def model_gate(model: str) -> tuple[float, str]:
    """The threshold shipped for ``model`` (else the default), and its origin."""
    shipped = SHIPPED_GATES.get(model)
    if shipped is not None:
        return shipped.threshold, f"shipped for {model}"
    return DEFAULT_GATE_THRESHOLD, "default"


def store_gate(store: Store) -> tuple[float, str]:
    """The gate threshold for runs over ``store`` whose context leaves it None, and its origin."""
    calibrated = store.gate_threshold()  # in memory with the collection: no store call
    if calibrated is not None:
        return calibrated, "calibrated for this store"
    return model_gate(model_name_of(store.embeddings))


def run_gate(store: Store, threshold: float | None) -> tuple[float, str]:
    """The gate a run uses: ``threshold`` (the context's) when set, else ``store_gate``."""
    if threshold is not None:
        return threshold, "set in the context"
    return store_gate(store)
