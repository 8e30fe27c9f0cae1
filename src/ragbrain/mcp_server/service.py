"""The MCP server's state: the store, models and retriever, loaded once, and the tools' work."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.critic.base import threshold_label
from ragbrain.embeddings import model_name_of
from ragbrain.errors import InvalidInputError
from ragbrain.factory import CriticChoice, resolve_critic
from ragbrain.gates import run_gate
from ragbrain.graph import bind_critic
from ragbrain.mcp_server.schemas import (
    MAX_LABEL_CHARS,
    Chunk,
    IngestResult,
    SearchResult,
    SkippedFile,
    StatsResult,
    clean_text,
    finite_or_none,
)
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.state import RETRIEVAL_KEY
from ragbrain.store import Store, default_store_path

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Loaded:
    """What the server loads once and keeps for its whole life."""

    store: Store
    retriever: CorrectiveRetriever
    critic: str


def _label(value: object) -> str:
    return clean_text(str(value or ""), MAX_LABEL_CHARS)[0]


def check_roots(roots: Sequence[str | Path]) -> tuple[Path, ...]:
    """The real paths of the folders ``ingest`` may read.

    Raises:
        InvalidInputError: One of them is not an existing folder.
    """
    checked = []
    for root in roots:
        real = Path(root).expanduser().resolve()
        if not real.is_dir():
            raise InvalidInputError(f"--allow {root}: not an existing folder.")
        checked.append(real)
    return tuple(dict.fromkeys(checked))


class RagbrainService:
    """The store, the embedding model, the critic and the retriever, loaded once per process.

    ``start_loading`` begins loading in a background thread so the MCP handshake answers at
    once; a tool call that arrives earlier waits for it. A failed load (no store yet) is
    retried by the next call.
    """

    def __init__(
        self,
        store_path: str | Path | None = None,
        *,
        allowed: Sequence[str | Path] = (),
        critic: CriticChoice = "default",
        embeddings: Embeddings | None = None,
    ) -> None:
        """Check the settings; nothing is loaded yet.

        Args:
            store_path: The store folder; None is ``$RAGBRAIN_STORE`` or the default location.
            allowed: Folders ``ingest`` may read; none turns ``ingest`` off. With any, a
                missing store is created on first use.
            critic: As for ``CorrectiveRetriever.from_store``; a critic that fails to load is
                turned off (and the trace says why) rather than stopping the server.
            embeddings: Any LangChain ``Embeddings``; None is the model the store records
                (``ragbrain.embeddings.embeddings_for``; all-MiniLM-L6-v2 for a new store).

        Raises:
            InvalidInputError: An allowed folder does not exist.
        """
        self.store_path = Path(store_path).expanduser() if store_path else default_store_path()
        self.allowed = check_roots(allowed)
        self._critic_choice = critic
        self._embeddings = embeddings
        self._loaded: Loaded | None = None
        self._load_lock = threading.Lock()
        self._write_lock = threading.Lock()

    def start_loading(self) -> None:
        """Load in a background thread; errors are logged here and raised again on use."""

        def load() -> None:
            try:
                self.load()
            except Exception as exc:  # the first tool call reports it to the client
                log.error("Could not load the store: %s", exc)

        threading.Thread(target=load, name="ragbrain-load", daemon=True).start()

    def load(self) -> Loaded:
        """The loaded store and retriever (loading them on the first call only).

        Raises:
            StoreNotFoundError, StoreMismatchError: The store cannot be opened.
        """
        with self._load_lock:
            if self._loaded is not None:
                return self._loaded
            started = time.perf_counter()
            # The store the tools write to and count; the retriever is built the way every
            # other caller builds it (lexical index, calibrated gate, critic), over the same
            # folder. With no embeddings given, both use the model the store records.
            store = Store.open(self.store_path, self._embeddings, create=bool(self.allowed))
            embeddings = store.embeddings
            critic, off_reason = resolve_critic(self._critic_choice, "disable")
            retriever = CorrectiveRetriever.from_store(
                self.store_path,
                embeddings=embeddings,
                critic=self._critic_choice if critic is None else critic,
                on_critic_error="disable",
            )
            if critic is None:
                status = f"off: {off_reason}"
            else:
                critic = bind_critic(critic, store)  # as the retriever's graph uses it
                where = getattr(critic, "folder", None)
                status = f"{type(critic).__name__}{f' from {where}' if where else ''}, "
                status += threshold_label(critic, critic.threshold)
            self._loaded = Loaded(store=store, retriever=retriever, critic=status)
            log.info(
                "Loaded the store %s and the models in %.1f s (critic: %s).",
                store.location,
                time.perf_counter() - started,
                status,
            )
            return self._loaded

    def search(self, query: str, types: list[str] | None, k: int | None) -> SearchResult:
        """Run the retrieval pipeline and return its decisions and chunks, cleaned and capped."""
        loaded = self.load()
        output = loaded.retriever.run(query, k=k, type_filter=types)
        chunks = []
        for doc in output["documents"]:
            trace = doc.metadata[RETRIEVAL_KEY]
            text, truncated = clean_text(doc.page_content)
            chunks.append(
                Chunk(
                    text=text,
                    truncated=truncated,
                    source=_label(doc.metadata.get("source")),
                    type=_label(doc.metadata.get("type")),
                    chunk=int(doc.metadata.get("chunk", 0)),
                    title=_label(doc.metadata.get("title")),
                    distance=float(trace["distance"]),
                    critic_score=finite_or_none(trace["critic_score"]),
                    from_fallback=bool(trace["from_fallback"]),
                )
            )
        return SearchResult(
            query=query,
            depth=output["depth"],
            complexity=output["complexity"],
            verdict=output["verdict"],
            best_distance=finite_or_none(output["best_distance"]),
            gate=output["gate"],
            fallback=output.get("fallback", False),
            critic=output["critic"],
            notes=output["notes"],
            chunks=chunks,
        )

    def allowed_path(self, raw: str) -> Path:
        """The real path of ``raw`` if it lies under an allowed folder.

        Links are followed before the check, so a link that leads outside is refused; and
        nothing is said about whether a path outside exists.

        Raises:
            InvalidInputError: Ingestion is off, or the path is outside every allowed folder.
            FileNotFoundError: The path is inside but does not exist.
        """
        if not self.allowed:
            raise InvalidInputError(
                "ingest is off: start the server with --allow DIR to let it read a folder."
            )
        real = Path(raw).expanduser().resolve()
        if not any(real.is_relative_to(root) for root in self.allowed):
            roots = ", ".join(str(r) for r in self.allowed)
            raise InvalidInputError(
                f"path {raw!r} is outside the allowed folders ({roots}); "
                "links are followed before this check."
            )
        if not real.exists():
            raise FileNotFoundError(f"path {raw!r} does not exist.")
        return real

    def ingest(self, raw_path: str, type_: str | None) -> IngestResult:
        """Ingest a file or folder under an allowed root (one ingestion at a time)."""
        from ragbrain.ingest import ingest

        path = self.allowed_path(raw_path)
        loaded = self.load()
        with self._write_lock:
            report = ingest(path, loaded.store, type_=type_)
        return IngestResult(
            root=str(report.root),
            files=report.files,
            added=report.added,
            unchanged=report.unchanged,
            deleted=report.deleted,
            skipped=[
                SkippedFile(path=_label(item.path), reason=_label(item.reason))
                for item in report.skipped
            ],
        )

    def stats(self) -> StatsResult:
        """Chunk counts per type, where the store is, and which models answer."""
        loaded = self.load()
        store = loaded.store
        return StatsResult(
            store=store.location,
            chunks=store.count(),
            types=dict(sorted(store.types().items())),
            embedding_model=model_name_of(store.embeddings),
            critic=loaded.critic,
            gate_threshold=run_gate(store, loaded.retriever.context.gate_threshold)[0],
            allowed_roots=[str(root) for root in self.allowed],
        )
