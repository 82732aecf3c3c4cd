"""Byte-level BPE (GPT-2's; Sennrich et al. 2016 over bytes), as a GGUF file's vocabulary keeps it: text to token
ids and back. Pieces are split first (each digit alone, then GPT-2's pattern: words with their leading space,
numbers, punctuation, spaces), each piece's bytes are written as GPT-2's printable characters ("Ġ" a space), and
merges are applied lowest rank first. Text is read as text: a control token's name typed in a line ("<|im_end|>")
is read as its characters, never as the control token."""

from __future__ import annotations

import functools

import regex

DIGIT = regex.compile(r"\p{N}")
GPT2_PIECES = regex.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")


@functools.cache
def byte_characters() -> tuple[str, ...]:
    """GPT-2's ``bytes_to_unicode``: byte b's printable character (printable Latin-1 bytes as themselves, the
    others moved to 256 + n in order)."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = iter(range(256, 512))
    return tuple(chr(b) if b in kept else chr(next(extra)) for b in range(256))


def pieces(text: str) -> list[str]:
    """``text`` split as SmolLM's pre-tokenizer splits it: every digit alone, then GPT-2's pattern."""
    found, start = [], 0
    for digit in DIGIT.finditer(text):
        found += GPT2_PIECES.findall(text[start:digit.start()]) + [digit.group()]
        start = digit.end()
    return found + GPT2_PIECES.findall(text[start:])


class ByteBPE:
    """A vocabulary (``tokens``: id -> its byte-level string) and its ``merges`` (``"a b"``, first merged first)."""

    def __init__(self, tokens, merges):
        self.tokens = tuple(tokens)
        self.ids = {token: index for index, token in enumerate(self.tokens)}
        self.ranks = {tuple(merge.split(" ", 1)): rank for rank, merge in enumerate(merges)}
        self._bytes_of = {char: byte for byte, char in enumerate(byte_characters())}

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``; ValueError naming a piece the vocabulary cannot spell (it spells every byte)."""
        ids = []
        for piece in pieces(text):
            ids += self._piece_ids("".join(byte_characters()[b] for b in piece.encode("utf-8")))
        return ids

    @functools.lru_cache(maxsize=65_536)  # noqa: B019 (one vocabulary a process: the cache lives as long as it)
    def _piece_ids(self, symbols: str) -> tuple[int, ...]:
        parts = list(symbols)
        while len(parts) > 1:
            pairs = [(self.ranks.get(pair, len(self.ranks)), index) for index, pair in enumerate(zip(parts, parts[1:]))]
            rank, index = min(pairs)
            if rank == len(self.ranks):
                break
            parts[index:index + 2] = [parts[index] + parts[index + 1]]
        unknown = [part for part in parts if part not in self.ids]
        if unknown:
            raise ValueError(f"The vocabulary has no token for {unknown[:4]!r}")
        return tuple(self.ids[part] for part in parts)

    def token_text(self, token_id: int) -> str:
        """One token as text (its bytes decoded; a piece of a character that spans tokens as U+FFFD)."""
        return self.decode([token_id])

    def decode(self, ids) -> str:
        data = bytes(self._bytes_of[char] for token_id in ids for char in self.tokens[int(token_id)]
                     if char in self._bytes_of)
        return data.decode("utf-8", errors="replace")
