"""The CLI's loading context: the collector is paused inside and restored after, what was
loaded stays collectable, and everything is frozen only at exit."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable

import pytest

from ragbrain.cli import loading as module
from ragbrain.cli.loading import loading


class Node:
    """An object that can sit in a reference cycle and be watched by a weak reference."""

    other: Node | None = None


@pytest.mark.parametrize("enabled", [True, False], ids=["gc-on", "gc-off"])
def test_loading_pauses_the_collector_and_restores_it(enabled: bool) -> None:
    before = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with loading():
            assert not gc.isenabled()
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if before else gc.disable)()


def test_what_was_loaded_moves_to_the_oldest_generation_and_stays_collectable() -> None:
    gc.unfreeze()
    with loading():
        kept = [Node()]
        cycle = Node()
        cycle.other = cycle  # garbage once dropped: only the cyclic GC frees it
        watch = weakref.ref(cycle)
        del cycle
    assert gc.get_freeze_count() == 0  # nothing stays frozen in a process that goes on
    assert any(o is kept for o in gc.get_objects(generation=2))
    gc.collect()
    assert watch() is None


def test_an_error_while_loading_still_restores_the_collector() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="boom"), loading():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_everything_is_frozen_at_exit_registered_once(monkeypatch: pytest.MonkeyPatch) -> None:
    registered: list[Callable[[], None]] = []
    monkeypatch.setattr(module.atexit, "register", registered.append)
    module._freeze_at_exit.cache_clear()
    try:
        for _ in range(2):
            with loading():
                pass
        assert registered == [gc.freeze]
    finally:
        module._freeze_at_exit.cache_clear()
