"""Text -> padded token ids. Pure Python and NumPy; no TensorFlow.

Input text holds one sequence per line, tokens separated by whitespace. When
every token (and the padding symbol) is an integer, the ids are those integers,
as in the seed's ``1 2 3 4 5 0 0``; otherwise a vocabulary is built: the pad
symbols first, then every other token in order of first appearance.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

MAX_LINES = 16  # sequences per batch
MAX_TOKEN_CHARS = 200  # a longer token is refused: nobody can read it on an axis


@dataclass(frozen=True)
class Vocabulary:
    """Token text <-> ids, for the live text and for a trained model alike.

    ``tokens``: id ``i`` is ``tokens[i]``; None means tokens are their own integer ids ``0 … size - 1``.
    ``reserved``: tokens that typed input may not use (a trained model's ``<pad>``, ``<s>``, ``</s>``).
    """

    tokens: tuple | None
    size: int
    reserved: tuple = ()

    @classmethod
    def of(cls, tokens, reserved=()) -> Vocabulary:
        """The vocabulary whose ids are the positions of ``tokens``."""
        return cls(tuple(tokens), len(tokens), tuple(reserved))

    @functools.cached_property
    def index(self) -> dict | None:
        """``{token: id}``; None in integer mode."""
        return None if self.tokens is None else {token: i for i, token in enumerate(self.tokens)}

    @property
    def is_integer(self) -> bool:
        return self.tokens is None

    def __len__(self) -> int:
        return self.size

    def lookup(self, token: str) -> int | None:
        """The id of ``token``, or None when it has none."""
        if self.tokens is None:
            return int(token) if _is_integer(token) and 0 <= int(token) < self.size else None
        return self.index.get(token)

    def encode(self, tokens) -> list[int]:
        """Ids of typed ``tokens``; ValueError naming every token without one (or reserved)."""
        unknown = sorted({t for t in tokens if self.lookup(t) is None or t in self.reserved})
        if unknown:
            usable = [t for t in (self.tokens or ()) if t not in self.reserved]
            hint = f" Use the symbols {' '.join(usable)}." if 0 < len(usable) <= 20 else ""
            shown = ", ".join(t if t.isalnum() and len(t) > 0 else repr(t) for t in unknown[:10])
            raise ValueError(f"Tokens outside this model's vocabulary: {shown}.{hint}")
        return [self.lookup(t) for t in tokens]

    def decode(self, ids) -> list[str]:
        """Token text of ``ids``."""
        return [str(i) if self.tokens is None else self.tokens[i] for i in ids]


@dataclass(frozen=True)
class EncodedBatch:
    """One text turned into a padded batch.

    ids: ``(B, N)`` int32; tokens: ``(B, N)`` token text after padding and truncation;
    lengths: tokens per line as typed; truncated: which lines were longer than N.
    """

    ids: np.ndarray
    tokens: tuple
    lengths: tuple
    truncated: tuple


def _is_integer(token: str) -> bool:
    return token.isascii() and token.lstrip("-").isdigit()


def text_lines(text: str, name: str) -> list[str]:
    """The non-empty lines of ``text``, stripped; ValueError naming ``name`` when there are none or too many."""
    if not isinstance(text, str):
        raise ValueError(f"{name} text must be a string. Received: {type(text).__name__}")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"The {name} text is empty: type at least one sequence, one per line.")
    if len(lines) > MAX_LINES:
        raise ValueError(f"The {name} text has {len(lines)} lines; at most {MAX_LINES} sequences are allowed.")
    return lines


def split_lines(text: str, name: str) -> list[list[str]]:
    """Non-empty lines of ``text`` as token lists; ValueError naming ``name`` when unusable."""
    lines = [line.split() for line in text_lines(text, name)]
    long_tokens = sorted({token for line in lines for token in line if len(token) > MAX_TOKEN_CHARS})
    if long_tokens:
        shown = ", ".join(repr(token[:20] + "…") for token in long_tokens[:3])
        raise ValueError(f"Tokens in the {name} text are longer than {MAX_TOKEN_CHARS} characters: {shown}")
    return lines


def check_pad_symbols(pad_symbols) -> tuple[str, ...]:
    """Pad symbols as a tuple of non-empty, whitespace-free strings."""
    symbols = tuple(str(symbol) for symbol in pad_symbols)
    if not symbols:
        raise ValueError("Choose at least one pad symbol (for example 0 or <pad>).")
    bad = [symbol for symbol in symbols if not symbol or symbol.split() != [symbol]]
    if bad:
        raise ValueError(f"Pad symbols must be non-empty and contain no spaces. Received: {bad!r}")
    return symbols


def build_vocabulary(token_lines, pad_symbols, max_size: int) -> Vocabulary:
    """Integer ids when every token and the first pad symbol are integers, else a built index.

    ValueError names the offending tokens when an integer id falls outside
    ``[0, max_size)`` or when there are more than ``max_size`` distinct tokens.
    """
    tokens = [token for line in token_lines for token in line]
    if all(_is_integer(token) for token in tokens + [pad_symbols[0]]):
        out_of_range = sorted({token for token in tokens + list(pad_symbols[:1])
                               if not 0 <= int(token) < max_size}, key=int)
        if out_of_range:
            raise ValueError(
                f"Integer token ids must lie in 0..{max_size - 1}. Received: {', '.join(out_of_range[:10])}"
            )
        return Vocabulary(None, max_size)
    index: dict[str, int] = {}
    for token in list(pad_symbols) + tokens:
        index.setdefault(token, len(index))
    if len(index) > max_size:
        raise ValueError(f"The text has {len(index)} distinct tokens; at most {max_size} fit the vocabulary.")
    return Vocabulary(tuple(index), max_size)


def pad_ids(vocabulary: Vocabulary, pad_symbols) -> tuple[int, ...]:
    """Ids of the pad symbols that have one (a non-integer pad in integer mode has none)."""
    ids = (vocabulary.lookup(symbol) for symbol in pad_symbols)
    return tuple(sorted({token_id for token_id in ids if token_id is not None}))


def encode_lines(token_lines, vocabulary: Vocabulary, pad_symbol: str, length: int) -> EncodedBatch:
    """Right-pad every line to ``length`` with ``pad_symbol``, truncating longer ones."""
    if not isinstance(length, int) or length < 1:
        raise ValueError(f"Sequence length must be a positive integer. Received: {length!r}")
    rows = [tuple(line[:length]) + (pad_symbol,) * max(0, length - len(line)) for line in token_lines]
    ids = np.array([[vocabulary.lookup(token) for token in row] for row in rows], dtype=np.int32)  # (B, N)
    lengths = tuple(len(line) for line in token_lines)
    return EncodedBatch(ids, tuple(rows), lengths, tuple(n > length for n in lengths))
