"""e5-small against MiniLM: ingest chunks/s and query p50, alternated in one run; resident
memory of a fresh process with each model loaded; what fp16 word embeddings would save.

    nice -n 10 python -m benchmarks.e5_speed --data ../shared/data/iapp_th_ret --docs 64
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import save, say

_PROBE = """
import json, sys, numpy as np
from pathlib import Path
def rss():
    s = Path('/proc/self/status').read_text()
    get = lambda k: int(next(l for l in s.splitlines() if l.startswith(k)).split()[1]) / 1024
    return round(get('VmRSS:')), round(get('VmHWM:'))
from ragbrain.embeddings import default_embeddings, e5_embeddings
model, half = sys.argv[1], sys.argv[2] == 'half'
texts = json.loads(sys.stdin.read())
emb = default_embeddings() if model == 'minilm' else e5_embeddings()
before = np.asarray(emb.embed_documents(texts[:8]))
if half:
    import torch
    bert = emb._client[0].auto_model
    words = bert.embeddings.word_embeddings
    small = torch.nn.Embedding.from_pretrained(words.weight.detach().half(), freeze=True)
    class Widen(torch.nn.Module):
        def __init__(self, inner): super().__init__(); self.inner = inner
        def forward(self, ids): return self.inner(ids).float()
    bert.embeddings.word_embeddings = Widen(small)
    del words
    import gc; gc.collect()
loaded = rss()
after = np.asarray(emb.embed_documents(texts))
cos = float(np.min(np.sum(before * after[:8], axis=1)))
print(json.dumps({'loaded_mb': loaded[0], 'after_batch_mb': rss()[0], 'peak_mb': rss()[1],
                  'min_cosine_to_fp32': round(cos, 6)}))
"""


def probe(model: str, half: bool, texts: list[str]) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, model, "half" if half else "full"],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--docs", type=int, default=64)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from ragbrain.embeddings import default_embeddings, e5_embeddings

    docs = [json.loads(line) for line in (args.data / "corpus.jsonl").open(encoding="utf-8")]
    texts = [f"{d.get('title', '')}\n{d['text']}".strip() for d in docs[: args.docs]]
    queries = [json.loads(line)["text"] for line in (args.data / "queries.jsonl").open()]
    queries = queries[: args.queries]
    models = {"minilm": default_embeddings(), "e5-small": e5_embeddings()}
    for m in models.values():
        m.embed_documents(texts[:4])
        m.embed_query("warm up")
    rates: dict[str, list[float]] = {n: [] for n in models}
    latency: dict[str, list[float]] = {n: [] for n in models}
    for round_ in range(args.rounds):
        for name, m in models.items():
            start = time.perf_counter()
            m.embed_documents(texts)
            rates[name].append(len(texts) / (time.perf_counter() - start))
        for q in queries:
            for name, m in models.items():
                start = time.perf_counter()
                m.embed_query(f"{q} {round_}")  # a new string each round: no cache anywhere
                latency[name].append((time.perf_counter() - start) * 1000)
        say(f"round {round_ + 1}: " + ", ".join(f"{n} {rates[n][-1]:.2f} docs/s" for n in rates))
    memory = {
        "minilm": probe("minilm", False, texts[:32]),
        "e5-small": probe("e5-small", False, texts[:32]),
        "e5-small, fp16 word embeddings": probe("e5-small", True, texts[:32]),
    }
    speed = {
        n: {
            "docs_per_s_median": round(statistics.median(rates[n]), 2),
            "query_p50_ms": round(statistics.median(latency[n]), 1),
        }
        for n in models
    }
    ratio_ingest = speed["e5-small"]["docs_per_s_median"] / speed["minilm"]["docs_per_s_median"]
    ratio_query = speed["e5-small"]["query_p50_ms"] / speed["minilm"]["query_p50_ms"]
    payload = {
        "data": args.data.name,
        "docs": len(texts),
        "queries": len(queries),
        "rounds": args.rounds,
        "speed": speed,
        "memory": memory,
        "ratios": {
            "ingest_e5_over_minilm": round(ratio_ingest, 3),
            "query_p50_e5_over_minilm": round(ratio_query, 2),
        },
    }
    mem_rows = "\n".join(
        f"| {n} | {v['loaded_mb']} | {v['after_batch_mb']} | {v['peak_mb']} | "
        f"{v['min_cosine_to_fp32']} |"
        for n, v in memory.items()
    )
    markdown = (
        f"# e5-small vs MiniLM: speed and memory ({args.data.name}, {len(texts)} docs, "
        f"{len(queries)} queries, {args.rounds} rounds alternated)\n\n"
        "| model | ingest docs/s (median) | query p50 ms |\n|---|---|---|\n"
        + "\n".join(
            f"| {n} | {v['docs_per_s_median']} | {v['query_p50_ms']} |" for n, v in speed.items()
        )
        + f"\n\nRatios: ingest e5/MiniLM {ratio_ingest:.3f}, query p50 e5/MiniLM "
        f"{ratio_query:.2f}.\n\n| process | RSS loaded MB | RSS after a 32-doc batch MB | peak MB "
        f"| min cosine to fp32 |\n|---|---|---|---|---|\n{mem_rows}\n"
    )
    save("e5_speed", payload, markdown)


if __name__ == "__main__":
    main()
