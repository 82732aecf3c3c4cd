"""Synthetic sequence-to-sequence tasks whose correct attention is known. NumPy only.

Sources are sequences of symbols ``a`` … ``j`` of random length; the target is
the source copied, reversed or sorted. Ids: 0 = <pad>, 1 = <s>, 2 = </s>, then the symbols.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer.tokens import Vocabulary

PAD, START, END = "<pad>", "<s>", "</s>"
SPECIALS = (PAD, START, END)
SYMBOLS = tuple("abcdefghij")
PAD_ID, START_ID, END_ID = 0, 1, 2


def _copy(tokens):
    return list(tokens)


def _reverse(tokens):
    return list(reversed(tokens))


def _sort(tokens):
    return sorted(tokens)


def _shift(tokens):
    """Each symbol replaced by the next one (j wraps to a): attention stays diagonal, values change."""
    return [SYMBOLS[(SYMBOLS.index(t) + 1) % len(SYMBOLS)] for t in tokens]


@dataclass(frozen=True)
class Task:
    name: str
    description: str
    solve: object  # list[str] -> list[str]
    alignment: str | None  # "diagonal", "anti-diagonal" or None: where cross-attention should look


TASKS = {
    "copy": Task("copy", "Copy the source: cross-attention should be diagonal.", _copy, "diagonal"),
    "reverse": Task("reverse", "Reverse the source: cross-attention should be anti-diagonal.", _reverse,
                    "anti-diagonal"),
    "sort": Task("sort", "Sort the symbols: cross-attention follows the sorted order.", _sort, None),
    "shift": Task("shift", "Replace each symbol by the next one (j → a): diagonal attention, new values.",
                  _shift, "diagonal"),
}


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"Unknown task. Choose one of {sorted(TASKS)}. Received: task={name!r}")
    return TASKS[name]


def task_vocabulary(tokens=SPECIALS + SYMBOLS) -> Vocabulary:
    """The tasks' vocabulary: specials (reserved: typed input may not use them), then the symbols."""
    return Vocabulary.of(tokens, reserved=SPECIALS)


def random_sources(rng: np.random.Generator, count: int, lengths: tuple[int, int]) -> list[list[str]]:
    """``count`` random symbol sequences with lengths drawn uniformly from ``lengths`` (inclusive)."""
    low, high = lengths
    return [list(rng.choice(SYMBOLS, size=rng.integers(low, high + 1))) for _ in range(count)]


def make_batch(task: Task, vocab: Vocabulary, sources, length: int):
    """Padded arrays for teacher forcing.

    Returns ``src (B, length)``, ``decoder_input (B, length + 1)`` = <s> + target and
    ``labels (B, length + 1)`` = target + </s>, all padded with 0.
    """
    batch = len(sources)
    src = np.zeros((batch, length), np.int32)
    decoder_input = np.zeros((batch, length + 1), np.int32)
    labels = np.zeros((batch, length + 1), np.int32)
    for row, source in enumerate(sources):
        target = vocab.encode(task.solve(source))
        src[row, : len(source)] = vocab.encode(source)
        decoder_input[row, : len(target) + 1] = [START_ID] + target
        labels[row, : len(target) + 1] = target + [END_ID]
    return src, decoder_input, labels
