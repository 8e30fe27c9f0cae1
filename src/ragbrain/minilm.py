"""all-MiniLM-L6-v2 as LangChain ``Embeddings``, run with torch and tokenizers directly.

It computes what sentence-transformers computes for this model (its ``modules.json``: the
transformer, mean pooling over the attention mask, L2 normalization; inputs stripped and cut
at ``max_seq_length`` = 256 tokens), equal to float rounding (a test compares the two), without
importing sentence-transformers, langchain-huggingface and transformers' modeling stack
(``ragbrain.bert``): most of a CLI query's cold start, for code this model never runs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

#: sentence-transformers' default when ``sentence_bert_config.json`` names none.
DEFAULT_MAX_LENGTH = 256


def max_seq_length(folder: Path) -> int:
    """The model's ``max_seq_length`` from ``sentence_bert_config.json`` (256 if absent)."""
    try:
        config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return DEFAULT_MAX_LENGTH
    value = config.get("max_seq_length") if isinstance(config, dict) else None
    return int(value) if isinstance(value, int) and value > 0 else DEFAULT_MAX_LENGTH


class MiniLMEmbeddings(Embeddings):
    """Mean-pooled, normalized sentence embeddings of a BERT-style model folder (safetensors).

    Args:
        folder: A sentence-transformers model folder with ``tokenizer.json``,
            ``config.json`` and ``model.safetensors``.
        batch_size: Texts per forward pass.
    """

    def __init__(self, folder: Path, *, batch_size: int = 32) -> None:
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        from ragbrain.bert import BertConfig, BertModel

        self.folder = Path(folder)
        #: The folder, as ``HuggingFaceEmbeddings.model_name`` was: stores record it by name.
        self.model_name = str(folder)
        self.batch_size = batch_size
        self.max_length = max_seq_length(self.folder)
        self._torch = torch
        self._tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(self.max_length)
        self._tokenizer.no_padding()
        model = BertModel(BertConfig.read(self.folder / "config.json"))
        tensors = load_file(str(self.folder / "model.safetensors"))
        # A buffer older transformers saved (0..511); positions are computed instead.
        tensors.pop("embeddings.position_ids", None)
        model.load_state_dict(tensors, strict=True)
        self._model: Any = model.eval()

    def _batch(self, texts: Sequence[str]) -> list[list[float]]:
        torch = self._torch
        encodings = self._tokenizer.encode_batch([t.strip() for t in texts])
        width = max(len(e.ids) for e in encodings)

        def padded(rows: list[list[int]]) -> Any:
            return torch.tensor([row + [0] * (width - len(row)) for row in rows])

        ids = padded([e.ids for e in encodings])
        mask = padded([e.attention_mask for e in encodings])
        types = padded([e.type_ids for e in encodings])
        with torch.inference_mode():
            tokens = self._model(ids, mask, types)
            weights = mask.unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            unit = torch.nn.functional.normalize(pooled, p=2, dim=1)
        vectors: list[list[float]] = unit.tolist()
        return vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts in batches, longest first (less padding), returned in input order."""
        if not texts:
            return []
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            for index, vector in zip(chunk, self._batch([texts[i] for i in chunk]), strict=True):
                out[index] = vector
        return out

    def embed_query(self, text: str) -> list[float]:
        """Embed one query."""
        return self._batch([text])[0]
