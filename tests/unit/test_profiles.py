"""One profile per embedding model: the data files load, and the modules that use a model's
values read them from its profile."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ragbrain.errors import InvalidInputError
from ragbrain.models import profiles as module
from ragbrain.models.profiles import (
    ModelProfile,
    chosen_for,
    default_profile,
    profile,
    profile_path,
    profiles,
)


def test_every_profile_file_loads_and_names_one_model() -> None:
    found = profiles()
    assert len(found) == len(list(module.FOLDER.glob("*.json"))) >= 2
    assert len({p.name for p in found}) == len({p.choice for p in found}) == len(found)
    assert [p for p in found if p.default] == [default_profile()] == [found[0]]
    assert {chosen_for("english").name, chosen_for("multilingual").name} <= {p.name for p in found}
    assert chosen_for("multilingual").reads is None
    for p in found:
        assert profile_path(p.name).is_file()
        assert profile(p.name) is p
    assert profile("someone-elses-model") is None


def test_a_profile_file_is_what_its_writer_writes() -> None:
    """``write_profile`` (the ``--ship`` steps) writes a file as the shipped ones are."""
    for p in profiles():
        assert profile_path(p.name).read_text(encoding="utf-8") == p.to_json()


def test_write_profile_replaces_the_file_and_the_cached_profiles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in module.FOLDER.glob("*.json"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    monkeypatch.setattr(module, "FOLDER", tmp_path)
    module.profiles.cache_clear()
    try:
        shipped = default_profile()
        levels = dataclasses.replace(shipped.offtopic, cut=0.5)
        written = module.write_profile(dataclasses.replace(shipped, offtopic=levels))
        assert written.parent == tmp_path
        assert default_profile().offtopic.cut == 0.5
        assert default_profile().gate == shipped.gate
    finally:
        module.profiles.cache_clear()


@pytest.mark.parametrize("missing", ["reads", "gate", "offtopic", "bm25_power"])
def test_a_malformed_profile_is_refused_naming_its_file(missing: str) -> None:
    raw = json.loads(default_profile().to_json())
    del raw[missing]
    with pytest.raises(InvalidInputError, match=r"x\.json is malformed"):
        ModelProfile.from_json(raw, "x.json")


def test_the_modules_read_the_profiles() -> None:
    from ragbrain.critic.folder import BASE_CHOICES, BASES
    from ragbrain.gates import model_gate
    from ragbrain.hybrid import bm25_power
    from ragbrain.models.embeddings import EMBEDDING_CHOICES, model_reads
    from ragbrain.refusal import offtopic

    for p in profiles():
        assert EMBEDDING_CHOICES[p.choice] == p.name
        assert model_reads(p.name) == p.reads
        assert model_gate(p.name) == (p.gate.threshold, f"shipped for {p.name}")
        assert offtopic.levels(p.name) == (p.offtopic.level, p.offtopic.strict_scale)
        assert offtopic.rescue(p.name) == p.offtopic.support
        cut = offtopic.shipped_cut(p.name)
        assert cut is not None and cut.distance == p.offtopic.cut
        assert offtopic.english_only(p.name) == p.english_only
        assert bm25_power(p.name) == p.bm25_power
        assert BASE_CHOICES[p.choice] == p.critic_base and p.critic_base in BASES
    # A model without a profile: every language, the default gate, the default model's levels.
    other = "someone-elses-model"
    assert model_reads(other) is None and bm25_power(other) == 1.0
    assert model_gate(other)[1] == "default" and offtopic.shipped_cut(other) is None
    assert offtopic.levels(other) == offtopic.levels(default_profile().name)
