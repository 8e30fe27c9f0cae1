"""Giving freed heap memory back to the system after a burst of embedding.

Encoding a batch of long texts allocates hundreds of MB of activations (a 32 x 512-token batch
of e5-small: ~400 MB of attention scores per layer); glibc keeps much of it in its heap after
it is freed, so a long-lived process (``ragbrain mcp --watch``, ``ragbrain watch``) stays that
much larger after every ingest (measured: +280 MB resident after 300 passages). ``malloc_trim``
returns it. Called once per ingest or update, not per batch: the next batch would fault the
pages in again.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache
from typing import Any


@cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") else None


def give_back_freed_memory() -> bool:
    """Return the heap's free pages to the system (glibc's ``malloc_trim``).

    Returns:
        Whether anything was returned; False where the C library has no ``malloc_trim``
        (macOS, musl).
    """
    libc = _libc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
