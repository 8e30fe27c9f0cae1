"""The demo: ingest the bundled sample notes, then run queries that take each path."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.rule import Rule

from ragbrain._util import progress_reporter
from ragbrain.ingest import ingest
from ragbrain.ingest.model_choice import model_for_notes
from ragbrain.models.embeddings import embeddings_for
from ragbrain.models.profiles import chosen_for
from ragbrain.paths import sample_notes
from ragbrain.render import print_run
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.store import Store

# (what it shows, query, keyword arguments)
SCENARIOS: list[tuple[str, str, dict[str, Any]]] = [
    ("A short, simple query: depth 5.", "redis cache eviction", {}),
    (
        "A compound, comparative query: its markers raise the depth to 10.",
        "Compare the Redis dashboard cache and the materialized views, and what did we "
        "say about the stampede last time?",
        {},
    ),
    (
        "Filtered to decisions, but the answer is a bug write-up: the gate says 'poor' and "
        "the fallback search without the filter rescues it (marked 'fallback').",
        "Why did the nightly database backup fail?",
        {"type_filter": "decision"},
    ),
    (
        "Nothing in the notes is about this: no chunk comes as close as the store's "
        "off-topic cut, so the answer is empty and says why (--abstain off would hand over "
        "what the critic keeps).",
        "How do we configure Kafka consumer groups?",
        {},
    ),
    (
        "Off-topic altogether: a cooking question gets an empty answer too.",
        "What is a good recipe for sourdough bread?",
        {},
    ),
    (
        "A Japanese question in other words than its note (夜中にデータベース接続が切れる): "
        f"{chosen_for('multilingual').name} finds it by meaning.",
        "深夜にDBとの通信が途絶えるのはなぜ？",
        {},
    ),
    (
        "A Thai question in other words than its note (ขอสิทธิ์เข้าใช้งานเซิร์ฟเวอร์ production).",
        "เพิ่งเริ่มงาน จะได้รับอนุญาตให้เชื่อมต่อระบบจริงได้อย่างไร",
        {},
    ),
    (
        "An English question whose answer is a Thai note: cross-lingual retrieval.",
        "How does a new hire get access to the production servers?",
        {},
    ),
]


def run_demo(out: Console, err: Console, store_path: Path | None = None) -> None:
    """Build a store from the sample notes (in a temporary folder unless given) and query it."""
    with tempfile.TemporaryDirectory(prefix="ragbrain-demo-") as tmp:
        folder = store_path or Path(tmp)
        started = time.perf_counter()
        model, why = model_for_notes(sample_notes())  # the rule a new store follows
        out.print(f"Embedding model: {why}", highlight=False)
        store = Store.open(folder, embeddings_for(model), create=True)
        with progress_reporter(err, "embedding the sample notes") as progress:
            report = ingest(sample_notes(), store, progress=progress)
        out.print(
            f"Ingested the sample notes: {report.summary()} "
            f"({time.perf_counter() - started:.1f} s)",
            highlight=False,
        )
        retriever = CorrectiveRetriever.from_store(folder)
        for caption, query, kwargs in SCENARIOS:
            out.print(Rule(style="dim"))
            out.print(caption, style="cyan")
            if kwargs:
                out.print(f"  with {kwargs}", highlight=False)
            print_run(query, retriever.run(query, **kwargs), out)
        out.print(Rule(style="dim"))
        out.print(f"Done in {time.perf_counter() - started:.1f} s.", highlight=False)
