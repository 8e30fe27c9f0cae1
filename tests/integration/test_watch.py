"""The watcher: debounce, changes applied as a clean ingest would, bad input, lock, SIGKILL."""

from __future__ import annotations

import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ragbrain.errors import InvalidInputError, StoreLockedError
from ragbrain.ingest import ingest
from ragbrain.ingest import update as update_module
from ragbrain.ingest import watch as watch_module
from ragbrain.ingest.update import apply_changes
from ragbrain.ingest.watch import Debouncer, Watcher, wanted
from ragbrain.store import Store
from tests.integration.test_crash_resume import clean_run, mutate, write_notes
from tests.support.fakes import NOTES, BagOfWordsEmbeddings, CutOff

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 20.0  # seconds a condition may take to come true before the test fails


def contents(store: Store) -> dict[str, list[str]]:
    got = store.collection.get(include=["documents", "metadatas"])
    return {
        id_: [text, meta["source"]]
        for id_, text, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
    }


def eventually(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` every 20 ms until it holds; fail after ``TIMEOUT`` seconds."""
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


# --- debounce: a fake clock, no sleeps ---


def test_a_burst_is_one_batch() -> None:
    debouncer = Debouncer(quiet=1.0)
    assert debouncer.wait(0.0) is None and debouncer.take(0.0) == []
    for i in range(10):  # ten saves 0.1 s apart
        debouncer.add([Path("a.md")], now=i * 0.1)
        assert debouncer.take(now=i * 0.1 + 0.05) == []
    assert debouncer.wait(1.0) == pytest.approx(0.9)
    assert debouncer.take(now=1.85) == []  # quiet for 0.95 s only
    assert debouncer.take(now=1.9) == [Path("a.md")]
    assert debouncer.wait(5.0) is None


def test_a_steady_stream_is_still_applied() -> None:
    debouncer = Debouncer(quiet=1.0, longest=3.0)
    for i in range(30):  # a save every 0.5 s never leaves a second of quiet
        debouncer.add([Path(f"{i}.md")], now=i * 0.5)
        batch = debouncer.take(now=i * 0.5)
        if batch:
            break
    assert i == 6 and len(batch) == 7  # due 3 s after the first


def test_paths_are_gathered_once_in_order() -> None:
    debouncer = Debouncer(quiet=0.0)
    debouncer.add([Path("b.md"), Path("a.md"), Path("b.md")], now=0.0)
    assert debouncer.take(now=0.0) == [Path("b.md"), Path("a.md")]


def test_negative_debounce_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="debounce must be 0 seconds or more, got -1"):
        Debouncer(quiet=-1)


@pytest.mark.parametrize(
    ("relative", "is_dir", "expected"),
    [
        ("a.md", False, True),
        ("sub/paper.pdf", False, True),
        ("sub", True, True),
        ("a.md.swp", False, False),
        (".obsidian/workspace.md", False, False),
        (".trash/old.md", False, False),
        (".git", True, False),
        ("../outside.md", False, False),
    ],
    ids=["note", "pdf", "folder", "swap-file", "obsidian", "trash", "git", "outside"],
)
def test_which_events_matter(tmp_path: Path, relative: str, is_dir: bool, expected: bool) -> None:
    root = tmp_path / "notes"
    assert wanted(root, str(root / relative), is_dir) is expected


# --- apply_changes: the same store as a clean ingest ---


def _edit(root: Path) -> list[Path]:
    (root / "bug/cache.md").write_text("# Redis cache\n\nNow with locks.")
    return [root / "bug/cache.md"]


def _create(root: Path) -> list[Path]:
    (root / "new").mkdir()
    (root / "new/idea.md").write_text("# Idea\n\nShard the replica.")
    return [root / "new"]


def _delete(root: Path) -> list[Path]:
    (root / "bug/backup.md").unlink()
    return [root / "bug/backup.md"]


def _move(root: Path) -> list[Path]:
    (root / "bug/cache.md").rename(root / "lesson/cache.md")
    return [root / "bug/cache.md", root / "lesson/cache.md"]


def _delete_folder(root: Path) -> list[Path]:
    shutil.rmtree(root / "bug")
    return [root / "bug"]


def _move_folder(root: Path) -> list[Path]:
    (root / "bug").rename(root / "bugs")
    return [root / "bug", root / "bugs"]


def _make_binary(root: Path) -> list[Path]:
    (root / "bug/cache.md").write_bytes(b"\x00\x01binary")
    return [root / "bug/cache.md"]


def _link_loop(root: Path) -> list[Path]:
    os.symlink(root / "loop.md", root / "loop.md")
    os.symlink(root, root / "bug" / "up")  # a folder loop: the walk does not follow it
    return [root / "loop.md", root / "bug" / "up"]


def _front_matter_only(root: Path) -> list[Path]:
    path = root / "bug/cache.md"
    path.write_text("---\ntype: lesson\n---\n" + path.read_text())
    return [path]


@pytest.mark.parametrize(
    "change",
    [
        _edit,
        _create,
        _delete,
        _move,
        _delete_folder,
        _move_folder,
        _make_binary,
        _link_loop,
        _front_matter_only,
    ],
    ids=[
        "edit",
        "create-folder",
        "delete",
        "move",
        "delete-folder",
        "move-folder",
        "now-binary",
        "link-loop",
        "front-matter",
    ],
)
def test_changes_leave_the_store_a_clean_ingest_would(
    change: Callable[[Path], list[Path]], notes_dir: Path, fake_store: Store, tmp_path: Path
) -> None:
    paths = change(notes_dir)
    apply_changes(fake_store, notes_dir, paths)
    assert contents(fake_store) == clean_run(notes_dir, tmp_path / "clean")
    assert fake_store.count() == len(contents(fake_store))


def test_an_unchanged_path_writes_nothing(notes_dir: Path, fake_store: Store) -> None:
    update = apply_changes(fake_store, notes_dir, [notes_dir / "bug/cache.md", notes_dir])
    assert (update.changes, update.skipped, update.retry) == ([], [], [])


def test_a_change_reports_one_line_per_file(notes_dir: Path, fake_store: Store) -> None:
    _edit(notes_dir)
    _delete(notes_dir)
    update = apply_changes(fake_store, notes_dir, [notes_dir / "bug"])
    assert [c.line() for c in update.changes] == [
        "bug/backup.md: removed (1 chunks)",
        "bug/cache.md: 1 chunks added, 1 deleted",
    ]


def test_no_prune_keeps_deleted_files(notes_dir: Path, fake_store: Store) -> None:
    before = contents(fake_store)
    _delete(notes_dir)
    apply_changes(fake_store, notes_dir, [notes_dir / "bug/backup.md"], prune=False)
    assert contents(fake_store) == before


def test_a_file_changing_while_read_is_read_again(
    notes_dir: Path, fake_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = contents(fake_store)
    real = update_module.read_note
    path = notes_dir / "bug/cache.md"

    def read_while_written(*args: Any, **kwargs: Any) -> Any:
        note = real(*args, **kwargs)
        path.write_text("# Redis cache\n\nhalf-written and then finished, longer now")
        return note

    monkeypatch.setattr(update_module, "read_note", read_while_written)
    update = apply_changes(fake_store, notes_dir, [path])
    assert update.retry == [path] and contents(fake_store) == before


def test_the_store_lock_is_respected_both_ways(
    notes_dir: Path, fake_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGBRAIN_LOCK_WAIT", "0.2")
    lines: list[str] = []
    watcher = Watcher([notes_dir], fake_store, debounce=0.0, status=lines.append)
    other = Store.open(fake_store.folder, BagOfWordsEmbeddings())
    _edit(notes_dir)
    with other.writing():  # another writer is busy: the watcher waits its turn
        assert watcher.apply([notes_dir / "bug/cache.md"]) == []
    assert "locked by another writer" in lines[0] and "Trying again in 1 s" in lines[0]

    started, release = threading.Event(), threading.Event()

    class Blocking(BagOfWordsEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            started.set()
            release.wait(TIMEOUT)
            return super().embed_documents(texts)

    fake_store.embeddings = Blocking()
    worker = threading.Thread(target=watcher.apply, args=([notes_dir / "bug/cache.md"],))
    worker.start()
    try:
        assert started.wait(TIMEOUT)
        with pytest.raises(StoreLockedError, match="locked by another writer"):
            ingest(notes_dir, other)  # while the watcher writes, a second writer is refused
    finally:
        release.set()
        worker.join(TIMEOUT)
    assert any("bug/cache.md: 1 chunks added, 1 deleted" in line for line in lines)


def test_missing_folder_is_refused(tmp_path: Path, fake_embeddings: Any) -> None:
    store = Store.open(tmp_path / "s", fake_embeddings, create=True)
    with pytest.raises(InvalidInputError, match=r"watch .*missing: not an existing folder"):
        Watcher([tmp_path / "missing"], store)


# --- --exclude / --include: the same rules as ingest, on the first pass and on changes ---

PATTERNS = [
    {"exclude": ["bug/"]},
    {"exclude": ["*.md", "!decision/*.md"]},
    {"include": ["lesson/**", "howto/**"]},
    {"include": ["**/*.md"], "exclude": ["/howto/"]},
]
PATTERN_IDS = ["exclude-folder", "exclude-then-take-back", "include", "include-and-exclude"]


def test_the_first_pass_writes_back_a_chunk_no_search_reaches(
    notes_dir: Path,
    fake_store: Store,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lost = sorted(fake_store.all_ids())[1]
    fake_store.collection = CutOff(fake_store.collection, lost)  # type: ignore[assignment]
    monkeypatch.setattr(watch_module, "LONG_CHECK", 0)  # a large store says what it does
    lines: list[str] = []
    with caplog.at_level("WARNING", logger="ragbrain.ingest.watch"):
        Watcher([notes_dir], fake_store, status=lines.append).initial()  # no killed writer
    assert "restored 1 chunks to the vector index after the first pass" in caplog.text
    assert lines == [f"checking that the index reaches each of the {fake_store.count()} chunks"]


@pytest.mark.parametrize("options", PATTERNS, ids=PATTERN_IDS)
def test_the_first_pass_keeps_what_ingest_keeps(
    options: dict[str, list[str]], notes_dir: Path, fake_store: Store, tmp_path: Path
) -> None:
    """The store held every note; the watcher's first pass prunes the left-out ones."""
    assert sources(fake_store) == set(NOTES)
    Watcher([notes_dir], fake_store, **options).initial()  # type: ignore[arg-type]
    clean = Store.open(tmp_path / "clean", BagOfWordsEmbeddings(), create=True)
    ingest(notes_dir, clean, **options)  # type: ignore[arg-type]
    assert contents(fake_store) == contents(clean)
    assert sources(fake_store) < set(NOTES)


@pytest.mark.parametrize("options", PATTERNS, ids=PATTERN_IDS)
def test_changes_keep_what_ingest_keeps(
    options: dict[str, list[str]], notes_dir: Path, fake_store: Store, tmp_path: Path
) -> None:
    watcher = Watcher([notes_dir], fake_store, **options)  # type: ignore[arg-type]
    watcher.initial()
    changed = [*_edit(notes_dir), *_create(notes_dir)]
    for folder in ("bug", "decision", "lesson", "howto"):
        path = notes_dir / folder / "added.md"
        path.write_text(f"# Added to {folder}\n\nwritten while watched")
        changed.append(path)
    watcher.apply(changed)
    clean = Store.open(tmp_path / "clean", BagOfWordsEmbeddings(), create=True)
    ingest(notes_dir, clean, **options)  # type: ignore[arg-type]
    assert contents(fake_store) == contents(clean)


def test_a_watched_subfolder_of_an_ingested_root_keeps_one_source(
    notes_dir: Path, fake_store: Store
) -> None:
    """Watching bug/ of an ingested folder stores its notes under that folder (bug/x.md, not
    x.md), prunes only under bug/, and takes --exclude relative to bug/."""
    before = contents(fake_store)
    watcher = Watcher([notes_dir / "bug"], fake_store, exclude=["/backup.md"])
    (report,) = watcher.initial()
    assert report.root == notes_dir
    assert {s for _, s in contents(fake_store).values()} == set(NOTES) - {"bug/backup.md"}
    (notes_dir / "bug/new.md").write_text("# New bug\n\nThe zeppelin broke.")
    (notes_dir / "bug/cache.md").unlink()
    (update,) = watcher.apply([notes_dir / "bug/new.md", notes_dir / "bug/cache.md"])
    assert sorted(c.source for c in update.changes) == ["bug/cache.md", "bug/new.md"]
    assert {s for _, s in contents(fake_store).values()} == (
        set(NOTES) - {"bug/backup.md", "bug/cache.md"}
    ) | {"bug/new.md"}
    kept = {k: v for k, v in before.items() if not v[1].startswith("bug/")}
    assert {k: v for k, v in contents(fake_store).items() if not v[1].startswith("bug/")} == kept


def test_an_excluded_file_changing_writes_nothing(notes_dir: Path, fake_store: Store) -> None:
    watcher = Watcher([notes_dir], fake_store, exclude=["bug/cache.md"])
    watcher.initial()
    before = contents(fake_store)
    (notes_dir / "bug/cache.md").write_text("# Redis cache\n\nedited, but left out")
    (update,) = watcher.apply([notes_dir / "bug/cache.md"])
    assert (update.changes, contents(fake_store)) == ([], before)
    assert "bug/cache.md" not in sources(fake_store)


@pytest.mark.parametrize(
    "options",
    [{"exclude": ["notes\\"]}, {"include": ["!"]}],
    ids=["bad-exclude", "bad-include"],
)
def test_a_bad_pattern_is_refused_before_watching(
    options: dict[str, list[str]], notes_dir: Path, fake_store: Store
) -> None:
    before = contents(fake_store)
    with pytest.raises(InvalidInputError, match="not a valid gitignore pattern"):
        Watcher([notes_dir], fake_store, **options)  # type: ignore[arg-type]
    assert contents(fake_store) == before


def test_the_watch_command_passes_its_patterns(
    notes_dir: Path, fake_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from ragbrain.cli import app
    from ragbrain.cli import notes as notes_cli
    from ragbrain.ingest import watch as watch_module

    class Once(Watcher):
        def run(self) -> None:  # one pass, no watching
            return None

    made: list[Watcher] = []

    def once(*args: Any, **kwargs: Any) -> Watcher:
        made.append(Once(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(notes_cli, "_open_for_writing", lambda *args, **kwargs: fake_store)
    monkeypatch.setattr(watch_module, "Watcher", once)
    monkeypatch.setattr(signal, "signal", lambda *args: None)  # pytest keeps its Ctrl-C
    args = ["watch", str(notes_dir), "--exclude", "bug/", "--include", "**/*.md"]
    result = CliRunner().invoke(app, [*args, "--exclude", "/howto/"])
    assert result.exit_code == 0, result.output
    assert (made[0].exclude, made[0].include) == (("bug/", "/howto/"), ("**/*.md",))
    assert sources(fake_store) == {"decision/alembic.md", "decision/redis.md", "lesson/timeout.md"}


# --- the real watcher (watchdog), with a short debounce ---


@pytest.fixture
def running(notes_dir: Path, fake_store: Store) -> Iterator[tuple[Watcher, list[str]]]:
    lines: list[str] = []
    watcher = Watcher([notes_dir], fake_store, debounce=0.2, status=lines.append)
    watcher.start()
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    yield watcher, lines
    watcher.stop()
    thread.join(TIMEOUT)
    assert not thread.is_alive()


def sources(store: Store) -> set[str]:
    return {source for _, source in contents(store).values()}


def test_a_burst_of_saves_is_one_update(
    running: tuple[Watcher, list[str]], notes_dir: Path, fake_store: Store
) -> None:
    watcher, lines = running
    for i in range(10):
        (notes_dir / "bug/cache.md").write_text(f"# Redis cache\n\nversion {i} of the fix")
    eventually(lambda: watcher.updates >= 1, "the update")
    time.sleep(0.4)  # two debounce intervals: no second update follows
    assert watcher.updates == 1
    assert [t for t, s in contents(fake_store).values() if s == "bug/cache.md"] == [
        "# Redis cache\n\nversion 9 of the fix"
    ]
    assert [line.split(" ", 1)[1] for line in lines] == ["bug/cache.md: 1 chunks added, 1 deleted"]


def test_bad_input_while_watching(
    running: tuple[Watcher, list[str]], notes_dir: Path, fake_store: Store, tmp_path: Path
) -> None:
    _, lines = running
    # A rename storm: one note renamed 50 times, then a folder deleted, then link loops.
    for i in range(50):
        (notes_dir / ("bug/cache.md" if i == 0 else f"bug/c{i - 1}.md")).rename(
            notes_dir / f"bug/c{i}.md"
        )
    shutil.rmtree(notes_dir / "decision")
    os.symlink(notes_dir / "loop.md", notes_dir / "loop.md")
    os.symlink(notes_dir, notes_dir / "lesson" / "up")
    eventually(
        lambda: (
            sources(fake_store)
            == {"bug/c49.md", "bug/backup.md", "lesson/timeout.md", "howto/rollback.md"}
        ),
        "the renames and the deleted folder",
    )
    eventually(lambda: any("loop.md: broken or looping" in line for line in lines), "loop")
    # The watcher goes on: a later edit still arrives.
    (notes_dir / "lesson/new.md").write_text("# New\n\nstill watching")
    eventually(lambda: "lesson/new.md" in sources(fake_store), "the next edit")
    assert contents(fake_store) == clean_run(notes_dir, tmp_path / "clean")


def test_a_watched_folder_deleted_and_back(
    running: tuple[Watcher, list[str]], notes_dir: Path, fake_store: Store, tmp_path: Path
) -> None:
    _, lines = running
    saved = tmp_path / "saved"
    shutil.move(notes_dir, saved)
    eventually(lambda: any("is gone; its notes stay" in line for line in lines), "gone")
    assert sources(fake_store) == set(NOTES)  # an unmounted folder does not empty the store
    shutil.move(saved, notes_dir)
    (notes_dir / "bug/backup.md").unlink()
    eventually(lambda: "bug/backup.md" not in sources(fake_store), "the folder back")
    assert any("is back; watching it again" in line for line in lines)
    (notes_dir / "bug/new.md").write_text("# New\n\nwatched again")
    eventually(lambda: "bug/new.md" in sources(fake_store), "an edit in the folder back")


# --- SIGKILL during a burst of changes, then a restart ---


class Worker:
    """``python -m tests.support.watch_worker``: reads its output in a thread, answers commands."""

    def __init__(self, store: Path, notes: Path) -> None:
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.watch_worker", str(store), str(notes)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.expect("ready")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.strip())

    def expect(self, prefix: str) -> str:
        deadline = time.monotonic() + 60
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"no {prefix!r} line from the worker"
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line.startswith(prefix):
                return line

    def dump(self) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write("dump\n")
        self.process.stdin.flush()
        state: dict[str, Any] = json.loads(self.expect("{"))
        return state

    def kill(self) -> tuple[int, int]:
        """SIGKILL; returns how many updates it had begun and finished since it was ready."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        time.sleep(0.1)  # let the reader thread drain the pipe
        lines = []
        while not self.lines.empty():
            lines.append(self.lines.get())
        return lines.count("applying"), lines.count("applied")

    def quit(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("quit\n")
        self.process.stdin.close()
        self.process.wait(timeout=60)


def burst(root: Path, rng: random.Random, count: int, serial: int) -> None:
    """``count`` changes, a few milliseconds apart: edits, deletions, creations, renames."""
    for step in range(count):
        existing = sorted(p for p in root.rglob("*.md"))
        action = rng.random()
        if action < 0.5 and existing:
            write_notes(root, rng, [rng.choice(existing).relative_to(root).as_posix()])
        elif action < 0.65 and len(existing) > 5:
            rng.choice(existing).unlink()
        elif action < 0.8 and existing:
            source = rng.choice(existing)
            source.rename(source.with_name(f"moved-{serial}-{step}.md"))
        else:
            write_notes(root, rng, [f"new/{serial}-{step}.md"])
        time.sleep(rng.uniform(0.0, 0.01))


TRIALS = 2  # the benchmark (benchmarks/watch_fresh.py) runs 5 trials of 200 changes


@pytest.mark.slow
@pytest.mark.faults
def test_sigkill_during_a_burst_then_restart_matches_a_clean_ingest(tmp_path: Path) -> None:
    rng = random.Random(20261201)
    notes, store = tmp_path / "notes", tmp_path / "store"
    write_notes(notes, rng, [f"{kind}/{i}.md" for kind in ("bug", "lesson") for i in range(10)])
    worker = Worker(store, notes)
    for trial in range(TRIALS):
        changer = threading.Thread(target=burst, args=(notes, rng, 150, trial))
        changer.start()
        time.sleep(rng.uniform(0.3, 0.8))  # somewhere inside the burst
        assert changer.is_alive()
        begun, _ = worker.kill()
        assert begun >= 1  # killed after updates began (most often inside one)
        changer.join()
        mutate(notes, rng, trial)  # and more changes while no watcher runs
        worker = Worker(store, notes)
        state = worker.dump()
        assert state["chunks"] == clean_run(notes, tmp_path / f"clean-{trial}"), trial
        assert state["count"] == len(state["chunks"]) and state["missed"] == []
    worker.quit()


# --- the command line ---


@pytest.mark.slow
def test_watch_command_ingests_follows_and_stops_on_ctrl_c(notes_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-c", "from ragbrain.cli import app; app()", "watch", str(notes_dir)]
    process = subprocess.Popen(
        [*command, "--store", str(tmp_path / "s"), "--debounce", "0.1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    seen: list[str] = []

    def until(text: str) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = process.stdout.readline()  # type: ignore[union-attr]
            assert line, f"watch exited ({process.poll()}): {seen}"
            seen.append(line.strip())
            if text in line:
                return
        raise AssertionError(f"no {text!r} in {seen}")

    try:
        until("watching 1 folder(s); Ctrl-C stops")
        assert any("6 files: 6 chunks added" in line for line in seen), seen
        (notes_dir / "bug/new.md").write_text("# New\n\nA new bug note.")
        until("bug/new.md: 1 chunks added, 0 deleted")
        process.send_signal(signal.SIGINT)
        until("stopped after 1 update(s)")
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()


def test_without_watchdog_the_error_names_the_install_command(
    notes_dir: Path, fake_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins

    real_import = builtins.__import__

    def refuse(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "watchdog" or name.startswith("watchdog."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", refuse)
    with pytest.raises(InvalidInputError, match=r"needs watchdog: pip install 'ragbrain\[watch\]'"):
        Watcher([notes_dir], fake_store)
