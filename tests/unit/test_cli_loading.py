"""The CLI's loading context: the collector is paused inside, frozen objects after."""

from __future__ import annotations

import gc

import pytest

from ragbrain.cli.loading import loading


@pytest.mark.parametrize("enabled", [True, False], ids=["gc-on", "gc-off"])
def test_loading_pauses_the_collector_and_freezes_what_was_loaded(enabled: bool) -> None:
    before = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        frozen = gc.get_freeze_count()
        with loading():
            assert not gc.isenabled()
            kept = [[i] for i in range(1000)]  # tracked objects made while loading
        assert gc.get_freeze_count() >= frozen + len(kept)
        assert gc.isenabled() == enabled
    finally:
        gc.unfreeze()
        (gc.enable if before else gc.disable)()


def test_an_error_while_loading_still_restores_the_collector() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="boom"), loading():
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.unfreeze()
