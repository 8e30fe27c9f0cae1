"""The BM25 index: tokenized chunks, bm25s-style scores, and a pickle-free file format.

The index keeps, per chunk, its id, its note type and its term ids, so that an update
tokenizes only new chunks and rebuilds the score matrix from the kept terms (about a second
for 100k chunks); and its source, tags and time, so that a path, tag or date filter is a mask
over its positions (``ragbrain.query.facets``). Everything is one ``.npz`` file of plain
arrays, read with ``allow_pickle=False``; the ids, types, sources, tags and vocabulary ride in it
as UTF-8
JSON bytes.

(384 lines, over the package's ~300: ``LexicalIndex`` is one set of parallel per-chunk arrays,
and its lookups, filter masks, updates, search and file format all read the same arrays; the
BM25 arithmetic is in ``bm25``, the tokenizer in ``tokens``.)
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import math
import threading
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ragbrain._util import write_bytes
from ragbrain.errors import RagbrainError
from ragbrain.lexical.bm25 import Bm25Scorer, IntArray, idf, score_matrix
from ragbrain.lexical.tokens import TOKENIZER_VERSION, is_compound, query_tokens, tokenize
from ragbrain.query.facets import Facets, time_of
from ragbrain.query.filters import MODIFIED_KEY, Filters
from ragbrain.query.typematch import fold

# /2 adds each chunk's source, tags and time; a /1 file is rebuilt (with a warning).
FORMAT = "ragbrain-lexical/2"
#: Masks of the last few (types, filters) asked, reused while the index is the same.
MASKS_KEPT = 16

#: Per chunk: its source, its tags as stored (comma-joined) and its time (NaN: none).
Columns = tuple[list[str], list[str], list[float]]


def columns_of(metadatas: Sequence[Mapping[str, Any] | None]) -> Columns:
    """The source, tags and time columns of chunks with this metadata."""
    metas = [meta or {} for meta in metadatas]
    return (
        [str(m.get("source", "")) for m in metas],
        [m["tags"] if isinstance(m.get("tags"), str) else "" for m in metas],
        [time_of(m.get(MODIFIED_KEY)) for m in metas],
    )


class LexicalIndexError(RagbrainError, RuntimeError):
    """A lexical index file that is missing, corrupt, or from another format or tokenizer."""


def fingerprint(ids: Iterable[str]) -> str:
    """A digest of a set of chunk ids (order does not matter)."""
    digest = hashlib.sha256()
    for id_ in sorted(ids):
        digest.update(id_.encode("utf-8") + b"\0")
    return digest.hexdigest()[:32]


@dataclass(frozen=True)
class LexicalHit:
    """One chunk found by BM25."""

    id: str
    score: float


class LexicalIndex:
    """BM25 over chunks, with the note type of each for filtered search.

    Queries are scored as bm25s (``method="lucene"``) scores them (``bm25.Bm25Scorer``) over
    its term-major CSC matrix of precomputed per-(term, chunk) scores, so a query sums a few
    columns. The matrix is built
    by ``bm25.score_matrix`` with vectorized NumPy, since bm25s's own builder loops in Python
    (docs/decisions/measured-costs.md); a test checks it against
    ``bm25s.BM25.index`` on the same tokens.
    """

    def __init__(
        self,
        ids: list[str],
        types: list[str],
        flat: IntArray,
        indptr: npt.NDArray[np.int64],
        vocab: dict[str, int],
        columns: Columns | None = None,
    ) -> None:
        """Index tokenized chunks: chunk ``i``'s term ids are ``flat[indptr[i]:indptr[i + 1]]``;
        ``columns`` are their sources, tags and times (None: unknown, as for no metadata)."""
        if columns is None:
            columns = ([""] * len(ids), [""] * len(ids), [math.nan] * len(ids))
        if not len(ids) == len(types) == len(indptr) - 1 == len(columns[0]):
            raise LexicalIndexError(
                f"ids, types, term offsets and metadata differ in length: {len(ids)}, "
                f"{len(types)}, {len(indptr) - 1}, {len(columns[0])}."
            )
        self.columns = columns
        self._masks: dict[tuple[tuple[str, ...], Filters], npt.NDArray[np.bool_]] = {}
        self._masks_lock = threading.Lock()  # searches run in several threads (MCP server)
        self.ids = ids
        self.types = types
        self.flat = flat
        self.indptr = indptr
        self.vocab = vocab
        self.fingerprint = fingerprint(ids)
        #: The store generation (``ragbrain.store.ledger``) this index is known to match, as
        #: saved by ``store.lexical``; None: unknown (the store's ids decide).
        self.generation: str | None = None
        self._position = {id_: i for i, id_ in enumerate(ids)}
        self._type_codes: dict[str, int] = {}
        self._doc_types = np.array(
            [self._type_codes.setdefault(t, len(self._type_codes)) for t in types], dtype=np.int32
        )
        counts = np.bincount(self._doc_types, minlength=len(self._type_codes))
        self._type_counts = {t: int(counts[code]) for t, code in self._type_codes.items()}
        overlaps = np.zeros(len(vocab), dtype=bool)
        overlaps[[i for term, i in vocab.items() if is_compound(term)]] = True
        data, docs, term_ptr = score_matrix(flat, indptr, len(vocab), overlaps)
        self._bm25 = Bm25Scorer(data, docs, term_ptr, len(ids))
        self._document_frequency = np.diff(term_ptr)

    @classmethod
    def build(
        cls,
        ids: Sequence[str],
        texts: Sequence[str],
        types: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> LexicalIndex:
        """Tokenize ``texts`` and index them under ``ids`` (with their ``metadatas``, for
        path, tag and date filters)."""
        empty = cls([], [], np.zeros(0, np.int32), np.zeros(1, np.int64), {})
        return empty.updated(set(), ids, texts, types, metadatas)

    def __len__(self) -> int:
        """Number of indexed chunks."""
        return len(self.ids)

    def __contains__(self, id_: object) -> bool:
        """Whether a chunk id is indexed."""
        return id_ in self._position

    def type_of(self, id_: str) -> str | None:
        """The note type of an indexed chunk; None for an id the index does not have."""
        position = self._position.get(id_)
        return None if position is None else self.types[position]

    def ids_of_types(self, types: Iterable[str]) -> list[str]:
        """Every indexed chunk id of any of ``types``."""
        codes = [self._type_codes[t] for t in types if t in self._type_codes]
        return [self.ids[i] for i in np.flatnonzero(np.isin(self._doc_types, codes)).tolist()]

    def type_counts(self) -> dict[str, int]:
        """Indexed chunks per type."""
        return dict(self._type_counts)

    @cached_property
    def facets(self) -> Facets:
        """The chunks' sources, tags and times as arrays (built on first use)."""
        return Facets(*self.columns)

    def position(self, id_: str) -> int | None:
        """The chunk's position in the index (and in its masks); None if not indexed."""
        return self._position.get(id_)

    def scope_mask(
        self, types: Sequence[str] | None, filters: Filters | None
    ) -> npt.NDArray[np.bool_]:
        """The chunks (by position) of any of ``types`` (case-insensitively; None: every
        type) that pass ``filters``; the last few masks are kept. Do not modify it."""
        key = (tuple(sorted({fold(t) for t in types or ()})), filters or Filters())
        with self._masks_lock:
            kept = self._masks.get(key)
        if kept is not None:
            return kept
        mask = self.facets.mask(key[1]) if key[1] else np.ones(len(self.ids), dtype=bool)
        for wanted in (key[0], key[1].types):  # the soft type filter, then the hard one
            if wanted:
                codes = [code for t, code in self._type_codes.items() if fold(t) in wanted]
                mask = mask & np.isin(self._doc_types, codes)
        mask.flags.writeable = False  # shared by every caller
        with self._masks_lock:
            while len(self._masks) >= MASKS_KEPT:
                self._masks.pop(next(iter(self._masks)))
            self._masks[key] = mask
        return mask

    def missing_times(self) -> int:
        """How many indexed chunks have no recorded time."""
        return self.facets.missing_times()

    def unmatched(self, filters: Filters) -> list[str]:
        """The path prefixes and tags that match no indexed chunk, with the closest stored
        ones (``Facets.unmatched``)."""
        return self.facets.unmatched(filters)

    def ids_at(self, mask: npt.NDArray[np.bool_]) -> list[str]:
        """The ids of the chunks a mask keeps."""
        return [self.ids[i] for i in np.flatnonzero(mask).tolist()]

    def sources_of(self, ids: Iterable[str]) -> set[str]:
        """The sources of the given indexed chunks."""
        positions = [p for p in (self._position.get(i) for i in ids) if p is not None]
        return {self.columns[0][p] for p in positions}

    def ids_of_sources(self, sources: Iterable[str]) -> list[str]:
        """Every indexed chunk id whose source is one of ``sources``."""
        wanted = set(sources)
        return [i for i, s in zip(self.ids, self.columns[0], strict=True) if s in wanted]

    def with_metadata(self, changed: Mapping[str, Mapping[str, Any]]) -> LexicalIndex:
        """The same index with new sources, tags and times for the ``changed`` chunks (ids
        it does not hold are ignored); terms and scores are shared, nothing is re-tokenized."""
        positions = {
            p: meta for i, meta in changed.items() if (p := self._position.get(i)) is not None
        }
        if not positions:
            return self
        sources, tags, times = list(self.columns[0]), list(self.columns[1]), list(self.columns[2])
        for position, meta in positions.items():
            new = columns_of([meta])
            sources[position], tags[position], times[position] = new[0][0], new[1][0], new[2][0]
        clone = copy.copy(self)
        clone.columns = (sources, tags, times)
        clone.generation = None
        clone._masks = {}
        clone._masks_lock = threading.Lock()
        clone.__dict__.pop("facets", None)
        return clone

    def updated(
        self,
        drop: set[str],
        ids: Sequence[str],
        texts: Sequence[str],
        types: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> LexicalIndex:
        """A new index without the ``drop`` ids and with (or replacing) the given chunks.

        Only the new texts are tokenized; kept chunks reuse their stored terms. ``metadatas``
        (one per new chunk; None: none known) gives their sources, tags and times.
        """
        replaced = drop | set(ids)
        keep = np.array([id_ not in replaced for id_ in self.ids], dtype=bool)
        lengths = np.diff(self.indptr)
        kept_flat = self.flat[np.repeat(keep, lengths)]
        vocab = dict(self.vocab)
        new_terms = [[vocab.setdefault(t, len(vocab)) for t in tokenize(text)] for text in texts]
        flat = np.concatenate(
            [kept_flat, np.array([t for terms in new_terms for t in terms], dtype=np.int32)]
        ).astype(np.int32)
        all_lengths = np.concatenate([lengths[keep], [len(t) for t in new_terms]])
        indptr = np.concatenate([[0], np.cumsum(all_lengths)]).astype(np.int64)
        kept_ids = [id_ for id_, k in zip(self.ids, keep, strict=True) if k]
        kept_types = [t for t, k in zip(self.types, keep, strict=True) if k]
        new = columns_of(list(metadatas) if metadatas is not None else [None] * len(ids))
        kept = keep.tolist()
        sources = [v for v, k in zip(self.columns[0], kept, strict=True) if k] + new[0]
        tags = [v for v, k in zip(self.columns[1], kept, strict=True) if k] + new[1]
        times = [v for v, k in zip(self.columns[2], kept, strict=True) if k] + new[2]
        columns = (sources, tags, times)
        return LexicalIndex(
            kept_ids + list(ids), kept_types + list(types), flat, indptr, vocab, columns
        )

    def query_terms(self, query: str) -> list[int]:
        """The query's term ids that the index knows (unknown terms cannot match), of its
        first ``READ_QUERY_CHARS`` (``query_tokens``), question words aside
        (``ragbrain.lexical.support.question_terms``): "how do I use cirt.net" asks about
        cirt.net, and a chunk holding "how" answers nothing. Measured with the fusion's linear
        share for a named identifier (``known_compounds``): docs/decisions/identifier-fusion.md."""
        from ragbrain.lexical.support import question_terms

        skip = question_terms()
        return [self.vocab[t] for t in query_tokens(query) if t in self.vocab and t not in skip]

    def known_compounds(self, query: str) -> list[str]:
        """The whole compounds of ``query`` (identifiers: ``skip_locked``, ``cirt.net``,
        ``--dry-run``) that some indexed chunk holds."""
        return [t for t in query_tokens(query) if is_compound(t) and t in self.vocab]

    def text_terms(self, text: str) -> set[int]:
        """The term ids of a whole text that the index knows (a chunk it has not indexed);
        a run of a script whose tokenizer is missing gives none."""
        return {self.vocab[t] for t in tokenize(text, skip_missing=True) if t in self.vocab}

    def idf(self, terms: Sequence[int]) -> list[float]:
        """BM25's IDF of each of these term ids (``bm25.idf``), as the scores use it."""
        df = self._document_frequency[np.asarray(terms, dtype=np.int64)]
        return [float(v) for v in idf(len(self.ids), df)]

    def query_mass(self, query: str) -> float:
        """The most ``query`` can score: the IDF sum of its distinct terms the index knows
        (a Lucene term scores below its IDF; a repeated term, counted again by ``search``,
        can lift a score past it)."""
        terms = list(dict.fromkeys(self.query_terms(query)))
        return sum(self.idf(terms)) if terms else 0.0

    def query_weights(
        self, query: str, skip: frozenset[str] = frozenset()
    ) -> tuple[dict[int, float], float]:
        """What each of the query's distinct terms weighs, by rarity: the IDF of each term the
        index knows (by term id), and the mass of them all, a term the index never saw
        counting as the rarest (held by no chunk). A share of that mass is how much of the
        question a text holds (``ragbrain.lexical.support.lexical_support``,
        ``ragbrain.critic.evidence``): a stemmed near-miss of a common word weighs little,
        a rare word of the question the notes lack the most. A whole compound the index never
        saw (``skip_locked`` where the notes write ``skip_locked.md`` or nothing) weighs
        nothing: its words stand for it.

        Returns:
            ``(weights, mass)``; mass 0.0 for a question without index terms.
        """
        words = [
            w
            for w in dict.fromkeys(query_tokens(query))
            if w not in skip and (w in self.vocab or not is_compound(w))
        ]
        known = [self.vocab[w] for w in words if w in self.vocab]
        weights = dict(zip(known, self.idf(known), strict=True)) if known else {}
        unseen = float(idf(len(self.ids), np.zeros(1, dtype=np.int64))[0])
        return weights, sum(weights.values()) + unseen * (len(words) - len(known))

    def terms_of(self, id_: str) -> set[int]:
        """The term ids an indexed chunk holds (empty for an id the index does not have)."""
        position = self._position.get(id_)
        if position is None:
            return set()
        return set(self.flat[self.indptr[position] : self.indptr[position + 1]].tolist())

    def scores(self, terms: Sequence[int]) -> npt.NDArray[np.float32]:
        """BM25 score of every chunk for these query term ids, as bm25s scores them (a
        repeated term counts again)."""
        return self._bm25.get_scores_from_ids(list(terms))

    def search(
        self,
        query: str,
        k: int,
        types: Sequence[str] | None = None,
        filters: Filters | None = None,
    ) -> list[LexicalHit]:
        """The ``k`` best BM25 matches of ``query``, best first; only chunks scoring above 0.

        Args:
            query: Any text; one without index terms (stop words, emoji) finds nothing.
            k: At most this many hits.
            types: Only chunks of these note types (any case); None or empty for all.
            filters: Only chunks that pass these path, tag and date filters.
        """
        terms = self.query_terms(query)
        if not terms or not self.ids:
            return []
        scores = self.scores(terms)
        if filters:
            scores = np.where(self.scope_mask(types, filters), scores, np.float32(0.0))
        elif types:
            # Case-insensitive, as every type filter (see ragbrain.query.typematch).
            wanted = {fold(t) for t in types}
            codes = [code for t, code in self._type_codes.items() if fold(t) in wanted]
            scores = np.where(np.isin(self._doc_types, codes), scores, np.float32(0.0))
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [LexicalHit(self.ids[i], float(scores[i])) for i in top if scores[i] > 0]

    # --- persistence ---
    def save(self, path: Path) -> None:
        """Write the index to ``path`` atomically (a temporary file, then a rename)."""
        header = {
            "format": FORMAT,
            "tokenizer": TOKENIZER_VERSION,
            "fingerprint": self.fingerprint,
            "generation": self.generation,
            "ids": self.ids,
            "types": self.types,
            "sources": self.columns[0],
            "tags": self.columns[1],
            "vocab": sorted(self.vocab, key=self.vocab.__getitem__),
        }
        arrays: dict[str, Any] = {
            "header": np.frombuffer(json.dumps(header, ensure_ascii=False).encode(), np.uint8),
            "indptr": self.indptr,
            "terms": self.flat,
            "modified": np.asarray(self.columns[2], dtype=np.float64),
        }
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        write_bytes(path, buffer.getvalue())

    @classmethod
    def load(cls, path: Path) -> LexicalIndex:
        """Read an index written by ``save``; never unpickles.

        Raises:
            LexicalIndexError: Missing, unreadable, inconsistent, or written by another
                format or tokenizer version.
        """
        if not path.is_file():
            raise LexicalIndexError(f"No lexical index at {path}.")
        try:
            with np.load(path, allow_pickle=False) as data:
                header = json.loads(bytes(data["header"]).decode("utf-8"))
                indptr = np.asarray(data["indptr"], dtype=np.int64)
                flat = np.asarray(data["terms"], dtype=np.int32)
                times = np.asarray(
                    data["modified"] if "modified" in data.files else [], dtype=np.float64
                )
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise LexicalIndexError(f"The lexical index {path} is unreadable: {exc}.") from exc
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise LexicalIndexError(f"The lexical index {path} is not in format {FORMAT}.")
        if header.get("tokenizer") != TOKENIZER_VERSION:
            raise LexicalIndexError(
                f"The lexical index {path} was built by tokenizer version "
                f"{header.get('tokenizer')!r}, not {TOKENIZER_VERSION!r}."
            )
        ids, types, vocab = header.get("ids"), header.get("types"), header.get("vocab")
        sources, tags = header.get("sources"), header.get("tags")
        lists = (ids, types, vocab, sources, tags)
        if not all(isinstance(value, list) for value in lists):
            raise LexicalIndexError(f"The lexical index {path} has a malformed header.")
        assert isinstance(ids, list) and isinstance(types, list) and isinstance(vocab, list)
        assert isinstance(sources, list) and isinstance(tags, list)
        n = len(ids)
        valid = (
            len(types) == n
            and len(sources) == n
            and len(tags) == n
            and times.shape == (n,)
            and indptr.shape == (n + 1,)
            and (n == 0 or (indptr[0] == 0 and indptr[-1] == len(flat)))
            and bool(np.all(np.diff(indptr) >= 0))
            and (len(flat) == 0 or (int(flat.min()) >= 0 and int(flat.max()) < len(vocab)))
        )
        if not valid:
            raise LexicalIndexError(f"The lexical index {path} is inconsistent (corrupt?).")
        columns = (sources, tags, times.tolist())
        index = cls(ids, types, flat, indptr, {t: i for i, t in enumerate(vocab)}, columns)
        if index.fingerprint != header.get("fingerprint"):
            raise LexicalIndexError(f"The lexical index {path} fails its fingerprint check.")
        generation = header.get("generation")
        index.generation = generation if isinstance(generation, str) else None
        return index
