"""Printing a retrieval run for people (a rich table) or machines (JSON)."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console

from ragbrain._util import printable
from ragbrain.query.filters import MODIFIED_KEY, time_label
from ragbrain.state import RETRIEVAL_KEY, RetrievalOutput


def cite(source: object, start_line: object, end_line: object, page: object = None) -> str:
    """``source:START-END`` (one line: ``source:START``); a PDF's page as ``source#pN``; the
    bare source when the chunk has neither (it was ingested before spans were recorded)."""
    if isinstance(page, int) and not isinstance(page, bool):
        return f"{source}#p{page}"
    if not isinstance(start_line, int) or not isinstance(end_line, int):
        return str(source)
    lines = str(start_line) if start_line == end_line else f"{start_line}-{end_line}"
    return f"{source}:{lines}"


def run_to_dict(query: str, output: RetrievalOutput) -> dict[str, Any]:
    """A JSON-ready view of a run: its decisions, then each chunk with its trace."""
    return {
        "query": query,
        "depth": output["depth"],
        "candidates": output["candidates"],
        "complexity": output["complexity"],
        "verdict": output["verdict"],
        "best_distance": output["best_distance"],
        "gate": output["gate"],
        "fallback": output.get("fallback", False),
        "critic": output["critic"],
        "answerable": output["answerable"],
        "abstain_reason": output["abstain_reason"],
        "bm25_coverage": output.get("bm25_coverage"),
        "nearest_distance": output.get("nearest_distance"),
        "lexical_support": output.get("lexical_support"),
        "store_settings": output.get("store_settings"),
        "notes": output["notes"],
        "documents": [
            {
                "id": doc.id,
                "source": doc.metadata.get("source"),
                "type": doc.metadata.get("type"),
                "chunk": doc.metadata.get("chunk"),
                "page": doc.metadata.get("page"),  # PDFs only
                "start_line": doc.metadata.get("start_line"),
                "end_line": doc.metadata.get("end_line"),
                "cite": cite(
                    doc.metadata.get("source"),
                    doc.metadata.get("start_line"),
                    doc.metadata.get("end_line"),
                    doc.metadata.get("page"),
                ),
                "title": doc.metadata.get("title"),
                "modified": time_label(doc.metadata.get(MODIFIED_KEY)),  # ISO, UTC
                "distance": doc.metadata[RETRIEVAL_KEY]["distance"],
                "critic_score": doc.metadata[RETRIEVAL_KEY]["critic_score"],
                "from_fallback": doc.metadata[RETRIEVAL_KEY]["from_fallback"],
                # the part of a compound question the chunk was kept for (None: the whole)
                "part": doc.metadata[RETRIEVAL_KEY].get("part"),
                "text": doc.page_content,
            }
            for doc in output["documents"]
        ],
    }


def print_json(query: str, output: RetrievalOutput, console: Console) -> None:
    """The run as one JSON object on stdout."""
    console.print_json(json.dumps(run_to_dict(query, output), ensure_ascii=False))


def print_run(query: str, output: RetrievalOutput, console: Console, *, width: int = 70) -> None:
    """The run's decisions in one line, then a table of the chunks, then why. What comes
    from notes (texts, sources, types, notes) is shown without escape sequences or control
    characters (``printable``); ``print_json`` escapes them instead."""
    run = run_to_dict(query, output)
    best = run["best_distance"]
    console.print(f"query: {printable(query)}", markup=False, highlight=False, soft_wrap=True)
    console.print(
        f"  depth {run['depth']} (complexity {run['complexity']}) | verdict {run['verdict']} "
        f"(best distance {'-' if best is None else f'{best:.3f}'}, gate {run['gate']:.3f}) | "
        f"fallback {'yes' if run['fallback'] else 'no'} | critic {run['critic']}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if not run["answerable"]:
        console.print(
            f"  not answerable: {printable(str(run['abstain_reason']))}",
            style="yellow",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    elif not run["documents"]:
        console.print("  no chunks returned", style="yellow", markup=False)
    for rank, doc in enumerate(run["documents"], start=1):
        score = doc["critic_score"]
        text = " ".join(printable(doc["text"]).split())
        part = f"  (for {doc['part']!r})" if doc["part"] is not None else ""
        console.print(
            f"  {rank:>2}. distance {doc['distance']:.3f}  critic "
            f"{'-' if score is None else f'{score:.2f}'}  [{printable(str(doc['type']))}] "
            f"{printable(doc['cite'])} #{doc['chunk']}"
            f"{'  (fallback)' if doc['from_fallback'] else ''}{printable(part)}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        snippet = f"      {text[:width]}{'...' if len(text) > width else ''}"
        console.print(snippet, style="dim", markup=False, highlight=False, soft_wrap=True)
    if run["store_settings"]:
        from ragbrain.settings import describe_summary

        console.print(
            f"  - {printable(describe_summary(run['store_settings']))}",
            style="dim",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    for note in run["notes"]:
        console.print(
            f"  - {printable(note)}", style="dim", markup=False, highlight=False, soft_wrap=True
        )
