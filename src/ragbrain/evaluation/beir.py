"""Loading BEIR-layout data sets (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) with checks
that name the file and line of any problem, and ingesting a corpus into a cached store."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.errors import InvalidInputError
from ragbrain.paths import cache_root

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from collections.abc import Callable

    from langchain_core.embeddings import Embeddings

    from ragbrain.store import Store


class DataSetError(InvalidInputError):
    """A BEIR folder with a missing file, a bad line, unknown ids or an empty split."""


@dataclass(frozen=True)
class Doc:
    """One corpus document."""

    id: str
    title: str
    text: str

    @property
    def content(self) -> str:
        """What gets embedded: the title, then the text (as BEIR's dense baselines do)."""
        return f"{self.title}\n{self.text}".strip() if self.title else self.text


@dataclass(frozen=True)
class Split:
    """A data set's corpus with the queries and graded judgements of one split."""

    name: str
    folder: Path
    split: str
    corpus: dict[str, Doc]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    def relevant(self, query_id: str) -> set[str]:
        """Documents judged relevant (score > 0) to a query."""
        return {d for d, s in self.qrels.get(query_id, {}).items() if s > 0}


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise DataSetError(f"{path}: missing.")
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataSetError(f"{path}:{number}: not valid JSON ({exc.msg}).") from exc
            if not isinstance(row, dict) or not isinstance(row.get("_id"), str | int):
                raise DataSetError(f"{path}:{number}: expected an object with an '_id'.")
            rows.append(row)
    return rows


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``query-id<TAB>corpus-id<TAB>score`` lines after a header line."""
    if not path.is_file():
        splits = sorted(p.stem for p in path.parent.glob("*.tsv"))
        raise DataSetError(f"{path}: missing (splits here: {', '.join(splits) or 'none'}).")
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.rstrip("\n").split("\t")
            if (number == 1 and fields[0] == "query-id") or not line.strip():
                continue
            if len(fields) != 3:
                raise DataSetError(f"{path}:{number}: expected 3 tab-separated fields.")
            try:
                score = int(float(fields[2]))
            except ValueError:
                raise DataSetError(
                    f"{path}:{number}: score {fields[2]!r} is not a number."
                ) from None
            qrels.setdefault(fields[0], {})[fields[1]] = score
    if not qrels:
        raise DataSetError(f"{path}: the split is empty.")
    return qrels


def _line_of(path: Path, column: int, value: str) -> int:
    """The first line of a qrels file whose ``column`` holds ``value`` (for error messages)."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) > column and fields[column] == value:
                return number
    return 0


def load_split(folder: str | Path, split: str, *, drop_unknown_docs: bool = False) -> Split:
    """Load a BEIR folder's corpus and one split's queries and judgements.

    ``drop_unknown_docs`` leaves out judgements of documents the corpus lacks (NFCorpus's train
    qrels name 238), with a warning, instead of refusing the split; a query left with no
    judgement is left out too.

    Raises:
        DataSetError: A missing file, a malformed line, a query or document id in the qrels
            that the queries or corpus lack, or an empty split.
    """
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise DataSetError(f"{root}: no such data-set folder.")
    qrels_path = root / "qrels" / f"{split}.tsv"
    qrels = read_qrels(qrels_path)
    corpus = {
        str(r["_id"]): Doc(str(r["_id"]), str(r.get("title") or ""), str(r.get("text") or ""))
        for r in _jsonl(root / "corpus.jsonl")
    }
    all_queries = {str(r["_id"]): str(r.get("text") or "") for r in _jsonl(root / "queries.jsonl")}
    missing_q = sorted(q for q in qrels if q not in all_queries)
    if missing_q:
        raise DataSetError(
            f"{qrels_path}:{_line_of(qrels_path, 0, missing_q[0])}: {len(missing_q)} query ids "
            f"are not in queries.jsonl (first: {missing_q[0]!r})."
        )
    missing_d = sorted({d for docs in qrels.values() for d in docs if d not in corpus})
    if missing_d and drop_unknown_docs:
        log.warning(
            "%s: %d corpus ids are not in corpus.jsonl; their judgements are left out.",
            qrels_path,
            len(missing_d),
        )
        kept = {q: {d: s for d, s in docs.items() if d in corpus} for q, docs in qrels.items()}
        qrels = {q: docs for q, docs in kept.items() if docs}
        if not qrels:
            raise DataSetError(f"{qrels_path}: no judgement names a document of the corpus.")
    elif missing_d:
        raise DataSetError(
            f"{qrels_path}:{_line_of(qrels_path, 1, missing_d[0])}: {len(missing_d)} corpus ids "
            f"are not in corpus.jsonl (first: {missing_d[0]!r})."
        )
    queries = {q: all_queries[q] for q in qrels}
    return Split(root.name, root, split, corpus, queries, qrels)


def split_spec(given: Path, default: str) -> tuple[Path, str]:
    """``DIR`` means DIR's ``default`` split; ``DIR@SPLIT`` names the split for that folder."""
    text = str(given)
    if "@" in text:
        folder, _, split = text.rpartition("@")
        return Path(folder), split
    return given, default


def _fingerprint(corpus_file: Path, model: str) -> str:
    digest = hashlib.sha256(model.encode())
    with corpus_file.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def corpus_store(
    data: Split,
    embeddings: Embeddings,
    *,
    progress: Callable[[int, int], None] | None = None,
    batch: int = 128,
    variant: str = "",
) -> Store:
    """A store holding ``data``'s corpus, one chunk per document (id = corpus id).

    Cached under ``cache_root()`` by corpus content and embedding model (and ``variant``, a
    name that keeps apart stores of the same model built another way; empty, the embeddings'
    own ``variant`` when they have one, as ``OnnxEmbeddings`` do, so each backend's vectors
    are cached apart); an interrupted build resumes where it stopped, and a finished one is
    reused as is.
    """
    from ragbrain.settings import resolve_model
    from ragbrain.store import Store

    model = resolve_model(embeddings).name
    variant = variant or str(getattr(embeddings, "variant", ""))
    key = f"{model}|{variant}" if variant else model
    folder = (
        cache_root() / "beir" / f"{data.name}-{_fingerprint(data.folder / 'corpus.jsonl', key)}"
    )
    store = Store.open(folder, embeddings, create=True)
    done_marker = folder / "complete.json"
    if done_marker.is_file():
        return store
    have = set(store.collection.get(include=[])["ids"])
    todo = [doc for doc in data.corpus.values() if doc.id not in have]
    total = len(data.corpus)
    for start in range(0, len(todo), batch):
        docs = todo[start : start + batch]
        vectors = embeddings.embed_documents([d.content for d in docs])
        metadatas = [
            {
                "source": d.id,
                "root": f"beir:{data.name}",
                "type": "doc",
                "chunk": 0,
                "title": d.title,
            }
            for d in docs
        ]
        store.upsert([d.id for d in docs], [d.content for d in docs], metadatas, vectors)
        if progress:
            progress(total - len(todo) + start + len(docs), total)
    done_marker.write_text(
        json.dumps({"documents": store.count(), "model": model}), encoding="utf-8"
    )
    return store
