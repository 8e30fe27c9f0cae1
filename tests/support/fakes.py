"""Fakes whose scores mean something, and a small folder of notes to ingest."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

if TYPE_CHECKING:
    from ragbrain.store import Store

WORD = re.compile(r"\w+")


class BagOfWordsEmbeddings(Embeddings):
    """Hashes words into a small normalized vector: texts that share words are close."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self.model_name = f"bag-of-words-{size}"

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.size
        for word in WORD.findall(text.lower()):
            slot = int(hashlib.md5(word.encode()).hexdigest(), 16) % self.size
            vector[slot] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        if not any(vector):
            vector[0] = 1.0  # a query of only punctuation still gets a valid direction
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


class OverlapCritic:
    """A critic that calls a chunk relevant in proportion to the query words it contains."""

    threshold = 0.5

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.distances: list[list[float] | None] = []

    def score(
        self, query: str, passages: Sequence[str], distances: Sequence[float] | None = None
    ) -> list[float]:
        self.calls.append((query, len(passages)))
        self.distances.append(None if distances is None else list(distances))
        words = set(WORD.findall(query.lower()))
        return [len(words & set(WORD.findall(p.lower()))) / max(len(words), 1) for p in passages]


class Named(BagOfWordsEmbeddings):
    """The fake model under a registered model's name (another size: other vectors)."""

    def __init__(self, name: str, size: int = 256) -> None:
        super().__init__(size)
        self.model_name = name


NOTES = {
    "bug/backup.md": "# Nightly backup failed\n\nThe nightly backup to S3 failed because the "
    "credentials expired. We added an alert on the backup age.",
    "bug/cache.md": "# Redis cache stampede\n\nAfter a deploy every key expired at once and the "
    "database melted. We added jitter to the cache TTL.",
    "decision/alembic.md": "# Adopt Alembic\n\nWe use Alembic for schema migrations, one head "
    "only, checked in CI.",
    "decision/redis.md": "# Redis only as a cache\n\nRedis is a cache, never a queue; Celery "
    "uses RabbitMQ.",
    "lesson/timeout.md": "---\ntitle: Statement timeout\n---\n# Set statement_timeout\n\n"
    "Reporting queries need a statement timeout so one slow query cannot hold a connection.",
    "howto/rollback.md": "---\ntype: lesson\n---\n# Roll back a deployment\n\nRun helm rollback "
    "with the previous revision number.",
}


def write_behind_its_back(store: Store, id_: str, text: str, type_: str) -> None:
    """Add a chunk as another writer would: straight into Chroma, so the store's own caches
    (type map, kept vectors) are not told."""
    store.collection.add(
        ids=[id_],
        documents=[text],
        metadatas=[{"type": type_}],
        embeddings=store.embeddings.embed_documents([text]),
    )


class CutOff:
    """A collection whose graph search never reaches one chunk, except when every chunk is
    asked for (a beam as wide as the store still found it in the crash tests)."""

    def __init__(self, collection: Any, lost: str) -> None:
        self._collection, self.lost = collection, lost

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)

    def query(self, **kwargs: Any) -> Any:
        got = self._collection.query(**kwargs)
        if kwargs["n_results"] < self._collection.count():
            for row, ids in enumerate(got["ids"]):
                keep = [i for i, id_ in enumerate(ids) if id_ != self.lost]
                for key in ("ids", "distances"):
                    got[key][row] = [got[key][row][i] for i in keep]
        return got
