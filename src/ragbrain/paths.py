"""Where ragbrain keeps things, and the names of its environment variables (a leaf module)."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

STORE_ENV = "RAGBRAIN_STORE"
SERVER_ENV = "RAGBRAIN_SERVER"
CACHE_ENV = "RAGBRAIN_CACHE"
DEADLINE_ENV = "RAGBRAIN_DEADLINE"
RETRIES_ENV = "RAGBRAIN_RETRIES"
LOCK_WAIT_ENV = "RAGBRAIN_LOCK_WAIT"
SERVER_TOKEN_FILE_ENV = "RAGBRAIN_SERVER_TOKEN_FILE"
SERVER_TOKEN_ENV = "RAGBRAIN_SERVER_TOKEN"
SERVER_AUTH_ENV = "RAGBRAIN_SERVER_AUTH"
TENANT_ENV = "RAGBRAIN_TENANT"
DATABASE_ENV = "RAGBRAIN_DATABASE"
BACKEND_ENV = "RAGBRAIN_BACKEND"


def resolved(path: str | os.PathLike[str]) -> Path:
    """``path`` as one absolute path: ``~`` expanded, a relative path taken from the current
    folder, links followed (as far as it exists). Every entry point resolves the store and
    notes paths it is given this way, once: Chroma, SQLite URIs and other processes then all
    see the same folder, whatever the current folder is later."""
    return Path(path).expanduser().resolve()


def default_store_path() -> Path:
    """``$RAGBRAIN_STORE``, else ``$XDG_DATA_HOME/ragbrain/store`` (``~/.local/share/...``),
    resolved (``resolved``)."""
    if env := os.environ.get(STORE_ENV):
        return resolved(env)
    data_home = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return resolved(Path(data_home) / "ragbrain" / "store")


def cache_root() -> Path:
    """``$RAGBRAIN_CACHE``, else ``$XDG_CACHE_HOME/ragbrain`` (``~/.cache/ragbrain``)."""
    if env := os.environ.get(CACHE_ENV):
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ragbrain"


def sample_notes() -> Path:
    """The folder of sample notes that ships with the package."""
    return Path(str(resources.files("ragbrain") / "sample_notes"))
