"""`ragbrain doctor`: check a store and say what is wrong with it and how to fix it."""

from __future__ import annotations

import math
import shlex
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.embeddings import (
    DEFAULT_EMBEDDING_MODEL,
    EMBEDDING_CHOICES,
    embeddings_for,
    model_name_of,
)
from ragbrain.errors import RagbrainError, StoreNotFoundError, StoreUnavailableError
from ragbrain.lexical.tokens import detect_language
from ragbrain.linklists import LinkStats, link_stats
from ragbrain.store import COLLECTION, DIMENSION_KEY, MODEL_KEY, connect
from ragbrain.store.collection import space as _space
from ragbrain.store.resilience import StorePolicy, call

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection
    from langchain_core.embeddings import Embeddings

_PAGE = 1000
_REQUIRED = ("source", "root", "type", "chunk")


@dataclass(frozen=True)
class Finding:
    """One check's outcome: its name, whether it passed, what was found, and the fix."""

    check: str
    ok: bool
    message: str
    fix: str = ""


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
    the chunk counts and metadata (no two chunks claim one place in one file); that a sample
    of chunks finds itself first when its text is searched; the lexical index, when there is
    one, holds exactly the store's chunks.

    With ``store_model`` and no ``embeddings``, queries use the model the store records
    (as every reader does). A store of all-MiniLM-L6-v2 whose chunks are mostly not English
    gets the command that re-embeds it with multilingual-e5-small.

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
    findings.append(_check_space(collection))
    recorded = (collection.metadata or {}).get(MODEL_KEY)
    if embeddings is None and store_model and recorded in EMBEDDING_CHOICES.values():
        embeddings = embeddings_for(str(recorded))
    dimension_ok, dim_findings = _check_dimension(collection, embeddings, policy)
    findings += dim_findings
    metadatas, count_findings = _check_chunks(collection, policy)
    findings += count_findings
    if recorded == DEFAULT_EMBEDDING_MODEL and metadatas:
        findings.append(_check_languages(metadatas, hint))
    if embeddings is not None and dimension_ok and metadatas:
        findings.append(_check_self_retrieval(collection, embeddings, policy, sample))
    findings.append(_check_lexical(folder, set(metadatas)))
    if metadatas:
        findings.append(_list_types(metadatas))
        findings.append(_check_link_lists(metadatas))
    return findings


def _list_types(metadatas: dict[str, dict[str, Any]]) -> Finding:
    """Every type with its chunk and file counts; types that differ only in case are named
    (a type filter matches them all, which may or may not be what was meant)."""
    from ragbrain.typelist import case_variants, count_types

    rows = count_types(metadatas.values())
    listed = ", ".join(f"{r.type or '(none)'} {r.chunks} ({r.files} files)" for r in rows)
    message = f"{len(rows)} types: {listed}"
    variants = case_variants(rows)
    if variants:
        named = "; ".join(" / ".join(group) for group in variants)
        message += f"; differing only in case (a filter matches them together): {named}"
    return Finding("types", True, message)


def _check_link_lists(metadatas: dict[str, dict[str, Any]]) -> Finding:
    """Files that are mostly links (an index of the notes): their chunks crowd out real notes."""
    by_file: dict[tuple[str, str], LinkStats] = {}
    chunks: Counter[tuple[str, str]] = Counter()
    for meta in metadatas.values():
        place = (str(meta.get("root", "")), str(meta.get("source", "")))
        by_file[place] = by_file.get(place, LinkStats()) + meta["_links"]
        chunks[place] += 1
    lists = sorted(place for place, stats in by_file.items() if stats.is_link_list)
    if not lists:
        return Finding("link lists", True, "no file is mostly links")
    named = ", ".join(f"{source} ({chunks[(root, source)]} chunks)" for root, source in lists[:5])
    lines = "; ".join(
        f"add the line `/{source}` to {Path(root) / '.ragbrainignore'}" for root, source in lists
    )
    roots = " ".join(sorted({root for root, _ in lists}))
    return Finding(
        "link lists",
        False,
        f"{len(lists)} file(s) are mostly links with little prose, and their chunks crowd out "
        f"the notes they link to: {named}",
        f"{lines}, then run `ragbrain ingest {roots}` (it prunes them)",
    )


def _check_languages(metadatas: dict[str, dict[str, Any]], hint: str) -> Finding:
    """all-MiniLM-L6-v2 reads English only: say so when most chunks are in another language."""
    languages = Counter(str(m.get("_language", "none")) for m in metadatas.values())
    foreign = sum(n for lang, n in languages.items() if lang not in ("en", "none"))
    if foreign * 2 <= len(metadatas):
        return Finding("embedding model", True, "all-MiniLM-L6-v2 (English); the notes are")
    shares = ", ".join(f"{lang} {n}" for lang, n in languages.most_common(4))
    roots = sorted({str(m.get("root", "")) for m in metadatas.values()})
    notes = shlex.quote(roots[0]) if len(roots) == 1 and roots[0] else "NOTES_DIR"
    if hint.startswith("--server"):  # a server's collection cannot be swapped atomically
        fix = (
            "re-embed the notes with the multilingual model into a new store: `ragbrain "
            f"ingest {notes} --embedding e5-small --store NEW_STORE`, then query that store"
        )
    else:
        where = "" if "<folder>" in hint else f" {hint}"  # the default store needs no option
        fix = (
            f"re-embed the store with the multilingual model: `ragbrain ingest {notes}{where} "
            "--embedding e5-small --re-embed` (built beside the old store, which it replaces "
            "only when complete)"
        )
    return Finding(
        "embedding model",
        True,
        f"all-MiniLM-L6-v2 reads English only, and {foreign} of {len(metadatas)} chunks are "
        f"not English ({shares}): dense search there is noise, BM25 carries it alone",
        fix,
    )


