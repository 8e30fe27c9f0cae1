"""Many queries embedded in batches, as ``embed_query`` would embed each.

LangChain's ``Embeddings`` has no batch call for queries, and a model may embed a query
otherwise than a passage (a ``"query: "`` prefix where passages get ``"passage: "``), so
``embed_documents`` is not a batch ``embed_query`` in general. ``embed_queries`` uses:

1. the model's own ``embed_queries`` (ragbrain's models: ONNX Runtime and torch);
2. else ``embed_documents``, when it embeds one query as ``embed_query`` does (a probe on the
   first text: cosine ``SAME_EMBEDDING`` or more; ``HuggingFaceEmbeddings`` without a query
   prompt, most API models);
3. else ``embed_query`` one text at a time.

On ONNX Runtime int8 a batch shares its activations' quantization ranges, so a query
embedded in a batch differs a little from the same query alone, and the off-topic cut learnt
from the bank moves by that little (docs/decisions/query-model-check.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

#: A query embedded by ``embed_documents`` this close to ``embed_query``'s is the same
#: embedding (a batch's padding and int8 activations move a vector by less than 1e-4).
SAME_EMBEDDING = 0.9999


def embed_queries(embeddings: Embeddings, texts: Sequence[str]) -> list[list[float]]:
    """The query vectors of ``texts``, in as few model calls as the model allows (see the
    module)."""
    texts = list(texts)
    if not texts:
        return []
    own = getattr(embeddings, "embed_queries", None)
    if callable(own):
        return [list(v) for v in own(texts)]
    first = list(embeddings.embed_query(texts[0]))
    probe = list(embeddings.embed_documents([texts[0]])[0])
    rest: Sequence[Sequence[float]]
    if _cosine(first, probe) < SAME_EMBEDDING:
        rest = [embeddings.embed_query(t) for t in texts[1:]]
    else:
        rest = embeddings.embed_documents(texts[1:]) if len(texts) > 1 else []
    return [first, *(list(v) for v in rest)]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    if len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm > 0 else 0.0
