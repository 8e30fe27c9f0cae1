"""e5-small against MiniLM as a user meets them: `ingest` of the same folder of notes with each
model (chunks/s and notes/s from ingest's own chunking), query-embedding p50 over the same
queries, alternated in one run; resident memory of a fresh process with each model loaded.

Notes: ``--notes`` documents of each set (seeded sample), one Markdown file each (``# title``
and the text), written to a temporary folder. Each round ingests every folder into a fresh
store with each model, the order of the models alternating between rounds. Both models run
on ``$RAGBRAIN_BACKEND`` (results ``e5_speed.md``; on onnx ``e5_speed-onnx.md``).

    nice -n 10 python -m benchmarks.speed e5 --data-root ../shared/data \
        --sets scifact iapp_th_ret --notes 200 --queries 40 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import save, say

_PROBE = """
import json, sys, numpy as np
from pathlib import Path
def rss():
    s = Path('/proc/self/status').read_text()
    get = lambda k: int(next(l for l in s.splitlines() if l.startswith(k)).split()[1]) / 1024
    return {k: round(get(k + ':')) for k in ('VmRSS', 'RssAnon', 'RssFile', 'VmHWM')}
model, folder = sys.argv[1], sys.argv[2]
texts = json.loads(sys.stdin.read())
if model == 'minilm':
    from ragbrain.models.embeddings import default_embeddings
    emb = default_embeddings()
elif model == 'e5':  # as a store opens it, on $RAGBRAIN_BACKEND
    from ragbrain.models.embeddings import e5_embeddings
    emb = e5_embeddings()
else:
    from ragbrain.models.backend import load_embeddings
    emb = load_embeddings(Path(folder), 'torch', query_prompt='query: ', passage_prompt='passage: ',
                          half_word_embeddings=model == 'e5-half')
for q in ('why did the nightly backup fail', 'ทำไมการสำรองข้อมูลล้มเหลว',
          'バックアップが失敗した理由', 'redis cache ttl jitter', 'قاعدة البيانات',
          '数据库迁移', 'alembic head', 'helm rollback'):
    emb.embed_query(q)
reader = rss()
emb.embed_documents(texts[:8])
loaded = rss()
vectors = np.asarray(emb.embed_documents(texts))
batch = rss()
from ragbrain._util import give_back_freed_memory
give_back_freed_memory()
given_back = rss()
from ragbrain.factory import resolve_critic  # what a reader also holds: the critic, on torch
resolve_critic('default')
print(json.dumps({'reader': reader, 'loaded': loaded, 'after_batch': batch,
                  'given_back': given_back, 'with_critic': rss(),
                  'vectors': vectors.round(7).tolist()}))
