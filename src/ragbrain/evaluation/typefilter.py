"""A synthetic type-filter scenario for BEIR data, which has no note types.

Documents get types from topic clusters (k-means on their stored embeddings, fixed seed), so a
type means "documents about similar things", as note types roughly do. A share of the queries is
then asked with a wrong type filter (a type none of its relevant documents has), the rest with
the right one (the type most of its relevant documents have). The scenario measures how much of
the unfiltered recall the type-free fallback wins back, against a run without it.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.errors import InvalidInputError
from ragbrain.evaluation.runner import Query

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from chromadb.api.types import GetResult

    from ragbrain.evaluation.beir import Split
    from ragbrain.store import Store


def _embeddings(page: GetResult) -> list[list[float]]:
    vectors = page["embeddings"]
    if vectors is None:
        raise InvalidInputError("The store returned no embeddings for its chunks.")
    return [[float(x) for x in v] for v in vectors]


def cluster_types(store: Store, n_types: int, seed: int = 0) -> dict[str, str]:
    """Give every chunk a type ``topic-<i>`` by k-means (k = ``n_types``) on its stored vector."""
    import numpy as np

    from ragbrain._util import require

    kmeans = require("sklearn.cluster", extra="eval", feature="Topic types (k-means)").KMeans

    ids: list[str] = []
    vectors: list[list[float]] = []
    for page in store.pages(["embeddings"]):
        ids += page["ids"]
        vectors += [[float(x) for x in v] for v in _embeddings(page)]
    labels = kmeans(n_clusters=n_types, random_state=seed, n_init=4).fit_predict(np.array(vectors))
    return {id_: f"topic-{int(label)}" for id_, label in zip(ids, labels, strict=True)}


def typed_store(store: Store, n_types: int, seed: int = 0) -> tuple[Store, dict[str, str]]:
    """A copy of ``store`` whose chunks carry cluster types, cached beside it.

    The copy is reused when it was finished before (a ``complete.json`` marker).
    """
    from ragbrain.store import Store

    folder = Path(f"{store.location}-types{n_types}-seed{seed}")
    marker = folder / "complete.json"
    copy = Store.open(folder, store.embeddings, create=True)
    if marker.is_file():
        types = json.loads(marker.read_text(encoding="utf-8"))["types"]
        return copy, {str(k): str(v) for k, v in types.items()}
    types = cluster_types(store, n_types, seed)
    for page in store.pages(["documents", "metadatas", "embeddings"]):
        metadatas = [
            {**(m or {}), "type": types[i]}
            for i, m in zip(page["ids"], page["metadatas"] or [], strict=True)
        ]
        copy.upsert(page["ids"], page["documents"] or [], metadatas, _embeddings(page))
    marker.write_text(json.dumps({"types": types}), encoding="utf-8")
    return copy, types


def filtered_queries(
    split: Split, types: Mapping[str, str], wrong_share: float, seed: int = 0
) -> tuple[list[Query], set[str]]:
    """Every query with a type filter; a ``wrong_share`` of them (chosen by seed) wrong.

    Returns:
        The queries, and the ids of those given a wrong filter.
    """
    rng = random.Random(seed)
    all_types = sorted(set(types.values()))
    queries: list[Query] = []
    wrong: set[str] = set()
    for query_id, text in split.queries.items():
        relevant_types = Counter(types[d] for d in split.relevant(query_id) if d in types)
        others = [t for t in all_types if t not in relevant_types]
        if relevant_types and others and rng.random() < wrong_share:
            chosen = rng.choice(others)
            wrong.add(query_id)
        elif relevant_types:
            chosen = relevant_types.most_common(1)[0][0]
        else:
            chosen = rng.choice(all_types)
        queries.append(Query(query_id, text, [chosen]))
    return queries, wrong


def recovery(unfiltered: float, without: float, with_fallback: float) -> float | None:
    """Share of the recall a wrong filter lost that the fallback won back (None if none lost)."""
    lost = unfiltered - without
    return (with_fallback - without) / lost if lost > 0 else None


def subset(queries: Sequence[Query], ids: set[str], keep: bool = True) -> list[Query]:
    """The queries whose id is (``keep``) or is not (``not keep``) in ``ids``."""
    return [q for q in queries if (q.id in ids) == keep]
