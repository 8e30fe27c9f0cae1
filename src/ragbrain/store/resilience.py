"""Deadlines and retries for store calls: which failures are transient, and how long to try."""

from __future__ import annotations

import contextvars
import logging
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ragbrain.errors import (
    InvalidInputError,
    RagbrainError,
    ServerAccessError,
    StoreMismatchError,
    StoreNotFoundError,
    StoreUnavailableError,
)
from ragbrain.paths import DEADLINE_ENV, RETRIES_ENV

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

log = logging.getLogger(__name__)

T = TypeVar("T")

_MIN_ATTEMPT = 0.05  # no attempt is started with less time than this left
# The HTTP timeout of the request being made in this thread (None: no ragbrain call is active).
_ATTEMPT_TIMEOUT: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "ragbrain_attempt_timeout", default=None
)
# Chroma's HTTP error codes that mean "try again later" (rate limited, gateway, overloaded).
_TRANSIENT_CODES = frozenset({429, 502, 503, 504})


@dataclass(frozen=True)
class StorePolicy:
    """How long one store call may take and how it retries transient failures."""

    deadline: float = field(
        default=10.0,
        metadata={"description": "Seconds one store call may take, all retries included."},
    )
    attempt_timeout: float = field(
        default=5.0,
        metadata={"description": "Seconds one HTTP request may wait (capped by the deadline)."},
    )
    retries: int = field(
        default=3, metadata={"description": "Retries after a transient failure (0: none)."}
    )
    backoff: float = field(
        default=0.2,
        metadata={"description": "Pause before the first retry; doubles each time, jittered."},
    )
    max_backoff: float = field(
        default=2.0, metadata={"description": "Longest pause between two attempts."}
    )

    def __post_init__(self) -> None:
        """Refuse settings that would make every call fail or never end."""
        for name in ("deadline", "attempt_timeout"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value > 0:
                raise InvalidInputError(f"StorePolicy.{name} must be > 0 seconds, got {value!r}.")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise InvalidInputError(
                f"StorePolicy.retries must be an int >= 0, got {self.retries!r}."
            )
        if not 0 <= self.backoff <= self.max_backoff:
            raise InvalidInputError(
                "StorePolicy needs 0 <= backoff <= max_backoff, "
                f"got {self.backoff!r} and {self.max_backoff!r}."
            )

    @classmethod
    def from_env(cls) -> StorePolicy:
        """The defaults, with ``$RAGBRAIN_DEADLINE`` (seconds) and ``$RAGBRAIN_RETRIES`` applied."""
        values: dict[str, Any] = {}
        try:
            if raw := os.environ.get(DEADLINE_ENV):
                values["deadline"] = float(raw)
                values["attempt_timeout"] = min(cls.attempt_timeout, float(raw))
            if raw := os.environ.get(RETRIES_ENV):
                values["retries"] = int(raw)
        except ValueError as exc:
            raise InvalidInputError(
                f"${DEADLINE_ENV} must be seconds and ${RETRIES_ENV} an integer ({exc})."
            ) from None
        return cls(**values)

    def pause(self, retry: int) -> float:
        """The pause before retry number ``retry`` (1-based): exponential, jittered down to half."""
        return random.uniform(0.5, 1.0) * min(self.max_backoff, self.backoff * 2.0 ** (retry - 1))


def attempt_timeout() -> float | None:
    """The HTTP timeout for a request made now in this thread (None outside ``call``)."""
    return _ATTEMPT_TIMEOUT.get()


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` may go away on its own: connection refused or reset, a timeout, a
    rate limit or an overloaded gateway. Bad arguments, missing collections and dimension
    mismatches are permanent."""
    import httpx
    from chromadb.errors import ChromaError

    if isinstance(exc, httpx.TransportError):  # connect/read/write errors and timeouts
        return True
    if isinstance(exc, ChromaError):
        return exc.code() in _TRANSIENT_CODES
    return isinstance(exc, ConnectionError | TimeoutError)


def _permanent(exc: Exception, what: str) -> Exception:
    """A ragbrain error for a permanent Chroma failure, or ``exc`` itself when unknown."""
    from chromadb.errors import AuthorizationError, ChromaAuthError, ChromaError, NotFoundError

    if isinstance(exc, RagbrainError) or not isinstance(exc, ChromaError):
        return exc
    if isinstance(exc, NotFoundError):
        return StoreNotFoundError(f"{what}: {exc.message()}")
    if isinstance(exc, ChromaAuthError | AuthorizationError):
        return ServerAccessError(
            f"{what}: the server refused access ({exc.message()}); check the token "
            "(--server-token-file, $RAGBRAIN_SERVER_TOKEN_FILE)."
        )
    if "dimension" in exc.message().lower():
        return StoreMismatchError(f"{what}: {exc.message()}")
    if exc.code() == 400:
        return InvalidInputError(f"{what}: {exc.message()}")
    return exc


def call(policy: StorePolicy, what: str, fn: Callable[[], T]) -> T:
    """Run ``fn`` (one store operation, safe to repeat) under ``policy``.

    Transient failures are retried with back-off while retries and time are left; each
    HTTP request made inside ``fn`` waits at most the attempt timeout or the time left.

    Raises:
        StoreUnavailableError: The last transient failure, attached as ``__cause__``.
        StoreNotFoundError, StoreMismatchError, InvalidInputError: Permanent failures.
    """
    start = time.monotonic()
    end = start + policy.deadline
    retry = 0
    while True:
        left = end - time.monotonic()
        token = _ATTEMPT_TIMEOUT.set(max(_MIN_ATTEMPT, min(policy.attempt_timeout, left)))
        try:
            return fn()
        except Exception as exc:
            if not is_transient(exc):
                translated = _permanent(exc, what)
                if translated is exc:
                    raise
                raise translated from exc
            retry += 1
            pause = policy.pause(retry)
            left = end - time.monotonic()
            if retry > policy.retries or left < pause + _MIN_ATTEMPT:
                elapsed = time.monotonic() - start
                raise StoreUnavailableError(
                    f"{what} failed after {retry} attempt(s) in {elapsed:.1f}s "
                    f"(deadline {policy.deadline:g}s, {policy.retries} retries): "
                    f"{type(exc).__name__}: {exc or 'no detail'}. Check that the Chroma "
                    "server is running and reachable; ragbrain reconnects on the next call."
                ) from exc
            log.warning(
                "%s: %s (%s); retry %d in %.2fs", what, type(exc).__name__, exc, retry, pause
            )
            time.sleep(pause)
        finally:
            _ATTEMPT_TIMEOUT.reset(token)


def bound_requests(client: ClientAPI) -> None:
    """Make every HTTP request of ``client`` wait at most ``attempt_timeout()``.

    chromadb's HttpClient builds its httpx session with ``timeout=None`` and exposes no
    setting for it, so a frozen server would block a caller forever. This wraps the
    session's ``request`` to pass the current attempt's timeout.

    Raises:
        StoreUnavailableError: This chromadb version keeps its session elsewhere.
    """
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if not isinstance(session, httpx.Client):
        import chromadb

        raise StoreUnavailableError(
            f"chromadb {chromadb.__version__} keeps no httpx session where ragbrain expects "
            "one, so requests could not be given a timeout; install chromadb>=1.0,<2."
        )
    send = session.request

    def request(method: str, url: Any, **kwargs: Any) -> httpx.Response:
        kwargs.setdefault("timeout", attempt_timeout() or StorePolicy.attempt_timeout)
        return send(method, url, **kwargs)

    session.request = request  # type: ignore[method-assign]
