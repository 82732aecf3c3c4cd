"""The kinds of question a class is asked, and how an answer is marked and a class's answers counted. Plain data in
(JSON-able dicts: what the question shows, ``shown``; the model's answer, ``answer``; a student's, ``given``), plain
data and NumPy out. The model's answer is computed by the engine from the question's own run (`ui.class_room`).

Kinds: ``where`` (where will this query look? one key), ``cells`` (which cells may attend? cells of an N × N grid),
``head`` (which head does this? one head), ``next`` (what will the model write next? a token), ``method`` (which
explanation is right? one method), ``choice`` (the teacher's own multiple choice)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

KINDS = {
    "where": "Where will this query look?",
    "cells": "Which cells may attend?",
    "head": "Which head does this?",
    "next": "What will the model write next?",
    "method": "Which explanation is right?",
    "choice": "Multiple choice",
}
PICK_ONE = {"where": "key", "head": "head", "method": "method", "choice": "option"}  # a kind whose answer is one of
# its options: the name of the index in ``given`` and ``answer``
MAX_TOKEN_CHARS = 40  # a typed next token, at most


@dataclass(frozen=True)
class Mark:
    """One student's answer against the model's: ``correct``, and ``score`` in [0, 1] (where: the weight the
    model gives the key chosen; cells: the share of cells right; else 1 or 0)."""

    correct: bool
    score: float


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"A question's kind is one of {sorted(KINDS)}. Received: kind={str(kind)[:40]!r}")
    return kind


def option_count(kind: str, shown: dict) -> int:
    """How many options a pick-one question offers (keys, heads, methods, choices)."""
    return len(shown["options"])


def check_given(kind: str, shown: dict, given) -> dict:
    """A student's answer checked against what the question offers: the answer as kept; ValueError naming it."""
    if not isinstance(given, dict):
        raise ValueError(f"An answer is a mapping. Received: {type(given).__name__}")
    if kind in PICK_ONE:
        name, count = PICK_ONE[kind], option_count(kind, shown)
        index = given.get(name)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            raise ValueError(f"The answer picks one of {count} ({name} 0 to {count - 1}). Received: {name}={index!r}")
        return {name: index}
    if kind == "cells":
        size = len(shown["queries"]), len(shown["keys"])
        cells = given.get("cells")
        if not isinstance(cells, list) or len(cells) > size[0] * size[1] or not all(
                isinstance(cell, list) and len(cell) == 2 and all(isinstance(v, int) for v in cell)
                and 0 <= cell[0] < size[0] and 0 <= cell[1] < size[1] for cell in cells):
            raise ValueError(f"The answer is a list of [query, key] cells of the {size[0]} × {size[1]} grid. "
                             f"Received: {str(cells)[:80]}")
        return {"cells": sorted({(q, k) for q, k in cells})}
    token = " ".join(str(given.get("token", "")).split())
    if not token or len(token) > MAX_TOKEN_CHARS:
        raise ValueError(f"The answer is one token of 1 to {MAX_TOKEN_CHARS} characters. Received: {token[:60]!r}")
    if "options" in shown and token not in shown["options"]:
        raise ValueError(f"The answer is one of the tokens offered. Received: {token[:60]!r}")
    return {"token": token}


def chosen_grid(shown: dict, given: dict) -> np.ndarray:
    """``(N_q, N_k)`` bool: the cells a student marked as may-attend."""
    grid = np.zeros((len(shown["queries"]), len(shown["keys"])), bool)
    for query, key in given["cells"]:
        grid[query, key] = True
    return grid


def mark(kind: str, shown: dict, answer: dict, given: dict) -> Mark:
    """``given`` (checked) against the model's ``answer``."""
    if kind == "where":
        weights = np.asarray(answer["weights"], np.float64)  # (N_k,)
        chosen = given["key"]
        return Mark(bool(weights[chosen] >= weights.max()), float(weights[chosen]))
    if kind == "cells":
        right = chosen_grid(shown, given) == np.asarray(answer["mask"], bool)  # (N_q, N_k)
        return Mark(bool(right.all()), float(right.mean()))
    if kind == "next":
        correct = given["token"] == answer["token"]
        return Mark(correct, float(correct))
    name = PICK_ONE[kind]
    correct = given[name] == answer[name]
    return Mark(correct, float(correct))


