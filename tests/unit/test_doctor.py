"""`ragbrain doctor`: a healthy store passes; each kind of damage is named with its fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragbrain.doctor import Finding, diagnose
from ragbrain.doctor.vectors import check_reach
from ragbrain.store import COLLECTION, Store
from ragbrain.store.connect import StorePolicy
from ragbrain.store.connect import embedded_client as _client
from tests.support.fakes import BagOfWordsEmbeddings, CutOff


def problems(findings: list[Finding]) -> dict[str, Finding]:
    return {f.check: f for f in findings if not f.ok}


def test_a_healthy_store_passes(fake_store: Store) -> None:
    findings = diagnose(fake_store.location, embeddings=BagOfWordsEmbeddings())
    assert not problems(findings), findings
    checks = {f.check: f.message for f in findings}
    assert checks["space"] == "cosine distance"
    assert checks["recorded model"] == "bag-of-words-64, 64 dimensions"
    assert checks["query model"] == "bag-of-words-64 matches, on BagOfWordsEmbeddings"
    assert checks["count"].startswith(f"{fake_store.count()} chunks (")
    assert checks["self-retrieval"] == f"{fake_store.count()}/{fake_store.count()} sampled chunks"
    assert checks["lexical index"] in (
        "none (nothing to check)",
        f"lexical.npz holds the same {fake_store.count()} chunks",
    )


def test_a_chunk_no_search_reaches_is_named_with_the_fix(fake_store: Store) -> None:
    ids = fake_store.all_ids()
    checks = {f.check: f.message for f in diagnose(fake_store.location) if f.ok}
    assert checks["index reach"] == f"all {len(ids)} chunks found by their own vectors"
    cut = CutOff(fake_store.collection, ids[1])
    finding = check_reach(cut, ids, StorePolicy(), "--store s")  # type: ignore[arg-type]
    assert not finding.ok
    assert finding.message.startswith(f"1 of {len(ids)} chunks are in the vector index but no")
    assert ids[1] in finding.message
    assert finding.fix == "`ragbrain ingest NOTES_DIR --store s --check-index` writes them back"


def test_missing_store_says_how_to_create_one(tmp_path: Path) -> None:
    (finding,) = diagnose(tmp_path / "nowhere", embeddings=BagOfWordsEmbeddings())
    assert not finding.ok and "No ragbrain store" in finding.message
    assert "ragbrain ingest" in finding.fix


def test_another_query_model_is_named(fake_store: Store) -> None:
    found = problems(diagnose(fake_store.location, embeddings=BagOfWordsEmbeddings(32)))
    assert "32 dimensions" in found["query model"].message
    assert "self-retrieval" not in {f.check for f in diagnose(fake_store.location)}


def test_stale_duplicates_and_broken_metadata_are_found(fake_store: Store) -> None:
    got = fake_store.collection.get(limit=1, include=["documents", "metadatas", "embeddings"])
    meta = dict(got["metadatas"][0])
    fake_store.upsert(["stale"], ["old text of the same place"], [meta], [got["embeddings"][0]])
    fake_store.upsert(["bare"], ["no metadata"], [{"type": "x"}], [got["embeddings"][0]])
    found = problems(diagnose(fake_store.location, embeddings=BagOfWordsEmbeddings()))
    assert "interrupted" in found["duplicates"].message
    assert f"ragbrain ingest {meta['root']}" in found["duplicates"].fix
    assert "1 chunks lack text or one of" in found["metadata"].message


def test_vectors_that_do_not_match_the_model_fail_self_retrieval(fake_store: Store) -> None:
    got = fake_store.collection.get(include=["embeddings"])
    vectors = [list(v) for v in got["embeddings"]]
    shuffled = [*vectors[1:], vectors[0]]  # each chunk gets its neighbour's vector
    fake_store.collection.update(ids=got["ids"], embeddings=shuffled)
    found = problems(diagnose(fake_store.location, embeddings=BagOfWordsEmbeddings()))
    assert "not found first by their own text" in found["self-retrieval"].message


def test_empty_and_non_cosine_stores(tmp_path: Path) -> None:
    Store.open(tmp_path / "empty", BagOfWordsEmbeddings(), create=True)
    assert "empty" in problems(diagnose(tmp_path / "empty"))["count"].message
    _client(tmp_path / "l2").create_collection(COLLECTION, embedding_function=None)
    found = problems(diagnose(tmp_path / "l2"))
    assert "'l2'" in found["space"].message and "--convert-space" in found["space"].fix
    assert "does not record" in found["recorded model"].message


@pytest.mark.parametrize("name", ["lexical.npz"], ids=["corrupt-lexical-index"])
def test_an_unreadable_lexical_index_is_a_problem(fake_store: Store, name: str) -> None:
    assert fake_store.folder is not None
    (fake_store.folder / name).write_bytes(b"not an index")
    found = problems(diagnose(fake_store.location, embeddings=BagOfWordsEmbeddings()))
    assert "cannot be read" in found["lexical index"].message


def test_chunks_without_a_time_get_the_command_that_records_it(fake_store: Store) -> None:
    healthy = {f.check: f for f in diagnose(fake_store.location)}
    assert healthy["times"].message.startswith("every chunk has its note's time")
    ids = fake_store.all_ids()
    fake_store.update_metadata(ids[:2], [{"modified": None}] * 2)  # as an older ingest left them

    times = {f.check: f for f in diagnose(fake_store.location)}["times"]

    assert times.ok and f"2 of {len(ids)} chunks have no recorded time" in times.message
    root = fake_store.rows(ids[:1])[0][2]["root"]
    assert f"`ragbrain ingest {root}` again" in times.fix


class BatchJitter(BagOfWordsEmbeddings):
    """The fake model whose document vectors move a little with the batch they are embedded
    in, as int8 activations quantized per batch do."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        rng = np.random.default_rng(len(texts) * 7919 + sum(map(len, texts)))
        vectors = np.asarray(super().embed_documents(texts))
        vectors += rng.normal(0.0, 0.01, vectors.shape)
        return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).tolist()


