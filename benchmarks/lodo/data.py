"""What `benchmarks.lodo` measures from: each query's candidate lists and the critic's inputs.

For a seeded sample of a split's queries, each query's dense top ``DEEP`` (cosine distances)
and BM25 top ``DEEP`` over the data set's cached store, every candidate's distance, the
query's adaptive depth and whether the dense ranking counts in the fusion (``dense_trusted``)
are read once and cached (JSON under the cache folder). The critic's per-pair inputs (model
logit and lexical features, which do not depend on the list) are computed only for the pairs
a pipeline variant judges, and cached the same way. Every variant (fusion weights, depths,
layers, thresholds, removals of the missing-answer scenario) is then a cheap recombination.

The lists are read ``DEEP`` deep so that the missing-answer scenario can drop the removed
documents and still fuse ``CANDIDATES`` from each side, as a pruned store would (BM25's
statistics are those of the full corpus then: a small difference to a pruned index).
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common import say
from ragbrain.evaluation import Split, write_json
from ragbrain.paths import cache_root

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ragbrain import TransformerCritic
    from ragbrain.lexical.index import LexicalIndex

DEEP = 60
#: 2 adds BM25's scores and the query terms' IDF and which of them BM25's top hits hold.
VERSION = 2
#: How many of BM25's top hits record which query terms they hold.
TERMS_OF_TOP = 10
_ROWS: dict[Path, dict[str, list[float]]] = {}


@dataclass(frozen=True)
class Record:
    """One query's candidates: dense (id, distance) and BM25 ids, best first; BM25's scores
    (aligned with ``bm25``), the IDF of each distinct query term the index knows, and for
    each of BM25's top ``TERMS_OF_TOP`` hits the positions (in ``query_idf``) of the terms it
    holds."""

    id: str
    text: str
    qrels: dict[str, int]
    depth: int
    trust: bool
    dense: list[tuple[str, float]]
    bm25: list[str]
    distance: dict[str, float]
    bm25_scores: list[float] = field(default_factory=list)
    query_idf: list[float] = field(default_factory=list)
    bm25_terms: list[list[int]] = field(default_factory=list)
    # The store model's ``BM25_POWER`` (set on loading, not cached: it is the product's).
    bm25_power: float = 1.0

    @property
    def relevant(self) -> set[str]:
        """Documents judged relevant (score > 0)."""
        return {d for d, s in self.qrels.items() if s > 0}


@dataclass
class SetData:
    """A data set's sampled queries of one role (test, or fit), with their critic rows."""

    name: str
    role: str
    records: list[Record]
    corpus: dict[str, str]
    rows: dict[str, list[float]]  # "query\tdoc" -> the critic's per-pair inputs
    rows_path: Path


def _sample(ids: Sequence[str], n: int, seed: int) -> list[str]:
    ordered = sorted(ids)
    return sorted(random.Random(seed).sample(ordered, min(n, len(ordered))))


def _pooled(root: Path, name: str, splits: Sequence[str]) -> tuple[list[Split], dict[str, Any]]:
    """The splits, and their queries with a relevant document, judgements pooled."""
    from ragbrain.evaluation import load_split

    loaded = [load_split(root / name, s, drop_unknown_docs=True) for s in splits]
    qrels: dict[str, dict[str, int]] = {}
    for split in loaded:
        for q, judged in split.qrels.items():
            if any(s > 0 for s in judged.values()):
                qrels.setdefault(q, {}).update(judged)
    return loaded, qrels