def _check_space(collection: Collection) -> Finding:
    space = _space(collection)
    if space == "cosine":
        return Finding("space", True, "cosine distance")
    return Finding(
        "space",
        False,
        f"the collection uses the {space!r} distance space; ragbrain needs 'cosine'",
        "`ragbrain ingest NOTES_DIR --convert-space` copies it into a cosine collection",
    )


def _check_dimension(
    collection: Collection, embeddings: Embeddings | None, policy: StorePolicy
) -> tuple[bool, list[Finding]]:
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
    model, dim = model_name_of(embeddings), len(embeddings.embed_query("dimension probe"))
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
    findings.append(Finding("query model", True, f"{model} matches"))
    return True, findings


def _all_metadata(collection: Collection, policy: StorePolicy) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for offset in range(0, 1 << 62, _PAGE):
        page = call(
            policy,
            "Listing chunks",
            partial(collection.get, limit=_PAGE, offset=offset, include=["metadatas", "documents"]),
        )
        docs: list[str | None] = [*(page["documents"] or [])] or [None] * len(page["ids"])
        for id_, meta, doc in zip(page["ids"], page["metadatas"] or [], docs, strict=True):
            found[id_] = {
                **(meta or {}),
                "_empty": not (doc or "").strip(),
                "_links": link_stats(doc or ""),
                "_language": detect_language((doc or "")[:400]),
            }
        if len(page["ids"]) < _PAGE:
            break
    return found


def _check_chunks(
    collection: Collection, policy: StorePolicy
) -> tuple[dict[str, dict[str, Any]], list[Finding]]:
    metadatas = _all_metadata(collection, policy)
    types = Counter(str(m.get("type", "")) for m in metadatas.values())
    summary = ", ".join(f"{t or '(none)'} {n}" for t, n in types.most_common(8))
    findings = [Finding("count", True, f"{len(metadatas)} chunks ({summary or 'empty'})")]
    if not metadatas:
        findings[0] = Finding(
            "count", False, "the store is empty", "`ragbrain ingest NOTES_DIR` fills it"
        )
        return metadatas, findings
    broken = [i for i, m in metadatas.items() if m["_empty"] or any(k not in m for k in _REQUIRED)]
    places = Counter((m.get("root"), m.get("source"), m.get("chunk")) for m in metadatas.values())
    doubled = [place for place, n in places.items() if n > 1]
    roots = {str(m.get("root")) for m in metadatas.values() if m.get("root")}
    if broken:
        findings.append(
            Finding(
                "metadata",
                False,
                f"{len(broken)} chunks lack text or one of {list(_REQUIRED)} (e.g. {broken[0]})",
                "they were not written by `ragbrain ingest`; rebuild the store from the notes",
            )
        )
    if doubled:
        root, source, chunk = doubled[0]
        findings.append(
            Finding(
                "duplicates",
                False,
                f"{len(doubled)} places in files hold more than one chunk (e.g. {source} chunk "
                f"{chunk}): stale chunks of an ingest that was interrupted",
                f"run `ragbrain ingest {root}` again: it deletes the stale ones",
            )
        )
    if not broken and not doubled:
        findings.append(Finding("metadata", True, f"complete, from {len(roots)} folder(s)"))
    return metadatas, findings


def _check_self_retrieval(
    collection: Collection, embeddings: Embeddings, policy: StorePolicy, sample: int
) -> Finding:
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
        lambda: collection.query(query_embeddings=vectors, n_results=3, include=["distances"]),
    )
    missed = []
    for id_, hits, distances in zip(picked, result["ids"], result["distances"] or [], strict=True):
        # A chunk with the very same text elsewhere ties with it: that counts as found.
        tied = [h for h, d in zip(hits, distances, strict=True) if d <= distances[0] + 1e-4]
        if id_ not in tied:
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


def _check_lexical(folder: Path | None, ids: set[str]) -> Finding:
    files = sorted(folder.glob("lexical*.npz")) if folder is not None else []
    if not files:
        return Finding("lexical index", True, "none (nothing to check)")
    try:
        from ragbrain.lexical.index import LexicalIndex

        index = LexicalIndex.load(files[0])
    except (ImportError, RagbrainError, OSError, ValueError) as exc:
        return Finding(
            "lexical index",
            False,
            f"{files[0].name} cannot be read ({exc})",
            "run `ragbrain ingest NOTES_DIR` again to rebuild it",
        )
    missing = [i for i in ids if i not in index]
    if len(index) == len(ids) and not missing:
        return Finding("lexical index", True, f"{files[0].name} holds the same {len(ids)} chunks")
    return Finding(
        "lexical index",
        False,
        f"{files[0].name} holds {len(index)} chunks, the store {len(ids)} ({len(missing)} "
        "missing from it)",
        "run `ragbrain ingest NOTES_DIR` again to bring it in step",
    )
