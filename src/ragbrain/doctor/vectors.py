"""Doctor checks of the vectors: the distance space, the recorded model and dimension against
the vectors and the query model, that sampled chunks find themselves first, and that every
chunk's stored vector finds it (the index reaches it)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

from ragbrain.doctor.finding import Finding
from ragbrain.models.backend import runtime_of
from ragbrain.settings import resolve_model
from ragbrain.store import DIMENSION_KEY, MODEL_KEY
from ragbrain.store.connect import StorePolicy, call
from ragbrain.store.connect import space as _space
from ragbrain.store.processes import unreachable_vectors

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection
    from langchain_core.embeddings import Embeddings


def check_space(collection: Collection) -> Finding:
    """The collection's distance space is cosine (ragbrain's scores and gate assume it)."""
    space = _space(collection)
    if space == "cosine":
        return Finding("space", True, "cosine distance")
    return Finding(
        "space",
        False,
        f"the collection uses the {space!r} distance space; ragbrain needs 'cosine'",
        "`ragbrain ingest NOTES_DIR --convert-space` copies it into a cosine collection",
    )


def check_dimension(
    collection: Collection, embeddings: Embeddings | None, policy: StorePolicy
) -> tuple[bool, list[Finding]]:
    """The recorded model and dimension against the vectors and ``embeddings``; the bool says
    whether queries can be searched (the dimensions agree)."""
    meta = collection.metadata or {}
    recorded_model, recorded_dim = meta.get(MODEL_KEY), meta.get(DIMENSION_KEY)
    peek = call(policy, "Reading a sample", lambda: collection.peek(5))
    vectors = peek["embeddings"] if peek["embeddings"] is not None else []
    actual = {len(v) for v in vectors}
    findings: list[Finding] = []
    if recorded_dim is None or recorded_model is None:
        findings.append(
            Finding(
                "recorded model",
                False,
                "the store does not record the model and dimension it was built with",
                "rebuild it with this version: `ragbrain ingest NOTES_DIR` into a new store",
            )
        )
    else:
        findings.append(
            Finding("recorded model", True, f"{recorded_model}, {recorded_dim} dimensions")
        )
    if recorded_dim is not None and actual - {int(str(recorded_dim))}:
        findings.append(
            Finding(
                "dimension",
                False,
                f"vectors of {sorted(actual)} dimensions in a store recorded as {recorded_dim}",
                "rebuild the store from the notes: `ragbrain ingest NOTES_DIR` into a new store",
            )
        )
        return False, findings
    if embeddings is None:
        return True, findings
    model, dim = resolve_model(embeddings).name, len(embeddings.embed_query("dimension probe"))
    expected = int(str(recorded_dim)) if recorded_dim is not None else next(iter(actual), dim)
    if dim != expected:
        findings.append(
            Finding(
                "query model",
                False,
                f"queries are embedded by {model} ({dim} dimensions); the store holds "
                f"{expected}-dimensional vectors from {recorded_model or 'an unknown model'}",
                "query with the model the store was built with, or ingest into a new store",
            )
        )
        return False, findings
    if recorded_model not in (None, model):
        findings.append(
            Finding(
                "query model",
                False,
                f"queries are embedded by {model}, the chunks by {recorded_model} (same "
                "dimension, different model: distances mean little)",
                "query with the store's model, or ingest into a new store with this one",
            )
        )
        return True, findings
    findings.append(Finding("query model", True, f"{model} matches, on {runtime_of(embeddings)}"))
    return True, findings


def check_self_retrieval(
    collection: Collection, embeddings: Embeddings, policy: StorePolicy, sample: int
) -> Finding:
    """About ``sample`` chunks, spread over the ids, searched by their own text come first."""
    ids = sorted(call(policy, "Listing ids", lambda: collection.get(include=[]))["ids"])
    picked = ids[:: max(1, math.ceil(len(ids) / max(sample, 1)))][:sample]
    got = call(policy, "Reading the sample", lambda: collection.get(ids=picked))
    texts = dict(zip(got["ids"], got["documents"] or [], strict=True))
    vectors: list[Sequence[float]] = list(
        embeddings.embed_documents([texts[i] or "" for i in picked])
    )
    result = call(
        policy,
        "Searching the sample",
        lambda: collection.query(
            query_embeddings=vectors, n_results=3, include=["distances", "documents"]
        ),
    )
    missed = []
    documents = result["documents"] or [[] for _ in picked]
    found = zip(picked, result["ids"], result["distances"] or [], documents, strict=True)
    for id_, hits, distances, texts_found in found:
        # A chunk with the very same text elsewhere (a copy in another note, or the same file
        # stored under two sources: see `duplicate sources`) ties with it: that counts as
        # found, even when the model's vectors for one text differ a little from batch to
        # batch (int8 activations are quantized per batch).
        tied = [h for h, d in zip(hits, distances, strict=True) if d <= distances[0] + 1e-4]
        if id_ not in tied and (not texts_found or texts_found[0] != texts[id_]):
            missed.append(id_)
    if not missed:
        return Finding("self-retrieval", True, f"{len(picked)}/{len(picked)} sampled chunks")
    return Finding(
        "self-retrieval",
        False,
        f"{len(missed)} of {len(picked)} sampled chunks are not found first by their own text "
        f"(e.g. {missed[0]}): the vectors do not come from this model, or the index is damaged",
        "rebuild the store with the model you query with: `ragbrain ingest NOTES_DIR` into a "
        "new store",
    )


#: Beyond this many chunks the reach check searches an even spread of this many (one search
#: per chunk: docs/decisions/measured-costs.md).
REACH_LIMIT = 20_000


def check_reach(
    collection: Collection, ids: Sequence[str], policy: StorePolicy, hint: str
) -> Finding:
    """Every chunk (or ``REACH_LIMIT`` of them, evenly spread) searched by its own stored
    vector is found: none is in Chroma's index but out of its graph's reach."""
    ordered = sorted(ids)
    picked = ordered[:: max(1, math.ceil(len(ordered) / REACH_LIMIT))]
    lost = unreachable_vectors(collection, picked, partial(call, policy))
    sampled = len(picked) < len(ordered)
    which = f"{len(picked)} {'sampled ' if sampled else ''}chunks"
    if not lost:
        return Finding(
            "index reach", True, f"{'' if sampled else 'all '}{which} found by their own vectors"
        )
    return Finding(
        "index reach",
        False,
        f"{len(lost)} of {which} are in the vector index but no search reaches them "
        f"(e.g. {lost[0]}): Chroma's graph lost them",
        f"`ragbrain ingest NOTES_DIR {hint} --check-index` writes them back",
    )
