"""A notes folder as an evaluation domain: its Markdown notes ingested as a user would, and the
questions written for it (``questions.json``) asked of the shipped retriever.

A notes domain is a folder holding ``notes/`` (the notes) and ``questions.json``:

.. code-block:: json

    {"answerable": [{"q": "...", "expect": ["sub/note.md"], "split": "fit"}],
     "offtopic":   [{"q": "...", "kind": "general", "split": "test"}],
     "missing":    [{"q": "...", "near": "sub/note.md", "split": "fit"}],
     "broad":      [{"q": "...", "expect": ["a.md", "b.md", "c.md"], "split": "test"}]}

Paths are relative to ``notes/``. Answerable questions are answered by an ``expect`` note;
off-topic ones (``general``, or a ``trap`` sharing a word with the notes in another sense) and
missing ones (on the notes' topic, answered by no note) should get an empty answer; broad ones
("what have I written about GraphQL") are answered by several notes together, every one of
them in ``expect``.

``evaluate_notes`` also asks questions about names the notes use, generated from them
(``identifier_questions``: ``pg_dump``, ``what is sqlite3-rsync.c for``; group
``identifier``), and reports, per group and split: the expected note found (in the
handed-over set, and first), the chunks handed over, the share of them from an expected note,
and the share refused at the default level (``abstain="on"``) and at ``"strict"``. For the
broad group: the share of the relevant notes among the notes handed over (recall; a refused
question counts 0), the share of the notes handed over that are relevant (over the answered
ones), the notes handed over, and the same for a plain dense search of the same store's top 10
and top 4 chunks (``DENSE_TOPS``), side by side; for answerable questions, the expected note
found, first and nDCG@10 beside a plain dense top 10 (``ranking_table``). Where
``questions.json`` gives each question's ``lang`` (``notes_dev_ml``: half asked in the notes'
language, half in English), every group is reported per language (``answerable [ja]``,
``answerable [en]``).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.errors import InvalidInputError
from ragbrain.evaluation.report import percent
from ragbrain.paths import cache_root

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ragbrain.retriever import CorrectiveRetriever
    from ragbrain.store import Store

GROUPS = ("answerable", "offtopic", "missing", "broad")
#: The plain dense searches the broad group is compared with: top 10, and LangChain's k=4.
DENSE_TOPS = (10, 4)
#: Groups whose questions name the notes that answer them (``Question.expect``).
EXPECTING = ("answerable", "broad")
SPLITS = ("fit", "test")
#: A name as notes write it: dotted, dashed or snake_case, camelCase, or upper case with a
#: digit or an underscore (``pg_dump``, ``sqlite3-rsync.c``, ``addEventListener``, ``NAT_GW``).
IDENTIFIER = re.compile(
    r"(?<![\w.-])([A-Za-z]\w*(?:[_.\-:]\w+)+|[a-z]+[A-Z]\w+|[A-Z]{2,}\w*\d\w*|[A-Z][A-Z_]{4,})(?!\w)"
)
#: How identifier questions are asked: alone, and in three everyday wrappings.
IDENTIFIER_FORMS = ("{}", "what is {} for", "how do I use {}", "{} not working")
#: The file a finished cached store holds (a store without it is built again).
DONE = "ragbrain-eval-complete.json"


@dataclass(frozen=True)
class Question:
    """One question of a notes domain."""

    text: str
    group: str  # answerable, offtopic, missing, broad (and identifier, generated)
    split: str  # fit, test
    kind: str = ""  # offtopic: general or trap
    expect: tuple[str, ...] = ()  # answerable, broad: the notes that answer it
    near: str = ""  # missing: the closest note that does not answer it
    lang: str = ""  # the language it is asked in, where questions.json says (``ja``, ``en``)

    @property
    def label(self) -> str:
        """The group as reported: ``answerable``, ``offtopic/general``, ``offtopic/trap``,
        ``missing``."""
        return f"{self.group}/{self.kind}" if self.group == "offtopic" else self.group

    @property
    def row(self) -> str:
        """The summary's row: the label, and the question's language where it is given
        (``answerable [ja]``, ``answerable [en]``: same-language and cross-language
        questions apart)."""
        return f"{self.label} [{self.lang}]" if self.lang else self.label


def is_notes_domain(folder: Path) -> bool:
    """Whether ``folder`` is a notes domain (``notes/`` and ``questions.json``)."""
    return (folder / "notes").is_dir() and (folder / "questions.json").is_file()


def load_questions(folder: Path) -> list[Question]:
    """The questions of the notes domain ``folder``.

    Raises:
        InvalidInputError: ``questions.json`` is missing, not JSON, or not in the format above.
    """
    path = folder / "questions.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInputError(f"{path}: missing (a notes domain needs questions.json).") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"{path}: not a readable JSON file ({exc}).") from exc
    if not isinstance(raw, dict) or not set(raw) <= set(GROUPS) or not raw:
        raise InvalidInputError(f"{path}: must be an object of {list(GROUPS)} lists.")
    questions: list[Question] = []
    for group in GROUPS:
        rows = raw.get(group, [])
        if not isinstance(rows, list):
            raise InvalidInputError(f"{path}: '{group}' must be a list.")
        for n, row in enumerate(rows):
            where = f"{path}: {group}[{n}]"
            if not isinstance(row, dict) or not isinstance(row.get("q"), str) or not row["q"]:
                raise InvalidInputError(f"{where} needs a non-empty 'q'.")
            split = row.get("split", "test")
            if split not in SPLITS:
                raise InvalidInputError(f"{where}: split must be one of {list(SPLITS)}.")
            expect = row.get("expect", [])
            if group in EXPECTING and (
                not isinstance(expect, list)
                or not expect
                or not all(isinstance(e, str) for e in expect)
            ):
                raise InvalidInputError(f"{where}: 'expect' must list the notes that answer it.")
            kind = str(row.get("kind", "general")) if group == "offtopic" else ""
            questions.append(
                Question(
                    text=row["q"],
                    group=group,
                    split=split,
                    kind=kind,
                    expect=tuple(expect) if group in EXPECTING else (),
                    near=str(row.get("near", "")),
                    lang=str(row.get("lang", "")),
                )
            )
    return questions


def identifier_questions(folder: Path, count: int = 100, seed: int = 0) -> list[Question]:
    """Questions about a name the notes use, generated from ``folder``'s notes: for up to
    ``count`` notes drawn at random (``seed``), one identifier (``IDENTIFIER``) that at most
    two notes hold, asked in each of ``IDENTIFIER_FORMS`` in turn; the notes that hold it
    are the expected ones (group ``identifier``, test split). What a user types when they
    remember a name and not the note: nothing answers it but the notes that use the name.
    """
    if count <= 0:
        return []
    notes = folder / "notes"
    files = sorted(p for p in notes.rglob("*.md") if p.is_file())
    names: dict[str, set[str]] = {}
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        names[path.relative_to(notes).as_posix()] = {
            n for n in IDENTIFIER.findall(text) if 4 <= len(n) <= 40 and "//" not in n
        }
    held = Counter(n for found in names.values() for n in found)
    rng = random.Random(seed)
    questions: list[Question] = []
    for source in rng.sample(sorted(names), len(names)):
        rare = sorted(n for n in names[source] if held[n] <= 2)
        if not rare:
            continue
        name = rng.choice(rare)
        form = IDENTIFIER_FORMS[len(questions) % len(IDENTIFIER_FORMS)]
        expect = tuple(sorted(s for s, found in names.items() if name in found))
        questions.append(Question(form.format(name), "identifier", "test", expect=expect))
        if len(questions) == count:
            break
    return questions


def _fingerprint(notes: Path) -> str:
    """What the notes folder holds: each file's path, size and modification time."""
    rows = sorted(
        f"{p.relative_to(notes).as_posix()}\t{p.stat().st_size}\t{p.stat().st_mtime_ns}"
        for p in notes.rglob("*")
        if p.is_file()
    )
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]


