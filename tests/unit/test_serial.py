"""Every Chroma call of a store on a folder holds the folder's index lock: while another
process holds it, a call waits (bounded) and then says so; reads and writes alike."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

import pytest

from ragbrain.errors import StoreLockedError
from ragbrain.store import Store
from ragbrain.store.processes import INDEX_LOCK
from tests.support.fakes import BagOfWordsEmbeddings


def test_a_call_waits_for_the_index_lock_and_gives_up_after_the_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    vector = BagOfWordsEmbeddings().embed_documents(["text"])
    store.upsert(["a"], ["text"], [{"type": "note"}], vector)
    monkeypatch.setenv("RAGBRAIN_LOCK_WAIT", "0.3")
    fd = os.open(tmp_path / "s" / INDEX_LOCK, os.O_RDWR)  # another process's hold
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(StoreLockedError, match=r"index\.lock for 0\.3 s"):
            store.count()
        with pytest.raises(StoreLockedError):
            store.upsert(["b"], ["text"], [{"type": "note"}], vector)
        threading.Timer(0.1, os.close, [fd]).start()  # let go while the next call waits
        fd = -1
        assert store.count() == 1
    finally:
        if fd >= 0:
            os.close(fd)