def subcorpus(
    root: Path, name: str, roles: Sequence[tuple[Sequence[str], int]], size: int, seed: int = 0
) -> Path:
    """A smaller copy of ``name`` (under the cache folder) for a corpus too big to embed here:
    every document judged for the queries each role samples, plus seeded random others up
    to ``size``; only those queries and their judgements. ``load_role`` on it (same sizes)
    samples the same queries. Fewer distractors make retrieval easier: results on it are
    labelled so.

    Returns:
        The root folder holding the copy (``<root>/<name>``).
    """
    folder = cache_root() / "lodo-subcorpus" / f"{size}" / name
    if (folder / "complete.json").is_file():
        return folder.parent
    keep: set[str] = set()
    picked: dict[str, dict[str, dict[str, int]]] = {}
    texts: dict[str, str] = {}
    corpus = {}
    for splits, n in roles:
        loaded, qrels = _pooled(root, name, splits)
        chosen = set(_sample(list(qrels), n, seed))
        corpus = loaded[0].corpus
        for split in loaded:
            lines = {q: j for q, j in split.qrels.items() if q in chosen}
            picked[split.split] = lines
            texts.update({q: split.queries[q] for q in lines})
            keep |= {d for judged in lines.values() for d in judged if d in corpus}
    others = sorted(set(corpus) - keep)
    keep |= set(random.Random(seed).sample(others, max(0, min(len(others), size - len(keep)))))
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for doc in corpus.values():
            if doc.id in keep:
                row = {"_id": doc.id, "title": doc.title, "text": doc.text}
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as out:
        for query, text in texts.items():
            out.write(json.dumps({"_id": query, "text": text}, ensure_ascii=False) + "\n")
    for split_name, lines in picked.items():
        rows = [f"{q}\t{d}\t{s}" for q, judged in lines.items() for d, s in judged.items()]
        text = "query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n"
        (folder / "qrels" / f"{split_name}.tsv").write_text(text, encoding="utf-8")
    (folder / "complete.json").write_text(json.dumps({"documents": len(keep)}), encoding="utf-8")
    return folder.parent


def rows_key_of(critic: TransformerCritic) -> str:
    """What the critic's per-pair inputs depend on: its weights, features and how it cuts and
    quantizes pairs (not its layers and thresholds, which every variant here refits)."""
    from ragbrain.critic.model import INPUTS_VERSION

    digest = hashlib.sha256()
    for name in ("model.safetensors", "features.safetensors"):
        path = critic.folder / name
        digest.update(path.read_bytes() if path.is_file() else b"-")
    settings: dict[str, object] = {
        k: critic.calibration.get(k) for k in ("max_length", "quantize", "base")
    }
    settings["inputs"] = INPUTS_VERSION
    digest.update(json.dumps(settings, sort_keys=True).encode())
    return digest.hexdigest()[:12]


def load_role(
    root: Path,
    name: str,
    splits: Sequence[str],
    n: int,
    critic: TransformerCritic,
    seed: int = 0,
    model: str | None = None,
) -> SetData:
    """The sampled queries of ``name``'s ``splits`` (pooled), their candidates and rows, over
    a store of the embedding ``model`` (None: all-MiniLM-L6-v2).

    Raises:
        DataSetError: A bad data folder.
    """
    from ragbrain import RetrievalContext
    from ragbrain.evaluation import corpus_store
    from ragbrain.hybrid import dense_trusted
    from ragbrain.lexical.tokens import TOKENIZER_VERSION
    from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL, embeddings_for, model_reads
    from ragbrain.nodes.depth import complexity, depth_for
    from ragbrain.store.lexical import sync_lexical

    loaded, qrels = _pooled(root, name, splits)
    queries = {q: t for split in loaded for q, t in split.queries.items() if q in qrels}
    role = "+".join(splits)
    ids = _sample(list(qrels), n, seed)
    tag = f"{VERSION}|{root.resolve()}|{name}|{role}|{n}|{seed}|{DEEP}|lexical {TOKENIZER_VERSION}"
    if model not in (None, DEFAULT_EMBEDDING_MODEL):
        tag += f"|{model}"
    key = hashlib.sha256(tag.encode()).hexdigest()[:12]
    folder = cache_root() / "lodo"
    path = folder / f"{name}-{role}-{key}.json"
    rows_key = rows_key_of(critic)
    rows_path = folder / f"{name}-rows-{rows_key}.json"
    corpus = {d: doc.content for d, doc in loaded[0].corpus.items()}
    if rows_path not in _ROWS:  # one table per data set, shared by its roles
        text = rows_path.read_text(encoding="utf-8") if rows_path.is_file() else "{}"
        _ROWS[rows_path] = json.loads(text)
    rows = _ROWS[rows_path]
    if path.is_file():
        raw = json.loads(path.read_text(encoding="utf-8"))
        records = [Record(**{**r, "dense": [tuple(p) for p in r["dense"]]}) for r in raw["records"]]
        return SetData(name, role, _powered(records, model), corpus, rows, rows_path)
    say(f"candidates: {name} {role} ({len(ids)} queries)")
    store = corpus_store(loaded[0], embeddings_for(model), progress=_progress(name))
    index = sync_lexical(store)
    context = RetrievalContext()
    records = []
    for query in ids:
        text = queries[query]
        dense = [(h["id"], h["distance"]) for h in store.search(text, DEEP)]
        lexical = index.search(text, DEEP)
        bm25 = [h.id for h in lexical]
        distance = dict(dense)
        extra = [d for d in bm25 if d not in distance]
        distance.update({h["id"]: h["distance"] for h in store.hits_by_id(text, extra)})
        lexical = [h for h in lexical if h.id in distance]
        idf, held = query_terms(index, text, [h.id for h in lexical[:TERMS_OF_TOP]])
        records.append(
            Record(
                id=query,
                text=text,
                qrels=qrels[query],
                depth=depth_for(complexity(text, context)[0], context),
                trust=dense_trusted(text, model_reads(store.model)),
                dense=dense,
                bm25=[h.id for h in lexical],
                distance=distance,
                bm25_scores=[h.score for h in lexical],
                query_idf=idf,
                bm25_terms=held,
            )
        )
    write_json(path, {"records": [r.__dict__ for r in records]})
    return SetData(name, role, _powered(records, model), corpus, rows, rows_path)


