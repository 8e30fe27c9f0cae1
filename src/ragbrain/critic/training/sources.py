"""Where training pairs come from: BEIR train splits (qrels positives, mined negatives) or a
user's own notes (`--from-corpus`: pseudo-queries from titles, headings and first sentences)."""

from __future__ import annotations

import random
import re
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.critic.training.data import (
    Group,
    NoTrainingDataError,
    QueryCandidates,
    as_retrieved,
    check_usable,
    groups,
    is_dev,
    mine,
)
from ragbrain.critic.training.recipe import Recipe
from ragbrain.errors import InvalidInputError

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ragbrain.evaluation.beir import Split
    from ragbrain.store import Store

Stage = Callable[[str], Callable[[int, int], None] | None]
_HEADING = re.compile(r"^#{1,6}\s+(.+)$", re.MULTILINE)
_SENTENCE = re.compile(r"(.+?[.!?。])(\s|$)", re.DOTALL)


@dataclass
class TrainingSet:
    """Everything training needs: groups, dev queries, corpus texts (IDF) and provenance."""

    train: list[Group] = field(default_factory=list)
    dev: list[QueryCandidates] = field(default_factory=list)  # mined: fits the logistic layer
    dev_seen: list[QueryCandidates] = field(default_factory=list)  # retrieved: the threshold
    corpus_texts: list[str] = field(default_factory=list)
    sources: dict[str, dict[str, int | str]] = field(default_factory=dict)


def data_folder(given: Path) -> tuple[Path, str]:
    """``DIR`` means DIR's train split; ``DIR@SPLIT`` another non-test split (NFCorpus's
    ``dev``, for instance, where ``train`` fails validation).

    Raises:
        InvalidInputError: The split named is ``test``.
    """
    from ragbrain.evaluation.beir import split_spec

    folder, split = split_spec(given, "train")
    if split == "test":
        raise InvalidInputError(
            f"{given}: a critic never learns from a test split (it trains and calibrates on "
            "train or dev)."
        )
    return folder, split


def test_relevant_docs(folder: Path) -> frozenset[str]:
    """Documents judged relevant in the folder's test split (to train without them)."""
    from ragbrain.evaluation.beir import read_qrels

    path = folder / "qrels" / "test.tsv"
    if not path.is_file():
        return frozenset()
    return frozenset(d for docs in read_qrels(path).values() for d, s in docs.items() if s > 0)


def sample_queries(queries: Iterable[str], recipe: Recipe, seed: int) -> list[str]:
    """Up to ``recipe.max_queries`` of the query ids, sampled with ``seed``, sorted."""
    ids = sorted(queries)
    return sorted(random.Random(seed).sample(ids, min(recipe.max_queries, len(ids))))


def _open(given: Path, embeddings: Embeddings, stage: Stage) -> tuple[Path, str, Split, Store]:
    """A ``--data`` argument's folder, split name, split and cached corpus store."""
    from ragbrain.evaluation.beir import corpus_store, load_split

    folder, split_name = data_folder(given)
    # A judgement of a document the corpus lacks can be no training pair: left out.
    split = load_split(folder, split_name, drop_unknown_docs=True)
    store = corpus_store(split, embeddings, progress=stage(f"embedding {split.name}"))
    return folder, split_name, split, store


