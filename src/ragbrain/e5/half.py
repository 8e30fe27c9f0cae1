"""multilingual-e5-small's word embeddings kept in fp16 in memory, every other weight in fp32.

The 250,037 x 384 word-embedding table is 385 MB in fp32, three quarters of the model; the
converted ``model.safetensors`` stores it in fp16 (``convert``), and this module keeps it so:

- ``fp16_word_embeddings()`` loads the model with ``dtype=float16`` while BERT's class-level
  ``_keep_in_fp32_modules_strict`` names everything but the word embeddings, so transformers
  maps every tensor of the file as it is stored (no fp32 copy of the table is ever made; the
  rows are read from the file's pages as they are looked up);
- ``widen(model)`` then puts the table behind ``HalfEmbedding``, whose lookup returns fp32,
  so the model computes exactly as before from the first layer norm on.

The fp16 table differs from the dequantized fp32 one by fp16 rounding (the 4-bit codes times
an fp16 scale need up to 14 significant bits): measured cosine to the fp32 model's vectors
>= 0.9999 (``benchmarks/e5_convert.py``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

WORD_EMBEDDINGS = "embeddings.word_embeddings"
#: Every BERT module but the word embeddings (transformers matches these names in the keys).
_FP32_MODULES = [
    "encoder",
    "pooler",
    "embeddings.position_embeddings",
    "embeddings.token_type_embeddings",
    "embeddings.LayerNorm",
]
_LOCK = threading.Lock()


class HalfEmbedding(nn.Module):
    """An ``nn.Embedding`` lookup over an fp16 table that returns fp32 vectors.

    The table is a buffer (not a parameter), so ``model.dtype`` stays float32 and the state
    dict keeps the name ``embeddings.word_embeddings.weight``.
    """

    weight: torch.Tensor

    def __init__(self, weight: torch.Tensor, padding_idx: int | None = None) -> None:
        super().__init__()
        self.register_buffer("weight", weight.detach().to(torch.float16))
        self.padding_idx = padding_idx

    @property
    def num_embeddings(self) -> int:
        return int(self.weight.shape[0])

    @property
    def embedding_dim(self) -> int:
        return int(self.weight.shape[1])

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return nn.functional.embedding(ids, self.weight, self.padding_idx).float()


@contextlib.contextmanager
def fp16_word_embeddings() -> Iterator[dict[str, Any]]:
    """While open, a BERT loaded with the yielded ``from_pretrained`` keyword arguments keeps
    its word embeddings in fp16 and every other weight in fp32 (one load at a time)."""
    from transformers import BertModel

    with _LOCK:
        before = BertModel._keep_in_fp32_modules_strict
        BertModel._keep_in_fp32_modules_strict = list(_FP32_MODULES)
        try:
            yield {"dtype": torch.float16}
        finally:
            BertModel._keep_in_fp32_modules_strict = before


def widen(model: nn.Module) -> None:
    """Put a BERT's fp16 word embeddings behind ``HalfEmbedding`` (fp32 out) and check that
    every other weight is fp32.

    Raises:
        TypeError: ``model`` is not a BERT whose other weights are all fp32.
    """
    embeddings = model.get_submodule("embeddings")
    table = embeddings.word_embeddings
    if isinstance(table, nn.Embedding):
        embeddings.word_embeddings = HalfEmbedding(table.weight, table.padding_idx)
    wrong = [n for n, p in model.named_parameters() if p.dtype != torch.float32]
    if wrong:
        raise TypeError(f"Expected fp32 weights outside the word embeddings, got {wrong[:3]}.")
    config = getattr(model, "config", None)
    if config is not None:
        config.dtype = torch.float32
