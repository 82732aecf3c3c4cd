"""Corrupted lines for patching: a line of the same length as the clean one whose right answer differs in one
known way. ``dates`` another day, month or year in the same form; ``translate`` one word swapped for another of
its category; ``copy``, ``reverse``, ``sort`` one symbol changed; ``induction`` the first occurrence of the
repeated segment replaced by fresh syllables. NumPy only.
"""

from __future__ import annotations

import calendar

import numpy as np

from transformer.tasks.base import Task
from transformer.tasks.dates import MONTHS, YEARS, parse
from transformer.tasks.induction import SYLLABLES
from transformer.tasks.symbols import SYMBOLS
from transformer.tasks.translate import CATEGORY, LEXICON

DATE_PARTS = ("day", "month", "year")
CORRUPTIONS = {  # task -> what its corruption changes (the choices of ``part``; "" picks one)
    "dates": DATE_PARTS, "translate": ("word",), "copy": ("symbol",), "reverse": ("symbol",),
    "sort": ("symbol",), "induction": ("first occurrence",),
}


def corrupt(task: Task, tokens, seed: int = 0, part: str = "") -> list[str]:
    """A corrupted version of the source ``tokens`` of ``task``, drawn from ``seed``: same length, another right
    answer. ``part``: for ``dates`` which field ("day", "month", "year"; "" the first that can change).
    ValueError for a task without a corruption, a line not of the task's form, or a part that cannot change."""
    if task.name not in CORRUPTIONS:
        raise ValueError(f"Corruptions are defined for {sorted(CORRUPTIONS)}. Received: task={task.name!r}")
    rng, tokens = np.random.default_rng(seed), list(tokens)
    if task.name == "dates":
        return _date(tokens, rng, part)
    if task.name == "translate":
        return _word(tokens, rng)
    if task.name == "induction":
        return _first_occurrence(tokens, rng)
    return _symbol(tokens, rng, task)


def _date(tokens: list, rng: np.random.Generator, part: str) -> list[str]:
    if part not in ("", *DATE_PARTS):
        raise ValueError(f"A date's part is one of {DATE_PARTS}. Received: part={part!r}")
    text = "".join(tokens)
    date, match = parse(text)
    for name in (part,) if part else [DATE_PARTS[i] for i in rng.permutation(len(DATE_PARTS))]:
        written = _other_field(name, match[name], date, rng)
        if written:
            start, end = match.span(name)
            return list(text[:start] + written + text[end:])
    raise ValueError(f"No other {part or 'day, month or year'} is written with as many characters as in {text!r}: "
                     "the corrupted line must be as long as the clean one.")


def _other_field(name: str, written: str, date, rng: np.random.Generator) -> str:
    """Another value of field ``name`` written like ``written`` (as many characters, digits or a name) that keeps
    the date valid; "" when there is none."""
    if name == "day":
        days = range(1, calendar.monthrange(date.year, date.month)[1] + 1)
        options = [f"{d:02d}" if written.startswith("0") else str(d) for d in days]
    elif name == "month":
        numbers = [m for m in range(1, 13) if date.day <= calendar.monthrange(date.year, m)[1]]
        if written.isdigit():
            options = [f"{m:02d}" for m in numbers]
        else:
            options = [MONTHS[m - 1][: len(written)] if len(written) == 3 else MONTHS[m - 1] for m in numbers]
    else:
        options = [str(y) for y in range(YEARS[0], YEARS[1] + 1)
                   if date.day <= calendar.monthrange(y, date.month)[1]]
    options = [o for o in options if len(o) == len(written) and o != written]
    return options[int(rng.integers(len(options)))] if options else ""


def _word(tokens: list, rng: np.random.Generator) -> list[str]:
    unknown = sorted({word for word in tokens if word not in CATEGORY})
    if unknown or not tokens:
        raise ValueError(f"Words outside the translate model's vocabulary: {', '.join(unknown[:10]) or '(none)'}")
    swappable = [i for i, word in enumerate(tokens) if len(LEXICON[CATEGORY[word]]) > 1]
    position = swappable[int(rng.integers(len(swappable)))]
    others = [w for w in LEXICON[CATEGORY[tokens[position]]] if w != tokens[position]]
    return tokens[:position] + [others[int(rng.integers(len(others)))]] + tokens[position + 1:]


def _symbol(tokens: list, rng: np.random.Generator, task: Task) -> list[str]:
    task.solve(tokens)  # ValueError naming what is not a symbol
    if not tokens:
        raise ValueError("An empty line has no symbol to change.")
    for _ in range(100):  # a sorted line's answer can stay the same (b a -> a a sorts both ways): draw again
        position = int(rng.integers(len(tokens)))
        others = [s for s in SYMBOLS if s != tokens[position]]
        corrupted = tokens[:position] + [others[int(rng.integers(len(others)))]] + tokens[position + 1:]
        if task.solve(corrupted) != task.solve(tokens):
            return corrupted
    raise ValueError(f"No one-symbol change gives {' '.join(tokens)!r} another {task.name} answer.")


def repeated_segment(tokens) -> tuple[int, int, int]:
    """The longest segment written twice: ``(first, second, size)``; ValueError when no two tokens repeat."""
    best = (0, 0, 0)
    for second in range(1, len(tokens)):
        for first in range(second):
            size = 0
            while (second + size < len(tokens) and first + size < second
                   and tokens[first + size] == tokens[second + size]):
                size += 1
            if size > best[2]:
                best = (first, second, size)
    if best[2] < 2:
        raise ValueError("The line repeats no segment of two tokens or more: nothing for an induction head to copy.")
    return best


def _first_occurrence(tokens: list, rng: np.random.Generator) -> list[str]:
    unknown = sorted({t for t in tokens if t not in SYLLABLES})
    if unknown:
        raise ValueError(f"The induction task reads its 300 syllables. Received: {unknown[:8]}")
    first, _, size = repeated_segment(tokens)
    fresh = [s for s in SYLLABLES if s not in tokens]
    chosen = rng.choice(len(fresh), size=size, replace=False)
    return tokens[:first] + [fresh[i] for i in chosen] + tokens[first + size:]