def test_files_stored_twice_are_named_as_duplicates_not_blamed_on_the_model(
    tmp_path: Path, write_notes: Callable[[dict[str, str]], Path]
) -> None:
    from ragbrain.doctor.sources import repair
    from tests.unit.test_roots import EIGHT, legacy_ingest

    root = write_notes(EIGHT)
    store = Store.open(tmp_path / "store", BatchJitter(), create=True)
    legacy_ingest(root, store)
    legacy_ingest(root / "tmux", store, type_="tmux")  # 8 notes, 13 chunks
    assert store.count() == 13

    found = problems(diagnose(store.location, embeddings=BatchJitter()))

    assert set(found) == {"overlapping roots", "duplicate sources"}, found
    assert f"{root / 'tmux'} lies inside {root} (5 files stored from it)" in (
        found["overlapping roots"].message
    )
    assert "5 file(s) are stored under more than one source" in found["duplicate sources"].message
    assert found["duplicate sources"].fix.startswith(
        f"`ragbrain doctor --fix --store {store.location}` merges them (or the next "
        f"`ragbrain ingest {root}` does)"
    )

    done = repair(store)

    assert done == [
        f"{root / 'tmux'} merged into {root}: 0 chunks moved under it, 5 copies of chunks "
        "already there dropped"
    ]
    assert store.count() == 8
    assert not problems(diagnose(store.location, embeddings=BatchJitter()))


def test_doctor_exits_0_on_advice_and_1_on_a_fault(
    fake_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Advice (a file of links, notes the model reads badly) is not a fault: a health check
    that runs doctor passes; a fault fails it. No message is cut short."""
    from typer.testing import CliRunner

    import ragbrain.doctor
    from ragbrain.cli import app
    from ragbrain.doctor.chunks import check_languages

    model = check_languages({"a": {"_language": "en", "root": "/n"}}, "--store s", "minilm")
    assert model.ok and model.message.endswith("the notes are mostly English")
    advice = Finding("link lists", False, "README.md is mostly links", "ignore it", advice=True)
    fault = Finding("space", False, "the collection uses 'l2'", "convert it")
    for findings, code in (([model, advice], 0), ([model, advice, fault], 1)):
        monkeypatch.setattr(ragbrain.doctor, "diagnose", lambda *_, f=findings, **__: f)
        result = CliRunner().invoke(app, ["doctor", "--store", fake_store.location])
        assert result.exit_code == code, result.output
        assert "advice  link lists: README.md is mostly links" in result.stdout
        assert result.stdout.strip().splitlines()[-1] == (
            f"{code} problem(s), 1 piece(s) of advice"
            if code
            else "no problems found, 1 piece(s) of advice"
        )
