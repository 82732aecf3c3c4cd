"""The induction task: lines of random tokens in which a random segment appears twice, read by a decoder-only model.

Only an in-context rule predicts the second occurrence: the token after the earlier occurrence of the current token
(Olsson et al. 2022, "In-context Learning and Induction Heads"). The vocabulary (300 syllables) is large enough that
accidental repeats rarely mislead that rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer.tasks.base import PAD_ID, Task

_ONSETS, _VOWELS, _CODAS = "bdfgklmnprstvz", "aeiou", "mnkst"
SYLLABLES = tuple(f"{onset}{vowel}{coda}" for onset in _ONSETS for vowel in _VOWELS for coda in _CODAS)[:300]
TRAIN_SEGMENTS = (12, 30)  # the segment lengths a model is trained on (with 8–20 alone, induction did not form)
PROBE_SEGMENTS = (8, 20)  # the segment lengths the result is measured on
LINE_LENGTHS = (48, 64)
NO_RULE = "·"  # the rule's answer where the token did not occur before


@dataclass(frozen=True)
class RepeatedLine:
    """One line: ``tokens``, and its segment of ``size`` tokens written at ``first`` and again at ``second``."""

    tokens: tuple
    first: int
    second: int
    size: int

    @property
    def text(self) -> str:
        return " ".join(self.tokens)

    def predicted_positions(self, occurrence: str = "second") -> np.ndarray:
        """The positions whose next token is an occurrence's 2nd token on (a decoder predicts token i + 1 at i)."""
        start = self.second if occurrence == "second" else self.first
        return np.arange(start, start + self.size - 1)


def repeated_line(rng: np.random.Generator, lengths=LINE_LENGTHS, segments=TRAIN_SEGMENTS,
                  vocabulary_size: int = len(SYLLABLES)) -> RepeatedLine:
    """A line of ``lengths`` uniform random token indices (into `SYLLABLES`) whose random segment of ``segments``
    tokens is written a second time at a random later offset."""
    length = int(rng.integers(lengths[0], lengths[1] + 1))
    size = int(rng.integers(segments[0], min(segments[1], length // 2) + 1))
    first = int(rng.integers(0, length - 2 * size + 1))
    second = int(rng.integers(first + size, length - size + 1))
    indices = rng.integers(0, vocabulary_size, size=length)
    indices[second: second + size] = indices[first: first + size]
    return RepeatedLine(tuple(SYLLABLES[i] for i in indices), first, second, size)


def induction_rule(tokens) -> list:
    """The in-context rule's next token at every position: what followed the latest earlier occurrence of this
    position's token, or None where it did not occur before."""
    latest, predicted = {}, []
    for position, token in enumerate(tokens):
        earlier = latest.get(token)
        predicted.append(tokens[earlier + 1] if earlier is not None else None)
        latest[token] = position
    return predicted


_EXAMPLE = repeated_line(np.random.default_rng(7), (24, 24), (8, 8))


class InductionTask(Task):
    """A decoder-only task: next-token prediction on lines with a repeated segment (`repeated_line`)."""

    name = "induction"
    description = "Continue a line that repeats a segment: only a rule read in context predicts the repeat."
    decoder_only = True
    tokens = SYLLABLES
    lengths = LINE_LENGTHS
    vocabulary_hint = f"Its tokens are 300 syllables: {' '.join(SYLLABLES[:6])} … {SYLLABLES[-1]}."

    @property
    def example(self) -> str:
        return _EXAMPLE.text

    @property
    def prompt(self) -> str:
        """The example cut two tokens into its second occurrence: the model should write the rest of the segment."""
        return " ".join(_EXAMPLE.tokens[: _EXAMPLE.second + 2])

    def solve(self, tokens) -> list[str]:
        """The induction rule's next token at each position ("·" where the token did not occur before)."""
        unknown = sorted({t for t in tokens if t not in SYLLABLES})
        if unknown:
            raise ValueError(f"The induction task reads its 300 syllables. Received: {unknown[:8]}")
        return [token or NO_RULE for token in induction_rule(list(tokens))]

    def sample(self, rng, lengths):
        return list(repeated_line(rng, lengths).tokens)

    def fresh_line(self, rng, lengths):
        """A line of the measured distribution (its segment of `PROBE_SEGMENTS`), whatever ``lengths``."""
        return repeated_line(rng, LINE_LENGTHS, PROBE_SEGMENTS).text

    def examples(self, count, seed=0):
        """Lines of the measured distribution: ``alignment[j]`` is the position an induction head at query ``j``
        attends to (the one after the earlier occurrence of token ``j``), or None."""
        rng, triples = np.random.default_rng(seed), []
        for _ in range(count):
            line = repeated_line(rng, LINE_LENGTHS, PROBE_SEGMENTS)
            alignment = [None] * len(line.tokens)
            for j in range(line.second, line.second + line.size):
                alignment[j] = line.first + (j - line.second) + 1
            triples.append((line.text, " ".join(self.solve(line.tokens)), alignment))
        return triples


def line_ids(vocab, lines, length: int) -> np.ndarray:
    """Token lines as ``(B, length)`` ids padded with 0."""
    ids = np.full((len(lines), length), PAD_ID, np.int32)
    for row, line in enumerate(lines):
        ids[row, : len(line)] = vocab.encode(list(line))[:length]
    return ids
