"""Off-topic refusal, leave-one-domain-out: refused and falsely refused questions per store.

python -m benchmarks.offtopic --data-root ../shared/data --test-queries 100 --fit-queries 60 \
    --subcorpus scifact=2000 cosqa=2000 --only scifact nfcorpus cosqa --ship   # MiniLM stores
python -m benchmarks.offtopic --embedding e5-small --data-root ../shared/data --test-queries 100 \
    --fit-queries 60 --subcorpus jaquad_ret=600 drcd_ret=600 iapp_th_ret=600 scifact=600 \
    cosqa=600 --only arcd_ret cmrc2018_ret iapp_th_ret drcd_ret jaquad_ret scifact cosqa --ship

Each shared set's store in turn is held apart (the same stores and sampled queries as
``benchmarks.lodo``). Its off-topic questions are the other sets' test queries (never a
related set's: not CMRC 2018 for DRCD, not SciFact for NFCorpus, and back) and the
evaluation bank (``ragbrain/evaluation/offtopic_questions.jsonl``, which nothing is fit on);
its answerable questions are its own test queries. The product's rule
(``ragbrain.refusal.offtopic``) refuses a question whose best distance to the store is above
the store's cut (a quantile of the calibration bank's best distances) unless one chunk holds
enough of its rare words (``lexical_support``). The quantile and the support are fit on the
other domains only, on their fit-split queries against their own stores (their off-topic
questions: the fit-split queries of the sets unrelated to them and to the held-apart one, and
the calibration bank): the most off-topic questions refused (mean over the fit sets) while at
most 2% of every fit set's answerable queries are; among settings within half a point of the
best, the one that rescues the most (lowest support, then lowest quantile). The strict
level's share of the cut is fit the same way at 5%; it is measured on the missing-answer
scenario read from the same lists (each query's relevant documents left out).

``--ship`` fits the same on every set and writes it into the model's profile
(``src/ragbrain/models/profiles/``): its off-topic level, strict share, support and shipped cut
(the median cut over the stores).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import say
from benchmarks.lodo import SUBCORPUS_QUERIES, set_arguments, shipped_critic_and_sets
from benchmarks.lodo.data import subcorpus
from ragbrain.evaluation import domain_of, evaluation_bank, load_split, offtopic_sources, write_json
from ragbrain.lexical.support import SUPPORT_HITS, lexical_support
from ragbrain.models.profiles import profile, write_profile
from ragbrain.refusal import offtopic

RESULTS = Path(__file__).parent / "results"
LEVELS = [round(0.005 * i, 3) for i in range(201)]  # quantiles 0 .. 1
SUPPORTS = [round(0.05 * i, 2) for i in range(4, 21)] + [offtopic.NO_RESCUE]  # 0.2 .. 1, none
SCALES = [round(0.5 + 0.01 * i, 2) for i in range(51)]  # the strict cut's share of the cut
FALSE_REFUSAL = 0.02
STRICT_FALSE_REFUSAL = 0.05
CLOSE = 0.005  # settings this close to the best refusal count as ties


@dataclass
class Rows:
    """Questions against one store: best distance, lexical support (-1: none), and whether
    the script rule refuses them whatever their distance."""

    distance: np.ndarray
    support: np.ndarray
    script: np.ndarray

    def refused(self, cut: float, support: float) -> np.ndarray:
        """Which questions the rule refuses at this cut and support."""
        far = (self.distance > cut) & (self.support < support)
        return np.asarray(self.script | far)


def _decision_ms(index: Any, texts: Sequence[str]) -> float:
    """The refusal decision's own cost, p50 in ms: the lexical support over BM25's hits (found
    by the search the query runs anyway) and the rule."""
    import time

    cut = offtopic.OffTopicCut(0.5, 0.45, "timing", "timing", support=0.65)
    found = {text: [h.id for h in index.search(text, SUPPORT_HITS)] for text in texts}
    times = []
    for text in texts:
        started = time.perf_counter()
        support = lexical_support(index, text, found[text])
        offtopic.refusal_reason(text, 0.6, cut, support=support)
        times.append((time.perf_counter() - started) * 1000)
    return float(np.median(times))


def _rate(flags: np.ndarray) -> float:
    return float(flags.mean()) if flags.size else 0.0


class Measured:
    """Every question's distance and support against every store, and the rows the fit and
    the report read."""

    def __init__(self, args: argparse.Namespace) -> None:
        from ragbrain.evaluation import corpus_store
        from ragbrain.models.embeddings import embeddings_for
        from ragbrain.store.lexical import sync_lexical

        self.model, _critic, (names, splits, self.test, self.fit) = shipped_critic_and_sets(args)
        self.names = names
        english_only = offtopic.english_only(self.model)
        self.cal_size = len(offtopic.bank(english_only=english_only))
        self.eval_bank = evaluation_bank()
        texts: dict[str, str] = {}
        for name in names:
            for role, data in (("test", self.test[name]), ("fit", self.fit[name])):
                texts.update({f"{name}|{role}|{r.id}": r.text for r in data.records})
        texts.update({f"bank|cal|{i}": t for i, t in enumerate(offtopic.bank(english_only))})
        texts.update({f"bank|eval|{q['id']}": q["text"] for q in self.eval_bank})
        self.texts = texts
        self.keys = sorted(texts)
        sub_docs = {n: int(d) for n, _, d in (item.partition("=") for item in args.subcorpus)}
        embeddings = embeddings_for(self.model)
        vectors = offtopic.query_vectors(embeddings, [texts[k] for k in self.keys], self.model)
        self.distance: dict[str, dict[str, float]] = {}
        self.support: dict[str, dict[str, float]] = {}
        self.missing_support: dict[str, dict[str, float]] = {}
        self.scripts: dict[str, dict[str, float]] = {}
        self.prose: dict[str, float] = {}
        self.per_source: dict[str, float] = {}
        self.decision_ms: dict[str, float] = {}
        for name in names:
            root = args.data_root
            if name in sub_docs:
                fit_splits = [s for s in ("train", "dev") if s in splits[name]]
                roles: list[tuple[Sequence[str], int]] = [
                    (["test"], SUBCORPUS_QUERIES[0]),
                    (fit_splits, SUBCORPUS_QUERIES[1]),
                ]
                root = subcorpus(root, name, roles, sub_docs[name])
            store = corpus_store(
                load_split(root / name, "test", drop_unknown_docs=True), embeddings
            )
            index = sync_lexical(store)
            near = offtopic.nearest_distances(store, vectors)
            self.distance[name] = dict(zip(self.keys, near, strict=True))
            self.support[name] = {}
            for key in self.keys:
                hits = [h.id for h in index.search(texts[key], SUPPORT_HITS)]
                got = lexical_support(index, texts[key], hits)
                self.support[name][key] = -1.0 if got is None else got
            self.decision_ms[name] = _decision_ms(index, [texts[k] for k in self.keys[:300]])
            self.missing_support[name] = {}
            for role, data in (("test", self.test[name]), ("fit", self.fit[name])):
                for r in data.records:
                    found = index.search(r.text, SUPPORT_HITS + len(r.relevant))
                    hits = [h.id for h in found if h.id not in r.relevant]
                    got = lexical_support(index, r.text, hits)
                    self.missing_support[name][f"{name}|{role}|{r.id}"] = (
                        -1.0 if got is None else got
                    )
            sample = store.collection.get(
                limit=offtopic.SCRIPT_SAMPLE, include=["documents", "metadatas"]
            )
            self.scripts[name] = offtopic.script_shares(t for t in sample["documents"] or [] if t)
            self.prose[name] = offtopic.prose_share(t or "" for t in sample["documents"] or [])
            self.per_source[name] = offtopic.chunks_per_source(
                sample["ids"], sample["metadatas"] or []
            )
            say(f"{name}: {len(self.keys)} questions measured against {store.count()} chunks")

    def bank_cut(self, store: str, level: float) -> float:
        """The store's cut at ``level``: that quantile of the calibration bank's distances."""
        bank = [self.distance[store][f"bank|cal|{i}"] for i in range(self.cal_size)]
        return offtopic.quantile(bank, level)

    def rows(self, store: str, keys: Sequence[str], *, missing: bool = False) -> Rows:
        """``keys``'s questions against ``store`` (``missing``: their relevant documents left
        out of their lists)."""
        cut = offtopic.OffTopicCut(2.0, 2.0, "", self.model, self.scripts[store])
        script = [offtopic.refusal_reason(self.texts[k], 0.0, cut) is not None for k in keys]
        if missing:
            records = {
                f"{store}|{role}|{r.id}": r
                for role, data in (("test", self.test[store]), ("fit", self.fit[store]))
                for r in data.records
            }
            distance = [
                min(
                    (d for doc, d in records[k].dense if doc not in records[k].relevant),
                    default=2.0,
                )
                for k in keys
            ]
            support = [self.missing_support[store][k] for k in keys]
        else:
            distance = [self.distance[store][k] for k in keys]
            support = [self.support[store][k] for k in keys]
        return Rows(np.array(distance), np.array(support), np.array(script, dtype=bool))

    def own(self, store: str, role: str) -> list[str]:
        """The keys of ``store``'s own queries of ``role``."""
        return [k for k in self.keys if k.startswith(f"{store}|{role}|")]

    def foreign(self, store: str, role: str, exclude: set[str]) -> list[str]:
        """Off-topic keys for ``store``: the unrelated sets' queries of ``role`` (none of a
        set in ``exclude``)."""
        sources = set(offtopic_sources(store, self.names)) - exclude
        return [k for k in self.keys if k.split("|")[1] == role and k.split("|")[0] in sources]

    def fit_setting(self, fit_sets: Sequence[str], held: str | None) -> dict[str, float]:
        """The quantile, support and strict share fit on ``fit_sets`` (nothing of ``held``)."""
        exclude = set() if held is None else {held, *offtopic_sources_related(held)}
        answerable = {f: self.rows(f, self.own(f, "fit")) for f in fit_sets}
        cal = [f"bank|cal|{i}" for i in range(self.cal_size)]
        offtopic_rows = {f: self.rows(f, self.foreign(f, "fit", exclude) + cal) for f in fit_sets}
        best: list[tuple[float, float, float]] = []  # (refusal, support, level)
        for support in SUPPORTS:
            for level in LEVELS:
                cuts = {f: self.bank_cut(f, level) for f in fit_sets}
                worst = max(_rate(answerable[f].refused(cuts[f], support)) for f in fit_sets)
                if worst > FALSE_REFUSAL:
                    continue
                refusal = statistics.mean(
                    _rate(offtopic_rows[f].refused(cuts[f], support)) for f in fit_sets
                )
                best.append((refusal, support, level))
                break  # the lowest level that keeps the answers refuses the most
        top = max(r for r, _, _ in best)
        support, level = min((s, lv) for r, s, lv in best if r >= top - CLOSE)
        scale = SCALES[-1]
        for candidate in SCALES:
            worst = max(
                _rate(answerable[f].refused(self.bank_cut(f, level) * candidate, support))
                for f in fit_sets
            )
            if worst <= STRICT_FALSE_REFUSAL:
                scale = candidate
                break
        return {"level": level, "support": support, "strict_scale": scale}

    def held_out(self, held: str, fitted: dict[str, float]) -> dict[str, Any]:
        """The held-apart store's figures with the setting fit without it."""
        cut = self.bank_cut(held, fitted["level"])
        strict = cut * fitted["strict_scale"]
        support = fitted["support"]
        own = self.own(held, "test")
        answerable = self.rows(held, own)
        answerless = self.rows(held, own, missing=True)
        others = self.rows(held, self.foreign(held, "test", set()))
        bank = self.rows(held, [f"bank|eval|{q['id']}" for q in self.eval_bank])
        both = np.r_[others.refused(cut, support), bank.refused(cut, support)]
        # What refusing costs the answerable queries: the dense top 10's nDCG@10 they lose.
        from ragbrain.evaluation import ndcg_at_k

        records = {f"{held}|test|{r.id}": r for r in self.test[held].records}
        gains = np.array(
            [ndcg_at_k([d for d, _ in records[k].dense], records[k].qrels) for k in own]
        )
        refused_own = answerable.refused(cut, support)
        return {
            **fitted,
            "cut": round(cut, 4),
            "strict_cut": round(strict, 4),
            "answerable": len(own),
            "false_refusal": _rate(refused_own),
            "dense_ndcg": float(gains.mean()),
            "dense_ndcg_lost": float((gains * refused_own).sum() / max(len(own), 1)),
            "offtopic_queries": int(others.distance.size + bank.distance.size),
            "refused_other_domains": _rate(others.refused(cut, support)),
            "refused_bank": _rate(bank.refused(cut, support)),
            "refused_offtopic": _rate(both),
            "strict_false_refusal": _rate(answerable.refused(strict, support)),
            "strict_refused_missing": _rate(answerless.refused(strict, support)),
            "default_refused_missing": _rate(answerless.refused(cut, support)),
            "decision_ms_p50": round(self.decision_ms[held], 3),
            "answerable_distance_median": float(np.median(answerable.distance)),
            "offtopic_distance_median": float(np.median(np.r_[others.distance, bank.distance])),
        }


