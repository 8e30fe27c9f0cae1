"""`ragbrain doctor`: open a store, run the checks in order, and return what each found."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.doctor.chunks import (
    check_chunks,
    check_languages,
    check_link_lists,
    check_times,
    list_types,
)
from ragbrain.doctor.finding import Finding
from ragbrain.doctor.lexical import check_lexical
from ragbrain.doctor.sources import check_sources
from ragbrain.doctor.vectors import (
    check_dimension,
    check_reach,
    check_self_retrieval,
    check_space,
)
from ragbrain.errors import StoreNotFoundError, StoreUnavailableError
from ragbrain.models.embeddings import EMBEDDING_CHOICES, embeddings_for
from ragbrain.models.profiles import profile
from ragbrain.store import COLLECTION, MODEL_KEY, connect
from ragbrain.store.connect import StorePolicy, call
from ragbrain.store.ledger import parse

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings


def diagnose(
    path: str | Path | None = None,
    *,
    server: str | None = None,
    embeddings: Embeddings | None = None,
    store_model: bool = False,
    policy: StorePolicy | None = None,
    sample: int = 20,
) -> list[Finding]:
    """Check the store in ``path`` (or on ``server``) without changing it.

    Checks: it can be reached; its distance space; the dimension and model recorded at
    creation against the vectors and against ``embeddings`` (the model queries will use);
    the chunk counts and metadata (no two chunks claim one place in one file); no root
    inside another and no file under two sources (``doctor.sources``); that a sample
    of chunks finds itself first when its text is searched, and every chunk when its stored
    vector is; the lexical index, when there is one, holds exactly the store's chunks.

    With ``store_model`` and no ``embeddings``, queries use the model the store records
    (as every reader does). A store of an English-only model whose chunks are mostly not
    English gets the command that re-embeds it with the multilingual model.

    Returns:
        One ``Finding`` per check, in order; the checks stop early when the store cannot be
        opened.
    """
    policy = policy or StorePolicy()
    hint = f"--server {server}" if server else f"--store {path or '<folder>'}"
    try:
        client, where, folder = connect(path, server, policy, create=False)
        collection = call(
            policy,
            f"Opening the collection at {where}",
            lambda: client.get_collection(COLLECTION, embedding_function=None),
        )
    except (StoreNotFoundError, StoreUnavailableError) as exc:  # a bad URL still raises
        return [Finding("reach", False, str(exc), f"`ragbrain ingest NOTES_DIR {hint}`")]
    findings = [Finding("reach", True, f"opened {where}")]
    findings.append(check_space(collection))
    recorded = (collection.metadata or {}).get(MODEL_KEY)
    if embeddings is None and store_model and recorded in EMBEDDING_CHOICES.values():
        embeddings = embeddings_for(str(recorded))
    dimension_ok, dim_findings = check_dimension(collection, embeddings, policy)
    findings += dim_findings
    metadatas, count_findings = check_chunks(collection, policy)
    findings += count_findings
    if metadatas:
        findings += check_sources(metadatas, parse(collection.metadata).roots, hint)
    model = profile(str(recorded)) if recorded is not None else None
    if model is not None and model.english_only and metadatas:
        findings.append(check_languages(metadatas, hint, model.name))
    if embeddings is not None and dimension_ok and metadatas:
        findings.append(check_self_retrieval(collection, embeddings, policy, sample))
    if dimension_ok and metadatas:
        findings.append(check_reach(collection, list(metadatas), policy, hint))
    findings.append(check_lexical(folder, set(metadatas)))
    if metadatas:
        findings.append(list_types(metadatas))
        findings.append(check_link_lists(metadatas))
        findings.append(check_times(metadatas))
    return findings
