"""A tiny BEIR-layout data set written into a folder, for the tests that load one."""

from __future__ import annotations

import json
from pathlib import Path

CORPUS = [
    {"_id": "d1", "title": "Backup", "text": "The nightly backup failed: credentials expired."},
    {"_id": "d2", "title": "Cache", "text": "Redis cache stampede after a deploy."},
    {"_id": "d3", "title": "Alembic", "text": "Schema migrations with alembic heads."},
    {"_id": "d4", "title": "Timeout", "text": "Set a statement timeout for reporting queries."},
    {"_id": "d5", "title": "Rollback", "text": "Helm rollback to the previous revision."},
    {"_id": "d6", "title": "Pool", "text": "Connection pool exhausted at month end."},
]
QUERIES = [
    {"_id": "q1", "text": "why did the nightly backup fail"},
    {"_id": "q2", "text": "redis cache stampede"},
    {"_id": "q3", "text": "how to roll back with helm"},
    {"_id": "q4", "text": "statement timeout for reporting"},
]
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\td2\t1\nq3\td5\t1\nq4\td4\t1\nq4\td6\t0\n"


def make_folder(root: Path, qrels: str = QRELS, corpus: str | None = None) -> Path:
    (root / "qrels").mkdir(parents=True)
    text = corpus if corpus is not None else "".join(json.dumps(r) + "\n" for r in CORPUS)
    (root / "corpus.jsonl").write_text(text, encoding="utf-8")
    (root / "queries.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in QUERIES), encoding="utf-8"
    )
    (root / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    return root