def offtopic_sources_related(held: str) -> set[str]:
    """The sets related to ``held`` (nothing of them is fit on when ``held`` is held apart)."""
    from ragbrain.evaluation import RELATED

    return set(RELATED.get(held, frozenset()))


def main() -> None:
    """Measure refusal and false refusal per held-apart store."""
    parser = set_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--ship", action="store_true", help="Fit on every set too.")
    parser.add_argument("--name", default=None, help="Results name (offtopic[-e5]).")
    args = parser.parse_args()
    measured = Measured(args)
    report: dict[str, Any] = {
        "model": measured.model,
        "sets": {},
        "command": {k: str(v) for k, v in vars(args).items()},
    }
    found = profile(measured.model)
    prose_level = None if found is None else found.offtopic.prose_level
    for held in measured.names:
        fit_sets = [n for n in measured.names if domain_of(n) != domain_of(held)]
        fitted = measured.fit_setting(fit_sets, held)
        share = measured.prose[held]
        if prose_level is not None and offtopic.reads_as_notes(share, measured.per_source[held]):
            # A store of notes takes the quantile fit on the notes folders (and its cap, which
            # this simulation leaves out): these stores hold one chunk a document.
            fitted = {**fitted, "level": prose_level, "prose": round(share, 4)}
        entry = measured.held_out(held, fitted)
        report["sets"][held] = entry
        say(
            f"{held}: level {entry['level']} support {entry['support']} cut "
            f"{entry['cut']:.3f}: refused {entry['refused_offtopic']:.1%} (domains "
            f"{entry['refused_other_domains']:.1%}, bank {entry['refused_bank']:.1%}), false "
            f"{entry['false_refusal']:.1%}; strict x{entry['strict_scale']}: missing "
            f"{entry['strict_refused_missing']:.1%} / false {entry['strict_false_refusal']:.1%}"
        )
    if args.ship:
        fitted = measured.fit_setting(measured.names, None)
        cuts = [measured.bank_cut(n, fitted["level"]) for n in measured.names]
        report["ship"] = {**fitted, "median_cut": round(statistics.median(cuts), 4)}
        say(f"ship: {report['ship']}")
        shipped = profile(measured.model)
        if shipped is None:
            raise SystemExit(f"{measured.model} has no profile to write the fit into.")
        levels = replace(
            shipped.offtopic,
            level=fitted["level"],
            strict_scale=fitted["strict_scale"],
            cut=report["ship"]["median_cut"],
            support=fitted["support"],
        )
        say(f"wrote {write_profile(replace(shipped, offtopic=levels))}")
    name = args.name or ("offtopic" if args.embedding == "minilm" else "offtopic-e5")
    write_json(RESULTS / f"{name}.json", report)
    (RESULTS / f"{name}.md").write_text(markdown(report), encoding="utf-8")


