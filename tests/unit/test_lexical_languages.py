"""Chinese and Arabic in the lexical side: segmentation, script folding, diacritics, markers."""

from __future__ import annotations

import pytest

from ragbrain.context import RetrievalContext
from ragbrain.lexical.index import LexicalIndex
from ragbrain.lexical.tokens import detect_language, tokenize
from ragbrain.nodes.depth import complexity


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("我们比较一下这两个方法的区别", "zh"),
        ("臺灣的首都是臺北市", "zh"),
        ("東京都の天気は晴れです", "ja"),
        ("東京都", "zh"),  # ideographs alone cannot be told apart; no kana reads as Chinese
        ("مرحبا بالعالم", "ar"),
        ("ภาษาไทย", "th"),
        ("plain English", "en"),
    ],
    ids=["simplified", "traditional", "japanese", "kanji-only", "arabic", "thai", "english"],
)
def test_languages_are_told_apart(text: str, language: str) -> None:
    assert detect_language(text) == language


def test_chinese_is_segmented_into_words() -> None:
    tokens = tokenize("我们比较一下这两个方法的区别")
    assert {"比较", "方法", "区别"} <= set(tokens)
    assert "比" not in tokens  # words, not characters


def test_traditional_and_simplified_chinese_share_terms() -> None:
    assert tokenize("上次會議和這次會議有什麼不同") == tokenize("上次会议和这次会议有什么不同")


def test_japanese_kanji_keep_their_own_analysis() -> None:
    assert "天気" in tokenize("東京都の天気は晴れです")  # not simplified to 天气


@pytest.mark.parametrize(
    ("with_marks", "plain"),
    [
        ("كَيْفَ حَالُكَ", "كيف حالك"),
        ("ٱلْكِتَابُ", "الكتاب"),
        ("العـــربية", "العربية"),  # tatweel
        ("أحمد", "احمد"),  # hamza on alef
    ],
    ids=["harakat", "wasla-and-sukun", "tatweel", "hamza"],
)
def test_arabic_diacritics_and_forms_fold_away(with_marks: str, plain: str) -> None:
    assert tokenize(with_marks) == tokenize(plain)
    assert tokenize(plain)


def test_arabic_words_are_stemmed_and_punctuation_dropped() -> None:
    assert tokenize("الكتاب، الكتب؟") == tokenize("كتاب كتب")


def test_bm25_finds_chinese_and_arabic_notes() -> None:
    texts = [
        "上次会议决定使用新的数据库。",
        "服务器的缓存配置说明。",
        "قررنا في الاجتماع الأخير استخدام قاعدة البيانات الجديدة.",
        "دليل إعداد ذاكرة التخزين المؤقت للخادم.",
    ]
    index = LexicalIndex.build([f"d{i}" for i in range(4)], texts, ["note"] * 4)
    assert index.search("上次會議決定了什麼數據庫", 1)[0].id == "d0"
    assert index.search("ما هي قاعدة البيانات التي قررناها؟", 1)[0].id == "d2"


@pytest.mark.parametrize(
    "query",
    ["比较这两个方法", "兩種方法的區別", "上次会议和这次有什么不同"],
    ids=["compare", "difference-traditional", "last-time"],
)
def test_chinese_comparison_markers_count(query: str) -> None:
    assert complexity(query, RetrievalContext())[0] >= 1