def cached_store_path(folder: Path, model: str, root: Path | None = None) -> Path:
    """Where the store of ``folder``'s notes embedded with ``model`` is cached: keyed by the
    folder's path, the model and what the notes folder holds."""
    notes = folder.resolve() / "notes"
    key = hashlib.sha256(f"{notes}\n{model}\n{_fingerprint(notes)}".encode()).hexdigest()[:12]
    return (root or cache_root() / "eval" / "notes") / f"{folder.resolve().name}-{model}-{key}"


def notes_store(
    folder: Path,
    embeddings: Embeddings,
    *,
    root: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Store:
    """The store of ``folder``'s notes, ingested as ``ragbrain ingest`` does (the off-topic
    cut learnt at the end), built once per folder and model and reused while the notes are
    unchanged (``cached_store_path``). A cached store learns its off-topic cut again, so that
    it is the one this version's calibration gives."""
    from ragbrain.ingest import ingest
    from ragbrain.refusal.offtopic import refresh_cut
    from ragbrain.settings import resolve_model
    from ragbrain.store import Store

    path = cached_store_path(folder, resolve_model(embeddings).name, root)
    if (path / DONE).is_file():
        store = Store.open(path, embeddings)
        refresh_cut(store)
        return store
    if path.exists():  # an unfinished build
        shutil.rmtree(path)
    store = Store.open(path, embeddings, create=True)
    report = ingest(folder / "notes", store, progress=progress)
    (path / DONE).write_text(json.dumps({"chunks": store.count(), "summary": report.summary()}))
    return store


@dataclass
class Answer:
    """What the retriever did with one question."""

    question: Question
    sources: list[str]  # the handed-over chunks' notes, in order
    refused: bool  # at the default level (empty answer)
    refused_strict: bool
    reason: str | None = None
    #: Every judged candidate (critic threshold 0): source, distance, critic score, in order.
    candidates: list[tuple[str, float, float | None]] = field(default_factory=list)
    depth: int = 0
    nearest: float | None = None
    support: float | None = None
    #: Broad and answerable questions: the sources of a plain dense search's top
    #: ``max(DENSE_TOPS)`` chunks.
    dense: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """A row of the results file."""
        q = self.question
        return {
            "q": q.text,
            "group": q.label,
            "lang": q.lang,
            "split": q.split,
            "expect": list(q.expect),
            "near": q.near,
            "sources": self.sources,
            "refused": self.refused,
            "refused_strict": self.refused_strict,
            "reason": self.reason,
            "depth": self.depth,
            "nearest": self.nearest,
            "support": self.support,
            "candidates": [list(c) for c in self.candidates],
            "dense": self.dense,
        }


def _sources(documents: Sequence[Any]) -> list[str]:
    return [str(d.metadata.get("source", "")) for d in documents]


def ask(
    retriever: CorrectiveRetriever,
    questions: Sequence[Question],
    *,
    probe: CorrectiveRetriever | None = None,
    progress: Callable[[int, int], None] | None = None,
    dense: Callable[[str, int], list[str]] | None = None,
) -> list[Answer]:
    """Ask each question at the default level and, when answered, at ``"strict"``; with
    ``probe`` (the same store's retriever without a hand-over rule), once more with the critic
    threshold at 0, refusal off and no overview hand-over, to keep every judged candidate with
    its score (what a hand-over rule is fit on); with ``dense`` (a plain dense search:
    question, k -> sources), a broad or answerable question's dense top ``max(DENSE_TOPS)``
    as well."""
    from dataclasses import replace

    base = retriever.context
    strict = retriever.model_copy(update={"context": replace(base, abstain="strict")})
    open_ = (
        probe.model_copy(
            update={"context": replace(base, abstain="off", critic_threshold=0.0, overview=False)}
        )
        if probe is not None
        else None
    )
    answers = []
    for n, question in enumerate(questions):
        run = retriever.run(question.text)
        refused = not run["documents"]
        refused_strict = refused or not strict.run(question.text)["documents"]
        answer = Answer(
            question,
            _sources(run["documents"]),
            refused,
            refused_strict,
            run.get("abstain_reason"),
            depth=int(run["depth"]),
            nearest=run.get("nearest_distance"),
            support=run.get("lexical_support"),
        )
        if open_ is not None:
            judged = open_.run(question.text)["documents"]
            answer.candidates = [
                (
                    str(d.metadata.get("source", "")),
                    float(d.metadata["retrieval"]["distance"]),
                    d.metadata["retrieval"].get("critic_score"),
                )
                for d in judged
            ]
        if dense is not None and question.group in ("broad", "answerable"):
            answer.dense = dense(question.text, max(DENSE_TOPS))
        answers.append(answer)
        if progress is not None:
            progress(n + 1, len(questions))
    return answers


def _share(values: Iterable[bool]) -> float | None:
    items = list(values)
    return round(sum(items) / len(items), 4) if items else None


def _mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return round(sum(items) / len(items), 4) if items else None


def broad_scores(
    handed: Sequence[Sequence[str]], expects: Sequence[Sequence[str]]
) -> dict[str, float | None]:
    """Broad questions' scores: for each question the sources handed over (chunks' notes, in
    order; empty: refused) and the notes that answer it together.

    Returns:
        ``recall``: the share of the relevant notes among the notes handed over, averaged over
        every question (a refused one counts 0); ``precision``: the share of the notes handed
        over that are relevant, ``notes``: how many distinct notes, both averaged over the
        answered questions; ``refused``: the share handed nothing.
    """
    recall: list[float] = []
    precision: list[float] = []
    notes: list[float] = []
    for sources, expect in zip(handed, expects, strict=True):
        unique, wanted = set(sources), set(expect)
        recall.append(len(unique & wanted) / len(wanted) if wanted else 0.0)
        if unique:
            precision.append(len(unique & wanted) / len(unique))
            notes.append(float(len(unique)))
    return {
        "recall": _mean(recall),
        "precision": _mean(precision),
        "notes": _mean(notes),
        "refused": _share(not sources for sources in handed),
    }


def ranking(sources: Sequence[str], expect: Sequence[str], k: int = 10) -> float:
    """nDCG@``k`` of the notes in ``sources`` (chunks' notes, in order; a note counts at its
    first chunk), an ``expect`` note relevant."""
    notes = list(dict.fromkeys(s for s in sources if s))[:k]
    wanted = set(expect)
    gain = sum(1.0 / math.log2(i + 2) for i, note in enumerate(notes) if note in wanted)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(wanted), k)))
    return gain / ideal if ideal else 0.0


