"""Evaluation on BEIR-layout data sets: loading, cached stores, metrics and reports.

The names in ``__all__`` are the surface the benchmarks (``benchmarks/``) and users' own
evaluations use: load a split, build or reuse a cached store, score rankings, fold data sets
leave-one-domain-out, stage the missing-answer and off-topic scenarios, and write reports.
The submodules stay importable for the pieces behind them. The names load on first use
(PEP 562), as ``ragbrain``'s own do; the runtime (``ragbrain``'s ``__all__``) never imports
this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragbrain.evaluation.beir import Split, corpus_store, load_split
    from ragbrain.evaluation.evaluate import eval_critic
    from ragbrain.evaluation.lodo import Fold, data_sets, domain_of, folds, splits_of
    from ragbrain.evaluation.metrics import (
        mean,
        ndcg_at_k,
        paired_difference,
        percentile,
        recall_at_k,
        set_precision,
        set_recall,
    )
    from ragbrain.evaluation.missing import (
        BASELINE_GATE,
        MissingAnswer,
        gate_refuses,
        refusal_stats,
        split_missing,
    )
    from ragbrain.evaluation.notes import (
        broad_scores,
        broad_table,
        cached_store_path,
        evaluate_notes,
        identifier_questions,
        notes_store,
        notes_table,
    )
    from ragbrain.evaluation.offtopic import RELATED, evaluation_bank, offtopic_sources
    from ragbrain.evaluation.report import machine, percent, write_atomic, write_json
    from ragbrain.evaluation.runner import dense_retriever

_WHERE = {
    "BASELINE_GATE": "ragbrain.evaluation.missing",
    "Fold": "ragbrain.evaluation.lodo",
    "MissingAnswer": "ragbrain.evaluation.missing",
    "RELATED": "ragbrain.evaluation.offtopic",
    "Split": "ragbrain.evaluation.beir",
    "broad_scores": "ragbrain.evaluation.notes",
    "broad_table": "ragbrain.evaluation.notes",
    "cached_store_path": "ragbrain.evaluation.notes",
    "corpus_store": "ragbrain.evaluation.beir",
    "data_sets": "ragbrain.evaluation.lodo",
    "dense_retriever": "ragbrain.evaluation.runner",
    "domain_of": "ragbrain.evaluation.lodo",
    "eval_critic": "ragbrain.evaluation.evaluate",
    "evaluate_notes": "ragbrain.evaluation.notes",
    "evaluation_bank": "ragbrain.evaluation.offtopic",
    "identifier_questions": "ragbrain.evaluation.notes",
    "folds": "ragbrain.evaluation.lodo",
    "gate_refuses": "ragbrain.evaluation.missing",
    "load_split": "ragbrain.evaluation.beir",
    "machine": "ragbrain.evaluation.report",
    "mean": "ragbrain.evaluation.metrics",
    "ndcg_at_k": "ragbrain.evaluation.metrics",
    "notes_store": "ragbrain.evaluation.notes",
    "notes_table": "ragbrain.evaluation.notes",
    "offtopic_sources": "ragbrain.evaluation.offtopic",
    "paired_difference": "ragbrain.evaluation.metrics",
    "percent": "ragbrain.evaluation.report",
    "percentile": "ragbrain.evaluation.metrics",
    "recall_at_k": "ragbrain.evaluation.metrics",
    "refusal_stats": "ragbrain.evaluation.missing",
    "set_precision": "ragbrain.evaluation.metrics",
    "set_recall": "ragbrain.evaluation.metrics",
    "split_missing": "ragbrain.evaluation.missing",
    "splits_of": "ragbrain.evaluation.lodo",
    "write_atomic": "ragbrain.evaluation.report",
    "write_json": "ragbrain.evaluation.report",
}

__all__ = [
    "BASELINE_GATE",
    "RELATED",
    "Fold",
    "MissingAnswer",
    "Split",
    "broad_scores",
    "broad_table",
    "cached_store_path",
    "corpus_store",
    "data_sets",
    "dense_retriever",
    "domain_of",
    "eval_critic",
    "evaluate_notes",
    "evaluation_bank",
    "folds",
    "gate_refuses",
    "identifier_questions",
    "load_split",
    "machine",
    "mean",
    "ndcg_at_k",
    "notes_store",
    "notes_table",
    "offtopic_sources",
    "paired_difference",
    "percent",
    "percentile",
    "recall_at_k",
    "refusal_stats",
    "set_precision",
    "set_recall",
    "split_missing",
    "splits_of",
    "write_atomic",
    "write_json",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module when the name is first used."""
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ragbrain.evaluation' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
