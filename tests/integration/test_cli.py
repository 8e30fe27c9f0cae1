"""The command line, run in-process with the real model: ingest, query, errors, demo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from typer.testing import CliRunner

from ragbrain.cli import app
from ragbrain.errors import InvalidInputError

pytestmark = pytest.mark.slow
runner = CliRunner()


def test_ingest_then_query_as_json(notes_dir: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    first = runner.invoke(app, ["ingest", str(notes_dir), "--store", store])
    assert first.exit_code == 0, first.output
    assert "6 files: 6 chunks added, 0 unchanged, 0 deleted" in first.stdout
    again = runner.invoke(app, ["ingest", str(notes_dir), "--store", store, "--check-index"])
    assert "0 chunks added, 6 unchanged, 0 deleted" in again.stdout
    assert "restored" not in again.stdout  # every chunk was found by its own vector

    result = runner.invoke(
        app, ["query", "why did the nightly backup fail", "--store", store, "--json", "--k", "2"]
    )
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)
    assert run["depth"] == 2 and run["verdict"] in ("good", "poor")
    assert run["documents"][0]["source"] == "bug/backup.md"
    assert {"distance", "critic_score", "from_fallback", "text"} <= set(run["documents"][0])
    assert run["answerable"] is True and run["abstain_reason"] is None
    # bug/backup.md is one chunk: '# Nightly backup failed' (line 1) to its last line (3).
    first = run["documents"][0]
    assert (first["start_line"], first["end_line"], first["cite"]) == (1, 3, "bug/backup.md:1-3")
    shown = runner.invoke(app, ["query", "why did the nightly backup fail", "--store", store])
    assert "bug/backup.md:1-3 #0" in shown.stdout


def test_query_abstain_answers_nothing_for_a_question_the_notes_do_not_cover(
    notes_dir: Path, tmp_path: Path
) -> None:
    """By default an off-topic question gets an empty answer with the reason (a store this
    small uses the cut shipped for all-MiniLM-L6-v2, and says so); --abstain off hands the
    usual list over; --abstain strict refuses it too."""
    store = str(tmp_path / "store")
    runner.invoke(app, ["ingest", str(notes_dir), "--store", store])
    question = ["query", "what is the capital of France", "--store", store, "--json"]
    off = json.loads(runner.invoke(app, [*question, "--abstain", "off"]).stdout)
    assert off["answerable"] is True and off["documents"]
    for level in ([], ["--abstain", "on"], ["--abstain", "strict"]):
        result = runner.invoke(app, [*question, *level])
        assert result.exit_code == 0, result.output
        run = json.loads(result.stdout)
        assert run["answerable"] is False and run["documents"] == [], level
        assert run["abstain_reason"].startswith("off-topic")
        assert "shipped for all-MiniLM-L6-v2" in run["abstain_reason"]
        assert "too few to calibrate" in run["abstain_reason"]
        assert run["nearest_distance"] is not None and run["lexical_support"] is not None
    shown = runner.invoke(app, question[:-1])
    assert "not answerable: off-topic" in " ".join(shown.stdout.split())
    bad = runner.invoke(app, [*question, "--abstain", "sometimes"])
    assert bad.exit_code == 2 and "abstain must be one of off, on, strict" in bad.output


def test_query_prints_the_decisions(notes_dir: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    runner.invoke(app, ["ingest", str(notes_dir), "--store", store, "--type", "note"])
    result = runner.invoke(app, ["query", "nightly backup", "--store", store, "--type", "decision"])
    assert result.exit_code == 0, result.output
    assert "verdict poor" in result.stdout and "fallback yes" in result.stdout
    assert "(fallback)" in result.stdout  # every note is now type 'note': the fallback finds it


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["query", "redis", "--store", "{tmp}/missing"], "No ragbrain store at"),
        (["query", "   ", "--store", "{store}"], "query is empty"),
        (["query", "redis", "--k", "0", "--store", "{store}"], "k must be in 1..100"),
        (["ingest", "{tmp}/no-such-notes", "--store", "{store}"], "no such file or folder"),
        (["query", "redis", "--k", "1000000", "--store", "{store}"], "k must be in 1..100"),
        (["query", "redis " * 2500, "--store", "{store}"], "the limit is 10,000"),
        (["query", "caf\udce9", "--store", "{store}"], "lone surrogate"),
        (["query", "redis", "--server", "localhost:8000"], "must look like http://HOST:PORT"),
        (["doctor", "--server", "ftp://x"], "must look like http://HOST:PORT"),
    ],
    ids=[
        "missing-store",
        "empty-query",
        "k0",
        "missing-notes",
        "k-million",
        "huge-query",
        "undecodable-argument",
        "server-without-scheme",
        "doctor-bad-server",
    ],
)
def test_errors_exit_2_with_a_message(
    args: list[str], message: str, notes_dir: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    runner.invoke(app, ["ingest", str(notes_dir), "--store", str(store)])
    filled = [a.format(tmp=tmp_path, store=store) for a in args]
    result = runner.invoke(app, filled)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_demo_shows_every_path(tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "--store", str(tmp_path / "demo")])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "depth 5 (complexity 0)" in out
    assert "depth 10" in out
    assert "fallback yes" in out and "(fallback)" in out
    assert "verdict poor" in out and "verdict good" in out
    assert "not answerable: off-topic" in out  # the off-topic questions are refused
    assert sum(line.startswith("query: ") for line in out.splitlines()) == 8


def test_graph_prints_mermaid() -> None:
    result = runner.invoke(app, ["graph"])
    assert (
        result.exit_code == 0
        and "assess_quality -. &nbsp;widen&nbsp; .-> fallback_search" in result.stdout
    )


def test_absent_server_exits_1_within_the_deadline(tmp_path: Path) -> None:
    import time

    from ragbrain.models.embeddings import default_embeddings
    from tests.support.chroma_server import free_port

    default_embeddings()  # loaded once, so the timing below is the store's alone
    start = time.monotonic()
    result = runner.invoke(
        app,
        ["query", "redis", "--server", f"http://127.0.0.1:{free_port()}"],
        env={"RAGBRAIN_DEADLINE": "1", "RAGBRAIN_RETRIES": "2"},
    )
    assert result.exit_code == 1
    assert "failed after 3 attempt(s)" in result.stderr and "Traceback" not in result.output
    assert time.monotonic() - start < 1.0 + 0.5


def test_doctor_exit_codes(notes_dir: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    runner.invoke(app, ["ingest", str(notes_dir), "--store", str(store)])
    healthy = runner.invoke(app, ["doctor", "--store", str(store)])
    assert healthy.exit_code == 0, healthy.output
    assert "self-retrieval: 6/6 sampled chunks" in healthy.stdout
    assert "no problems found" in healthy.stdout
    missing = runner.invoke(app, ["doctor", "--store", str(tmp_path / "nowhere")])
    assert missing.exit_code == 1
    assert "problem reach" in missing.stdout and "fix: `ragbrain ingest" in missing.stdout


def test_doctor_names_files_stored_twice_and_fix_merges_them(
    notes_dir: Path, tmp_path: Path, minilm: Embeddings
) -> None:
    """Ingested whole, then a subfolder on its own as older versions stored it: the real
    (int8) model's vectors of one text differ a little from batch to batch, which the doctor
    once read as "the vectors do not come from this model"."""
    from ragbrain.store import Store
    from tests.unit.test_roots import legacy_ingest

    store = tmp_path / "store"
    opened = Store.open(store, minilm, create=True)
    legacy_ingest(notes_dir, opened)
    legacy_ingest(notes_dir / "bug", opened, type_="bug")
    assert opened.count() == 8

    found = runner.invoke(app, ["doctor", "--store", str(store)])
    fixed = runner.invoke(app, ["doctor", "--fix", "--store", str(store)])

    assert found.exit_code == 1
    assert "problem overlapping roots" in found.stdout
    assert "problem duplicate sources: 2 file(s)" in found.stdout
    assert "problem self-retrieval" not in found.stdout
    assert f"fix: `ragbrain doctor --fix --store {store}` merges them" in found.stdout
    assert fixed.exit_code == 0, fixed.output
    assert f"fixed: {notes_dir / 'bug'} merged into {notes_dir}" in fixed.stdout
    assert "no problems found" in fixed.stdout
    assert Store.open(store, minilm).count() == 6


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--score-length", "4"),
        ("--score-length", "513"),
        ("--score-length", "many"),
        ("--layers", "0"),
        ("--layers", "7"),  # MiniLM has six
    ],
)
def test_critic_train_refuses_a_bad_setting(tmp_path: Path, option: str, value: str) -> None:
    args = ["critic", "train", "--out", str(tmp_path / "c"), "--data", str(tmp_path)]
    result = runner.invoke(app, [*args, option, value])
    assert result.exit_code == 2 and option.lstrip("-") in result.output
    assert not (tmp_path / "c").exists()  # refused before anything was written


def test_critic_train_passes_its_settings_into_the_recipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ragbrain.critic.training.sources

    seen: list[Any] = []

    def stop(data: Any, embeddings: Any, recipe: Any, **kwargs: Any) -> Any:
        seen.append(recipe)
        raise InvalidInputError("stopped after reading the settings")

    monkeypatch.setattr(ragbrain.critic.training.sources, "from_beir", stop)
    args = ["critic", "train", "--out", str(tmp_path / "c"), "--data", str(tmp_path)]
    settings = ["--layers", "4", "--score-length", "80", "--seed", "5", "--base", "e5-small"]
    result = runner.invoke(app, [*args, *settings])
    assert result.exit_code != 0 and "stopped after reading the settings" in result.output
    (recipe,) = seen
    assert (recipe.layers, recipe.score_length, recipe.seed) == (4, 80, 5)
    assert recipe.base == "multilingual-e5-small"


def test_critic_train_refuses_an_unknown_base(tmp_path: Path) -> None:
    args = ["critic", "train", "--out", str(tmp_path / "c"), "--data", str(tmp_path)]
    result = runner.invoke(app, [*args, "--base", "bert-large"])
    assert result.exit_code != 0 and "no such critic base" in result.output
    assert "minilm, e5-small" in result.output
    assert not (tmp_path / "c").exists()


def test_critic_calibrate_refuses_a_test_split(tmp_path: Path) -> None:
    args = ["critic", "calibrate", "--out", str(tmp_path / "c"), "--data", f"{tmp_path}@test"]
    result = runner.invoke(app, args)
    assert result.exit_code != 0 and "never learns from a test split" in result.output
    assert not (tmp_path / "c").exists()


def test_critic_calibrate_refuses_a_folder_that_holds_anything(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "notes.md").write_text("mine", encoding="utf-8")
    args = ["critic", "calibrate", "--out", str(tmp_path / "c"), "--data", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "not an empty folder" in result.output
    assert [p.name for p in (tmp_path / "c").iterdir()] == ["notes.md"]


def test_show_prints_lines_and_says_where_to_read_on(notes_dir: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    runner.invoke(app, ["ingest", str(notes_dir), "--store", store])

    lines = runner.invoke(app, ["show", "lesson/timeout.md:4-6", "--store", store])
    chunk = runner.invoke(app, ["show", "bug/cache.md", "--chunk", "0", "--json", "--store", store])
    bad = runner.invoke(app, ["show", "../secret.md", "--store", store])
    unknown = runner.invoke(app, ["show", "bug/none.md:1-3", "--store", store])

    # lesson/timeout.md: three front matter lines, then '# Set statement_timeout' on line 4.
    assert lines.exit_code == 0, lines.output
    assert (
        lines.stdout == "# Set statement_timeout\n\nReporting queries need a statement "
        "timeout so one slow query cannot hold a connection.\n"
    )
    assert json.loads(chunk.stdout)["start_line"] == 1
    assert (bad.exit_code, "must not hold '..'" in bad.output) == (2, True)
    assert (unknown.exit_code, "unknown source 'bug/none.md'" in unknown.output) == (2, True)


def test_calibrate_a_store_on_its_own_model(sample_store_path: Path, tmp_path: Path) -> None:
    import shutil

    from ragbrain.store import Store

    store = tmp_path / "store"
    shutil.copytree(sample_store_path, store)
    base = ["calibrate", "--store", str(store), "--samples", "20", "--out", str(tmp_path / "o")]
    result = runner.invoke(app, base)  # no --embedding: the store's model (MiniLM)
    assert result.exit_code == 0, result.output
    assert "all-MiniLM-L6-v2, 20 chunks" in result.output
    assert Store.read_gate_threshold(store) is not None

    refused = runner.invoke(app, [*base, "--embedding", "e5-small"])
    assert refused.exit_code == 2
    assert "all-MiniLM-L6-v2" in refused.output and "multilingual-e5-small" in refused.output


COLD_QUERY = """
import json, sys
from ragbrain.cli import app
try:
    app(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in ("torch", "transformers") if m in sys.modules)
print(json.dumps({"code": code, "heavy": heavy}))
"""


def test_a_query_on_an_english_store_loads_no_deep_learning_framework(
    sample_store_path: Path,
) -> None:
    """The critic of an all-MiniLM-L6-v2 store is the evidence critic (numpy), and the query
    is embedded on ONNX Runtime: a fresh process imports neither torch nor transformers."""
    import subprocess
    import sys

    question = "why did the liveness probe restart every api pod"
    args = ["query", question, "--store", str(sample_store_path), "--json"]
    done = subprocess.run(
        [sys.executable, "-c", COLD_QUERY, *args], capture_output=True, text=True, check=False
    )
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert last == {"code": 0, "heavy": []}, done.stderr[-2000:]
    run = json.loads(done.stdout[: done.stdout.rindex("\n{")])
    assert run["critic"].startswith("on (evidence, threshold"), run["critic"]
    assert run["documents"] and run["documents"][0]["critic_score"] is not None
