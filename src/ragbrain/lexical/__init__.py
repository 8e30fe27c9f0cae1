"""The lexical side of hybrid search: tokenization by script and a BM25 index. The store
keeps one beside its collection (``ragbrain.store.lexical``); ``ragbrain.hybrid`` fuses its
hits with the dense ones."""

from ragbrain.lexical.index import LexicalIndex, LexicalIndexError
from ragbrain.lexical.tokens import detect_language, tokenize

__all__ = ["LexicalIndex", "LexicalIndexError", "detect_language", "tokenize"]
