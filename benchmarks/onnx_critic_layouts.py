"""Which int8 layout keeps the critic's keep/drop decisions closest to the calibrated one.

The reference is the shipped critic as it runs on torch (dynamic int8, what its threshold
and combiner were fitted on). Lists: top 10 by onnx MiniLM of 350 NFCorpus documents (the
first 250 judged ids + 100 seeded others) for the first 40 dev queries. Prints one line per
variant; the numbers are quoted in docs/onnx.md.

    python -m benchmarks.onnx_critic_layouts [--data ../shared/data/nfcorpus]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
from pathlib import Path
from typing import Any


def main() -> None:
    """Score the same lists with each critic variant and print its agreement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/nfcorpus"))
    args = parser.parse_args()

    import numpy as np

    import ragbrain.critic.onnx as critic_onnx
    from ragbrain.critic.folder import build_model, default_critic_path
    from ragbrain.critic.model import TransformerCritic
    from ragbrain.evaluation.beir import load_split
    from ragbrain.models.backend import load_embeddings
    from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL, minilm_path, set_offline
    from ragbrain.models.onnx_backend import QUANTIZATION

    set_offline()
    split = load_split(args.data, "dev", drop_unknown_docs=True)
    judged = sorted({d for v in split.qrels.values() for d in v})[:250]
    others = sorted(set(split.corpus) - set(judged))
    random.Random(0).shuffle(others)
    texts = [split.corpus[i].content for i in judged + others[:100]]
    embeddings = load_embeddings(minilm_path(), "onnx")
    passages = np.array(embeddings.embed_documents(texts))
    qids = sorted(split.queries)[:40]
    queries = np.array([embeddings.embed_query(split.queries[q]) for q in qids])
    top = (queries @ passages.T).argsort(1)[:, ::-1][:, :10]

    def decisions(critic: Any) -> list[list[bool]]:
        bound = critic.for_model(DEFAULT_EMBEDDING_MODEL)
        out = []
        for i, qid in enumerate(qids):
            chunks = [texts[j][:1200] for j in top[i]]
            distances = [float(1 - queries[i] @ passages[j]) for j in top[i]]
            scores = bound.score(split.queries[qid], chunks, distances)
            out.append([s >= bound.threshold for s in scores])
        return out

    def show(name: str, got: list[list[bool]]) -> None:
        lists = statistics.fmean(a == b for a, b in zip(reference, got, strict=True))
        pairs = [
            x == y for a, b in zip(reference, got, strict=True) for x, y in zip(a, b, strict=True)
        ]
        kept = statistics.fmean(x for row in got for x in row)
        chunks = statistics.fmean(pairs)
        print(f"{name}: same lists {lists:.3f}, same chunks {chunks:.3f}, kept {kept:.3f}")

    reference = decisions(TransformerCritic(default_critic_path(), backend="torch"))
    print(f"reference kept {statistics.fmean(x for row in reference for x in row):.3f}")
    fp32 = TransformerCritic(default_critic_path(), backend="torch")
    fp32.model = build_model(fp32.folder, fp32.calibration)
    show("torch fp32", decisions(fp32))
    variants = {
        "onnx int8 per-channel, FFN output fp32 (shipped)": dict(QUANTIZATION),
        "onnx int8 per-channel, all MatMuls": {**QUANTIZATION, "ffn_output_fp32": False},
        "onnx int8 torch layout": {
            **QUANTIZATION,
            "per_channel": False,
            "reduce_range": True,
            "operators": ["MatMul", "Gemm"],
            "ffn_output_fp32": False,
        },
    }
    for name, config in variants.items():
        critic_onnx.CRITIC_QUANTIZATION = config
        show(name, decisions(TransformerCritic(default_critic_path(), backend="onnx")))
    critic_onnx.quantize = lambda fp32, int8, config=None: shutil.copy(fp32, int8)
    critic_onnx.CRITIC_QUANTIZATION = {"fp32": True}
    show("onnx fp32", decisions(TransformerCritic(default_critic_path(), backend="onnx")))


if __name__ == "__main__":
    main()
