"""What int8 Linear layers would buy e5-small's query embedding on the torch path.

The torch backend runs both models in fp32, and an e5-small query costs about 2x a MiniLM
one (12 layers against 6 of the same width). This measures, on the same queries and in one
run, e5-small's query p50 with torch's dynamic int8 quantization on some of its Linear
layers, against MiniLM's and e5-small's fp32 p50, and the cosine of each variant's query
vectors to the fp32 ones (a store's passages stay fp32: the bar for mixing is 0.995).

    python -m benchmarks.e5_query_int8 --data-root ../shared/data --sets scifact iapp_th_ret \
        --queries 200
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common import save, say

#: Which Linear layers are quantized, by module name.
VARIANTS: dict[str, Callable[[str], bool]] = {
    "every Linear": lambda name: True,
    "all but the feed-forward output": lambda name: (
        not name.endswith("output.dense") or "attention" in name
    ),
    "query, key and value": lambda name: name.endswith(("query", "key", "value")),
    "feed-forward intermediate": lambda name: name.endswith("intermediate.dense"),
}


def p50_ms(embed: Callable[[str], Any], queries: list[str]) -> float:
    """Median wall time of one query's embedding, after a short warm-up."""
    for query in queries[:5]:
        embed(query)
    times = []
    for query in queries:
        start = time.perf_counter()
        embed(query)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    """Measure every variant on each set's queries; write results/e5_query_int8.{json,md}."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, default=Path("../shared/data"))
    parser.add_argument("--sets", nargs="+", default=["scifact", "iapp_th_ret"])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()

    import numpy as np
    import torch

    from ragbrain.models.embeddings import default_embeddings, e5_embeddings

    warnings.filterwarnings("ignore", module="torch")  # the deprecation notes of torch.ao
    minilm, e5 = default_embeddings(), e5_embeddings()
    fp32 = e5.model  # type: ignore[attr-defined]
    rows: list[dict[str, Any]] = []
    for name in args.sets:
        lines = (args.data_root / name / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        queries = [json.loads(line)["text"] for line in lines[: args.queries]]
        say(f"{name}: {len(queries)} queries")
        reference = np.array([e5.embed_query(q) for q in queries])
        base = {"set": name, "queries": len(queries)}
        rows.append(
            {
                **base,
                "variant": "fp32",
                "e5_ms": p50_ms(e5.embed_query, queries),
                "minilm_ms": p50_ms(minilm.embed_query, queries),
                "cos_min": 1.0,
                "cos_mean": 1.0,
            }
        )
        for variant, picks in VARIANTS.items():
            layers = {
                n for n, m in fp32.named_modules() if isinstance(m, torch.nn.Linear) and picks(n)
            }
            e5.model = torch.ao.quantization.quantize_dynamic(  # type: ignore[attr-defined]
                copy.deepcopy(fp32), layers, dtype=torch.qint8
            )
            cosines = (reference * np.array([e5.embed_query(q) for q in queries])).sum(1)
            rows.append(
                {
                    **base,
                    "variant": variant,
                    "e5_ms": p50_ms(e5.embed_query, queries),
                    "minilm_ms": p50_ms(minilm.embed_query, queries),
                    "cos_min": float(cosines.min()),
                    "cos_mean": float(cosines.mean()),
                }
            )
        e5.model = fp32  # type: ignore[attr-defined]
    table = [
        "# e5-small query embedding with int8 Linear layers (torch dynamic quantization)",
        "",
        "Each row: e5-small's query p50 with that variant, MiniLM fp32's p50 measured right "
        "after it, their ratio, and the cosine of the variant's query vectors to fp32's.",
        "",
        "| set | int8 layers | e5 p50 ms | MiniLM p50 ms | e5 / MiniLM | cosine min / mean |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        table.append(
            f"| {r['set']} | {r['variant']} | {r['e5_ms']:.1f} | {r['minilm_ms']:.1f} | "
            f"{r['e5_ms'] / r['minilm_ms']:.2f} | {r['cos_min']:.4f} / {r['cos_mean']:.4f} |"
        )
    save("e5_query_int8", {"rows": rows}, "\n".join(table) + "\n")


if __name__ == "__main__":
    main()
