"""Loading for one command without the cyclic garbage collector's passes over it."""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def loading() -> Iterator[None]:
    """Pause the cyclic GC while a command imports and loads; skip what it loaded at exit.

    Imports, the models and the store allocate millions of objects that all stay alive, so
    the collector's passes over them free nothing (docs/decisions/measured-costs.md; the
    interpreter collects once more on the way out). On leaving, what is alive moves to the
    oldest generation without a pass (``gc.freeze`` then ``gc.unfreeze``: the young
    generations it sat in would otherwise be scanned at the next allocations), and the
    collector is restored; at exit, everything is frozen before the interpreter's last
    collection. A process that runs the command in its own (tests) keeps collecting as usual
    until it exits.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if enabled:
            gc.enable()
        _freeze_at_exit()


@functools.cache
def _freeze_at_exit() -> None:
    """Once per process: freeze every object at exit, before the interpreter's last pass."""
    atexit.register(gc.freeze)
