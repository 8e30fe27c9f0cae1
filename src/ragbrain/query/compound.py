"""Splitting a compound or comparative question into its parts, by rule (no model).

"What is the difference between pip-tools and uv?" asks about two things; a search for the
whole question can return only one of them. The parts found here are searched besides the
whole (``ragbrain.nodes.parts``). The rules, by language:

- English: "difference(s) between X and Y", "X differs from Y", "compare X with/to/and/
  against Y" (at the start), "comparison of X and Y", "X vs Y" / "X vs. Y" / "X versus Y",
  and a bare "X and Y" only when the whole question is that pair, after a lead-in such as
  "what is" or "how do I set up" (``_LEAD``): X and Y at most ``MAX_AND_WORDS`` words each,
  Y no clause (it starts with no question word, auxiliary or subject pronoun, holds no
  pronoun, ends in no verb-looking word), and the pair no fixed phrase ("rock and roll",
  "research and development"). Both parts keep the lead-in: "How do I set up nginx and
  certbot?" gives "How do I set up nginx?" and "How do I set up certbot?".
  "between X and Y" without "difference" is not split ("latency between the app and the
  database"), nor is "&" ("Johnson & Johnson", "AT&T").
- Japanese: "XとYの違い", "XとYはどう違う", "XとYを比較/比べ", "XとYの比較"; a bare と is
  never split (it is also the particle of と思う, こと, 友達と).
- Thai: "เปรียบเทียบ X กับ/และ Y", "ความแตกต่างระหว่าง X กับ/และ Y", "X กับ Y ต่างกัน/แตกต่าง";
  a bare กับ ("with") or และ is not split.
- Chinese: "X和/与/跟/與Y的区别/區別/不同/差异", "X和Y有什么区别", "比较/比較X和Y",
  "X和Y比较/哪个"; a bare 和 is not split (和平, 总和).

Where a frame holds several candidate joins (a part that itself contains "and"), the one
nearest the middle of the frame is taken. Parts that come out empty or equal (case
aside) mean no split.

Every pattern runs in time linear in the question's length (``_framed``): a frame of the form
"X join Y closing-words" is tried from each line's start only, in the line cut after its last
closing word, where ``re.search`` would try it from every position (quadratic on any text).
So a frame lies within one line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from ragbrain.query.compound_words import CLAUSE_STARTS, FIXED_PHRASES, PRONOUNS, VERBS
from ragbrain.query.inputs import read_part

#: A bare "X and Y" splits only when Y has at most this many words.
MAX_AND_WORDS = 3

_WORD = re.compile(r"[\w'-]+")
#: A question's lead-in that both parts of a bare "X and Y" keep ("How do I set up").
_LEAD = re.compile(
    r"^\s*(?:what(?:'s| is| are| were| was)|tell me about|explain|notes on|"
    r"how (?:do|can|should|did) (?:i|we|you) \w+(?: up| out| in)?|how to \w+(?: up| out| in)?)\s+",
    re.IGNORECASE,
)
_ASK = r"(?:what(?:'s| is| are)?|tell me|explain|describe|show me)?\s*(?:the\s+)?"


def _framed(frame: re.Pattern[str], closing: tuple[str, ...], text: str) -> re.Match[str] | None:
    """``frame.search(text)`` within one line, in linear time, for a frame that starts with
    a group matching ``.+`` or ``.+?`` and ends with one of the ``closing`` words (no ``$``,
    nothing after them).

    ``.`` matches all but a newline, so a match that starts inside a line also matches from
    the line's start (its first group longer): the leftmost match starts at the start of the
    first line that holds one. It ends where a closing word ends, so the line is cut after
    the last closing word (``str.rfind``): the match found is the same, and no attempt
    rescans the line's rest.
    """
    start = 0
    while start <= len(text):
        newline = text.find("\n", start)
        stop = len(text) if newline < 0 else newline
        ends = [at + len(word) for word in closing if (at := text.rfind(word, start, stop)) >= 0]
        if ends:
            found = frame.match(text, start, max(ends))
            if found:
                return found
        start = stop + 1
    return None


def _clean(part: str) -> str:
    """A part without surrounding spaces, quotes and trailing punctuation."""
    return part.strip().strip("\"'`“”「」").strip().rstrip("?？.。!！,，、:：;；").strip()


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _middle_join(text: str, joins: re.Pattern[str]) -> tuple[str, str] | None:
    """``text`` split at the match of ``joins`` nearest its middle (by characters)."""
    found = list(joins.finditer(text))
    if not found:
        return None
    middle = len(text) / 2
    best = min(found, key=lambda m: abs((m.start() + m.end()) / 2 - middle))
    return text[: best.start()], text[best.end() :]


def _pair(left: str, right: str) -> list[str]:
    parts = [_clean(left), _clean(right)]
    if not all(parts) or parts[0].casefold() == parts[1].casefold():
        return []
    return parts


# Each join starts where a run of spaces starts ((?<!\s)): where a search for it would find
# it first, without retrying every space of a long run.
_EN_AND = re.compile(r"(?<!\s)\s+and\s+", re.IGNORECASE)
_EN_JOIN = re.compile(r"(?<!\s)\s+(?:and|with|to|against|vs\.?|versus)\s+", re.IGNORECASE)


#: English frames whose captured text holds the two parts, and what joins them there.
_EN_FRAMES: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = (
    (re.compile(r"\bdifferences?\s+between\s+(.+)", re.IGNORECASE), _EN_AND),
    (
        re.compile(
            r"^\s*(?:(?:please|how do i|how to|can you|let's)\s+)?compar(?:e|ing)\s+(.+)",
            re.IGNORECASE,
        ),
        _EN_JOIN,
    ),
    (re.compile(r"\bcomparison\s+(?:of|between)\s+(.+)", re.IGNORECASE), _EN_JOIN),
)
_VERSUS = re.compile(r"(?<!\s)\s+(?:vs\.?|versus)\s+", re.IGNORECASE)


def _english_frames(query: str) -> list[str] | None:
    """Parts from an English comparative frame; None when no frame matches."""
    text = query.strip()
    for frame, joins in _EN_FRAMES:
        match = frame.search(text)
        if match:
            split = _middle_join(match.group(1), joins)
            return _pair(*split) if split else []
    match = re.match(r"^(.+?)(?<!\s)\s+differs?\s+from\s+(.+)$", text, re.IGNORECASE)
    if match:
        left = re.sub(rf"^(?:how|why|where)\s+(?:does|do)\s+{_ASK}", "", match.group(1), flags=re.I)
        return _pair(left, match.group(2))
    split = _middle_join(text, _VERSUS)
    if split is None:
        return None
    left = re.sub(rf"^(?:which is better[,:]?\s*|{_ASK})", "", split[0], flags=re.I)
    return _pair(left, split[1])


def _english_and(query: str) -> list[str]:
    """Parts of a bare "X and Y", keeping what they share; [] when it is not such a pair."""
    text = query.strip()
    if len(_EN_AND.findall(text)) != 1 or re.search(r"\bbetween\b", text, re.IGNORECASE):
        return []
    left, right = _EN_AND.split(text)
    tail = re.search(r"[?？.!]+\s*$", right)
    ending = tail.group(0).strip() if tail else ""
    right = _clean(right)
    y = _words(right)
    if not y or len(y) > MAX_AND_WORDS or y[0] in CLAUSE_STARTS:
        return []
    if PRONOUNS & set(y) or y[-1] in VERBS or (y[-1].endswith("ed") and len(y) > 1):
        return []
    lead = _LEAD.match(left)
    head = lead.group(0).strip() if lead else ""
    x = _clean(left[lead.end() :] if lead else left)
    if not x or len(_words(x)) > MAX_AND_WORDS or PRONOUNS & set(_words(x)):
        return []
    phrase = f"{x} and {right}".casefold()
    fixed = any(re.search(rf"(?<!\w){re.escape(f)}(?!\w)", phrase) for f in FIXED_PHRASES)
    if fixed or _words(x) == y:
        return []
    return [f"{head} {x}".strip() + ending, f"{head} {right}".strip() + ending]


_JA_ENDS = ("の違い", "はどう違", "の差", "の比較", "を比較", "を比べ", "では何が違", "どちら")
_JA_FRAME = re.compile(rf"(.+)と(.+?)(?:{'|'.join(_JA_ENDS)})")


def _japanese(query: str) -> list[str] | None:
    text = query.strip()
    frame = _framed(_JA_FRAME, _JA_ENDS, text)
    if not frame:
        return None
    left = re.sub(r"^.*(?:について|では|は)、?", "", frame.group(1)) or frame.group(1)
    return _pair(left, frame.group(2))


# Spaces before a word are matched from the start of their run only ((?<!\s)), or not at all
# right before it: what ``\s*`` would match first, without retrying every space of a run.
_SPACES = r"(?:(?<!\s)\s+)?"
_TH_JOINS = re.compile(rf"{_SPACES}(?:กับ|และ)\s*")
_TH_ENDS = ("ต่างกัน", "แตกต่าง", "อันไหนดี", "เลือกอะไร")
_TH_FRAME = re.compile(rf"(.+?){_SPACES}กับ\s*(.+?){_SPACES}(?:{'|'.join(_TH_ENDS)})")
#: The question words a "compare X with Y" frame ends in, cut off its second part.
_TH_TAIL = re.compile(r"(?<!\s)\s*(?:ต่างกัน|แตกต่างกัน|อย่างไร|ยังไง|คืออะไร)+\s*[?？]?\s*$")


def _thai(query: str) -> list[str] | None:
    text = query.strip()
    frame = re.search(r"(?:เปรียบเทียบ|ความแตกต่างระหว่าง|ความต่างระหว่าง)\s*(.+)", text)
    if frame:
        body = _TH_TAIL.sub("", frame.group(1))
        split = _middle_join(body, _TH_JOINS)
        return _pair(*split) if split else []
    frame = _framed(_TH_FRAME, _TH_ENDS, text)
    if frame:
        return _pair(frame.group(1), frame.group(2))
    return None


_ZH_JOIN = re.compile(r"[和与跟與及]")
#: The words a Chinese comparison ends in (what the frame's match ends with).
_ZH_ENDS = (
    "区别",
    "區別",
    "不同",
    "差异",
    "差異",
    "比较",
    "比較",
    "哪个好",
    "哪個好",
    "哪个更",
    "哪個更",
)
_ZH_FRAME = re.compile(
    rf"(.+?)[和与跟與](.+?)(?:之间|之間)?(?:的|有)?(?:什么|什麼|何)?(?:{'|'.join(_ZH_ENDS)})"
)


def _chinese(query: str) -> list[str] | None:
    text = query.strip()
    frame = re.search(r"(?:比较|比較|对比|對比)(?:一下)?(.+)", text)
    if frame:
        body = re.sub(
            r"(?:的)?(?:区别|區別|不同|差异|差異|优缺点|優缺點)?[?？。]?$", "", frame.group(1)
        )
        split = _middle_join(body, _ZH_JOIN)
        return _pair(*split) if split else []
    frame = _framed(_ZH_FRAME, _ZH_ENDS, text)
    if frame:
        left = re.sub(r"^(?:请问|請問)", "", frame.group(1))
        return _pair(left, frame.group(2))
    return None


_FRAMES: tuple[Callable[[str], list[str] | None], ...] = (
    _english_frames,
    _japanese,
    _thai,
    _chinese,
)


def split_compound(query: str) -> list[str]:
    """The parts of a compound or comparative question, or [] when it asks about one thing.

    Args:
        query: The question as asked.

    Returns:
        Two non-empty parts, or an empty list.
    """
    return list(_split(read_part(query)))


@lru_cache(maxsize=32)
def _split(query: str) -> tuple[str, ...]:
    """``split_compound``, kept for the last few questions (a run asks twice: its depth and
    its searches)."""
    for frame in _FRAMES:
        parts = frame(query)
        if parts is not None:
            return tuple(parts)
    return tuple(_english_and(query))
