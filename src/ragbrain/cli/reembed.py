"""``ingest --re-embed``: rebuilding a store folder with another embedding model."""

from __future__ import annotations

from pathlib import Path

from ragbrain.cli.common import err, fail, out
from ragbrain.errors import RagbrainError


def _re_embed(
    path: Path,
    folder: Path | None,
    server: str | None,
    embedding: str | None,
    type_: str | None,
    exclude: list[str] | tuple[()],
    include: list[str] | tuple[()],
) -> None:
    """``ingest --re-embed``: rebuild the store folder with the ``--embedding`` model."""
    from ragbrain._util import progress_reporter
    from ragbrain.errors import InvalidInputError, StoreNotFoundError
    from ragbrain.ingest.reembed import re_embed
    from ragbrain.models.embeddings import EMBEDDING_CHOICES, embeddings_for
    from ragbrain.store.connect import StorePolicy

    try:
        if server:
            raise InvalidInputError(
                "--re-embed rebuilds a store folder (--store); a server's collection cannot be "
                "swapped atomically: ingest the notes into a new collection on another server."
            )
        if not embedding:
            raise InvalidInputError(
                f"--re-embed needs the model to re-embed with: --embedding "
                f"{'|'.join(EMBEDDING_CHOICES)}."
            )
        if folder is None or not folder.is_dir():
            raise StoreNotFoundError(
                f"No ragbrain store at {folder} to re-embed; drop --re-embed to create one."
            )
        embeddings = embeddings_for(embedding)
        with progress_reporter(err, "re-embedding chunks") as progress:
            report = re_embed(
                path,
                folder,
                embeddings,
                type_=type_,
                progress=progress,
                exclude=exclude,
                include=include,
                policy=StorePolicy.from_env(),
            )
    except (RagbrainError, FileNotFoundError) as exc:
        raise fail(exc) from exc
    for skipped in report.skipped:
        err.print(f"skipped {skipped.path}: {skipped.reason}", style="yellow", highlight=False)
    out.print(f"re-embedded with {embedding}: {report.summary()} -> {folder}", highlight=False)
