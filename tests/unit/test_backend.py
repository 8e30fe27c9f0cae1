"""RAGBRAIN_BACKEND: torch or onnx (unset: torch); anything else is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragbrain.backend import backend_setting, load_embeddings
from ragbrain.errors import InvalidInputError, MissingExtraError


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, "torch"), ("", "torch"), ("torch", "torch"), ("ONNX", "onnx"), (" onnx ", "onnx")],
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


def test_onnx_without_onnxruntime_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "onnxruntime", None)
    with pytest.raises(
        MissingExtraError, match=r"RAGBRAIN_BACKEND=onnx.*pip install 'ragbrain\[onnx\]'"
    ):
        load_embeddings(tmp_path, "onnx")
