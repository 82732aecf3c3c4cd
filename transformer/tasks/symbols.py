"""The symbol tasks: sources of ``a`` … ``j`` of random length, copied, reversed, sorted or shifted."""

from __future__ import annotations

import numpy as np

from transformer.tasks.base import Task

SYMBOLS = tuple("abcdefghij")


def _shift(tokens):
    """Each symbol replaced by the next one (j wraps to a): attention stays diagonal, values change."""
    return [SYMBOLS[(SYMBOLS.index(t) + 1) % len(SYMBOLS)] for t in tokens]


SOLVERS = {"copy": list, "reverse": lambda tokens: list(reversed(tokens)), "sort": sorted, "shift": _shift}


def random_sources(rng: np.random.Generator, count: int, lengths: tuple[int, int]) -> list[list[str]]:
    """``count`` random symbol sequences with lengths drawn uniformly from ``lengths`` (inclusive)."""
    low, high = lengths
    return [list(rng.choice(SYMBOLS, size=rng.integers(low, high + 1))) for _ in range(count)]


class SymbolTask(Task):
    """One of copy, reverse, sort, shift over the symbols ``a`` … ``j``."""

    tokens = SYMBOLS
    own_lengths = False
    example = "a b c d e f\nj i h g\nc a b e d"

    def __init__(self, name: str, description: str, alignment: str | None):
        self.name, self.description, self.alignment = name, description, alignment

    def solve(self, tokens) -> list[str]:
        unknown = sorted({t for t in tokens if t not in SYMBOLS})
        if unknown:
            raise ValueError(f"The {self.name} task reads the symbols {' '.join(SYMBOLS)}. Received: {unknown}")
        return [str(t) for t in SOLVERS[self.name](list(tokens))]

    def sample(self, rng, lengths):
        return random_sources(rng, 1, lengths)[0]

    def align(self, tokens) -> list[int]:
        positions = list(range(len(tokens)))
        return {"reverse": positions[::-1], "sort": sorted(positions, key=lambda i: tokens[i])}.get(self.name,
                                                                                                  positions)

    def examples(self, count, seed=0):
        rng = np.random.default_rng(seed)
        return [(" ".join(source), " ".join(self.solve(source)), self.align(source))
                for source in random_sources(rng, count, self.lengths)]
