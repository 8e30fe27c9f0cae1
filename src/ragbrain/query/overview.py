"""Overview questions: the ones that ask what the notes hold on a topic, not for one answer.

"What have I written about timezones?", "which tools can compress files?", "consul: cluster
health, service DNS records, maintenance mode": several notes answer such a question together,
and a plain dense top 10 finds more of them than a hand-over tuned to one note's answer
(``ragbrain.critic.handover``). A question is an overview when it has one of three cues:

- it asks about the notes themselves: *what have I written / learned / tried*, *what do I
  know about*, *my notes*, *everything I have on*;
- it asks for an inventory: *which tools / commands / apps / ways ...*, *tools for*, *ways
  to*, *list the ways*;
- it names three or more facets of a topic after a colon or in parentheses (*X: a, b and c*).

The cues were written from the fit questions of the English, Japanese, Chinese and Thai notes
folders (``benchmarks.notes``; ``docs/decisions/overview-questions.md``): in Japanese,
Chinese and Thai, a question about the pages or notes themselves ("について書いたページ",
"笔记有哪些", "มีหน้าไหนบ้าง") and facets listed with full-width commas. They read the question's
first ``READ_QUERY_CHARS`` characters, each pattern in time linear in its length.
"""

from __future__ import annotations

import re

from ragbrain.query.inputs import read_part

_SELF = r"(?:i|we|i've|we've)"
_VERBS = (
    r"(?:written|write|wrote|noted|note|learn(?:ed|t)?|tried|try|used|use|done|found|"
    r"documented|decided|know|knew|collected|saved|kept)"
)
_KINDS = (
    r"(?:tools|commands|apps|applications|programs|utilities|software|options|ways|"
    r"approaches|methods|techniques|libraries|packages|alternatives)"
)

#: (what the cue is, for the trace; its pattern over the casefolded question).
CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "asks what the notes hold",
        re.compile(rf"\bwhat (?:have|had|did|do) {_SELF} (?:ever )?{_VERBS}\b"),
    ),
    ("asks what the notes hold", re.compile(rf"\bwhat {_SELF} (?:have )?{_VERBS}\b")),
    (
        "asks what the notes hold",
        re.compile(rf"\beverything (?:{_SELF} )?(?:have|know|wrote|written|noted)\b"),
    ),
    ("asks what the notes hold", re.compile(r"\b(?:my|our) notes?\b")),
    ("asks for an overview", re.compile(r"\b(?:overview|summari[sz]e)\b")),
    ("asks for an inventory", re.compile(rf"\b(?:which|what)(?: \S+){{0,3}} {_KINDS}\b")),
    ("asks for an inventory", re.compile(rf"\b{_KINDS} (?:for|to)\b")),
    ("asks for an inventory", re.compile(rf"\blist (?:(?:the|all|every) )?{_KINDS}\b")),
    ("asks for an inventory", re.compile(rf"\bways {_SELF}\b")),
    # Japanese, Chinese and Thai: the pages or notes themselves ("…について書いたページ",
    # "笔记有哪些", "我记过哪些", "มีหน้าไหนบ้าง").
    (
        "asks what the notes hold",
        re.compile(
            r"(?:ページ|ノート|メモ)[^。？?]{0,12}(?:どれ|全部|まとめ|一覧)|書いた(?:ページ|ノート|メモ)"
        ),
    ),
    (
        "asks what the notes hold",
        re.compile(r"(?:我|笔记|筆記|记录|記錄)[^。？?]{0,30}哪些|哪些[^。？?]{0,30}(?:笔记|筆記)"),
    ),
    ("asks what the notes hold", re.compile(r"(?:หน้า|บันทึก)ไหนบ้าง")),
)
_SEPARATORS = re.compile(r"[,、，]|\b(?:and|or)\b")


def _facets(text: str) -> bool:
    """Three or more items after the first colon, or inside the first parentheses (ASCII or
    full-width): parts with a letter between commas (ASCII, ideographic or full-width), "and"
    and "or", at least one comma among them."""
    for opener, closer in ((":", None), ("：", None), ("(", ")"), ("（", "）")):
        at = text.find(opener)
        if at < 0:
            continue
        tail = text[at + 1 :]
        if closer is not None:
            tail = tail.split(closer, 1)[0]
        if not any(comma in tail for comma in ",、，"):
            continue
        items = [part for part in _SEPARATORS.split(tail) if any(c.isalpha() for c in part)]
        if len(items) >= 3:
            return True
    return False


def overview_cue(question: str) -> str | None:
    """Why ``question`` is an overview question (``"asks for an inventory ('which tools')"``),
    or None when it is not one."""
    text = read_part(question).casefold()
    for said, pattern in CUES:
        found = pattern.search(text)
        if found:
            return f"{said} ({found.group(0)!r})"
    if _facets(text):
        return "names three or more facets of its topic"
    return None