def _powered(records: list[Record], model: str | None) -> list[Record]:
    """``records`` with the fusion's BM25 power of the stores' model."""
    from dataclasses import replace

    from ragbrain.hybrid import bm25_power
    from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL

    power = bm25_power(model or DEFAULT_EMBEDDING_MODEL)
    return [replace(r, bm25_power=power) for r in records]


def query_terms(
    index: LexicalIndex, query: str, ids: Sequence[str]
) -> tuple[list[float], list[list[int]]]:
    """The IDF of each distinct query term the index knows (first appearance order), and for
    each of ``ids`` the positions of the terms it holds."""
    terms = list(dict.fromkeys(index.query_terms(query)))
    held = [[i for i, t in enumerate(terms) if t in index.terms_of(id_)] for id_ in ids]
    return index.idf(terms), held


def _progress(name: str) -> Any:
    """A progress callback for ``corpus_store`` that says how far the embedding is."""
    last = [0]

    def report(done: int, total: int) -> None:
        if done - last[0] >= 500 or done == total:
            last[0] = done
            say(f"  embedding {name}: {done}/{total}")

    return report


def ensure_rows(data: SetData, lists: dict[str, list[str]], critic: TransformerCritic) -> int:
    """Compute (and cache) the critic's per-pair inputs of every (query, doc) in ``lists``.

    Returns:
        How many pairs were computed now.
    """
    by_id = {r.id: r for r in data.records}
    todo = {q: [d for d in docs if f"{q}\t{d}" not in data.rows] for q, docs in lists.items()}
    todo = {q: docs for q, docs in todo.items() if docs}
    done = 0
    for number, (query, docs) in enumerate(sorted(todo.items()), start=1):
        x = critic.inputs(by_id[query].text, [data.corpus[d] for d in docs])
        for doc, row in zip(docs, x.tolist(), strict=True):
            data.rows[f"{query}\t{doc}"] = [float(v) for v in row]
        done += len(docs)
        if number % 100 == 0:
            say(f"critic inputs: {data.name} {data.role} {number}/{len(todo)} queries")
            write_json(data.rows_path, data.rows)
    if done:
        write_json(data.rows_path, data.rows)
    return done


def rows_of(data: SetData, query: str, docs: Sequence[str]) -> Any:
    """The critic's per-pair inputs of ``docs`` for ``query`` as a tensor (n, columns)."""
    import torch

    return torch.tensor([data.rows[f"{query}\t{d}"] for d in docs], dtype=torch.float32)