def label_of(kind: str, shown: dict, given: dict) -> str:
    """A student's answer as the class sees it in a tally: the option's label, the token, or the cells' count."""
    if kind == "where":  # a token may repeat: its position names it, as the picker writes it
        return f"key {given['key']}·{shown['options'][given['key']]}"
    if kind in PICK_ONE:
        return str(shown["options"][given[PICK_ONE[kind]]])
    if kind == "cells":
        return f"{len(given['cells'])} cells"
    return given["token"]


def answer_label(kind: str, shown: dict, answer: dict) -> str:
    """The model's answer in words: the key it looks at most and with what weight, the head, the token, the method,
    the option, or how many cells may attend."""
    if kind == "where":
        key = answer["key"]
        return f"key {key}·{shown['options'][key]}, weight {float(np.max(answer['weights'])):.2f}"
    if kind in PICK_ONE:
        return str(shown["options"][answer[PICK_ONE[kind]]])
    if kind == "cells":
        allowed = int(np.asarray(answer["mask"], bool).sum())
        return f"{allowed} cells may attend (blue in the picture)"
    return answer["token"]


@dataclass(frozen=True)
class Tally:
    """A class's answers to one question, counted: ``answered``; ``counts`` (a pick-one kind: per option, (K,);
    cells: per cell, (N_q, N_k); next: per token, a dict); after the reveal ``accuracy`` (the share correct, None
    before or with no answer), ``mean_score`` and ``common_wrong`` (the most common wrong answer's label and count)."""

    answered: int
    counts: object
    accuracy: float | None = None
    mean_score: float | None = None
    common_wrong: tuple | None = None


def tally(kind: str, shown: dict, givens: list[dict], answer: dict | None = None) -> Tally:
    """Count ``givens`` (checked answers); with ``answer`` (after the reveal) mark them too."""
    if kind in PICK_ONE:
        counts = np.bincount([given[PICK_ONE[kind]] for given in givens], minlength=option_count(kind, shown))
    elif kind == "cells":
        counts = sum((chosen_grid(shown, given).astype(np.int64) for given in givens),
                     np.zeros((len(shown["queries"]), len(shown["keys"])), np.int64))
    else:
        counts = dict(Counter(given["token"] for given in givens).most_common())
    if answer is None or not givens:
        return Tally(len(givens), counts)
    marks = [mark(kind, shown, answer, given) for given in givens]
    if kind == "cells":
        wrong = [common_cell_slip(shown, counts, len(givens), np.asarray(answer["mask"], bool))]
    else:
        wrong = Counter(label_of(kind, shown, given) for given, m in zip(givens, marks)
                        if not m.correct).most_common(1)
    return Tally(len(givens), counts, float(np.mean([m.correct for m in marks])),
                 float(np.mean([m.score for m in marks])), wrong[0] if wrong and wrong[0] else None)


def cell_slips(counts, answered: int, mask) -> np.ndarray:
    """``(N_q, N_k)``: how many of ``answered`` students got each cell wrong: a blocked cell marked, or a cell that
    may attend left out (``counts``: how many marked each; ``mask``: True = may attend)."""
    counts = np.asarray(counts, np.int64)
    return np.where(mask, answered - counts, counts)


def common_cell_slip(shown: dict, counts, answered: int, mask) -> tuple | None:
    """The cell the class got wrong most, named (``"cell 0·a→1·b: blocked, marked"``), and how many did; None when
    nobody slipped."""
    slips = cell_slips(counts, answered, mask)
    query, key = np.unravel_index(int(np.argmax(slips)), slips.shape)
    if slips[query, key] == 0:
        return None
    how = "may attend, left out" if mask[query, key] else "blocked, marked"
    return (f"cell {query}·{shown['queries'][query]}→{key}·{shown['keys'][key]}: {how}", int(slips[query, key]))
