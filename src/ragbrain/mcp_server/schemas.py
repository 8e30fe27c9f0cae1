"""What the MCP tools accept: strict argument models (what they return is in ``results``)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from pydantic import ConfigDict, Field, field_validator, model_validator

from ragbrain.errors import InvalidInputError
from ragbrain.ingest.inbox import MAX_NOTE_CHARS, MAX_TAGS, MAX_TITLE_CHARS
from ragbrain.mcp_server.results import MAX_LINE
from ragbrain.query.filters import MAX_ITEM_CHARS, MAX_ITEMS, Filters
from ragbrain.query.inputs import check_types
from ragbrain.store.reader import MAX_NEIGHBOURS, MAX_SOURCE_CHARS

MAX_K = 50
MAX_QUERY_CHARS = 2000

# The argument models (the result models and their helpers are in ``results``).
__all__ = [
    "MAX_K",
    "MAX_LINE",
    "MAX_QUERY_CHARS",
    "GetArgs",
    "IngestArgs",
    "RememberArgs",
    "SearchArgs",
    "StatsArgs",
]


class _StrictArgs(ArgModelBase):
    """Tool arguments: no unknown fields, no coercion (``"5"`` and ``true`` are not integers).

    Errors name the field and the rule, not the value passed (it is the caller's data).
    """

    model_config = ConfigDict(
        extra="forbid", strict=True, hide_input_in_errors=True, arbitrary_types_allowed=True
    )


_FilterItem = Annotated[str, Field(min_length=1, max_length=MAX_ITEM_CHARS)]
_FilterItems = Annotated[list[_FilterItem], Field(max_length=MAX_ITEMS)]


class SearchArgs(_StrictArgs):
    """Arguments of ``search``."""

    query: Annotated[
        str,
        Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to search for."),
    ]
    type: Annotated[
        str | list[str] | None,
        Field(description="Only notes of this type or these types (for example 'bug')."),
    ] = None
    k: Annotated[
        Annotated[int, Field(ge=1, le=MAX_K)] | None,
        Field(description=f"How many chunks to fetch (1-{MAX_K}); omit to let the query decide."),
    ] = None
    path: Annotated[
        _FilterItem | _FilterItems | None,
        Field(
            description="Only notes under this folder or file (or any of these), relative to "
            "the ingested folder as a result's `source` shows it, e.g. 'bug' or "
            "'projects/alpha'; 'bug' matches 'bug/x.md', not 'bugs/x.md'. No absolute paths, "
            "no '..'. Kept by the fallback search."
        ),
    ] = None
    tags: Annotated[
        _FilterItem | _FilterItems | None,
        Field(
            description="Only notes with this tag (or any of these; all of them with "
            "`all_tags`); any case, '#' optional, 'project' also matches 'project/alpha'."
        ),
    ] = None
    all_tags: Annotated[
        bool, Field(description="With several `tags`: notes must have all of them.")
    ] = False
    after: Annotated[
        str | None,
        Field(
            max_length=64,
            description="Only notes dated on or after this ISO date or date-time (e.g. "
            "'2024-03-01'); a note's date is its front-matter `date:`, else its file's time "
            "at ingest; without a zone, UTC.",
        ),
    ] = None
    before: Annotated[
        str | None,
        Field(max_length=64, description="Only notes dated before this (ISO, not included)."),
    ] = None

    @field_validator("path", "tags", "after", "before")
    @classmethod
    def _filter(cls, value: Any, info: Any) -> Any:
        if value is None:
            return None
        try:
            Filters.parse({info.field_name: value})
        except InvalidInputError as exc:
            raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _filters_agree(self) -> SearchArgs:
        try:
            self.filters()
        except InvalidInputError as exc:
            raise ValueError(str(exc)) from None
        return self

    def filters(self) -> Filters | None:
        """The path, tag and date filters, checked (None when there are none)."""
        return Filters.parse(
            {
                "path": self.path,
                "tags": self.tags,
                "all_tags": self.all_tags,
                "after": self.after,
                "before": self.before,
            }
        )

    @field_validator("query")
    @classmethod
    def _not_blank(cls, query: str) -> str:
        if not query.strip():
            raise ValueError("query is empty; pass the text to search for")
        return query

    @field_validator("type")
    @classmethod
    def _types(cls, value: str | list[str] | None) -> list[str] | None:
        try:
            return check_types(value)
        except ValueError:
            raise ValueError("type must be a non-empty note type or a list of them") from None


class IngestArgs(_StrictArgs):
    """Arguments of ``ingest``."""

    path: Annotated[
        str,
        Field(
            min_length=1,
            description="A file or folder under one of the folders allowed at start-up; "
            "relative paths are resolved against the server's working directory.",
        ),
    ]
    type: Annotated[
        str | None,
        Field(description="The note type for every file; default: front matter, else folder."),
    ] = None

    @field_validator("type")
    @classmethod
    def _type(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("type must be a non-empty note type or omitted")
        return value.strip() if value is not None else None


class GetArgs(_StrictArgs):
    """Arguments of ``get``."""

    source: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_SOURCE_CHARS,
            description="The note's `source` as search returns it (for example 'bug/x.md').",
        ),
    ]
    start_line: Annotated[
        Annotated[int, Field(ge=1, le=MAX_LINE)] | None,
        Field(description="First line to read (1-based, in the file); omit: from the start."),
    ] = None
    end_line: Annotated[
        Annotated[int, Field(ge=1, le=MAX_LINE)] | None,
        Field(description="Last line to read (inclusive); omit: to the end."),
    ] = None
    chunk: Annotated[
        Annotated[int, Field(ge=0, le=MAX_LINE)] | None,
        Field(description="Read this chunk (a search result's `chunk`) instead of lines."),
    ] = None
    neighbours: Annotated[
        int,
        Field(
            ge=0,
            le=MAX_NEIGHBOURS,
            description=f"With `chunk`: chunks to add before and after (0-{MAX_NEIGHBOURS}).",
        ),
    ] = 0


class RememberArgs(_StrictArgs):
    """Arguments of ``remember``."""

    title: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_TITLE_CHARS,
            description="The note's title; its file name is made from it.",
        ),
    ]
    text: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_NOTE_CHARS,
            description=f"The note in Markdown (at most {MAX_NOTE_CHARS:,} characters).",
        ),
    ]
    type: Annotated[
        str,
        Field(min_length=1, max_length=50, description="The note type, e.g. 'lesson', 'decision'."),
    ]
    tags: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=50)]] | None,
        Field(max_length=MAX_TAGS, description="Tags for the note's front matter."),
    ] = None


class StatsArgs(_StrictArgs):
    """``stats`` takes no arguments."""