def markdown(report: dict[str, Any]) -> str:
    """The report as a Markdown table."""
    lines = [
        f"# Off-topic refusal, leave-one-domain-out ({report['model']})",
        "",
        "| held-apart store | quantile, support, strict share (fit LODO) | cut | off-topic "
        "refused (other domains / bank) | answerable refused | dense nDCG@10 lost | strict: "
        "answerless refused / answerable refused |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, e in report["sets"].items():
        lines.append(
            f"| {name} | {e['level']}, {e['support']}, {e['strict_scale']} | {e['cut']:.3f} | "
            f"{e['refused_offtopic']:.1%} ({e['refused_other_domains']:.1%} / "
            f"{e['refused_bank']:.1%}) | {e['false_refusal']:.1%} | "
            f"{e['dense_ndcg_lost']:.3f} of {e['dense_ndcg']:.3f} | "
            f"{e['strict_refused_missing']:.1%} / {e['strict_false_refusal']:.1%} |"
        )
    cost = ", ".join(f"{n} {e['decision_ms_p50']:.2f}" for n, e in report["sets"].items())
    lines += ["", f"The refusal decision's own cost, p50 ms (support and rule): {cost}"]
    if "ship" in report:
        lines += ["", f"Fit on every set: {json.dumps(report['ship'])}"]
    lines += ["", f"Command: {json.dumps(report['command'], default=str)}", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
