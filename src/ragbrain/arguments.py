"""Strict keyword arguments for the entry points a LangChain app calls
(``CorrectiveRetriever(...)``, ``from_store``, ``from_vectorstore``, ``as_vectorstore``): an
unknown name is an ``InvalidInputError`` naming the accepted ones (``checks.check_names``),
and ``search_kwargs``, which apps carry over from ``as_retriever``, is read or refused with a
pointer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ragbrain.checks import describe
from ragbrain.errors import InvalidInputError, WrongTypeError

#: The retriever's fields a caller may set (``CorrectiveRetriever(...)`` and the ``from_*``
#: constructors' ``**fields``): its own, and BaseRetriever's ``tags`` and ``metadata``.
RETRIEVER_FIELDS = ("context", "k", "type_filter", "filter", "filters", "tags", "metadata")
#: Fields the ``from_*`` constructors fill in themselves (a caller may still pass them).
FILLED_FIELDS = ("graph", "known_types", "store_notes", "name")
#: ``as_retriever``'s ``search_kwargs`` keys ragbrain reads.
SEARCH_KWARGS = ("k", "filter")


def check_field_types(fields: Mapping[str, Any], where: str) -> None:
    """The retriever fields' types, checked before pydantic sees them (pydantic would coerce
    ``"3"`` into 3, a dict into a ``RetrievalContext``, or dump the whole graph in its error).

    Raises:
        InvalidInputError: A bad ``k``, ``type_filter`` or ``filters`` (naming the problem).
        WrongTypeError: ``context``, ``tags`` or ``metadata`` of the wrong type.
    """
    from ragbrain.context import RetrievalContext
    from ragbrain.query.filters import Filters
    from ragbrain.query.inputs import check_k, check_types

    if "k" in fields:
        check_k(fields["k"], name=f"{where}: k")
    if "type_filter" in fields:
        check_types(fields["type_filter"])
    if fields.get("filter") is not None:
        check_types(fields["filter"])
    if "filters" in fields:
        Filters.parse(fields["filters"])
    context = fields.get("context")
    if context is not None and not isinstance(context, RetrievalContext):
        raise WrongTypeError(
            f"{where}: context must be a ragbrain.RetrievalContext; got {describe(context)}"
            + (" (pass RetrievalContext(**that_dict))." if isinstance(context, dict) else ".")
        )
    tags = fields.get("tags")
    if tags is not None and (
        isinstance(tags, str) or not all(isinstance(t, str) for t in _iterable(tags))
    ):
        raise WrongTypeError(f"{where}: tags must be a list of strings; got {describe(tags)}.")
    metadata = fields.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise WrongTypeError(f"{where}: metadata must be a dict; got {describe(metadata)}.")


def _iterable(value: Any) -> Iterable[Any]:
    try:
        return list(value)
    except TypeError:
        return [None]


def read_search_kwargs(
    fields: dict[str, Any], where: str, type_key: str = "type"
) -> dict[str, Any]:
    """``fields`` with ``search_kwargs`` (as ``vectorstore.as_retriever(search_kwargs=...)``
    takes it) read into the retriever's own fields: its ``k`` becomes ``k``, its ``filter``
    (on the note type: ``{type_key: "bug"}``, ``{type_key: {"$in": [...]}}`` or
    ``{"$eq": ...}``) becomes ``filter``, the hard constraint (``read_filter``).

    Raises:
        InvalidInputError: Any other key or filter (``score_threshold``, ``fetch_k``, a filter
            on another key), pointing to what ragbrain offers instead; a ``k`` or a type
            or a filter given both ways.
    """
    if "search_kwargs" not in fields:
        return fields
    fields = dict(fields)
    given = fields.pop("search_kwargs")
    if given is None:
        return fields
    if not isinstance(given, Mapping):
        raise WrongTypeError(f"{where}: search_kwargs must be a dict; got {describe(given)}.")
    other = sorted(set(given) - set(SEARCH_KWARGS))
    if other:
        raise InvalidInputError(
            f"{where}: search_kwargs {other} has no meaning here: ragbrain reads only "
            f"{', '.join(SEARCH_KWARGS)} from it. The gate and the critic decide what is "
            "relevant (instead of score_threshold), the fallback widens a poor search "
            "(instead of fetch_k / MMR); see RetrievalContext for their settings."
        )
    if "k" in given:
        if fields.get("k") is not None and fields["k"] != given["k"]:
            raise InvalidInputError(f"{where}: k is given twice (k= and search_kwargs['k']).")
        fields["k"] = given["k"]
    if "filter" in given and given["filter"] is not None:
        if fields.get("filter") is not None and fields["filter"] != given["filter"]:
            raise InvalidInputError(
                f"{where}: filter is given twice (filter= and search_kwargs['filter'])."
            )
        fields["filter"] = given["filter"]
    return fields


def read_filter(fields: dict[str, Any], where: str, type_key: str = "type") -> dict[str, Any]:
    """``fields`` with a LangChain ``filter`` (a Chroma ``where`` clause on ``type_key``) read
    into the list of note types every chunk must have: a hard constraint, kept by every
    step (``type_filter`` is the soft one the fallback may widen).

    Raises:
        InvalidInputError: A clause on another key or with another operator, pointing to
            ``type_filter`` and ``filters``.
    """
    given = fields.get("filter")
    if given is None or (isinstance(given, list) and all(isinstance(t, str) for t in given)):
        return fields  # absent, or already read
    types = type_clause(given, type_key, where)
    return {**fields, "filter": [types] if isinstance(types, str) else types}


def type_clause(where_clause: Any, type_key: str, where: str) -> str | list[str]:
    """The note type(s) a Chroma ``where`` clause on ``type_key`` selects."""
    pointer = (
        f"{where}: filter (or search_kwargs['filter']) is read only as a filter on the note type "
        f"({{{type_key!r}: 'bug'}} or {{{type_key!r}: {{'$in': [...]}}}}); got {where_clause!r}. "
        "Pass type_filter= for a soft type filter and filters= for paths, tags and dates "
        "(ragbrain.Filters)."
    )
    if not isinstance(where_clause, Mapping) or list(where_clause) != [type_key]:
        raise InvalidInputError(pointer)
    value = where_clause[type_key]
    if isinstance(value, Mapping) and len(value) == 1:
        ((operator, operand),) = value.items()
        if operator == "$eq" and isinstance(operand, str):
            return operand
        if operator == "$in" and isinstance(operand, list | tuple):
            return [str(v) for v in operand]
        raise InvalidInputError(pointer)
    if isinstance(value, str):
        return value
    raise InvalidInputError(pointer)
