"""A watcher in its own process, for the SIGKILL tests: `python -m tests.support.watch_worker STORE
NOTES [DEBOUNCE]` (default 0.01 s) ingests NOTES, prints `ready`, then follows it (`applying`
and `applied` lines around each batch) and answers `dump`, `updates` and `quit` on stdin."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from ragbrain.ingest.update import Update
from ragbrain.ingest.watch import Watcher
from ragbrain.store import Store
from tests.support.ingest_worker import SlowEmbeddings, dump


def main() -> None:
    """Watch until `quit` or the end of stdin."""
    store = Store.open(sys.argv[1], SlowEmbeddings(), create=True)
    debounce = float(sys.argv[3]) if len(sys.argv) > 3 else 0.01
    watcher = Watcher(
        [sys.argv[2]],
        store,
        debounce=debounce,
        longest=5 * debounce,  # so that updates run all through a burst, and a kill lands in one
        status=lambda line: print(f"status {line}", flush=True),
        on_update=lambda: print("applied", flush=True),
    )
    apply = watcher.apply

    def announced(paths: list[Path]) -> list[Update]:
        print("applying", flush=True)  # so a test knows whether a kill landed inside one
        return apply(paths)

    watcher.apply = announced  # type: ignore[method-assign]
    watcher.start()
    watcher.initial()
    print("ready", flush=True)
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    for line in sys.stdin:
        command = line.strip()
        if command == "dump":
            print(json.dumps(dump(store)), flush=True)
        elif command == "updates":
            print(watcher.updates, flush=True)
        elif command == "quit":
            break
    watcher.stop()
    thread.join(timeout=10)


if __name__ == "__main__":
    main()
