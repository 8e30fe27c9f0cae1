"""Doctor checks of the store's roots: one root inside another, and files stored twice (under
two sources), each with its fix; and ``repair``, which ``ragbrain doctor --fix`` runs."""

from __future__ import annotations

import os
import shlex
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragbrain.doctor.finding import Finding
from ragbrain.ingest.roots import known_roots, overlaps, settle

if TYPE_CHECKING:
    from ragbrain.store import Store

FIX = "`ragbrain doctor --fix{hint}` merges them (or the next `ragbrain ingest {outer}` does)"


def _fix(outers: Sequence[str], hint: str) -> str:
    where = "" if not hint or "<folder>" in hint else f" {hint}"
    named = " ".join(shlex.quote(o) for o in sorted(set(outers)))
    return (
        FIX.format(hint=where, outer=named)
        + ": the inner root's chunks move under the outer one, with sources relative to it, "
        "and the copies are dropped; nothing is embedded again"
    )


def check_sources(
    metadatas: dict[str, dict[str, Any]], recorded: Sequence[str] | None, hint: str
) -> list[Finding]:
    """Roots inside other roots, and files stored under more than one source.

    Args:
        metadatas: Every chunk's metadata by id.
        recorded: The roots the store records (None: an older store that does not).
        hint: The option that names the store (``--store DIR``), for the fix.
    """
    roots = sorted({*(recorded or ()), *(str(m.get("root")) for m in metadatas.values())} - {""})
    pairs = overlaps(roots)
    # A root's links are resolved, a file's are not (a link to a note is a note of its own).
    real = {root: os.path.realpath(root) for root in roots}
    by_file: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for meta in metadatas.values():
        root, source = str(meta.get("root", "")), str(meta.get("source", ""))
        if root and source:
            by_file[os.path.normpath(os.path.join(real[root], source))].add((root, source))
    doubled = sorted(sorted(places) for places in by_file.values() if len(places) > 1)
    findings = []
    if pairs:
        counts = {
            inner: len({m.get("source") for m in metadatas.values() if m.get("root") == inner})
            for inner, _ in pairs
        }
        named = "; ".join(
            f"{inner} lies inside {outer} ({counts[inner]} files stored from it)"
            for inner, outer in pairs
        )
        findings.append(
            Finding(
                "overlapping roots",
                False,
                f"{len(pairs)} root(s) of this store lie inside another: {named}; a file "
                "under both has two sources",
                _fix([outer for _, outer in pairs], hint),
            )
        )
    if doubled:
        example = " and ".join(f"{source} (from {root})" for root, source in doubled[0])
        findings.append(
            Finding(
                "duplicate sources",
                False,
                f"{len(doubled)} file(s) are stored under more than one source (e.g. "
                f"{example}): each comes back twice in results and counts twice in "
                "`ragbrain types`",
                _fix([o for _, o in pairs] or [min(doubled[0])[0]], hint),
            )
        )
    if not findings:
        findings.append(
            Finding(
                "roots",
                True,
                f"{len(roots)} root(s), none inside another; every file under one source",
            )
        )
    return findings


def repair(store: Store) -> list[str]:
    """Fix what the doctor can fix in place, holding the store's writer lock: merge roots
    that lie inside others (dropping the copies), write back the chunks no search reaches,
    and bring the lexical index in step.

    Returns:
        One line per thing done.
    """
    from ragbrain.store.lexical import sync_lexical

    done = []
    with store.writing():
        settled = settle(store, known_roots(store))
        done += [merge.line() for merge in settled.merges]
        restored = store.restore_missing_vectors(thorough=True)
        if restored:
            done.append(f"{len(restored)} chunks written back to the vector index")
        sync_lexical(store, record={} if settled.merges or restored else None)
    return done
