"""A store's records in its collection's metadata: the ledger (roots, generation, an
unfinished ingest), the calibrated gate threshold, the off-topic cut, the model."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragbrain.errors import InvalidInputError
from ragbrain.models.embeddings import model_name_of
from ragbrain.store.base import StoreBase
from ragbrain.store.connect import connect
from ragbrain.store.keys import COLLECTION, GATE_KEY, GATE_SOURCE_KEY, MODEL_KEY, OFFTOPIC_KEY
from ragbrain.store.ledger import Ledger, bump, current_metadata
from ragbrain.store.ledger import update as update_ledger
from ragbrain.store.resilience import StorePolicy, call


class Records(StoreBase):
    """The part of ``Store`` that reads and writes its records (collection metadata)."""

    @property
    def model(self) -> str:
        """The name of the model that embeds this store's queries, as a store records it
        (``ragbrain.models.embeddings.model_name_of``); its settings follow from it
        (``ragbrain.settings``)."""
        return model_name_of(self.embeddings)

    @property
    def embedding_model(self) -> str | None:
        """The embedding model behind this store's distances: the one queries are embedded
        with, unless the store records another (then None: the distances mix two models)."""
        model = self.model
        recorded = (self.collection.metadata or {}).get(MODEL_KEY)
        return model if recorded in (None, model) else None

    def ledger(self) -> Ledger:
        """The store's own record (``store.ledger``): its roots, its generation, an unfinished
        ingest. Read again only when the store may have changed (a file stat on an embedded
        store), so a reader may ask on every query."""
        return self._ledger.get()

    def record(
        self, changes: Mapping[str, Any] | None = None, *, generation: str | None = None
    ) -> str:
        """Write ``changes`` (``store.ledger`` keys; None removes one) into the store's record
        with a new generation (or ``generation``), which tells every reader that the store
        changed; returns the generation."""
        with self.writing():
            written = bump(self.collection, self.call, changes or {}, generation=generation)
        self._ledger.forget()
        return written

    def gate_threshold(self) -> float | None:
        """The gate threshold calibrated for this store, if ``ragbrain calibrate`` wrote one."""
        value = (self.collection.metadata or {}).get(GATE_KEY)
        return float(value) if isinstance(value, int | float) else None

    def set_gate_threshold(self, threshold: float, source: str) -> None:
        """Record a calibrated gate threshold (and what produced it) in the collection metadata."""
        if not 0.0 <= threshold <= 2.0:
            raise InvalidInputError(
                f"A gate threshold is a cosine distance in [0, 2], got {threshold}."
            )
        with self.writing():
            update_ledger(
                self.collection, self.call, {GATE_KEY: threshold, GATE_SOURCE_KEY: source}
            )

    def offtopic_record(self) -> str | None:
        """The off-topic cut ingest learnt for this store (JSON), if any, as stored now."""
        value = current_metadata(self.collection).get(OFFTOPIC_KEY)
        return value if isinstance(value, str) else None

    def set_offtopic_record(self, record: str) -> None:
        """Record the off-topic cut (``ragbrain.refusal.offtopic.OffTopicCut.to_json``),
        keeping the rest of the store's record as stored now."""
        with self.writing():
            update_ledger(self.collection, self.call, {OFFTOPIC_KEY: record})

    @staticmethod
    def read_gate_threshold(
        path: str | Path | None, *, server: str | None = None, policy: StorePolicy | None = None
    ) -> float | None:
        """The calibrated gate threshold of the store in ``path`` or on ``server``."""
        policy = policy or StorePolicy()
        client, where, _ = connect(path, server, policy, create=True)
        metadata = call(
            policy,
            f"Reading the gate threshold at {where}",
            lambda: client.get_collection(COLLECTION, embedding_function=None).metadata,
        )
        value = (metadata or {}).get(GATE_KEY)
        return float(value) if isinstance(value, int | float) else None
