"""`ragbrain query` with path, tag and date filters, with the real model: bad input refused
before anything loads, good input scoping every search (the fallback's too)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragbrain.cli import app

pytestmark = pytest.mark.slow
runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--path", "/etc"], "not an absolute path"),
        (["--path", "bug/../../etc"], "must not hold '..'"),
        (["--path", "  "], r"path[0] is blank"),
        (["--tag", "a,b"], r"tags[0] holds a comma"),
        (["--tag", "#"], r"tags[0] is only '#'"),
        (["--all-tags"], "all_tags needs tags"),
        (["--after", "yesterday"], "after must be an ISO date"),
        (["--before", "2024-02-30"], "before must be an ISO date"),
        (["--after", "2024-04-01", "--before", "2024-03-01"], "must be earlier than before"),
    ],
    ids=[
        "absolute",
        "dot-dot",
        "blank-path",
        "tag-comma",
        "tag-hash-only",
        "all-tags-alone",
        "after-words",
        "before-no-such-day",
        "reversed-range",
    ],
)
def test_bad_filters_exit_2_before_any_store_opens(
    args: list[str], message: str, tmp_path: Path
) -> None:
    missing = tmp_path / "no-store"
    result = runner.invoke(app, ["query", "redis", "--store", str(missing), *args])

    assert result.exit_code == 2, result.output
    assert message in result.stderr and "Traceback" not in result.output
    assert not missing.exists()  # touched nothing


def test_filters_scope_the_query_and_survive_the_fallback(
    write_notes: object, tmp_path: Path
) -> None:
    notes = write_notes(  # type: ignore[operator]
        {
            "bug/backup.md": "---\ntags: [backup, s3]\n---\n# Nightly backup failed\n\n"
            "The nightly backup to S3 failed because the credentials expired.",
            "bug/old-backup.md": "---\ntags: [backup]\ndate: 2019-06-01\n---\n# Backup "
            "restore drill\n\nThe backup restore drill took four hours.",
            "ops/backup.md": "---\ntags: [backup]\n---\n# Backup runbook\n\nRestore the "
            "nightly backup from S3 with the restore script.",
            "decision/redis.md": "# Redis only as a cache\n\nRedis is a cache, never a queue.",
        }
    )
    os.utime(notes / "ops" / "backup.md", (1_700_000_000, 1_700_000_000))  # 2023-11-14
    store = str(tmp_path / "store")
    assert runner.invoke(app, ["ingest", str(notes), "--store", store]).exit_code == 0

    def query(*args: str) -> dict[str, object]:
        result = runner.invoke(
            app, ["query", "nightly backup failed", "--store", store, "--json", *args]
        )
        assert result.exit_code == 0, result.output
        return dict(json.loads(result.stdout))

    def sources(run: dict[str, object]) -> set[str]:
        return {str(d["source"]) for d in run["documents"]}  # type: ignore[attr-defined]

    assert sources(query("--path", "bug")) <= {"bug/backup.md", "bug/old-backup.md"}
    assert sources(query("--path", "ops", "--path", "decision")) <= {
        "ops/backup.md",
        "decision/redis.md",
    }
    assert sources(query("--tag", "S3")) == {"bug/backup.md"}
    assert sources(query("--tag", "backup", "--tag", "s3", "--all-tags")) == {"bug/backup.md"}
    dated = query("--tag", "backup", "--before", "2020-01-01")
    assert sources(dated) == {"bug/old-backup.md"}
    assert dated["documents"][0]["modified"] == "2019-06-01T00:00:00Z"  # type: ignore[index]
    assert sources(query("--before", "2024-01-01", "--after", "2023-01-01")) == {"ops/backup.md"}
    # A type no chunk has: the gate is poor, the fallback drops the type but keeps the path.
    widened = query("--type", "lesson", "--path", "bug")
    assert widened["fallback"] is True and sources(widened) <= {
        "bug/backup.md",
        "bug/old-backup.md",
    }
    notes_text = "\n".join(widened["notes"])  # type: ignore[arg-type]
    assert "filters (path under 'bug'): 2 of 4 chunks in scope, 0 of them of the types" in (
        notes_text
    )
    assert "the path, tag and date filters kept" in notes_text
    empty = query("--path", "nowhere")
    assert empty["documents"] == [] and "no chunk passes them" in "\n".join(empty["notes"])  # type: ignore[arg-type]
