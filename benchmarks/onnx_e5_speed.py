"""multilingual-e5-small on ONNX Runtime int8 against all-MiniLM-L6-v2 on torch: passage speed.

The issue's bar for the fast path: e5-small on ONNX encodes ingest's chunks at least as fast
as MiniLM does on torch (the default for English notes). Each set's first ``--docs`` corpus
documents (title + text) are cut as ingest cuts them for each model (``splitter_for``: the
same chunk budget counted in each model's own tokens), and the chunks encoded in slices of 32
by MiniLM on torch, e5-small on torch and e5-small on ONNX, the three interleaved slice by
slice (rotating which goes first) so load on a shared machine hits all alike. Reported: the
median chunks/s of each, and the median of the per-slice ratios.

    python -m benchmarks.onnx_e5_speed [--data-root ../shared/data] [--sets scifact iapp_th_ret]
        [--docs 320]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.common import save, say

SLICE = 32


def measure(chunks: dict[str, list[str]], models: dict[str, Any]) -> dict[str, Any]:
    """Chunks/s of each model over interleaved slices of its own ``chunks``."""
    rates: dict[str, list[float]] = {name: [] for name in models}
    names = list(models)
    slices = min(len(c) for c in chunks.values()) // SLICE
    for i in range(slices):
        turn = i % len(names)
        for name in names[turn:] + names[:turn]:
            part = chunks[name][i * SLICE : (i + 1) * SLICE]
            began = time.perf_counter()
            models[name].embed_documents(part)
            rates[name].append(len(part) / (time.perf_counter() - began))
    ratio = [
        e5 / minilm for e5, minilm in zip(rates["e5 onnx"], rates["minilm torch"], strict=True)
    ]
    return {
        "chunks": {name: len(c) for name, c in chunks.items()},
        "chunks_per_s": {name: statistics.median(r) for name, r in rates.items()},
        "e5_onnx_over_minilm_torch": statistics.median(ratio),
        "slices": len(ratio),
    }


def main() -> None:
    """Measure and write results/onnx_e5_speed.json and .md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, default=Path("../shared/data"))
    parser.add_argument("--sets", nargs="+", default=["scifact", "iapp_th_ret"])
    parser.add_argument("--docs", type=int, default=320)
    args = parser.parse_args()

    from ragbrain.evaluation.beir import load_split
    from ragbrain.ingest.chunks import splitter_for
    from ragbrain.models.backend import load_embeddings
    from ragbrain.models.e5.convert import model_folder
    from ragbrain.models.embeddings import minilm_path, set_offline

    set_offline()
    e5 = model_folder()
    models = {
        "minilm torch": load_embeddings(minilm_path(), "torch"),
        "e5 torch": load_embeddings(
            e5, "torch", passage_prompt="passage: ", half_word_embeddings=True
        ),
        "e5 onnx": load_embeddings(e5, "onnx", passage_prompt="passage: "),
    }
    for model in models.values():  # warm up (and export, the first time)
        model.embed_documents(["warm up"] * 4)
    sets: dict[str, Any] = {}
    for name in args.sets:
        split = load_split(args.data_root / name, "test", drop_unknown_docs=True)
        texts = [doc.content for doc in list(split.corpus.values())[: args.docs]]
        chunks = {
            side: [c for text in texts for c in splitter_for(model).split_text(text)]
            for side, model in models.items()
        }
        say(f"{name}: {len(texts)} documents, chunks { ({k: len(v) for k, v in chunks.items()}) }")
        sets[name] = measure(chunks, models)
        say(f"{name}: {sets[name]}")
    lines = [
        "| set | chunks MiniLM / e5 | MiniLM torch chunks/s | e5 torch chunks/s "
        "| e5 ONNX int8 chunks/s | e5 ONNX / MiniLM torch (median of slices) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, row in sets.items():
        rate, count = row["chunks_per_s"], row["chunks"]
        lines.append(
            f"| {name} | {count['minilm torch']} / {count['e5 onnx']} | {rate['minilm torch']:.1f} "
            f"| {rate['e5 torch']:.1f} | {rate['e5 onnx']:.1f} "
            f"| {row['e5_onnx_over_minilm_torch']:.2f}x |"
        )
    print("\n".join(lines))
    save("onnx_e5_speed", {"docs": args.docs, "sets": sets}, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