def _found_scores(
    rows: Sequence[Answer], handed: Callable[[Answer], Sequence[str]]
) -> dict[str, Any]:
    """Found, first, nDCG@10 of the notes ``handed`` gives each answerable answer."""
    return {
        "found": _share(bool(set(handed(a)) & set(a.question.expect)) for a in rows),
        "first": _share(bool(handed(a)) and handed(a)[0] in a.question.expect for a in rows),
        "ndcg": _mean(ranking(handed(a), a.question.expect) for a in rows),
    }


def summarize_answers(answers: Sequence[Answer]) -> dict[str, dict[str, Any]]:
    """Per row (``Question.row``: the group, and the question's language where given) and
    split (``fit``, ``test``, ``all``): counts and rates (``None`` where a group has no
    question)."""
    out: dict[str, dict[str, Any]] = {}
    labels = sorted({(a.question.row, a.question.label) for a in answers})
    for split in (*SPLITS, "all"):
        for name, label in labels:
            rows = [
                a for a in answers if a.question.row == name and split in ("all", a.question.split)
            ]
            if not rows:
                continue
            entry: dict[str, Any] = {
                "questions": len(rows),
                "refused": _share(a.refused for a in rows),
                "refused_strict": _share(a.refused_strict for a in rows),
            }
            if label in ("answerable", "identifier"):
                found = _found_scores(rows, lambda a: a.sources)
                handed = [a for a in rows if a.sources]
                entry |= {
                    "found": found["found"],
                    "first": found["first"],
                    "ndcg": found["ndcg"],
                    "chunks": _mean(len(a.sources) for a in handed),
                    "from_expected": _mean(
                        sum(s in a.question.expect for s in a.sources) / len(a.sources)
                        for a in handed
                    ),
                }
                if all(a.dense for a in rows):
                    entry["dense"] = _found_scores(rows, lambda a: a.dense)
            elif label == "broad":
                expects = [a.question.expect for a in rows]
                entry |= broad_scores([a.sources for a in rows], expects)
                entry["chunks"] = _mean(len(a.sources) for a in rows if a.sources)
                if all(a.dense for a in rows):
                    entry["dense"] = {
                        str(k): broad_scores([a.dense[:k] for a in rows], expects)
                        for k in DENSE_TOPS
                    }
            elif label == "missing":
                entry["near_returned"] = _share(a.question.near in a.sources for a in rows)
                entry["chunks"] = _mean(len(a.sources) for a in rows if a.sources)
            else:
                entry["chunks"] = _mean(len(a.sources) for a in rows if a.sources)
            out.setdefault(split, {})[name] = entry
    return out


