"""A ragbrain store as a langchain-chroma ``Chroma`` (``Store.as_vectorstore``).

LangChain code reads it as it reads any ``Chroma``. Writes through it (``add_documents``,
``add_texts``, ``delete``, LangChain's indexing API) go through the store instead of straight
into Chroma: every input is checked and every text embedded before anything is written, the
store's writer lock is held, and the lexical index and the rare types' kept vectors are
brought in step afterwards, as ``ragbrain ingest`` does.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_chroma import Chroma

from ragbrain.checks import check_names, describe
from ragbrain.errors import InvalidInputError, WrongTypeError
from ragbrain.store.lexical import sync_lexical

if TYPE_CHECKING:
    from langchain_core.documents import Document

    from ragbrain.store import Store

#: The note type of a chunk written without one (ragbrain's type filter reads ``type``).
DEFAULT_TYPE = "document"


class RagbrainChroma(Chroma):
    """A ragbrain store as a ``langchain_chroma.Chroma``: the store's client and collection,
    embedding with the store's model; writes keep ragbrain's files in step.

    Example:
        .. code-block:: python

            from langchain_core.indexing import InMemoryRecordManager, index

            vectorstore = Store.open("~/notes-store", create=True).as_vectorstore()
            manager = InMemoryRecordManager("ragbrain/notes")
            manager.create_schema()
            index(docs, manager, vectorstore, cleanup="full", source_id_key="source")
    """

    def __init__(self, store: Store, *, type_key: str = "type", source_key: str = "source") -> None:
        """Open the store's collection as a ``Chroma``.

        Args:
            store: The ragbrain store.
            type_key: The metadata key of written documents that holds their note type; its
                value is also written as ragbrain's ``type`` (the key itself is kept).
            source_key: The metadata key that holds their source, likewise as ``source``.

        Raises:
            InvalidInputError: The store holds no client (it was not opened by ``Store.open``)
                or is a caller's own collection (``from_vectorstore``: use that vector store).
            WrongTypeError: A key that is not a non-empty string.
        """
        from chromadb.api.models.Collection import Collection

        for name, key in (("type_key", type_key), ("source_key", source_key)):
            if not isinstance(key, str) or not key:
                raise WrongTypeError(
                    f"as_vectorstore: {name} must be a metadata key (a string); got "
                    f"{describe(key)}."
                )

        # A wrapped store reads a caller's collection through a view: not a ragbrain store.
        if store.client is None or not isinstance(store.collection, Collection):
            raise InvalidInputError(
                f"The store at {store.location} is not a ragbrain store opened with "
                "Store.open (no client, or a collection ragbrain wraps): use the vector store "
                "it came from."
            )
        self.store = store
        super().__init__(
            client=store.client,
            collection_name=store.collection.name,
            embedding_function=store.embeddings,
            create_collection_if_not_exists=False,
        )
        # The store's own handle: a server store's requests are bounded by its deadline.
        self._chroma_collection = store.collection
        self.type_key = type_key
        self.source_key = source_key

    @property
    def _collection(self) -> Any:
        """The store's collection as it is now: reopened first when another process wrote
        (``Store.follow``), so LangChain's own reads never search a stale index."""
        return self.store.collection

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[Any, Any]] | None = None,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Embed and write ``texts`` (an existing id is replaced), then bring the lexical
        index in step. A chunk without a ``type`` gets ``DEFAULT_TYPE``.

        Returns:
            The ids written (new UUIDs where none were given).

        Raises:
            InvalidInputError: A text that is not a string, more metadatas or ids than texts,
                an id given twice, metadata Chroma cannot store, or a vector the store cannot
                take (nothing is written then).
            StoreLockedError: Another process is writing to the same store folder.
        """
        # LangChain's indexing API passes its batch size; the store batches by itself.
        _no_options({k: v for k, v in kwargs.items() if k != "batch_size"}, "add_texts")
        texts = list(texts)
        bad = [describe(t) for t in texts if not isinstance(t, str)]
        if bad:
            raise InvalidInputError(f"add_texts takes strings; got {bad[0]} among the texts.")
        chosen = _ids(ids, len(texts))
        prepared = _metadatas(metadatas, len(texts), self.type_key, self.source_key)
        if not texts:
            return []
        vectors = self.store.embeddings.embed_documents(texts)
        with self.store.writing():
            self.store.upsert(chosen, texts, prepared, vectors)
            self._follow()
        return chosen

    def update_documents(self, ids: list[str], documents: list[Document]) -> None:
        """Replace the chunks ``ids`` with ``documents`` (``add_texts`` with those ids)."""
        if len(ids) != len(documents):
            raise InvalidInputError(
                f"update_documents needs as many ids as documents; got {len(ids)} and "
                f"{len(documents)}."
            )
        self.add_texts(
            [d.page_content for d in documents], [dict(d.metadata) for d in documents], ids
        )

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> None:
        """Remove the chunks ``ids`` (ids the store does not hold are ignored), then bring
        the lexical index in step.

        Raises:
            InvalidInputError: No ids (ragbrain does not delete by filter), or other options.
            StoreLockedError: Another process is writing to the same store folder.
        """
        _no_options(kwargs, "delete")
        if ids is None or isinstance(ids, str):
            raise InvalidInputError(
                f"delete needs a list of ids; got {describe(ids)}. To empty the store, "
                "delete its folder."
            )
        chosen = list(ids)
        with self.store.writing():
            self.store.delete(chosen)
            self._follow()

    def add_images(
        self,
        uris: list[str],
        metadatas: list[dict[Any, Any]] | None = None,
        ids: list[str] | None = None,
    ) -> list[str]:
        """Refused: a ragbrain store holds text chunks."""
        raise InvalidInputError("A ragbrain store holds text chunks; add_images is not offered.")

    def reset_collection(self) -> None:
        """Refused: it would drop the store's collection and its records."""
        raise InvalidInputError(
            f"reset_collection would drop the ragbrain store at {self.store.location}; "
            "delete its folder instead, or delete chunks by id."
        )

    def delete_collection(self) -> None:
        """Refused: it would drop the store's collection and its records."""
        self.reset_collection()

    def _follow(self) -> None:
        """After a write: the lexical index and the rare types' kept vectors in step (call
        with the writer's lock held)."""
        index = sync_lexical(self.store)
        self.store.keep_small_types(index)


