"""vector_search: search with the caller's type filter, dense or fused with BM25."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext, context_of
from ragbrain.lexical.support import question_support
from ragbrain.nodes import Node
from ragbrain.nodes.parts import search_parts
from ragbrain.query.compound import split_compound
from ragbrain.query.filters import Filters
from ragbrain.query.typematch import unknown_types, unknown_types_message
from ragbrain.state import RetrievalState
from ragbrain.store.search import Hit

if TYPE_CHECKING:
    from collections.abc import Callable

    from ragbrain.hybrid import Fused
    from ragbrain.settings import StoreSettings
    from ragbrain.store.lexical import LexicalSearcher
    from ragbrain.store.search import SearchableStore


def make_vector_search(
    store: SearchableStore,
    lexical: LexicalSearcher | None = None,
    settings: Callable[[], StoreSettings] | None = None,
) -> Node:
    """Bind the store (and the lexical index, for hybrid search, and the store's settings:
    the fusion's BM25 power and the languages the dense side reads; None: 1, and every
    language) into the ``vector_search`` node. The output's ``store_settings`` holds them
    (``StoreSettings.summary``), for the trace and Studio.

    It fetches the ``candidates`` that ``choose_depth`` decided (at least the depth). In
    ``hybrid`` mode the search fuses
    dense and BM25 hits; every hit still carries its cosine distance, so the gate reads the
    same kind of number in either mode. A compound question ("X vs Y", "difference between X
    and Y", ...; ``ragbrain.query.compound``) has each part searched as well
    (``ragbrain.nodes.parts``) unless ``split_compound`` is off. Types match case-insensitively; a
    requested type
    that matches no stored one is named in the trace with the closest ones. Path, tag and
    date filters (``ragbrain.query.filters``) apply to both sides; the trace says what they were
    and how many chunks they left. An ingest the store records as unfinished (interrupted,
    killed, or still running) is named in the trace: the store may lack some notes.
    """

    def vector_search(state: RetrievalState, runtime: Runtime[RetrievalContext]) -> dict[str, Any]:
        context = context_of(runtime)
        query, wanted, types = state["query"], state["candidates"], state.get("type_filter")
        filters = Filters.parse(state.get("filters"))
        scope = f"type in {types}" if types else "all types"
        fusions: list[Fused] = []  # each hybrid search's result (a compound question's parts)
        nearest: list[float] = []  # each search's best dense distance: refusal's evidence
        hybrid = context.search_mode == "hybrid" and lexical is not None
        decided = settings() if settings is not None else None
        trust, power = fusion_knobs(decided, context, query) if hybrid else (True, 1.0)

        def search(text: str, k: int) -> list[Hit]:
            if hybrid and lexical is not None:
                from ragbrain.hybrid import hybrid_fusion

                fused = hybrid_fusion(
                    store,
                    lexical.index,
                    text,
                    k,
                    types,
                    trust_dense=trust,
                    filters=filters,
                    dense_share=context.dense_share,
                    power=power,
                )
                fusions.append(fused)
                if fused.nearest is not None:
                    nearest.append(fused.nearest)
                return fused.hits
            found = (
                store.search(text, k, types, filters) if filters else store.search(text, k, types)
            )
            nearest.extend(max(0.0, hit["distance"]) for hit in found[:1])
            return found

        parts = split_compound(query) if context.split_compound else []
        hits = search_parts(store, query, parts, wanted, search) if parts else search(query, wanted)
        if hybrid:
            note = _hybrid_note(fusions[0], scope, len(hits), trust)
        else:
            note = f"vector search ({scope}): {len(hits)} hits"
            if context.search_mode == "hybrid":
                note += " (hybrid asked, but this graph has no lexical index)"
        notes = [note]
        # An ingest that began writing and has not finished: the store may lack notes.
        notes += [entry.note() for entry in store.ledger().unfinished]
        if filters:
            from ragbrain.store.search import scope_note

            notes.append(scope_note(store.scope_index(), types, filters))
        if parts:
            notes.append(
                f"compound question: parts {parts} searched as well as the whole, fused by "
                "RRF, each part's best hit kept"
            )
        asked = [*(types or ()), *(filters.types if filters else ())]
        if asked:
            known = store.known_types()
            unknown = unknown_types(asked, known)
            if unknown:
                notes.append(f"type filter: {unknown_types_message(unknown, known)}")
        # The best-covered search (a compound question's parts each have their own).
        coverage = max((f.weights.bm25_best for f in fusions), default=None) if hybrid else None
        shown = {"store_settings": decided.summary()} if decided is not None else {}
        return {
            **shown,
            "hits": hits,
            "bm25_coverage": coverage,
            "nearest_distance": min(nearest, default=None),
            "lexical_support": question_support(
                fusions[0].support, [f.support for f in fusions[1:]]
            )
            if fusions
            else None,
            "notes": notes,
        }

    return vector_search


def fusion_knobs(
    settings: StoreSettings | None, context: RetrievalContext, query: str
) -> tuple[bool, float]:
    """Whether the dense ranking of ``query`` counts in the fusion (the run's
    ``dense_languages``, else the languages the store's model reads) and the power of BM25's
    share (the store's); without settings, every language and 1."""
    from ragbrain.hybrid import dense_trusted

    languages = context.dense_languages
    if languages is None and settings is not None:
        languages = settings.reads
    return dense_trusted(query, languages), settings.bm25_power if settings else 1.0


def _hybrid_note(fused: Fused, scope: str, count: int, trust: bool) -> str:
    """The trace's line for a hybrid search: what BM25 alone found, and how the two were fused."""
    note = f"hybrid search ({scope}): {count} hits, {fused.lexical_only} found by BM25 only"
    if raised := fused.raised:
        note += (
            f" ({raised} holding every word of the query kept among the candidates "
            "whatever their fused score)"
        )
    if not trust:
        return note + "; the query's language is not the model's, so BM25's order stands"
    return note + f"; {fused.weights.describe()}"