def from_beir(
    folders: Sequence[Path],
    embeddings: Embeddings,
    recipe: Recipe,
    *,
    exclude_test_docs: bool = False,
    stage: Stage = lambda _label: None,
) -> TrainingSet:
    """Mine groups from each folder's train split (``DIR@SPLIT``: another non-test split) with
    the project's cached corpus store.

    Raises:
        DataSetError: A folder is not a valid BEIR folder with a train split.
        NoTrainingDataError: A folder gives no positives or no usable pairs.
    """
    out = TrainingSet()
    for index, given in enumerate(folders):
        folder, split_name, split, store = _open(given, embeddings, stage)
        excluded = test_relevant_docs(folder) if exclude_test_docs else frozenset()
        ids = sample_queries(split.queries, recipe, recipe.seed + index)
        mined = mine(
            split,
            store,
            ids,
            k=recipe.mine_k,
            exclude_docs=excluded,
            progress=stage(f"mining {split.name}"),
        )
        dev = [m for m in mined if is_dev(split.name, m.query_id, recipe.dev_fraction, recipe.seed)]
        train = [m for m in mined if m not in dev]
        # The threshold is chosen on what the critic will judge: the retriever's hybrid top
        # eval_k of every dev query, also those with no relevant chunk there.
        seen = as_retrieved(split, store, dev, k=recipe.eval_k, exclude_docs=excluded)
        texts = [d.content for d in split.corpus.values() if d.id not in excluded]
        made = groups(
            train,
            texts,
            hard=recipe.hard_negatives,
            random_negatives=recipe.random_negatives,
            positives_per_query=recipe.positives_per_query,
            seed=recipe.seed + index,
        )
        check_usable(str(folder), mined, made)
        out.train += made
        out.dev += [m for m in dev if any(c.relevant for c in m.candidates[: recipe.eval_k])]
        out.dev_seen += seen
        out.corpus_texts += texts
        out.sources[split.name] = {
            "folder": str(folder),
            "split": split_name,
            "groups": len(made),
            "dev_queries": len(dev),
            "excluded_test_relevant_docs": len(excluded & set(split.corpus)),
        }
    if not out.dev or not any(c.relevant for m in out.dev_seen for c in m.candidates):
        raise NoTrainingDataError("No dev query has a relevant chunk among its candidates.")
    return out


def pseudo_query(text: str, title: str) -> str | None:
    """A query a user might have typed for this chunk: its heading, its title, else its first
    sentence; None when the chunk is too short to leave anything after removing it."""
    heading = _HEADING.search(text)
    if heading:
        return heading.group(1).strip()
    if title and title.strip():
        return title.strip()
    sentence = _SENTENCE.match(text.strip())
    if sentence and len(sentence.group(1)) < len(text.strip()) * 0.6:
        return sentence.group(1).strip()
    return None


#: One data set's missing-answer scenario for ``critic calibrate``: each query (answerable or
#: not) with its candidates over the store without the removed documents.
ScenarioLists = list[tuple[bool, QueryCandidates]]


def scenario_lists(
    folders: Sequence[Path],
    embeddings: Embeddings,
    recipe: Recipe,
    *,
    stage: Stage = lambda _label: None,
) -> dict[str, ScenarioLists]:
    """What ``critic calibrate`` fits the abstention cuts on: the queries ``retrieved_lists``
    samples, in the missing-answer scenario (``ragbrain.evaluation.missing.split_missing``: a
    seeded half lose every relevant document, their neighbours stay), each with the hybrid
    top ``eval_k`` over the store without the removed documents and BM25's coverage there.

    Raises:
        DataSetError: A folder is not a valid BEIR folder with that split.
        InvalidInputError: A folder names its test split.
    """
    from ragbrain.evaluation.missing import split_missing

    out: dict[str, ScenarioLists] = {}
    for index, given in enumerate(folders):
        _, _, split, store = _open(given, embeddings, stage)
        sampled = sample_queries(split.queries, recipe, recipe.seed + index)
        ids = [q for q in sampled if split.relevant(q)]  # the scenario needs a relevant doc
        if not ids:
            continue
        scenario = split_missing(split.qrels, ids, seed=recipe.seed)
        queries = [QueryCandidates(split.name, q, split.queries[q], (), (), ()) for q in ids]
        pruned = as_retrieved(split, store, queries, k=recipe.eval_k, exclude_docs=scenario.removed)
        out[split.name] = [(item.query_id in scenario.answerable, item) for item in pruned]
    return out


