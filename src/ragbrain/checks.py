"""Entry checks: the argument types a public entry point accepts, each refused with a message
that names what was passed, what is allowed and what to pass instead (a leaf module)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from typing import Any

from ragbrain.errors import InvalidInputError, WrongTypeError


def describe(value: object) -> str:
    """A short name of ``value`` for messages: ``str 'default'``, ``int 3``, or the class's
    dotted name for other objects."""
    if isinstance(value, str | int | float | bool):
        return f"{type(value).__name__} {value!r}"[:80]
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def _is_vectorstore(value: object) -> bool:
    try:
        from langchain_core.vectorstores import VectorStore
    except ImportError:  # pragma: no cover - langchain-core is a core dependency
        return False
    return isinstance(value, VectorStore)


def check_embeddings(embeddings: object, where: str) -> None:
    """``embeddings`` is None or a LangChain ``Embeddings`` (anything with callable
    ``embed_documents`` and ``embed_query``).

    Raises:
        WrongTypeError: Anything else; a string is pointed to ``embeddings_for``.
    """
    if embeddings is None or all(
        callable(getattr(embeddings, name, None)) for name in ("embed_documents", "embed_query")
    ):
        return
    hint = ""
    if isinstance(embeddings, str):
        hint = (
            f" To load a model by name, pass ragbrain.models.embeddings.embeddings_for"
            f"({embeddings!r}) (a name `ragbrain ingest --embedding` takes); a model folder, "
            "langchain_huggingface.HuggingFaceEmbeddings(model_name=FOLDER)."
        )
    raise WrongTypeError(
        f"{where}: embeddings must be a LangChain Embeddings (an object with embed_documents "
        f"and embed_query) or None for the store's own model; got {describe(embeddings)}." + hint
    )


def check_location(path: object, where: str) -> None:
    """``path`` is None, a string or a path-like object naming a store folder.

    Raises:
        WrongTypeError: Anything else; a LangChain vector store is pointed to
            ``CorrectiveRetriever.from_vectorstore``, an opened store to ``build_graph``.
    """
    if path is None or isinstance(path, str | os.PathLike):
        return
    if _is_vectorstore(path):
        hint = " For a LangChain vector store, use CorrectiveRetriever.from_vectorstore(it)."
    elif type(path).__name__ == "Store":
        hint = " For an opened ragbrain Store, use build_graph(store) (or store.location)."
    else:
        hint = ""
    raise WrongTypeError(
        f"{where}: the store must be a folder (str or pathlib.Path) or None for the default "
        f"store; got {describe(path)}.{hint}"
    )


def check_one_of(value: object, allowed: Iterable[Any], name: str, where: str) -> None:
    """``value`` is one of ``allowed``.

    Raises:
        WrongTypeError: It is not.
    """
    choices = list(allowed)
    if any(value == choice and type(value) is type(choice) for choice in choices):
        return
    raise WrongTypeError(
        f"{where}: {name} must be one of {', '.join(repr(c) for c in choices)}; "
        f"got {describe(value)}."
    )


def check_flag(value: object, name: str, where: str) -> None:
    """``value`` is a bool.

    Raises:
        WrongTypeError: It is not.
    """
    if not isinstance(value, bool):
        raise WrongTypeError(f"{where}: {name} must be True or False; got {describe(value)}.")


def check_critic_choice(choice: object, where: str) -> None:
    """``choice`` is what ``critic=`` accepts: None, ``"default"``, a critic folder (str or
    path), or a critic object (a ``threshold`` and a ``score(query, passages,
    distances=None)`` method).

    Raises:
        WrongTypeError: Anything else, saying what to pass.
    """
    if choice is None or isinstance(choice, str | os.PathLike):
        return
    if callable(getattr(choice, "score", None)) and isinstance(
        getattr(choice, "threshold", None), int | float
    ):
        return
    raise WrongTypeError(
        f"{where}: critic must be None (no critic), 'default' (the shipped one), a critic "
        "folder (str or pathlib.Path), or a critic object with a numeric `threshold` and a "
        f"`score(query, passages, distances=None)` method; got {describe(choice)}."
    )


def check_policy(policy: object, where: str) -> None:
    """``policy`` is None or a ``StorePolicy`` (checked by its fields: this module imports no
    store code).

    Raises:
        WrongTypeError: Anything else.
    """
    if policy is None or all(hasattr(policy, f) for f in ("deadline", "retries", "backoff")):
        return
    raise WrongTypeError(
        f"{where}: policy must be a ragbrain.StorePolicy (deadline, retries) or None; "
        f"got {describe(policy)}."
    )


def check_graph_inputs(store: object, lexical: object) -> None:
    """``build_graph``'s store and lexical index, checked by what the graph calls (this module
    imports no store code): a store has ``gate_threshold``, a lexical searcher ``index``.

    Raises:
        WrongTypeError: A folder, a LangChain vector store or anything else that is not an
            opened store; a lexical index of another kind.
    """
    if not callable(getattr(store, "gate_threshold", None)) or _is_vectorstore(store):
        if isinstance(store, str | os.PathLike):
            hint = " For a store folder, use ragbrain.open_graph(path)."
        elif _is_vectorstore(store):
            hint = " For a LangChain vector store, use CorrectiveRetriever.from_vectorstore(it)."
        else:
            hint = ""
        raise WrongTypeError(
            "build_graph: store must be an opened ragbrain Store (ragbrain.Store.open(path)); "
            f"got {describe(store)}.{hint}"
        )
    # A searcher's ``index`` is its current index (a property); a string's is a method.
    index = getattr(lexical, "index", None)
    if lexical is not None and (index is None or callable(index)):
        raise WrongTypeError(
            "build_graph: lexical must be None or a ragbrain.lexical.LexicalSearcher(store); "
            f"got {describe(lexical)}."
        )


def check_names(given: Iterable[str], accepted: Iterable[str], where: str) -> None:
    """Refuse any name of ``given`` that is not in ``accepted``.

    Raises:
        InvalidInputError: Naming the unknown argument, the closest accepted one when it
            looks misspelt, and every accepted one.
    """
    allowed = sorted(set(accepted))
    unknown = [name for name in given if name not in allowed]
    if not unknown:
        return
    name = unknown[0]
    close = difflib.get_close_matches(str(name), allowed, n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    more = f" (and {sorted(unknown[1:])})" if len(unknown) > 1 else ""
    raise InvalidInputError(
        f"{where} got an unknown keyword argument {name!r}{more}.{hint} "
        f"Accepted: {', '.join(allowed)}."
    )
