"""The lexical side of hybrid search: tokenization by script, a BM25 index beside the store,
and its fusion with the dense hits."""

from ragbrain.lexical.fusion import hybrid_search, rrf
from ragbrain.lexical.index import LexicalIndex, LexicalIndexError
from ragbrain.lexical.sync import LexicalSearcher, index_path, sync_lexical
from ragbrain.lexical.tokens import detect_language, tokenize

__all__ = [
    "LexicalIndex",
    "LexicalIndexError",
    "LexicalSearcher",
    "detect_language",
    "hybrid_search",
    "index_path",
    "rrf",
    "sync_lexical",
    "tokenize",
]