def retrieved_lists(
    folders: Sequence[Path],
    embeddings: Embeddings,
    recipe: Recipe,
    *,
    stage: Stage = lambda _label: None,
    dev_only: bool = False,
) -> tuple[list[QueryCandidates], dict[str, dict[str, int | str]]]:
    """What ``critic calibrate`` fits a critic's layers on: for up to ``recipe.max_queries``
    queries of each folder's train split (``DIR@SPLIT``: another non-test split), the
    retriever's hybrid top ``eval_k`` with the qrels' relevance, and where they came from.
    With ``dev_only``, only the queries ``critic train`` holds apart as dev with the same
    recipe (``is_dev``): those a critic trained on these folders never trained on.

    Raises:
        DataSetError: A folder is not a valid BEIR folder with that split.
        InvalidInputError: A folder names its test split.
    """
    lists: list[QueryCandidates] = []
    sources: dict[str, dict[str, int | str]] = {}
    for index, given in enumerate(folders):
        folder, split_name, split, store = _open(given, embeddings, stage)
        ids = sample_queries(split.queries, recipe, recipe.seed + index)
        if dev_only:
            ids = [q for q in ids if is_dev(split.name, q, recipe.dev_fraction, recipe.seed)]
        queries = [QueryCandidates(split.name, q, split.queries[q], (), (), ()) for q in ids]
        lists += as_retrieved(split, store, queries, k=recipe.eval_k)
        sources[split.name] = {"folder": str(folder), "split": split_name, "queries": len(ids)}
    return lists, sources


def from_corpus(
    folder: Path, embeddings: Embeddings, recipe: Recipe, *, stage: Stage = lambda _label: None
) -> TrainingSet:
    """Self-supervised pairs from a folder of notes: each chunk's pseudo-query (with the text it
    came from removed from the chunk) against hard negatives mined from the same notes.

    At most ``recipe.max_queries`` pseudo-queries are mined (sampled with the recipe's seed),
    as for a BEIR folder: training time grows with the pairs (803 groups took 7.7 minutes for
    the shipped critic), so every chunk of a large folder would take hours.

    Raises:
        NoTrainingDataError: The folder yields too few chunks with a usable pseudo-query.
    """
    from ragbrain.evaluation.beir import Doc, Split
    from ragbrain.ingest import ingest
    from ragbrain.store import Store

    with tempfile.TemporaryDirectory(prefix="ragbrain-critic-") as tmp:
        store = Store.open(tmp, embeddings, create=True)
        ingest(folder, store, progress=stage("embedding notes"))
        corpus, queries, qrels = {}, {}, {}
        records = (
            record
            for page in store.pages(["documents", "metadatas"])
            for record in zip(
                page["ids"], page["documents"] or [], page["metadatas"] or [], strict=True
            )
        )
        for id_, text, meta in records:
            title = (
                str((meta or {}).get("title", ""))
                if str((meta or {}).get("chunk", 0)) == "0"
                else ""
            )
            query = pseudo_query(text or "", title)
            # The positive loses the words its pseudo-query copied, so it is not a copy task.
            body = (text or "").replace(query, " ", 1) if query else (text or "")
            corpus[id_] = Doc(id_, "", body)
            if query:
                queries[f"q-{id_}"] = query
                qrels[f"q-{id_}"] = {id_: 1}
        if len(queries) < 4:
            raise NoTrainingDataError(
                f"{folder}: only {len(queries)} chunks give a pseudo-query (a heading, title or "
                "first sentence); --from-corpus needs at least 4."
            )
        split = Split(folder.name, folder, "pseudo", corpus, queries, qrels)
        ids = sample_queries(queries, recipe, recipe.seed)
        mined = mine(split, store, ids, k=recipe.mine_k, progress=stage("mining notes"))
        dev = [m for m in mined if is_dev(split.name, m.query_id, recipe.dev_fraction, recipe.seed)]
        train = [m for m in mined if m not in dev]
        seen = as_retrieved(split, store, dev, k=recipe.eval_k)  # what the critic will judge
    out = TrainingSet(corpus_texts=[d.text for d in corpus.values()])
    made = groups(
        train,
        out.corpus_texts,
        hard=recipe.hard_negatives,
        random_negatives=recipe.random_negatives,
        positives_per_query=1,
        seed=recipe.seed,
    )
    check_usable(str(folder), mined, made)
    out.train = made
    out.dev = [m for m in dev if any(c.relevant for c in m.candidates[: recipe.eval_k])]
    out.dev_seen = seen
    if not out.dev or not any(c.relevant for m in out.dev_seen for c in m.candidates):
        raise NoTrainingDataError(f"{folder}: no dev pseudo-query finds its own chunk.")
    out.sources[split.name] = {
        "folder": str(folder),
        "split": "pseudo-queries",
        "groups": len(made),
    }
    return out