def evaluate_notes(
    folder: Path,
    embeddings: Embeddings | None = None,
    *,
    retriever: CorrectiveRetriever | None = None,
    probe: bool = True,
    store_root: Path | None = None,
    reporter: Callable[[str], Callable[[int, int], None]] | None = None,
    identifiers: int = 100,
) -> dict[str, Any]:
    """Ingest the notes domain ``folder`` (cached; with ``embeddings``, else the model a new
    store of its notes gets, ``model_for_notes``), ask its questions of the shipped retriever
    (or ``retriever``), and ``identifiers`` questions about names its notes use
    (``identifier_questions``), and summarize; a broad question is also asked of a plain dense
    search of the same store (``DENSE_TOPS``) when the store is built here.

    Returns:
        ``{"dataset", "model", "chunks", "summary", "answers"}``.

    Raises:
        InvalidInputError: ``folder`` is not a notes domain.
    """
    from ragbrain.ingest.model_choice import model_for_notes
    from ragbrain.models.embeddings import embeddings_for
    from ragbrain.retriever import CorrectiveRetriever
    from ragbrain.settings import resolve_model

    if not is_notes_domain(folder):
        raise InvalidInputError(f"{folder}: not a notes folder (needs notes/ and questions.json).")
    questions = load_questions(folder) + identifier_questions(folder, identifiers)
    store: Store | None = None
    if retriever is None:
        embeddings = embeddings or embeddings_for(model_for_notes(folder / "notes")[0])
        progress = reporter("ingesting") if reporter else None
        store = notes_store(folder, embeddings, root=store_root, progress=progress)
        path = cached_store_path(folder, resolve_model(embeddings).name, store_root)
        retriever = CorrectiveRetriever.from_store(path, embeddings=embeddings)
    prober = None
    if probe and store is not None:
        from ragbrain.graph import build_graph
        from ragbrain.store.lexical import LexicalSearcher

        graph = build_graph(store, "default", lexical=LexicalSearcher(store), handover=None)
        prober = CorrectiveRetriever(graph=graph)
    dense: Callable[[str, int], list[str]] | None = None
    if store is not None:
        searched = store

        def dense(query: str, k: int) -> list[str]:
            return [str(hit["metadata"].get("source", "")) for hit in searched.search(query, k)]

    answers = ask(
        retriever,
        questions,
        probe=prober,
        progress=reporter("asking") if reporter else None,
        dense=dense,
    )
    return {
        "dataset": folder.resolve().name,
        "model": resolve_model(embeddings).name if embeddings is not None else None,
        "chunks": store.count() if store is not None else None,
        "summary": summarize_answers(answers),
        "answers": [a.to_json() for a in answers],
    }


