"""The critic step alone: load time, memory, and p50/p95 for batches of 10 real chunks.

Batches are 10 consecutive abstracts of a BEIR corpus (SciFact by default) scored against a
claim of the same set, the way the retriever's critic node calls it (one ``score`` call per
query): once cut to their first 256 tokens (the target's case; ``ragbrain ingest`` makes chunks
of at most 200), once whole (up to ~1,000 tokens: the lexical features read 512 of them, the
cross-encoder its 64-token window). Run on an idle machine: the timings are wall-clock.

    python -m benchmarks.speed critic [--data ../shared/data/scifact] [--batches 60] \
        [--critic FOLDER --name critic_speed-mine]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.common import save, say, stats


def rss_mib() -> float:
    """This process's resident memory, from /proc."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def end_of_token(tokenizer: Any, text: str, tokens: int) -> int:
    """The character offset where ``text``'s first ``tokens`` tokens end."""
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    spans = offsets["offset_mapping"][:tokens]
    return spans[-1][1] if spans and len(offsets["offset_mapping"]) > tokens else len(text)


def main() -> None:
    """Measure and write results/critic_speed.json and .md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/scifact"))
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--critic", type=Path, default=None, help="A critic folder (default: the shipped one)."
    )
    parser.add_argument("--name", default="critic_speed", help="Results file name.")
    args = parser.parse_args()

    import torch

    from ragbrain import TransformerCritic
    from ragbrain.critic.folder import default_critic_path
    from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL, set_offline

    set_offline()
    started = time.perf_counter()
    # What the embedding model has already imported in a retriever process (sentence-transformers
    # loads MiniLM as a BERT), timed apart: 4-5 s of Python imports on this machine.
    import transformers.models.bert.modeling_bert  # noqa: F401

    import_s = time.perf_counter() - started

    with (args.data / "corpus.jsonl").open(encoding="utf-8") as corpus:
        docs = [json.loads(line) for line in itertools.islice(corpus, args.batches * 10)]
    with (args.data / "queries.jsonl").open(encoding="utf-8") as queries:
        claims = [json.loads(line)["text"] for line in itertools.islice(queries, args.batches)]
    whole = [f"{d.get('title', '')}\n{d['text']}".strip() for d in docs]

    before = rss_mib()
    started = time.perf_counter()
    # As the retriever runs it over a store of MiniLM vectors: with its distance layer (the
    # distances' values do not change the work; the hits' come from the search).
    folder = args.critic or default_critic_path()
    critic = TransformerCritic(folder, embedding_model=DEFAULT_EMBEDDING_MODEL)
    load_s = time.perf_counter() - started
    loaded = rss_mib() - before  # before the transformers tokenizer below, which it never loads
    cut = [text[: end_of_token(critic.tokenizer, text, 256)] for text in whole]
    rows: dict[str, dict[str, float]] = {}
    for label, texts in (("chunks <= 256 tokens", cut), ("whole abstracts", whole)):
        for threads in args.threads:
            torch.set_num_threads(threads)
            critic.score(claims[0], texts[:10], [0.5] * 10)  # warm-up
            seconds = []
            for i in range(args.batches):
                batch = texts[i * 10 : i * 10 + 10]
                began = time.perf_counter()
                critic.score(claims[i % len(claims)], batch, [0.5] * len(batch))
                seconds.append(time.perf_counter() - began)
            name = f"{label}, {threads} torch thread(s)"
            rows[name] = stats(seconds)
            say(f"{name}: p50 {statistics.median(seconds) * 1000:.1f} ms")
    added = rss_mib() - before
    lines = [
        f"Critic load {load_s:.2f} s (its constructor, in a process that has imported "
        f"transformers' BERT modules, as the retriever's embedding model does; importing them "
        f"took {import_s:.2f} s here); resident memory +{loaded:.0f} MB after load, "
        f"+{added:.0f} MB after {len(args.threads) * args.batches} batches (with the "
        "transformers tokenizer this benchmark loads to cut the texts).",
        "",
        "| batch of 10 | p50 ms | p95 ms |",
        "|---|---|---|",
        *(f"| {name} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} |" for name, r in rows.items()),
    ]
    table = "\n".join(lines)
    print(table)
    payload = {
        "load_seconds": load_s,
        "bert_import_seconds": import_s,
        "rss_added_mib": added,
        "rss_after_load_mib": loaded,
        "data": str(args.data),
        "critic": str(folder),
        "base": critic.calibration.get("base"),
    }
    save(args.name, {**payload, "results": rows}, table + "\n")


if __name__ == "__main__":
    main()