"""


def probe(model: str, folder: Path | None, texts: list[str]) -> dict[str, Any]:
    """Memory of a fresh process: loaded (after 8 texts), after all ``texts``, and after the
    freed heap is given back (as ingest does); and its vectors of ``texts``."""
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, model, str(folder or "")],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def write_notes(folder: Path, docs: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True)
    for i, doc in enumerate(docs):
        title = (doc.get("title") or f"Document {i}").strip().replace("\n", " ")
        (folder / f"n{i:04}.md").write_text(f"# {title}\n\n{doc['text']}\n", encoding="utf-8")


def time_ingests(
    models: dict[str, Any],
    folders: dict[str, Path],
    queries: dict[str, list[str]],
    tmp: Path,
    rounds: int,
) -> dict[str, dict[str, Any]]:
    """Per set and model: chunks, median chunks/s and notes/s of a fresh ``ingest``, and the
    query-embedding p50; the models alternate, their order flipping each round."""
    from ragbrain import Store
    from ragbrain.ingest import ingest

    rates: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
    latency: dict[tuple[str, str], list[float]] = {}
    for round_ in range(rounds):
        order = list(models) if round_ % 2 == 0 else list(reversed(models))
        for name, folder in folders.items():
            for label in order:
                where = tmp / f"store-{name}-{label}-{round_}"
                store = Store.open(where, models[label], create=True)
                start = time.perf_counter()
                report = ingest(folder, store)
                seconds = time.perf_counter() - start
                rates.setdefault((name, label), []).append(
                    (report.added / seconds, report.files / seconds, report.added)
                )
            for q in queries[name]:
                for label in order:
                    start = time.perf_counter()
                    models[label].embed_query(f"{q} {round_}")  # a new string: no cache
                    elapsed = (time.perf_counter() - start) * 1000
                    latency.setdefault((name, label), []).append(elapsed)
            shown = ", ".join(f"{m} {rates[(name, m)][-1][0]:.2f} chunks/s" for m in models)
            say(f"round {round_ + 1} {name}: {shown}")
    rows: dict[str, dict[str, Any]] = {}
    for name in folders:
        row: dict[str, Any] = {}
        for label in models:
            runs = rates[(name, label)]
            row[label] = {
                "chunks": runs[0][2],
                "chunks_per_s": round(statistics.median(r[0] for r in runs), 2),
                "notes_per_s": round(statistics.median(r[1] for r in runs), 2),
                "query_p50_ms": round(statistics.median(latency[(name, label)]), 1),
            }
        e5, mini = row["e5-small"], row["minilm"]
        row["ratios"] = {
            "chunks_per_s_e5_over_minilm": round(e5["chunks_per_s"] / mini["chunks_per_s"], 3),
            "notes_per_s_e5_over_minilm": round(e5["notes_per_s"] / mini["notes_per_s"], 3),
            "query_p50_e5_over_minilm": round(e5["query_p50_ms"] / mini["query_p50_ms"], 2),
        }
        rows[name] = row
    return rows


FP32 = "e5-small, fp32 word embeddings (converter v2 layout)"
FP16 = "e5-small, fp16 word embeddings (shipped)"
ONNX = "e5-small (onnx int8)"
KEYS = ("reader", "loaded", "after_batch", "given_back", "with_critic")


def measure_memory(texts: list[str], tmp: Path, backend: str) -> dict[str, Any]:
    """``probe`` of each model on ``backend``. On torch: MiniLM, e5-small as shipped and
    e5-small with an fp32 word-embedding table, and the cosine between the two e5-small
    variants' vectors; on onnx: MiniLM and e5-small as a store opens them."""
    if backend == "onnx":
        runs = {"minilm": probe("minilm", None, texts), ONNX: probe("e5", None, texts)}
        return {k: {m: v[m] for m in KEYS} for k, v in runs.items()}
    import numpy as np

    from ragbrain.models.e5 import convert

    source, digest = convert.source_file()
    fp32 = tmp / "e5-fp32-table"
    convert.convert(source, fp32, sha256=digest, half_words=False)
    runs = {
        "minilm": probe("minilm", None, texts),
        FP32: probe("e5-full", fp32, texts),
        FP16: probe("e5-half", convert.model_folder(), texts),
    }
    cosines = np.sum(np.asarray(runs[FP32]["vectors"]) * np.asarray(runs[FP16]["vectors"]), axis=1)
    memory: dict[str, Any] = {k: {m: v[m] for m in KEYS} for k, v in runs.items()}
    memory["fp16_vs_fp32_table"] = {
        "texts": len(texts),
        "min_cosine": round(float(cosines.min()), 7),
        "median_cosine": round(float(np.median(cosines)), 7),
    }
    return memory