def as_vectorstore(
    store: Store, *, type_key: str = "type", source_key: str = "source", **unknown: Any
) -> RagbrainChroma:
    """``store`` as a langchain-chroma ``Chroma`` (``Store.as_vectorstore`` is this function).

    Raises:
        InvalidInputError: An unknown keyword argument (naming the accepted ones), or the
            store was made without its client (not by ``Store.open``).
        WrongTypeError: A key that is not a non-empty string.
    """
    check_names(unknown, ("type_key", "source_key"), "Store.as_vectorstore")
    return RagbrainChroma(store, type_key=type_key, source_key=source_key)


def _no_options(options: Mapping[str, Any], method: str) -> None:
    if options:
        raise InvalidInputError(
            f"{method} of a ragbrain store takes no other options; got {sorted(options)}."
        )


def _ids(ids: Sequence[str | None] | None, count: int) -> list[str]:
    """The ids to write: the given ones (None filled with a new UUID), all checked."""
    if ids is None:
        return [str(uuid.uuid4()) for _ in range(count)]
    if isinstance(ids, str) or len(ids) != count:
        got = describe(ids) if isinstance(ids, str) else f"{len(ids)} ids"
        raise InvalidInputError(f"add_texts needs one id per text; got {got} for {count} texts.")
    chosen = [str(uuid.uuid4()) if id_ is None else id_ for id_ in ids]
    wrong = [describe(id_) for id_ in chosen if not isinstance(id_, str) or not id_]
    if wrong:
        raise WrongTypeError(f"Chunk ids are non-empty strings; got {wrong[0]}.")
    seen: set[str] = set()
    for id_ in chosen:
        if id_ in seen:
            raise InvalidInputError(f"The id {id_!r} is given twice; each chunk needs its own.")
        seen.add(id_)
    return chosen


def _metadatas(
    metadatas: Sequence[Mapping[Any, Any] | None] | None,
    count: int,
    type_key: str = "type",
    source_key: str = "source",
) -> list[dict[str, Any]]:
    """One metadata dict per text (missing ones empty), each with a ``type`` (the value of
    ``type_key``, else ``DEFAULT_TYPE``) and, when ``source_key`` holds one, a ``source``,
    checked as Chroma checks metadata, before anything is written."""
    from chromadb.api.types import validate_metadata

    given = list(metadatas or [])
    if len(given) > count:
        raise InvalidInputError(f"add_texts got {len(given)} metadatas for {count} texts.")
    prepared: list[dict[str, Any]] = []
    for position, meta in enumerate([*given, *[None] * (count - len(given))]):
        chunk = {"type": DEFAULT_TYPE, **dict(meta or {})}
        for ours, theirs in (("type", type_key), ("source", source_key)):
            if theirs != ours and (meta or {}).get(theirs) is not None:
                chunk[ours] = (meta or {})[theirs]
        try:
            validate_metadata(chunk)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"The metadata of text {position} cannot be stored: {exc}"
            ) from None
        prepared.append(chunk)
    return prepared
