"""Tokenization for the lexical index: each script run gets its own tokenizer.

Text is NFKC-normalized and case-folded, then cut into runs of one script:

- Thai runs are segmented into words by pythainlp (``newmm``), Thai stop words dropped;
- Japanese runs (kana and kanji) are analyzed by SudachiPy with its small dictionary (short
  units, normalized forms), particles, auxiliary verbs and symbols dropped;
- Chinese runs (ideographs in a text without any kana: a Japanese text always has some, a
  Chinese one never) are converted to simplified characters by OpenCC (``t2s``, so a
  traditional question finds a simplified note and back) and segmented by jieba (rjieba, the
  jieba-rs binding; its search mode also emits the shorter words inside long ones), no stop
  words dropped (bm25s' Chinese list holds 比较 and 不同, and cost nDCG on both train splits);
- Arabic runs lose their diacritics (harakat, tanwin, shadda, sukun, dagger alef) and tatweel,
  every form of alef (hamza above or below, madda, wasla) becomes a plain alef, then each word
  is Snowball-stemmed (PyStemmer's Arabic stemmer: prefixes such as ال, suffixes, final yeh);
- other letter/digit runs (English and any other script with spaces) are split into words,
  English stop words dropped and the rest Snowball-stemmed when they are Latin.

So mixed text ("Pythonのエラー", "ติดตั้ง Docker") needs no language switch, and punctuation,
emoji and unknown symbols simply yield no tokens.

The Japanese, Thai and Chinese tokenizers come with the ``multilingual`` extra: without it,
tokenizing such text (an ingest, a wrapped collection's index) stops with a
``MissingExtraError`` naming it, and a question's runs in those scripts give no terms (the
index of a store built without the extra holds none), with a warning once.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections import Counter
from functools import cache, lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Literal

from ragbrain._util import installed, require
from ragbrain.errors import MissingExtraError
from ragbrain.query.inputs import read_part

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

Language = Literal["en", "ja", "zh", "th", "ar", "other", "none"]

log = logging.getLogger(__name__)

#: Bumped whenever tokens change, so that indexes built with older tokens are rebuilt.
TOKENIZER_VERSION = "3"

_THAI = "\u0e00-\u0e7f"
# Hiragana, katakana (with the long-vowel mark and half-width forms), CJK ideographs, 々 〆.
_JAPANESE = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f々〆"
_KANA = re.compile("[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
# Arabic letters and marks (presentation forms are NFKC-folded into these first); Arabic
# punctuation (، ؛ ؟) and digits are left to the other runs.
_ARABIC = "\u0621-\u065f\u066e-\u06d3\u06d5-\u06ff\u0750-\u077f\u08a0-\u08ff"
_ARABIC_MARKS = re.compile("[\u064b-\u065f\u0670\u06d6-\u06ed\u0640]")
# Alef with hamza above/below, with madda, and alef wasla (Quranic text) are all alef.
_ARABIC_ALEF = str.maketrans(dict.fromkeys("\u0623\u0625\u0622\u0671", "\u0627"))
_RUNS = re.compile(
    rf"(?P<th>[{_THAI}]+)|(?P<ja>[{_JAPANESE}]+)|(?P<ar>[{_ARABIC}]+)"
    rf"|(?P<w>[^\W_{_THAI}{_JAPANESE}{_ARABIC}]+)"
)
#: The scripts ``_RUNS`` cuts apart from words: a text without them is words only.
_SEGMENTED = re.compile(f"[{_THAI}{_JAPANESE}{_ARABIC}]")
_WORDS = re.compile(rf"[^\W_{_THAI}{_JAPANESE}{_ARABIC}]+")
#: A word of an ASCII text: what ``_RUNS`` finds there, all of it Latin.
_ASCII_WORD = re.compile(r"[a-z0-9]+")
# SudachiPy refuses inputs over ~49 kB; Japanese runs are cut well below that.
_SUDACHI_MAX_CHARS = 4000
# Parts of speech that carry no content: particles, auxiliary verbs, symbols, blanks.
_JA_DROPPED_POS = frozenset({"助詞", "助動詞", "補助記号", "記号", "空白"})

#: A name written as one: letters and digits joined by ``_ . - : /`` (snake_case, dotted names,
#: paths, flags and ``--options``, ``ERR_CONN_RESET``), indexed whole beside its words.
#: Tried at the start of a word only (a match from inside a word would also match from its
#: start, which is tried first), without backtracking into its runs: linear in the text.
_COMPOUND = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]++(?:[_.:/\-]++[A-Za-z0-9]++)+")
#: The characters that join a compound's words: a term holding one is a whole compound.
JOINERS = frozenset("_.:/-")
#: Longer compounds (long paths, URLs) are indexed by their parts between slashes only.
_COMPOUND_MAX = 40
#: Where a compound's parts that are indexed whole as well end: slashes and dots.
_PARTS = re.compile(r"[/.]")

_local = threading.local()  # Stemmer and SudachiPy tokenizer objects are not thread-safe.


#: Lucene's English stop set, as bm25s ships it (``bm25s.stopwords.STOPWORDS_EN``; a test
#: checks they agree): written out here because importing bm25s imports scipy (0.3 s).
ENGLISH_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)


def _english_stop_words() -> frozenset[str]:
    return ENGLISH_STOP_WORDS


#: The extra that installs the Japanese, Thai and Chinese tokenizers.
EXTRA = "multilingual"


def _needs(module: str, language: str) -> ModuleType:
    """``module`` imported, or a ``MissingExtraError`` naming the extra in one line."""
    return require(module, feature=f"{language} text (its BM25 tokens)", extra=EXTRA)


@cache
def _thai_stop_words() -> frozenset[str]:
    corpus = _needs("pythainlp.corpus", "Thai")
    return frozenset(corpus.thai_stopwords())


def _stem(words: list[str]) -> list[str]:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        import Stemmer

        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    stems: list[str] = stemmer.stemWords(words)
    return stems


def _is_latin(word: str) -> bool:
    return word.isascii() or all(c.isascii() or "LATIN" in unicodedata.name(c, "") for c in word)


def _sudachi() -> Callable[[str], list[str]]:
    tokenizer = getattr(_local, "sudachi", None)
    if tokenizer is None:
        sudachipy = _needs("sudachipy", "Japanese")
        installed("sudachidict_small", feature="Japanese text (its BM25 tokens)", extra=EXTRA)
        tokenizer = _local.sudachi = sudachipy.Dictionary(dict="small").tokenizer(
            mode=sudachipy.SplitMode.A, fields={"pos", "normalized_form"}
        )

    def analyze(text: str) -> list[str]:
        return [
            m.normalized_form()
            for m in tokenizer.tokenize(text)
            if m.part_of_speech()[0] not in _JA_DROPPED_POS
        ]

    return analyze


def _japanese(run: str) -> list[str]:
    analyze = _sudachi()
    tokens: list[str] = []
    for start in range(0, len(run), _SUDACHI_MAX_CHARS):
        tokens += analyze(run[start : start + _SUDACHI_MAX_CHARS])
    return tokens


def _thai(run: str) -> list[str]:
    stop = _thai_stop_words()
    words = _needs("pythainlp.tokenize", "Thai").word_tokenize(
        run, engine="newmm", keep_whitespace=False
    )
    return [w for w in words if w.strip() and w not in stop]


@cache
def _simplify() -> Callable[[str], str]:
    convert: Callable[[str], str] = _needs("opencc", "Chinese").OpenCC("t2s").convert
    return convert


def _chinese(run: str) -> list[str]:
    words: list[str] = _needs("rjieba", "Chinese").cut_for_search(_simplify()(run))
    return words


def _arabic(run: str) -> list[str]:
    stemmer = getattr(_local, "arabic", None)
    if stemmer is None:
        import Stemmer

        stemmer = _local.arabic = Stemmer.Stemmer("arabic")
    word = _ARABIC_MARKS.sub("", run).translate(_ARABIC_ALEF)
    stems: list[str] = stemmer.stemWords([word]) if word else []
    return stems


def normalize(text: str) -> str:
    """NFKC (full-width Latin to ASCII, half-width katakana to full) and case-folded."""
    return unicodedata.normalize("NFKC", text).casefold()


def is_compound(term: str) -> bool:
    """Whether ``term`` is a whole compound (``_COMPOUND``) rather than a word."""
    return not JOINERS.isdisjoint(term)


def compounds(text: str) -> list[str]:
    """The whole compounds of ``text``, case-folded, beside which its words are indexed: each
    compound of at most ``_COMPOUND_MAX`` characters with a letter in it, and each of its parts
    between slashes or dots that is itself a compound. So ``docs/db/skip_locked.md`` and
    ``pg_stat_activity.query`` yield ``skip_locked`` and ``pg_stat_activity``, which a
    question naming them matches."""
    out: list[str] = []
    for found in _COMPOUND.findall(text):
        whole = found.lower()  # ASCII: as case-folded
        if "/" not in whole and "." not in whole:  # no parts of its own
            if len(whole) <= _COMPOUND_MAX and whole != whole.upper():  # a letter in it
                out.append(whole)
            continue
        pieces = [whole] if len(whole) <= _COMPOUND_MAX else []
        for raw in (*whole.split("/"), *_PARTS.split(whole)):
            part = raw.strip("_.:/-")
            if part != whole and is_compound(part) and len(part) <= _COMPOUND_MAX:
                pieces.append(part)
        out += [p for p in dict.fromkeys(pieces) if p != p.upper()]
    return out


_NEEDS_EXTRA = re.compile(rf"[{_THAI}{_JAPANESE}]")


def check_tokenizers(texts: Iterable[str]) -> None:
    """Before anything is written: the tokenizers these texts need are installed.

    Raises:
        MissingExtraError: A text holds Japanese, Thai or Chinese and the ``multilingual``
            extra is missing (one line naming it).
    """
    for text in texts:
        if _NEEDS_EXTRA.search(text):
            tokenize(text)  # the first such text raises, or every tokenizer it needs loads
            return


@lru_cache(maxsize=32)
def query_tokens(query: str) -> tuple[str, ...]:
    """A question's terms (``tokenize`` with ``skip_missing``) of its first
    ``READ_QUERY_CHARS`` (``ragbrain.query.inputs.read_part``), kept for the last few
    questions: a run reads them in several steps (the searches, the support, the critic)."""
    return tuple(tokenize(read_part(query), skip_missing=True))


@cache
def _warn_skipped(message: str) -> None:
    log.warning("A question's words are left out of its BM25 terms: %s", message)


def tokenize(text: str, *, skip_missing: bool = False) -> list[str]:
    """The index terms of ``text``, in order; an empty list when it has none (emoji only).

    Args:
        text: Any text, in any mix of scripts.
        skip_missing: A run whose tokenizer is not installed gives no terms (a question's;
            warned once) instead of a ``MissingExtraError`` (a stored text's).

    Raises:
        MissingExtraError: Japanese, Thai or Chinese text without the ``multilingual`` extra.

    Returns:
        Terms: stemmed English words, Japanese normalized forms, Chinese words (simplified),
        Thai words, stemmed Arabic words, other words; and each name written as one
        (``compounds``: ``skip_locked``, ``--dry-run``, ``pg_stat.c``) whole, unstemmed, beside
        its words. A camelCase name stays one word (its words beside it cost BM25 alone 0.01
        nDCG@10 on CoSQA).
    """
    tokens: list[str] = []
    latin: list[str] = []  # stemmed in one batch at the end: BM25 ignores term order
    stop = _english_stop_words()
    if text.isascii():  # NFKC leaves it as it is, and every word is Latin
        latin = [w for w in _ASCII_WORD.findall(text.lower()) if w not in stop]
        whole = compounds(text)
        return whole + _stem(latin) if latin else whole
    folded = unicodedata.normalize("NFKC", text)
    whole = compounds(folded)
    text = folded.casefold()
    if _SEGMENTED.search(text) is None:  # words only (Latin, Greek, Cyrillic, ...)
        for run in _WORDS.findall(text):
            if run in stop:
                continue
            if run.isascii() or _is_latin(run):
                latin.append(run)
            else:
                tokens.append(run)
    else:
        _script_runs(text, stop, skip_missing, tokens, latin)
    tokens += whole
    return tokens + _stem(latin) if latin else tokens


def _script_runs(
    text: str, stop: frozenset[str], skip_missing: bool, tokens: list[str], latin: list[str]
) -> None:
    """``tokenize``'s terms of a folded ``text`` cut into runs of one script, in order: added
    to ``tokens``, the Latin words to ``latin`` (stemmed later)."""
    japanese = _KANA.search(text) is not None
    for match in _RUNS.finditer(text):
        run = match.group()
        if match.lastgroup in ("th", "ja"):
            try:
                if match.lastgroup == "th":
                    tokens += _thai(run)
                else:
                    tokens += _japanese(run) if japanese else _chinese(run)
            except MissingExtraError as missing:
                if not skip_missing:
                    raise
                _warn_skipped(str(missing))
        elif match.lastgroup == "ar":
            tokens += _arabic(run)
        elif run in stop:
            continue
        elif _is_latin(run):
            latin.append(run)
        else:  # Cyrillic, Hangul, ...: kept whole, not stemmed
            tokens.append(run)


def script_counts(text: str) -> Counter[Language]:
    """How many letters and digits of ``text`` each script has (``"none"`` never appears).

    Returns:
        Counts under ``"th"``, ``"ja"`` (kana, and ideographs in a text with kana), ``"zh"``
        (ideographs in a text without kana), ``"ar"``, ``"en"`` (Latin letters and digits)
        and ``"other"`` (letters of another script).
    """
    counts: Counter[Language] = Counter()
    text = normalize(text)
    if text.isascii():  # Latin letters and digits only (``_`` is not a word character here)
        letters = sum(map(str.isalnum, text))
        if letters:
            counts["en"] = letters
        return counts
    japanese = _KANA.search(text) is not None
    for match in _RUNS.finditer(text):
        run = match.group()
        if match.lastgroup == "th":
            counts["th"] += len(run)
        elif match.lastgroup == "ja":
            counts["ja" if japanese else "zh"] += len(run)
        elif match.lastgroup == "ar":
            counts["ar"] += len(run)
        elif _is_latin(run):
            counts["en"] += len(run)
        else:
            counts["other"] += len(run)
    return counts


def detect_language(text: str) -> Language:
    """The script most of ``text``'s letters are written in.

    Returns:
        ``"th"``, ``"ja"`` (kana, or kanji beside kana), ``"zh"`` (ideographs without kana),
        ``"ar"``, ``"en"`` (Latin letters), ``"other"`` (letters of another script) or
        ``"none"`` (no letters or digits at all: punctuation, emoji).
    """
    counts = script_counts(text)
    return counts.most_common(1)[0][0] if counts else "none"
