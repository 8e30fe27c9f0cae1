"""What a caller's langchain-chroma ``Chroma`` needs before the graph runs over it: a lexical
index built once from the collection's own texts (with progress) and kept in step by the
store's searcher, and the gate (shipped for a known model, else calibrated on the store once).
``factory.open_vectorstore`` wraps the store and builds the graph with them."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ragbrain.context import DEFAULT_GATE_THRESHOLD
from ragbrain.gates import SHIPPED_GATES
from ragbrain.lexical.index import LexicalIndex, LexicalIndexError, columns_of
from ragbrain.lexical.tokens import tokenize
from ragbrain.store.lexical import index_path
from ragbrain.store.wrapped import WrappedStore
from ragbrain.vectorstores.gate import self_calibrate

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
#: Chunks whose pseudo-queries calibrate the gate of a store whose model has no shipped one.
CALIBRATION_CHUNKS = 300
#: A store smaller than this keeps the default gate (a cut fit on a few searches means little);
#: it is calibrated when opened again once it has grown.
MIN_CALIBRATION_CHUNKS = 50


def first_index(store: WrappedStore, progress: Progress | None = None) -> LexicalIndex:
    """The store's lexical index as kept on disk, else built from every record's text and
    metadata, a page at a time, reporting ``progress(done, total)``; the searcher brings it
    in step with the store afterwards (``LexicalSearcher``)."""
    path = index_path(store)
    try:
        return LexicalIndex.load(path)
    except LexicalIndexError:
        pass
    started, total = time.perf_counter(), store.count()
    log.info("Building the lexical index of %s (%d chunks, once).", store.location, total)
    ids: list[str] = []
    types: list[str] = []
    metadatas: list[dict[str, object]] = []
    terms: list[int] = []
    lengths: list[int] = []
    vocab: dict[str, int] = {}
    seen: set[str] = set()
    if progress:
        progress(0, total)
    for page in store.pages(["documents", "metadatas"]):
        none: list[Any] = [None] * len(page["ids"])
        texts: list[Any] = list(page["documents"] or none)
        metas: list[Any] = list(page["metadatas"] or none)
        for id_, text, meta in zip(page["ids"], texts, metas, strict=True):
            if id_ in seen:  # a page boundary moved under a concurrent write
                continue
            seen.add(id_)
            found = [vocab.setdefault(t, len(vocab)) for t in tokenize(text or "")]
            ids.append(id_)
            types.append(str((meta or {}).get("type", "")))
            metadatas.append(dict(meta or {}))
            terms += found
            lengths.append(len(found))
        if progress:
            progress(min(len(ids), total), total)
    indptr = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)
    flat = np.asarray(terms, dtype=np.int32)
    index = LexicalIndex(ids, types, flat, indptr, vocab, columns_of(metadatas))
    index.save(path)
    log.info(
        "Lexical index of %s: %d chunks in %.1f s.",
        store.location,
        len(index),
        time.perf_counter() - started,
    )
    return index


def store_gate_note(store: WrappedStore, calibrate: bool) -> str:
    """The gate the graph will use, settled now: the threshold shipped for the store's model,
    one calibrated on this store before (kept beside it), or, with ``calibrate``, one
    calibrated now on ``CALIBRATION_CHUNKS`` of its chunks (``gate.self_calibrate``); else
    the default. Returns the trace's line."""
    model = store.model
    if model in SHIPPED_GATES:
        return f"store: gate {SHIPPED_GATES[model].threshold:.3f}, shipped for {model}"
    kept = store.gate_threshold()
    if kept is not None:
        return f"store: gate {kept:.3f}, calibrated on this collection before ({model})"
    if not calibrate:
        return f"store: {model} has no shipped gate; the context's gate_threshold is used"
    count = store.count()
    if count < MIN_CALIBRATION_CHUNKS:
        return (
            f"store: gate {DEFAULT_GATE_THRESHOLD:.3f} (default): {model} has no shipped gate and "
            f"{count} chunks are too few to calibrate one (at least {MIN_CALIBRATION_CHUNKS})"
        )
    started = time.perf_counter()
    chosen = self_calibrate(store, CALIBRATION_CHUNKS)
    if chosen is None:
        log.warning(
            "The gate of %s keeps the default: no searches to calibrate on.", store.location
        )
        return (
            f"store: gate {DEFAULT_GATE_THRESHOLD:.3f} (default): {model} has no shipped gate "
            "and this store's chunks cannot calibrate one (one source, or no texts)"
        )
    source = f"self-supervised from {store.location}, {model}, {chosen.searches} searches"
    store.set_gate_threshold(chosen.threshold, source)
    log.info(
        "Gate of %s calibrated once: %.3f (F1 %.3f, %.1f s).",
        store.location,
        chosen.threshold,
        chosen.f1,
        time.perf_counter() - started,
    )
    return (
        f"store: gate {chosen.threshold:.3f}, calibrated on this collection once ({model} has "
        f"no shipped gate; {chosen.searches} self-supervised searches)"
    )