def render(rows: dict[str, dict[str, Any]], memory: dict[str, Any], args: Any, backend: str) -> str:
    if not rows:
        return f"# e5-small vs MiniLM on {backend}: resident memory\n" + _memory_lines(memory)
    lines = [
        f"# e5-small vs MiniLM on {backend} as `ragbrain ingest` and a query meet them "
        f"({args.notes} notes per set, {args.queries} queries, {args.rounds} rounds "
        "alternated)\n",
        "| notes | model | chunks | ingest chunks/s | notes/s | query p50 ms |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        for label in ("minilm", "e5-small"):
            v = row[label]
            lines.append(
                f"| {name} | {label} | {v['chunks']} | {v['chunks_per_s']} | {v['notes_per_s']} "
                f"| {v['query_p50_ms']} |"
            )
    lines += ["", "| notes | chunks/s e5/MiniLM | notes/s e5/MiniLM | query p50 e5/MiniLM |"]
    lines.append("|---|---|---|---|")
    for name, row in rows.items():
        r = row["ratios"]
        lines.append(
            f"| {name} | {r['chunks_per_s_e5_over_minilm']} | {r['notes_per_s_e5_over_minilm']} "
            f"| {r['query_p50_e5_over_minilm']} |"
        )
    return "\n".join(lines) + "\n" + (_memory_lines(memory) if memory else "")


def _memory_lines(memory: dict[str, Any]) -> str:
    lines = [
        "",
        "Resident memory of a fresh process, MB (raw passages of the sets, up to 512 tokens): "
        "RSS (anonymous / file-backed) after loading and 8 queries (a reader: `ragbrain "
        "query`, the MCP server), then after 8 passages, after all of them, after the freed "
        "heap is given back (as ingest does), and with the shipped critic (torch) loaded too; "
        "peak.",
        "",
        "| process | reader | + 8 passages | after the batch | given back | + critic | peak |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, v in memory.items():
        if label == "fp16_vs_fp32_table":
            continue
        cells = [f"{v[k]['VmRSS']} ({v[k]['RssAnon']} / {v[k]['RssFile']})" for k in KEYS]
        lines.append(f"| {label} | {' | '.join(cells)} | {v['with_critic']['VmHWM']} |")
    if c := memory.get("fp16_vs_fp32_table"):
        lines.append(
            f"\nfp16 against fp32 word embeddings: cosine of the vectors on {c['texts']} "
            f"passages, min {c['min_cosine']}, median {c['median_cosine']}."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, required=True)
    parser.add_argument("--sets", nargs="+", default=["scifact", "iapp_th_ret"])
    parser.add_argument("--notes", type=int, default=200)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-speed", action="store_true", help="memory only")
    args = parser.parse_args()

    from ragbrain import Store
    from ragbrain.ingest import ingest
    from ragbrain.models.backend import backend_setting
    from ragbrain.models.embeddings import default_embeddings, e5_embeddings

    rng = random.Random(args.seed)
    models = {"minilm": default_embeddings(), "e5-small": e5_embeddings()}
    tmp = Path(tempfile.mkdtemp(prefix="e5-speed-"))
    folders: dict[str, Path] = {}
    queries: dict[str, list[str]] = {}
    passages: list[str] = []
    for name in args.sets:
        root = args.data_root / name
        docs = [json.loads(line) for line in (root / "corpus.jsonl").open(encoding="utf-8")]
        docs = rng.sample(docs, min(args.notes, len(docs)))
        folders[name] = tmp / "notes" / name
        write_notes(folders[name], docs)
        passages += [f"{d.get('title', '')}\n{d['text']}".strip() for d in docs[:24]]
        found = [json.loads(line)["text"] for line in (root / "queries.jsonl").open()]
        queries[name] = rng.sample(found, min(args.queries, len(found)))
    warm = tmp / "warm"
    write_notes(warm, [{"title": "Warm up", "text": "A first note to load every part."}])
    for label, m in models.items():
        ingest(warm, Store.open(tmp / f"warm-{label}", m, create=True))
        m.embed_query("warm up")
    rows = {} if args.skip_speed else time_ingests(models, folders, queries, tmp, args.rounds)
    backend = backend_setting()
    memory = {} if args.skip_memory else measure_memory(passages, tmp, backend)
    payload = {
        "backend": backend,
        "sets": rows,
        "notes": args.notes,
        "rounds": args.rounds,
        "memory": memory,
    }
    name = "e5_memory" if args.skip_speed else "e5_speed"
    name = name if backend == "torch" else f"{name}-{backend}"
    save(name, payload, render(rows, memory, args, backend))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
