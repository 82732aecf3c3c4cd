"""Sequence-to-sequence tasks whose correct attention is known, each with its own vocabulary. NumPy only.

Every task turns typed text into source tokens, solves a source, writes a target as a person
writes it, draws random examples with their alignment, and knows its tokens. Ids: 0 = <pad>,
1 = <s>, 2 = </s>, then the task's tokens.
"""

from __future__ import annotations

from transformer.tasks.base import (
    END,
    END_ID,
    PAD,
    PAD_ID,
    SPECIALS,
    START,
    START_ID,
    Task,
    make_batch,
    task_vocabulary,
)
from transformer.tasks.dates import DatesTask
from transformer.tasks.induction import InductionTask
from transformer.tasks.symbols import SYMBOLS, SymbolTask, random_sources
from transformer.tasks.translate import TranslateTask

TASKS: dict[str, Task] = {
    "copy": SymbolTask("copy", "Copy the source: cross-attention should be diagonal.", "diagonal"),
    "reverse": SymbolTask("reverse", "Reverse the source: cross-attention should be anti-diagonal.", "anti-diagonal"),
    "sort": SymbolTask("sort", "Sort the symbols: cross-attention follows the sorted order.", None),
    "shift": SymbolTask("shift", "Replace each symbol by the next one (j → a): diagonal attention, new values.",
                        "diagonal"),
    "dates": DatesTask(),
    "translate": TranslateTask(),
    "induction": InductionTask(),
}


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"Unknown task. Choose one of {sorted(TASKS)}. Received: task={name!r}")
    return TASKS[name]


__all__ = ["END", "END_ID", "PAD", "PAD_ID", "SPECIALS", "START", "START_ID", "SYMBOLS", "TASKS", "Task",
           "get_task", "make_batch", "random_sources", "task_vocabulary"]
