"""Off-topic refusal, leave-one-domain-out: refused and falsely refused questions per store.

python -m benchmarks.offtopic --data-root ../shared/data --test-queries 100 --fit-queries 60 \
    --subcorpus scifact=2000 cosqa=2000 --only scifact nfcorpus cosqa          # MiniLM stores
python -m benchmarks.offtopic --embedding e5-small --data-root ../shared/data --test-queries 100 \
    --fit-queries 60 --subcorpus jaquad_ret=600 drcd_ret=600 iapp_th_ret=600 scifact=600 \
    cosqa=600 --only arcd_ret cmrc2018_ret iapp_th_ret drcd_ret jaquad_ret scifact cosqa

Each shared set's store in turn is held apart (the same stores and sampled queries as
``benchmarks.lodo``). Its off-topic questions are the other domains' test queries (never a
set of its own domain: not CMRC 2018 for DRCD, not SciFact for NFCorpus, and back) and the
evaluation bank (``ragbrain/evaluation/offtopic_questions.jsonl``, which nothing is fit on);
its answerable questions are its own test queries. The product's rule
(``ragbrain.refusal.offtopic``) refuses a question whose best distance to the store is above
the store's cut, a quantile of the calibration bank's best distances; that quantile is fit on
the other domains only (their fit-split queries against their own stores, the off-topic ones
being the fit-split queries of the domains other than theirs and the held-apart one), as the
lowest quantile that refuses at most 2% of every fit set's answerable queries (5% for the
strict level, on the missing-answer scenario: the query's relevant documents left out of its
list).

``--ship`` prints the quantile and strict share fit on every set (the product's ``LEVELS``)
and the median cut (``SHIPPED_CUTS``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import say
from benchmarks.lodo import SUBCORPUS_QUERIES, set_arguments, shipped_critic_and_sets
from benchmarks.lodo_data import subcorpus
from ragbrain.evaluation.beir import cache_root, load_split
from ragbrain.evaluation.lodo import domain_of
from ragbrain.evaluation.offtopic import evaluation_bank, offtopic_sources
from ragbrain.evaluation.report import write_json
from ragbrain.refusal import offtopic

RESULTS = Path(__file__).parent / "results"
GRID = [round(0.005 * i, 3) for i in range(0, 201)]  # quantiles 0 .. 1
FALSE_REFUSAL = 0.02
STRICT_FALSE_REFUSAL = 0.05
SCALES = [round(0.5 + 0.01 * i, 2) for i in range(51)]  # the strict cut as a share of the cut


def _embed_all(model: str, texts: Sequence[str]) -> Any:
    """Every text's query embedding by ``model``, cached."""
    import numpy as np

    from ragbrain.models.embeddings import embeddings_for

    digest = hashlib.sha256("\n".join([model, *texts]).encode()).hexdigest()[:16]
    path = cache_root() / "offtopic" / f"vectors-{digest}.npy"
    if path.is_file():
        return np.load(path, allow_pickle=False)
    say(f"embedding {len(texts)} questions with {model}")
    embeddings = embeddings_for(model)
    vectors = np.asarray([embeddings.embed_query(t) for t in texts], dtype=np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors, allow_pickle=False)
    return vectors


def _refused(distance: float, text: str, cut: offtopic.OffTopicCut, strict: bool) -> bool:
    return offtopic.refusal_reason(text, distance, cut, strict=strict) is not None


def _cut(
    bank: Sequence[float], level: float, model: str, scripts: dict[str, float], scale: float = 1.0
) -> Any:
    q = offtopic.quantile(bank, level)
    return offtopic.OffTopicCut(q, q * scale, "benchmark", model, scripts)


