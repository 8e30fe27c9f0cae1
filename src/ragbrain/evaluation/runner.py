"""Running every query through every configuration, interleaved, and recording what came back."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragbrain.evaluation.configs import DENSE_K, Config
from ragbrain.graph import build_graph
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.state import RETRIEVAL_KEY

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from ragbrain.context import RetrievalContext
    from ragbrain.critic.base import Critic
    from ragbrain.store import Store

Progress = Callable[[int, int], None]
WARMUP_QUERIES = 3


@dataclass(frozen=True)
class QueryRun:
    """What one configuration returned for one query, and how long it took."""

    config: str
    query_id: str
    returned: list[str]
    seconds: float
    depth: int
    verdict: str | None = None
    fallback: bool | None = None


@dataclass(frozen=True)
class Query:
    """A query to run: its id, text and (optionally) a type filter."""

    id: str
    text: str
    type_filter: list[str] | None = None


def dense_retriever(store: Store) -> BaseRetriever:
    """LangChain's own Chroma retriever (top 10) over the very collection ``store`` reads."""
    import chromadb
    from chromadb.config import Settings

    from ragbrain._util import require

    Chroma = require("langchain_chroma", extra="eval", feature="The dense baseline").Chroma  # noqa: N806

    client = chromadb.PersistentClient(
        path=store.location, settings=Settings(anonymized_telemetry=False)
    )
    chroma = Chroma(
        client=client,
        collection_name=store.collection.name,
        embedding_function=store.embeddings,
        create_collection_if_not_exists=False,
    )
    retriever: BaseRetriever = chroma.as_retriever(search_kwargs={"k": DENSE_K})
    return retriever


def build_retrievers(
    configs: Sequence[Config], store: Store, critic: Critic | None, base: RetrievalContext
) -> dict[str, BaseRetriever]:
    """One retriever per configuration; the graph (and its store and critic) is shared."""
    from ragbrain.evaluation.bm25_retriever import BM25Retriever
    from ragbrain.store.lexical import LexicalSearcher

    # Every configuration but LangChain's dense one reads the lexical index (hybrid search,
    # the lexical rescue, BM25 alone); it is brought in step with the store once, here.
    lexical = LexicalSearcher(store) if any(c.kind != "dense" for c in configs) else None
    plain = build_graph(store, None, critic_off_reason="off in this configuration", lexical=lexical)
    checked = build_graph(store, critic, lexical=lexical) if critic is not None else plain
    retrievers: dict[str, BaseRetriever] = {}
    for config in configs:
        if config.kind == "dense":
            retrievers[config.name] = dense_retriever(store)
        elif config.kind == "bm25" and lexical is not None:
            retrievers[config.name] = BM25Retriever.over(store, lexical, DENSE_K)
        else:
            graph = checked if config.critic else plain
            context = config.retrieval_context(base)
            retrievers[config.name] = CorrectiveRetriever(graph=graph, context=context)
    return retrievers


def _trace(docs: list[Document]) -> dict[str, Any]:
    return dict(docs[0].metadata.get(RETRIEVAL_KEY, {})) if docs else {}


def run_one(config: Config, retriever: BaseRetriever, query: Query, store: Store) -> QueryRun:
    """Time one retrieval (LangChain ``invoke`` on both sides) and record its decisions."""
    store.forget_queries()  # every configuration pays for embedding alike
    kwargs: dict[str, Any] = {}
    if query.type_filter and config.kind == "ragbrain":
        kwargs["type_filter"] = query.type_filter
    start = time.perf_counter()
    docs = retriever.invoke(query.text, **kwargs)
    seconds = time.perf_counter() - start
    ids = [str(d.id) for d in docs]
    if config.kind != "ragbrain":
        return QueryRun(config.name, query.id, ids, seconds, depth=DENSE_K)
    trace = _trace(docs)
    if not trace:  # the critic dropped everything: ask again, untimed, for the decisions
        assert isinstance(retriever, CorrectiveRetriever)
        output = retriever.run(query.text, **kwargs)
        trace = {
            "depth": output["depth"],
            "verdict": output["verdict"],
            "fallback": output["fallback"],
        }
    return QueryRun(
        config.name,
        query.id,
        ids,
        seconds,
        depth=int(trace["depth"]),
        verdict=str(trace["verdict"]),
        fallback=bool(trace["fallback"]),
    )


def run_all(
    queries: Sequence[Query],
    configs: Sequence[Config],
    retrievers: dict[str, BaseRetriever],
    store: Store,
    progress: Progress | None = None,
) -> list[QueryRun]:
    """Run each query through every configuration, rotating the order per query.

    Interleaving keeps slow drift on a shared machine (other jobs, thermal) from favouring
    whichever configuration ran first; a few untimed warm-up queries load caches first.
    """
    for query in queries[:WARMUP_QUERIES]:
        for config in configs:
            run_one(config, retrievers[config.name], query, store)
    runs: list[QueryRun] = []
    for index, query in enumerate(queries):
        shift = index % len(configs)
        for config in [*configs[shift:], *configs[:shift]]:
            runs.append(run_one(config, retrievers[config.name], query, store))
        if progress:
            progress(index + 1, len(queries))
    return runs
