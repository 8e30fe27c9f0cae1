"""A tiny sentence-transformers model folder for tests: a random 2-layer BERT with a WordPiece
tokenizer built here, written as sentence-transformers writes one (no network, no download)."""

from __future__ import annotations

import json
from pathlib import Path

WORDS = (
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "is",
    "it",
    "on",
    "for",
    "with",
    "as",
    "by",
    "at",
    "from",
    "that",
    "this",
    "be",
    "are",
    "was",
    "notes",
    "search",
    "vector",
    "store",
    "query",
    "passage",
    "chunk",
    "critic",
    "model",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "cat",
    "paris",
    "france",
    "river",
    "city",
    "science",
    "cell",
    "protein",
    "gene",
    "brain",
    "water",
    "light",
    "energy",
)


def make_sentence_model(folder: Path, *, pooling: str = "mean") -> Path:
    """Write a tiny random BERT sentence model (hidden 32, 2 layers) into ``folder``.

    Args:
        folder: Where to write it (created).
        pooling: ``mean`` or ``cls`` (or another mode, to test refusal).
    """
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, BertTokenizerFast

    torch.manual_seed(0)
    vocab = {
        token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])
    }
    engine = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    engine.normalizer = normalizers.BertNormalizer(lowercase=True)
    engine.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    engine.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer = BertTokenizerFast(tokenizer_object=engine, model_max_length=64)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(folder))
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).eval().save_pretrained(str(folder), safe_serialization=True)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
        {
            "idx": 2,
            "name": "2",
            "path": "2_Normalize",
            "type": "sentence_transformers.models.Normalize",
        },
    ]
    (folder / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "2_Normalize").mkdir(exist_ok=True)
    pooling_config = {
        "word_embedding_dimension": 32,
        "pooling_mode_cls_token": pooling == "cls",
        "pooling_mode_mean_tokens": pooling == "mean",
        "pooling_mode_max_tokens": pooling == "max",
    }
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling_config), encoding="utf-8")
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": 64, "do_lower_case": False}), encoding="utf-8"
    )
    return folder
