"""BM25 alone on Chinese and Arabic sets: the current tokenizer against an older one.

Indexes each corpus in memory (no embeddings) and scores every query of the split. With
``--baseline FILE`` (a copy of an older ``ragbrain/lexical/tokens.py``, e.g. from
``git show d43f979:src/ragbrain/lexical/tokens.py``), the same runs use that module's
``tokenize`` too, side by side.

    python -m benchmarks.lexical_languages --data ../shared/data/cmrc2018_ret \
        --data ../shared/data/drcd_ret --data ../shared/data/arcd_ret --split test \
        --baseline /tmp/tokens_v1.py
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
from collections.abc import Callable
from pathlib import Path

import ragbrain.lexical.index as lexical_index
from benchmarks.common import save, say
from ragbrain.evaluation.beir import load_split
from ragbrain.evaluation.metrics import ndcg_at_k, recall_at_k

Tokenize = Callable[[str], list[str]]


def _load(path: Path) -> Tokenize:
    spec = importlib.util.spec_from_file_location("baseline_tokens", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tokenize: Tokenize = module.tokenize
    return tokenize


def measure(data: Path, split: str, tokenize: Tokenize) -> dict[str, float]:
    """BM25 nDCG@10 and Recall@10 of one split with ``tokenize`` on both sides."""
    s = load_split(data, split)
    docs = list(s.corpus.values())
    saved = lexical_index.tokenize
    lexical_index.tokenize = tokenize
    try:
        index = lexical_index.LexicalIndex.build(
            [d.id for d in docs], [d.content for d in docs], ["doc"] * len(docs)
        )
        ranked = {qid: [h.id for h in index.search(q, 10)] for qid, q in s.queries.items()}
    finally:
        lexical_index.tokenize = saved
    return {
        "queries": len(ranked),
        "docs": len(docs),
        "ndcg@10": round(statistics.mean(ndcg_at_k(r, s.qrels[q]) for q, r in ranked.items()), 4),
        "recall@10": round(
            statistics.mean(recall_at_k(r, s.qrels[q]) for q, r in ranked.items()), 4
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, action="append", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--baseline", type=Path)
    args = parser.parse_args()
    sides: dict[str, Tokenize] = {"current": lexical_index.tokenize}
    if args.baseline:
        sides = {"baseline": _load(args.baseline), **sides}
    results: dict[str, dict[str, dict[str, float]]] = {}
    for data in args.data:
        for side, tokenize in sides.items():
            results.setdefault(data.name, {})[side] = measure(data, args.split, tokenize)
            say(f"{data.name} {side}: {results[data.name][side]}")
    head = " | ".join(f"{side} nDCG@10 | {side} R@10" for side in sides)
    rows = "\n".join(
        f"| {name} | {next(iter(r.values()))['queries']} | "
        + " | ".join(f"{r[side]['ndcg@10']:.4f} | {r[side]['recall@10']:.4f}" for side in sides)
        + " |"
        for name, r in results.items()
    )
    markdown = (
        f"# BM25 alone, {args.split} split: tokenizers side by side\n\n"
        f"| set | queries | {head} |\n|---|---|{'---|---|' * len(sides)}\n{rows}\n"
    )
    save(f"lexical-languages-{args.split}", {"split": args.split, "results": results}, markdown)


if __name__ == "__main__":
    main()
