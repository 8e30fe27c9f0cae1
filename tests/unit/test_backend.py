"""RAGBRAIN_BACKEND: torch or onnx (unset: onnx); anything else is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragbrain.errors import InvalidInputError, MissingExtraError
from ragbrain.models.backend import backend_setting, load_embeddings


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, "onnx"), ("", "onnx"), ("torch", "torch"), ("ONNX", "onnx"), (" onnx ", "onnx")],
    ids=["unset", "empty", "torch", "upper case", "spaces"],
)
def test_backend_setting(value: str | None, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if value is None:
        monkeypatch.delenv("RAGBRAIN_BACKEND", raising=False)
    else:
        monkeypatch.setenv("RAGBRAIN_BACKEND", value)
    assert backend_setting() == expected


@pytest.mark.parametrize(
    "value", ["tensorflow", "int8", "onnx,torch"], ids=["other", "dtype", "list"]
)
def test_bad_backend_setting(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGBRAIN_BACKEND", value)
    with pytest.raises(InvalidInputError, match=f"RAGBRAIN_BACKEND='{value}'.*torch, onnx"):
        backend_setting()


def test_load_embeddings_refuses_an_unknown_backend(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="'jax' is not one of torch, onnx"):
        load_embeddings(tmp_path, "jax")


def test_onnx_without_onnxruntime_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "onnxruntime", None)
    with pytest.raises(
        MissingExtraError,
        match=r"RAGBRAIN_BACKEND=onnx.*pip install 'onnxruntime>=1.17'.*RAGBRAIN_BACKEND=torch",
    ):
        load_embeddings(tmp_path, "onnx")


def test_runtime_of_names_what_runs_the_model() -> None:
    from ragbrain.models.backend import runtime_of
    from ragbrain.models.onnx_backend import OnnxEmbeddings
    from ragbrain.models.sentence import SentenceEmbeddings
    from tests.support.fakes import BagOfWordsEmbeddings

    class Exported:  # a loaded OnnxEmbeddings needs a model; its class attribute is the point
        runtime = OnnxEmbeddings.runtime

    assert runtime_of(Exported()) == "ONNX Runtime int8"  # type: ignore[arg-type]
    assert SentenceEmbeddings.runtime == "torch fp32"
    assert runtime_of(BagOfWordsEmbeddings()) == "BagOfWordsEmbeddings"
