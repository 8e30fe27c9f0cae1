"""Doctor checks of the chunks: counts and metadata, duplicates, types, link lists, and the
notes' languages against an English-only model."""

from __future__ import annotations

import shlex
from collections import Counter
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.doctor.finding import Finding
from ragbrain.ingest.ignore import ignore_line
from ragbrain.ingest.linklists import LinkStats, link_stats
from ragbrain.lexical.tokens import detect_language
from ragbrain.store.connect import StorePolicy, call

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

_PAGE = 1000
_REQUIRED = ("source", "root", "type", "chunk")


def all_metadata(collection: Collection, policy: StorePolicy) -> dict[str, dict[str, Any]]:
    """Every chunk's metadata by id, with what the checks read from its text (``_empty``,
    ``_links``, ``_language``), read a page at a time."""
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


def check_chunks(
    collection: Collection, policy: StorePolicy
) -> tuple[dict[str, dict[str, Any]], list[Finding]]:
    """The chunk count, then chunks without text or required keys and places held twice;
    returns the metadata too, which the later checks read."""
    metadatas = all_metadata(collection, policy)
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


def check_times(metadatas: dict[str, dict[str, Any]]) -> Finding:
    """Chunks without a recorded time (ingested before ragbrain recorded one): a date filter
    (``--after`` / ``--before``) leaves them out; a new ingest records it, embedding nothing."""
    from ragbrain.query.filters import MODIFIED_KEY

    missing = [m for m in metadatas.values() if not isinstance(m.get(MODIFIED_KEY), int | float)]
    if not missing:
        return Finding("times", True, "every chunk has its note's time (for --after/--before)")
    roots = " ".join(sorted({str(m.get("root")) for m in missing if m.get("root")})) or "NOTES_DIR"
    return Finding(
        "times",
        True,
        f"{len(missing)} of {len(metadatas)} chunks have no recorded time (ingested before "
        "ragbrain recorded one): date filters (--after/--before) leave them out",
        f"`ragbrain ingest {roots}` again records their times without embedding anything",
    )


def list_types(metadatas: dict[str, dict[str, Any]]) -> Finding:
    """Every type with its chunk and file counts; types that differ only in case are named
    (a type filter matches them all, which may or may not be what was meant)."""
    from ragbrain.store.reader import case_variants, count_types

    rows = count_types(metadatas.values())
    listed = ", ".join(f"{r.type or '(none)'} {r.chunks} ({r.files} files)" for r in rows)
    message = f"{len(rows)} types: {listed}"
    variants = case_variants(rows)
    if variants:
        named = "; ".join(" / ".join(group) for group in variants)
        message += f"; differing only in case (a filter matches them together): {named}"
    return Finding("types", True, message)


def check_link_lists(metadatas: dict[str, dict[str, Any]]) -> Finding:
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
        f"add the line `{ignore_line(source)}` to {Path(root) / '.ragbrainignore'}"
        for root, source in lists
    )
    roots = " ".join(sorted({root for root, _ in lists}))
    return Finding(
        "link lists",
        False,
        f"{len(lists)} file(s) are mostly links with little prose, and their chunks crowd out "
        f"the notes they link to: {named}",
        f"{lines}, then run `ragbrain ingest {roots}` (it prunes them)",
        advice=True,
    )


def check_languages(metadatas: dict[str, dict[str, Any]], hint: str, model: str) -> Finding:
    """The store's ``model`` reads English only: say so when most chunks are in another
    language."""
    from ragbrain.models.profiles import chosen_for

    multilingual = chosen_for("multilingual").choice
    languages = Counter(str(m.get("_language", "none")) for m in metadatas.values())
    foreign = sum(n for lang, n in languages.items() if lang not in ("en", "none"))
    if foreign * 2 <= len(metadatas):
        return Finding("embedding model", True, f"{model} (English); the notes are mostly English")
    shares = ", ".join(f"{lang} {n}" for lang, n in languages.most_common(4))
    roots = sorted({str(m.get("root", "")) for m in metadatas.values()})
    notes = shlex.quote(roots[0]) if len(roots) == 1 and roots[0] else "NOTES_DIR"
    if hint.startswith("--server"):  # a server's collection cannot be swapped atomically
        fix = (
            "re-embed the notes with the multilingual model into a new store: `ragbrain "
            f"ingest {notes} --embedding {multilingual} --store NEW_STORE`, then query that store"
        )
    else:
        where = "" if "<folder>" in hint else f" {hint}"  # the default store needs no option
        fix = (
            f"re-embed the store with the multilingual model: `ragbrain ingest {notes}{where} "
            f"--embedding {multilingual} --re-embed` (built beside the old store, which it "
            "replaces only when complete)"
        )
    return Finding(
        "embedding model",
        False,
        f"{model} reads English only, and {foreign} of {len(metadatas)} chunks are "
        f"not English ({shares}): dense search there is noise, BM25 carries it alone",
        fix,
        advice=True,
    )
