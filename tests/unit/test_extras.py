"""Optional features fail with the install command of their extra, not a bare ImportError."""

from __future__ import annotations

import importlib
import sys

import pytest

from ragbrain._util import require
from ragbrain.errors import MissingExtraError, RagbrainError


def test_an_installed_module_is_returned() -> None:
    assert require("json", extra="eval", feature="JSON") is importlib.import_module("json")


def test_a_missing_module_names_the_extra() -> None:
    with pytest.raises(MissingExtraError, match=r"pip install 'ragbrain\[eval\]'") as caught:
        require("no_such_module_ragbrain.sub", extra="eval", feature="Plots")
    assert "Plots needs no_such_module_ragbrain" in str(caught.value)
    assert isinstance(caught.value, ImportError) and isinstance(caught.value, RagbrainError)


def test_the_mcp_server_without_the_sdk_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "mcp" or m.startswith(("mcp.", "ragbrain.mcp"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mcp", None)  # what an uninstalled package looks like
    with pytest.raises(MissingExtraError, match=r"ragbrain\[mcp\]"):
        importlib.import_module("ragbrain.mcp_server")
