"""LangChain's standard retriever suite, on an honest fixture: a real Chroma store of the sample
notes, the real embedding model, and the default settings a user gets (critic included)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

from ragbrain import CorrectiveRetriever, open_graph

pytestmark = pytest.mark.slow


class TestCorrectiveRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _graph(self, sample_store_path: Path) -> None:
        type(self).graph = open_graph(sample_store_path)

    @property
    def retriever_constructor(self) -> type[CorrectiveRetriever]:
        return CorrectiveRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"graph": type(self).graph}

    @property
    def retriever_query_example(self) -> str:
        return "What caused the Redis cache stampede after the deploy and how was it fixed?"
