"""multilingual-e5-small's word embeddings kept in fp16 in memory, every other weight in fp32.

The 250,037 x 384 word-embedding table is 385 MB in fp32, three quarters of the model; the
converted ``model.safetensors`` stores it in fp16 (``convert``), and it stays so in memory:
``ragbrain.models.sentence.SentenceEmbeddings`` puts the file's fp16 table behind ``HalfEmbedding``,
whose lookup returns fp32, so the model computes exactly as before from the first layer norm
on (no fp32 copy of the table is ever made).

The fp16 table differs from the dequantized fp32 one by fp16 rounding (the 4-bit codes times
an fp16 scale need up to 14 significant bits): measured cosine to the fp32 model's vectors
>= 0.9999 (docs/decisions/e5-conversion-checks.md).
"""

from __future__ import annotations

import torch
from torch import nn


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
