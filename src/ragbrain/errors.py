"""The package's error types: one small hierarchy, each subclassing what a caller would catch."""

from __future__ import annotations


class RagbrainError(Exception):
    """Base class of every error raised by ragbrain."""


class InvalidInputError(RagbrainError, ValueError):
    """A query, argument or setting that ragbrain cannot accept."""


class WrongTypeError(InvalidInputError, TypeError):
    """An argument of the wrong type (a path where a store is wanted, a string for a critic
    object, another vector store than the supported one); the message says what to pass."""


class StoreNotFoundError(InvalidInputError):
    """The store folder or its collection does not exist."""


class StoreMismatchError(InvalidInputError):
    """The store exists but does not fit: another distance space or embedding dimension."""


class ServerAccessError(InvalidInputError):
    """A Chroma server refused the request: a missing or wrong token, or a token file that
    cannot be read (the CLI exits 2)."""


class WrongModelError(StoreMismatchError):
    """The model that would embed queries is not the one the store's vectors came from (same
    dimension, another model): every distance would be meaningless. The message names both
    models and how to open the store anyway."""

    def __init__(
        self,
        message: str,
        *,
        query_model: str,
        stored_model: str | None = None,
        agreement: float | None = None,
    ) -> None:
        super().__init__(message)
        self.query_model = query_model
        self.stored_model = stored_model
        self.agreement = agreement


class StoreUnavailableError(RagbrainError, RuntimeError):
    """The vector store could not be reached or did not answer in time."""


class StoreLockedError(StoreUnavailableError):
    """Another process is writing to the same embedded store."""

    def __init__(self, message: str, holder: str = "") -> None:
        super().__init__(message)
        #: What the lock file says of the writer holding it (pid, host, command), if anything.
        self.holder = holder


class CriticLoadError(RagbrainError, RuntimeError):
    """A critic folder is missing, incomplete, corrupt or not safetensors."""


class MissingExtraError(RagbrainError, ImportError):
    """An optional feature's package is not installed; the message names the extra to add."""


class ModelLoadError(RagbrainError, RuntimeError):
    """An embedding model's files are missing, damaged or of another version."""


class UnknownTypeWarning(UserWarning):
    """A type filter names a type that no stored chunk has; the message names the closest.
    (The CLI and the MCP server say so in their own output and silence this warning.)"""
