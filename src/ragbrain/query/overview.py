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

The cues were written from the English notes folders' fit questions (``benchmarks.notes``;
``docs/decisions/overview-questions.md``); they read the question's first
``READ_QUERY_CHARS`` characters, each pattern in time linear in its length. Other languages
have no cue yet: their questions are never overviews.
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
)
_SEPARATORS = re.compile(r",|\b(?:and|or)\b")


def _facets(text: str) -> bool:
    """Three or more items after the first colon, or inside the first parentheses: parts
    with a letter between commas, 'and' and 'or', at least one comma among them."""
    for opener, closer in ((":", None), ("(", ")")):
        at = text.find(opener)
        if at < 0:
            continue
        tail = text[at + 1 :]
        if closer is not None:
            tail = tail.split(closer, 1)[0]
        if "," not in tail:
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
