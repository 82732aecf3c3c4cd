"""A real language model's lines (SmolLM2, `transformer.external.gguf_llama`): each target line in its own
byte-level BPE pieces, padded with its padding token; the pieces shown as text (a leading space is a space)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from transformer.core import tokens
from transformer.decoding.search import Line
from transformer.external.byte_bpe import ByteBPE
from transformer.external.gguf_llama import SMOLLM2_EOS_ID, SMOLLM2_PAD_ID, smollm2_vocabulary
from transformer.live.config import LiveConfig
from transformer.live.inputs import Batches, notices
from transformer.tasks import PAD


def real_lines(config: LiveConfig) -> Batches:
    """``config``'s target lines as SmolLM2 reads them, at most ``seq_len`` pieces each; the same batch on both sides
    (a decoder-only model reads one line), its padding id `SMOLLM2_PAD_ID`. ValueError for empty or too many lines."""
    vocabulary = smollm2_vocabulary()
    lines = [vocabulary.encode(text) for text in tokens.text_lines(config.target_text, "target")]
    length = config.seq_len
    ids = np.array([line[:length] + [SMOLLM2_PAD_ID] * max(0, length - len(line)) for line in lines], np.int32)
    shown = tuple(tuple(vocabulary.token_text(i) for i in line[:length]) + (PAD,) * max(0, length - len(line))
                  for line in lines)
    lengths = tuple(len(line) for line in lines)
    batch = tokens.EncodedBatch(ids, shown, lengths, tuple(n > length for n in lengths))  # (B, N)
    return Batches(batch, batch, (SMOLLM2_PAD_ID,), notices(batch, batch, (SMOLLM2_PAD_ID,), length))


WORD = re.compile(r"[a-z]{3,9}")  # a word its repeated lines are made of


@cache
def real_words() -> tuple[str, ...]:
    """SmolLM2's lower-case words of 3–9 letters that are one piece alone and one piece after a space: a line of them
    joined by spaces is read as one piece a word (a repeated line's segment: `head_roles.repeated_lines`)."""
    vocabulary = smollm2_vocabulary()
    words = []
    for token_id in range(len(vocabulary.tokens)):
        text = vocabulary.token_text(token_id)
        if text[:1] == " " and WORD.fullmatch(text[1:]) and len(vocabulary.encode(text[1:])) == 1 \
                and vocabulary.encode(text) == [token_id]:
            words.append(text[1:])
    return tuple(words)


@dataclass(frozen=True)
class PieceVocabulary:
    """Its byte-level BPE as decoding reads a vocabulary: ``decode(ids)`` the pieces as text (a leading space a
    space), ``len`` its size."""

    bpe: ByteBPE

    def decode(self, ids) -> list[str]:
        return [self.bpe.token_text(int(token_id)) for token_id in ids]

    def __len__(self) -> int:
        return len(self.bpe.tokens)


@dataclass(frozen=True)
class Prompt:
    """A prompt as a model that reads its own pieces continues it: the `Line` decoded, its vocabulary, and how the
    chosen pieces are written (joined as they are: a piece carries its own space)."""

    line: Line
    vocabulary: PieceVocabulary
    write: Callable[[list], str] = "".join


def real_prompt(text: str) -> Prompt:
    """``text`` in SmolLM2's pieces, continued until its end token at most; ValueError for an empty prompt."""
    vocabulary = smollm2_vocabulary()
    ids = vocabulary.encode(text)
    if not ids:
        raise ValueError("The prompt is empty: type a few words for the model to continue.")
    return Prompt(Line(None, ids, len(vocabulary.tokens), SMOLLM2_EOS_ID), PieceVocabulary(vocabulary))