def _rate(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def main() -> None:  # noqa: PLR0915 (one measurement, read top to bottom)
    """Measure refusal and false refusal per held-apart store."""
    parser = set_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--ship", action="store_true", help="Print the quantiles fit on all.")
    parser.add_argument("--name", default=None, help="Results name (offtopic[-e5]).")
    args = parser.parse_args()
    model, _critic, (names, _splits, test, fit) = shipped_critic_and_sets(args)
    from ragbrain.evaluation.beir import corpus_store
    from ragbrain.models.embeddings import embeddings_for

    english_only = model in offtopic.ENGLISH_ONLY
    cal_bank = list(offtopic.bank(english_only=english_only))
    eval_bank = evaluation_bank()
    texts: dict[str, str] = {}
    for name in names:
        for role, data in (("test", test[name]), ("fit", fit[name])):
            texts.update({f"{name}|{role}|{r.id}": r.text for r in data.records})
    texts.update({f"bank|cal|{i}": t for i, t in enumerate(cal_bank)})
    texts.update({f"bank|eval|{q['id']}": q["text"] for q in eval_bank})
    keys = sorted(texts)
    vectors = _embed_all(model, [texts[k] for k in keys])
    sub_docs = {n: int(d) for n, _, d in (item.partition("=") for item in args.subcorpus)}
    distance: dict[str, dict[str, float]] = {}
    scripts: dict[str, dict[str, float]] = {}
    embeddings = embeddings_for(model)
    for name in names:
        root = args.data_root
        if name in sub_docs:
            fit_splits = [s for s in ("train", "dev") if s in _splits[name]]
            roles = [(["test"], SUBCORPUS_QUERIES[0]), (fit_splits, SUBCORPUS_QUERIES[1])]
            root = subcorpus(root, name, roles, sub_docs[name])
        store = corpus_store(load_split(root / name, "test", drop_unknown_docs=True), embeddings)
        near = offtopic.nearest_distances(store, vectors)
        distance[name] = dict(zip(keys, near, strict=True))
        sample = store.collection.get(limit=offtopic.SCRIPT_SAMPLE, include=["documents"])
        scripts[name] = offtopic.script_shares(t for t in sample["documents"] or [] if t)
        say(f"{name}: {len(keys)} questions measured against {store.count()} chunks")

    def bank_of(store_name: str) -> list[float]:
        return [distance[store_name][f"bank|cal|{i}"] for i in range(len(cal_bank))]

    def answerable(store_name: str, role: str) -> list[tuple[str, float, float]]:
        """(text, best distance, best distance with the relevant documents left out)."""
        data = test[store_name] if role == "test" else fit[store_name]
        rows = []
        for r in data.records:
            missing = [d for doc, d in r.dense if doc not in r.relevant]
            rows.append(
                (
                    r.text,
                    distance[store_name][f"{store_name}|{role}|{r.id}"],
                    min(missing, default=2.0),
                )
            )
        return rows

    def foreign(store_name: str, role: str, exclude: set[str]) -> list[tuple[str, float]]:
        """Off-topic questions for ``store_name``: the other sets' queries of ``role``, not
        those of a related set nor of a set in ``exclude``."""
        sources = set(offtopic_sources(store_name, names)) - exclude
        return [
            (texts[k], distance[store_name][k])
            for k in keys
            if k.split("|")[1] == role and k.split("|")[0] in sources
        ]

    def fit_level(fit_sets: Sequence[str]) -> float:
        """The lowest quantile that refuses at most ``FALSE_REFUSAL`` of every fit set's
        answerable queries."""
        for level in GRID:
            worst = 0.0
            for f in fit_sets:
                cut = _cut(bank_of(f), level, model, scripts[f])
                rows = answerable(f, "fit")
                worst = max(worst, _rate([_refused(d, t, cut, False) for t, d, _ in rows]))
            if worst <= FALSE_REFUSAL:
                return level
        return GRID[-1]

    def fit_scale(fit_sets: Sequence[str], level: float) -> float:
        """The lowest share of the cut that refuses at most ``STRICT_FALSE_REFUSAL`` of every
        fit set's answerable queries (the strict level)."""
        for scale in SCALES:
            worst = 0.0
            for f in fit_sets:
                cut = _cut(bank_of(f), level, model, scripts[f], scale)
                rows = answerable(f, "fit")
                worst = max(worst, _rate([_refused(d, t, cut, True) for t, d, _ in rows]))
            if worst <= STRICT_FALSE_REFUSAL:
                return scale
        return SCALES[-1]

    report: dict[str, Any] = {
        "model": model,
        "sets": {},
        "command": {k: str(v) for k, v in vars(args).items()},
    }
    for held in names:
        fit_sets = [n for n in names if domain_of(n) != domain_of(held)]
        level = fit_level(fit_sets)
        scale = fit_scale(fit_sets, level)
        cut = _cut(bank_of(held), level, model, scripts[held], scale)
        rows = answerable(held, "test")
        others = foreign(held, "test", set())
        bank_rows = [(q["text"], distance[held][f"bank|eval|{q['id']}"]) for q in eval_bank]
        entry = {
            "level": level,
            "strict_scale": scale,
            "cut": round(cut.distance, 4),
            "strict_cut": round(cut.strict, 4),
            "answerable": len(rows),
            "false_refusal": _rate([_refused(d, t, cut, False) for t, d, _ in rows]),
            "offtopic_queries": len(others),
            "refused_other_domains": _rate([_refused(d, t, cut, False) for t, d in others]),
            "refused_bank": _rate([_refused(d, t, cut, False) for t, d in bank_rows]),
            "refused_offtopic": _rate([_refused(d, t, cut, False) for t, d in others + bank_rows]),
            "strict_false_refusal": _rate([_refused(d, t, cut, True) for t, d, _ in rows]),
            "strict_refused_missing": _rate([_refused(m, t, cut, True) for t, _, m in rows]),
            "default_refused_missing": _rate([_refused(m, t, cut, False) for t, _, m in rows]),
            "answerable_distance_median": statistics.median(d for _, d, _ in rows),
            "offtopic_distance_median": statistics.median(d for _, d in others + bank_rows),
        }
        report["sets"][held] = entry
        say(
            f"{held}: level {level} cut {entry['cut']:.3f}: "
            f"refused {entry['refused_offtopic']:.1%} "
            f"(domains {entry['refused_other_domains']:.1%}, bank {entry['refused_bank']:.1%}), "
            f"false {entry['false_refusal']:.1%}; strict x{scale}: missing "
            f"{entry['strict_refused_missing']:.1%} / false {entry['strict_false_refusal']:.1%}"
        )
    if args.ship:
        level = fit_level(names)
        scale = fit_scale(names, level)
        cuts = [offtopic.quantile(bank_of(n), level) for n in names]
        report["ship"] = {
            "level": level,
            "strict_scale": scale,
            "median_cut": statistics.median(cuts),
        }
        say(f"ship: {report['ship']}")
    name = args.name or ("offtopic" if args.embedding == "minilm" else "offtopic-e5")
    write_json(RESULTS / f"{name}.json", report)
    (RESULTS / f"{name}.md").write_text(markdown(report), encoding="utf-8")


def markdown(report: dict[str, Any]) -> str:
    """The report as a Markdown table."""
    lines = [
        f"# Off-topic refusal, leave-one-domain-out ({report['model']})",
        "",
        "| held-apart store | quantile, strict share (fit LODO) | cut | off-topic refused "
        "(other domains / bank) | answerable refused | strict: answerless refused / "
        "answerable refused |",
        "|---|---|---|---|---|---|",
    ]
    for name, e in report["sets"].items():
        lines.append(
            f"| {name} | {e['level']}, {e['strict_scale']} | {e['cut']:.3f} | "
            f"{e['refused_offtopic']:.1%} "
            f"({e['refused_other_domains']:.1%} / {e['refused_bank']:.1%}) | "
            f"{e['false_refusal']:.1%} | {e['strict_refused_missing']:.1%} / "
            f"{e['strict_false_refusal']:.1%} |"
        )
    if "ship" in report:
        lines += ["", f"Fit on every set: {json.dumps(report['ship'])}"]
    lines += ["", f"Command: {json.dumps(report['command'], default=str)}", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