def broad_table(summary: dict[str, dict[str, Any]], split: str = "test") -> str:
    """The broad group of one split as a Markdown table (a row block per question language
    where given): ragbrain, then plain dense top 10 and top 4 chunks of the same store (empty
    when the split has no broad question)."""
    entries = {n: e for n, e in summary.get(split, {}).items() if n.split(" ")[0] == "broad"}
    if not entries:
        return ""
    lines = [
        "| broad questions | recall of relevant notes | relevant share of notes handed over "
        "| notes handed over | refused |",
        "|---|---|---|---|---|",
    ]
    for name, entry in entries.items():
        where = name[len("broad") :]
        sides = [(f"ragbrain{where} ({entry['questions']} questions)", entry)]
        sides += [(f"dense top {k}{where}", v) for k, v in entry.get("dense", {}).items()]
        for shown, scores in sides:
            notes = "-" if scores.get("notes") is None else f"{scores['notes']:.2f}"
            lines.append(
                f"| {shown} | {percent(scores['recall'])} | {percent(scores['precision'])} "
                f"| {notes} | {percent(scores['refused'])} |"
            )
    return "\n".join(lines) + "\n"


def ranking_table(summary: dict[str, dict[str, Any]], split: str = "test") -> str:
    """Answerable questions of one split, ranked: the expected note found, first, and nDCG@10
    of the notes, for ragbrain's handed-over chunks and a plain dense search's top 10 chunks
    of the same store (empty without dense searches)."""
    entries = {
        n: e
        for n, e in summary.get(split, {}).items()
        if n.split(" ")[0] == "answerable" and "dense" in e
    }
    if not entries:
        return ""
    lines = [
        "| answerable, ranked | ragbrain: found / first / nDCG@10 "
        "| dense top 10: found / first / nDCG@10 |",
        "|---|---|---|",
    ]
    for name, entry in entries.items():
        d = entry["dense"]
        lines.append(
            f"| {name} | {percent(entry['found'])} / {percent(entry['first'])} / "
            f"{entry['ndcg']:.3f} | {percent(d['found'])} / {percent(d['first'])} / "
            f"{d['ndcg']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def notes_table(summary: dict[str, dict[str, Any]], split: str = "test") -> str:
    """The summary of one split as a Markdown table, a row per group (the broad group's
    scores are ``broad_table``'s)."""
    rows = summary.get(split, {})
    lines = [
        "| group | questions | found / first | chunks handed over | from an expected note "
        "| refused | refused, strict |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, entry in rows.items():
        found = (
            f"{percent(entry['found'])} / {percent(entry['first'])}" if "found" in entry else "-"
        )
        chunks = "-" if entry.get("chunks") is None else f"{entry['chunks']:.2f}"
        lines.append(
            f"| {label} | {entry['questions']} | {found} | {chunks} "
            f"| {percent(entry.get('from_expected'))} | {percent(entry['refused'])} "
            f"| {percent(entry['refused_strict'])} |"
        )
    return "\n".join(lines) + "\n"
