"""The compound-question splitter: a table of questions in en/ja/th/zh, those that must split
and those that must not."""

from __future__ import annotations

import pytest

from ragbrain.query import inputs
from ragbrain.query.compound import split_compound

SPLIT = [
    ("What is the difference between pip-tools and uv?", ["pip-tools", "uv"]),
    ("difference between TCP and UDP", ["TCP", "UDP"]),
    (
        "What are the differences between Alembic and Django migrations?",
        ["Alembic", "Django migrations"],
    ),
    ("pip-tools vs uv", ["pip-tools", "uv"]),
    ("poetry vs. pdm?", ["poetry", "pdm"]),
    ("Which is better: Redis versus Memcached", ["Redis", "Memcached"]),
    ("Compare Alembic with Django migrations", ["Alembic", "Django migrations"]),
    ("compare postgres and mysql", ["postgres", "mysql"]),
    ("comparison of ruff and flake8", ["ruff", "flake8"]),
    ("How does uv differ from pip?", ["uv", "pip"]),
    ("How do I set up nginx and certbot?", ["How do I set up nginx?", "How do I set up certbot?"]),
    ("sqlite and duckdb", ["sqlite", "duckdb"]),
    ("Food Dyes and ADHD", ["Food Dyes", "ADHD"]),
    ("What is WAL mode and VACUUM?", ["What is WAL mode?", "What is VACUUM?"]),
    ("backup retention and the restore drill", ["backup retention", "the restore drill"]),
    (
        "difference between vitamin D and calcium and iron intake",
        ["vitamin D and calcium", "iron intake"],
    ),
    ("Pythonのlistとtupleの違いは？", ["Pythonのlist", "tuple"]),
    ("MySQLとPostgreSQLを比較して", ["MySQL", "PostgreSQL"]),
    ("ReactとVueはどう違うの？", ["React", "Vue"]),
    ("DockerとPodmanの比較", ["Docker", "Podman"]),
    ("เปรียบเทียบ Redis กับ Memcached", ["Redis", "Memcached"]),
    ("Docker กับ Podman ต่างกันอย่างไร", ["Docker", "Podman"]),
    ("ความแตกต่างระหว่าง TCP และ UDP", ["TCP", "UDP"]),
    ("Redis和Memcached的区别", ["Redis", "Memcached"]),
    ("Python与Java有什么不同？", ["Python", "Java"]),
    ("比较Vue和React", ["Vue", "React"]),
    ("MySQL跟PostgreSQL哪个好", ["MySQL", "PostgreSQL"]),
]
SPLIT_IDS = [
    "difference-between",
    "difference-between-bare",
    "differences-plural",
    "vs",
    "vs-dot",
    "versus-which-is-better",
    "compare-with",
    "compare-and",
    "comparison-of",
    "differ-from",
    "and-keeps-the-shared-part",
    "and-two-names",
    "and-two-topics",
    "and-keeps-what-is",
    "and-noun-phrases",
    "and-inside-a-part-middle-join",
    "ja-chigai",
    "ja-hikaku",
    "ja-dou-chigau",
    "ja-no-hikaku",
    "th-priap-thiap",
    "th-tang-kan",
    "th-khwam-taek-tang",
    "zh-qubie",
    "zh-butong",
    "zh-bijiao",
    "zh-nage-hao",
]

NO_SPLIT = [
    ("rock and roll", "a fixed phrase"),
    ("the history of rock and roll", "a fixed phrase inside a question"),
    ("Johnson & Johnson", "& never splits"),
    ("Johnson and Johnson", "the two parts are the same"),
    ("research and development budget", "a fixed phrase"),
    ("pros and cons of Redis", "a fixed phrase"),
    ("Why did the backup fail and what did we do about it?", "a second clause, with 'it'"),
    ("The cache expired and the database melted", "clauses: the part ends in a verb"),
    ("I restarted the server and it worked", "a clause with a pronoun"),
    ("latency between the app and the database", "between without difference"),
    ("How do I roll back a deployment and keep the data of the last release?", "a long clause"),
    ("AT&T outage", "& never splits"),
    ("android backup", "'and' only as a whole word"),
    ("VS Code extensions", "vs without a left part"),
    ("友達と行った店", "と as a particle"),
    ("これは大事なことと思う", "と思う"),
    ("ไปกับเพื่อน", "กับ means with"),
    ("ฉันกินข้าวและดื่มน้ำ", "และ without a frame"),
    ("世界和平", "和 in a word"),
    ("我和你", "和 without a frame"),
    ("Why did the nightly backup fail?", "one question"),
    (
        "Immune responses result in the development of inflammatory Th17 cells and "
        "anti-inflammatory iTregs.",
        "a claim whose and joins inside a long sentence",
    ),
    (
        "Auditory entrainment is strengthened when people see congruent visual and auditory "
        "information.",
        "adjectives joined inside a claim",
    ),
]


@pytest.mark.parametrize(("query", "parts"), SPLIT, ids=SPLIT_IDS)
def test_splits(query: str, parts: list[str]) -> None:
    assert split_compound(query) == parts


@pytest.mark.parametrize(
    ("query", "why"),
    NO_SPLIT,
    ids=[why.replace(" ", "-") + f"-{i}" for i, (_, why) in enumerate(NO_SPLIT)],
)
def test_does_not_split(query: str, why: str) -> None:
    assert split_compound(query) == [], why


LONG = 10_000  # the longest question a retriever searches (longer ones are cut there)


@pytest.fixture
def read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules read the whole of a question as long as the cut (they read its first
    ``READ_QUERY_CHARS`` otherwise): their patterns run in linear time on all of it."""
    monkeypatch.setattr(inputs, "READ_QUERY_CHARS", LONG)


@pytest.mark.parametrize(
    "filler",
    ["と", "กับ ", "和", "and ", " ", "x vs ", "differs from "],
    ids=["ja-to", "th-kap", "zh-he", "en-and", "spaces", "en-vs", "en-differs"],
)
@pytest.mark.usefixtures("read_whole")
def test_long_text_of_joins_without_a_frame_does_not_split(filler: str) -> None:
    text = (filler * LONG)[:LONG]
    parts = split_compound(text)
    assert parts == [] or all(p.strip() for p in parts)


@pytest.mark.parametrize(
    ("frame", "parts"),
    [
        ("Redis和Memcached的区别", ["Redis", "Memcached"]),
        ("Docker กับ Podman ต่างกันอย่างไร", ["Docker", "Podman"]),
        ("DockerとPodmanの比較", ["Docker", "Podman"]),
    ],
    ids=["zh", "th", "ja"],
)
@pytest.mark.usefixtures("read_whole")
def test_a_frame_after_a_long_first_line_is_found(frame: str, parts: list[str]) -> None:
    filler = ("the nightly backup job wrote its log to the shared volume " * 200)[: LONG - 100]
    assert split_compound(f"{filler}\n{frame}") == parts


def test_a_frame_lies_within_one_line() -> None:
    # Its parts and closing words on different lines are not one frame.
    assert split_compound("Docker กับ Podman\nต่างกันอย่างไร") == []
    assert split_compound("Redis和\nMemcached的区别") == []
