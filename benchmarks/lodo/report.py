"""The Markdown of `benchmarks.lodo`: the LODO table, the ablation, the critic, abstention."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PROPOSED = "+ abstention (proposed)"
DEFAULT = "+ critic (default)"
DENSE = "dense top 10"
THRESHOLD = "shipped layer, LODO threshold, handed over as the graph does"
ABLATION = (
    DENSE,
    "BM25 top 10",
    "+ hybrid (k=10)",
    "+ adaptive depth",
    DEFAULT,
    "default at k=10",
    "judge 10, hand over <= depth",
    "+ LODO fusion weight",
    "+ LODO threshold",
    "+ LODO layer refit",
    THRESHOLD,
    "LODO layer refit, handed over as the graph does",
    "+ abstention, critic and distance only",
    PROPOSED,
    "shipped layer, LODO threshold, + abstention",
)
MISSING = (
    DENSE,
    "dense top 10, gate 0.55",
    DEFAULT,
    "shipped layer, LODO threshold, + abstention",
    "+ LODO layer refit",
    THRESHOLD,
    "LODO layer refit, handed over as the graph does",
    "+ abstention, critic and distance only",
    PROPOSED,
)


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}x"


def lodo_table(payload: dict[str, Any], config: str) -> list[str]:
    """One row per held-apart set for ``config``, with dense top 10 beside it."""
    lines = [
        "| set (test queries) | dense nDCG@10 | nDCG@10 | Recall@10 | set P (vs dense) | set R "
        "(vs critic off) | mean # | critic kept / dropped (k=10) | refusal recall | false "
        "refusal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in payload["results"].items():
        row, dense = r["ablation"][config], r["ablation"][DENSE]
        off = r["ablation"]["+ adaptive depth"]
        own = r["critic_own_candidates"]["LODO layer refit"]
        if config in (DEFAULT, "default at k=10"):
            own = r["critic_own_candidates"]["shipped layer and threshold"]
        elif config == THRESHOLD:
            own = r["critic_own_candidates"]["shipped layer, LODO threshold"]
        miss = r["missing_answer"]["configs"][config] if config in MISSING else None
        seen = f" (encoder saw {r['encoder_saw']})" if r["encoder_saw"] else ""
        if name in payload.get("subcorpus", {}):
            seen += f" [{payload['subcorpus'][name]:,}-doc sub-corpus]"
        lines.append(
            f"| {name}{seen} ({r['queries']}) | {_f(dense['ndcg@10'])} | {_f(row['ndcg@10'])} | "
            f"{_f(row['recall@10'])} | {_f(row['set_precision'])} "
            f"({_ratio(row['set_precision'], dense['set_precision'])}) | "
            f"{_f(row['set_recall'])} ({_ratio(row['set_recall'], off['set_recall'])}) | "
            f"{_f(row['mean_returned'], 1)} | {_pct(own['relevant_kept'])} / "
            f"{_pct(own['irrelevant_dropped'])} | "
            f"{_pct(miss['refusal_recall']) if miss else '-'} | "
            f"{_pct(miss['false_refusal']) if miss else '-'} |"
        )
    return lines


#: The rows of the paired comparison with dense top 10.
PAIRED = (
    "+ hybrid (k=10)",
    "fitted hybrid (k=10, critic off)",
    DEFAULT,
    THRESHOLD,
    "LODO layer refit, handed over as the graph does",
    PROPOSED,
)


def paired_section(payload: dict[str, Any], names: list[str]) -> list[str]:
    """nDCG@10 minus dense's on the same queries, with its 95% paired bootstrap interval
    (absent from reports written before the comparison was recorded)."""
    if not all("ndcg_vs_dense" in payload["results"][n] for n in names):
        return []
    lines = [
        "",
        "## nDCG@10 against dense top 10, paired (95% bootstrap interval over the queries)",
        "",
        "The difference on the same test queries; **bold** where the interval leaves out 0 "
        "(more than sampling noise).",
        "",
        "| config | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for config in PAIRED:
        cells = []
        for name in names:
            d = payload["results"][name]["ndcg_vs_dense"].get(config)
            if d is None:
                cells.append("-")
                continue
            text = f"{d['mean']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"
            cells.append(f"**{text}**" if d["low"] > 0 or d["high"] < 0 else text)
        lines.append(f"| {config} | " + " | ".join(cells) + " |")
    return lines


def _encoder_line(payload: dict[str, Any]) -> str:
    """Which critic's encoder judged, and which sets it saw (their critic figures are not
    LODO)."""
    critic = payload.get("critic", "shipped")
    saw = payload.get("encoder_saw") or {
        name: r["encoder_saw"] for name, r in payload["results"].items() if r.get("encoder_saw")
    }
    which = "the shipped one" if critic == "shipped" else f"`{Path(critic).name}`"
    if not saw:
        return f"The critic's encoder is {which}; it saw none of these sets."
    seen = " and ".join(f"{name} {split}" for name, split in saw.items())
    return (
        f"The critic's encoder is {which}: it saw {seen}, so the critic figures there are not "
        "LODO (marked)."
    )


def markdown(payload: dict[str, Any]) -> str:
    """The whole report."""
    names = list(payload["results"])
    lines = [
        "# Leave-one-domain-out (LODO): each set judged by a pipeline fit on the others",
        "",
        f"{payload['embedding_model']} stores; up to {payload['test_queries']} seeded test "
        "queries a set, "
        f"fit on up to {payload['fit_queries']} seeded train/dev queries of every other domain "
        "(CMRC 2018 and DRCD held apart together). Fit per fold: the dense share of the score "
        "fusion, the critic's threshold (shipped layer) and a refit of its last layer, the "
        f"abstention thresholds. {_encoder_line(payload)} Sets marked "
        "sub-corpus were judged on a smaller corpus (every document judged for "
        f"{payload['subcorpus_queries'][0]} seeded test and {payload['subcorpus_queries'][1]} "
        "fit queries, plus seeded random others): fewer distractors than the full set.",
        "",
        "## The proposed pipeline (LODO)",
        "",
        "Judge the hybrid top 10 (dense share fit LODO), hand over at most the adaptive depth "
        "of what the refit critic keeps, abstain when the critic and the gate agree nothing "
        "fits. Set P is against dense top 10; set R against the pipeline with the critic off "
        "(hybrid, adaptive depth).",
        "",
        *lodo_table(payload, PROPOSED),
        "",
        "## The shipped default (critic on the adaptive-depth hybrid list), same sets",
        "",
        *lodo_table(payload, DEFAULT),
        "",
        "## The shipped layer at its LODO threshold, handed over as the graph does",
        "",
        "The shipped critic's distance layer (weights as shipped) with the threshold its rule "
        "picks on the fold's fit sets (each keeps >= 92% of its relevant candidates), judging "
        "the hybrid top 10 at the fold's dense share; the kept ones up to the depth, and past "
        "it those scored above the cut.",
        "",
        *lodo_table(payload, THRESHOLD),
        "",
        "## Ablation: nDCG@10 / set precision / mean chunks returned",
        "",
        "`+ gate and fallback` is not a row: in hybrid mode without a type filter the "
        "fallback has nothing to widen (hybrid search already searched BM25), so it hands "
        "over exactly `+ adaptive depth`.",
        "",
        "| config | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for config in ABLATION:
        cells = []
        for name in names:
            row = payload["results"][name]["ablation"][config]
            cells.append(
                f"{_f(row['ndcg@10'])} / {_f(row['set_precision'], 2)} / "
                f"{_f(row['mean_returned'], 1)}"
            )
        lines.append(f"| {config} | " + " | ".join(cells) + " |")
    lines += paired_section(payload, names)
    lines += [
        "",
        "## The critic on its own candidates (hybrid top 10, critic off vs on)",
        "",
        "relevant kept / irrelevant dropped / ROC AUC; * = the encoder saw this set's "
        "train/dev queries.",
        "",
        "| variant | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    first = payload["results"][names[0]]["critic_own_candidates"]
    for variant in first:
        cells = []
        for name in names:
            r = payload["results"][name]
            v = r["critic_own_candidates"][variant]
            mark = "*" if r["encoder_saw"] else ""
            cells.append(
                f"{_pct(v['relevant_kept'])} / {_pct(v['irrelevant_dropped'])} / "
                f"{_f(v['auc'])}{mark}"
            )
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Missing answer: refusal recall / false refusal / chunks when answerless",
        "",
        "A seeded half of each set's test queries lose every relevant document (their "
        "neighbours stay); candidate lists are the full store's, read 60 deep, without the "
        "removed documents.",
        "",
        "| config | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for config in MISSING:
        cells = []
        for name in names:
            m = payload["results"][name]["missing_answer"]["configs"][config]
            cells.append(
                f"{_pct(m['refusal_recall'])} / {_pct(m['false_refusal'])} / "
                f"{_f(m['chunks_when_unanswerable'], 1)}"
            )
        lines.append(f"| {config} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "How well the evidence tells answerless from answerable test queries (ROC AUC; 0.5 is "
        "chance): the critic's best score / the best distance / BM25's coverage of the query.",
        "",
        "| evidence | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for kind in payload["results"][names[0]]["evidence_auc"]:
        cells = [
            " / ".join(_f(v) for v in payload["results"][n]["evidence_auc"][kind].values())
            for n in names
        ]
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## What each fold learned",
        "",
        "| held apart | dense share | layer (nested choice) | shipped-layer threshold | "
        "refit threshold | abstain (refit layer): critic below / distance above / coverage "
        "below / fit refusal recall | shipped layer: the same |",
        "|---|---|---|---|---|---|---|",
    ]

    def cuts(a: dict[str, Any]) -> str:
        return (
            f"{_f(a['critic_below'])} / {_f(a['distance_above'])} / "
            f"{_f(a.get('coverage_below'), 2)} / {_pct(a['refusal_recall'])}"
        )

    for name, p in [*payload["folds"].items(), ("all sets (to ship)", payload["all_sets"])]:
        lines.append(
            f"| {name} | {p['dense_share']} | {p['layer_layout']} | "
            f"{_f(p['shipped_layer_threshold'])} | {_f(p['refit_threshold'])} | "
            f"{cuts(p['abstention'])} | {cuts(p['abstention_shipped'])} |"
        )
    return "\n".join(lines) + "\n"
