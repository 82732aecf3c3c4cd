"""The kinds of question a class is asked, and how an answer is marked and a class's answers counted. Plain data in
(JSON-able dicts: what the question shows, ``shown``; the model's answer, ``answer``; a student's, ``given``), plain
data and NumPy out. The model's answer is computed by the engine from the question's own run (`ui.class_room`).

Each kind is a `QuestionKind` that answers for itself (checks, marks, counts and names an answer):
``where`` (where will this query look? one key), ``cells`` (which cells may attend? cells of an N × N grid),
``head`` (which head does this? one head), ``next`` (what will the model write next? a token), ``method`` (which
explanation is right? one method), ``choice`` (the teacher's own multiple choice). A question is stored with its
kind's name; `kind_of` reads it back."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

MAX_TOKEN_CHARS = 40  # a typed next token, at most


@dataclass(frozen=True)
class Mark:
    """One student's answer against the model's: ``correct``, and ``score`` in [0, 1] (where: the weight the
    model gives the key chosen; cells: the share of cells right; else 1 or 0)."""

    correct: bool
    score: float


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


class QuestionKind:
    """One kind of question: its title, and how a student's answer is checked, marked, named and counted."""

    name = ""  # as a question is stored (`kind_of` reads it back)
    title = ""
    score_is_weight = False  # a `Mark.score` is the weight the model gives the answer (else the share right)

    def check(self, shown: dict, given: dict) -> dict:
        """``given`` (a mapping) checked against what the question offers: the answer as kept; ValueError naming it."""
        raise NotImplementedError

    def mark(self, shown: dict, answer: dict, given: dict) -> Mark:
        """``given`` (checked) against the model's ``answer``."""
        raise NotImplementedError

    def label(self, shown: dict, given: dict) -> str:
        """A student's answer as the class sees it in a tally."""
        raise NotImplementedError

    def answer_label(self, shown: dict, answer: dict) -> str:
        """The model's answer in words."""
        raise NotImplementedError

    def counts(self, shown: dict, givens: list[dict]):
        """The class's answers counted (`Tally.counts`)."""
        raise NotImplementedError

    def common_wrong(self, shown: dict, answer: dict, givens: list[dict], marks: list[Mark], counts) -> tuple | None:
        """The most common wrong answer's label and how many gave it; None when nobody was wrong."""
        wrong = Counter(self.label(shown, given) for given, m in zip(givens, marks) if not m.correct).most_common(1)
        return wrong[0] if wrong else None


class PickOne(QuestionKind):
    """One of the question's options (``shown["options"]``), kept under the index's name (`index_name`)."""

    def __init__(self, name: str, title: str, index_name: str):
        self.name, self.title, self.index_name = name, title, index_name

    def check(self, shown: dict, given: dict) -> dict:
        name, count = self.index_name, len(shown["options"])
        index = given.get(name)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            raise ValueError(f"The answer picks one of {count} ({name} 0 to {count - 1}). Received: {name}={index!r}")
        return {name: index}

    def mark(self, shown: dict, answer: dict, given: dict) -> Mark:
        correct = given[self.index_name] == answer[self.index_name]
        return Mark(correct, float(correct))

    def label(self, shown: dict, given: dict) -> str:
        return str(shown["options"][given[self.index_name]])

    def answer_label(self, shown: dict, answer: dict) -> str:
        return str(shown["options"][answer[self.index_name]])

    def counts(self, shown: dict, givens: list[dict]):
        return np.bincount([given[self.index_name] for given in givens], minlength=len(shown["options"]))


class WhereItLooks(PickOne):
    """Where will this query look? One key of the query's row, marked by the weight the model gives it."""

    def __init__(self):
        super().__init__("where", "Where will this query look?", "key")

    def mark(self, shown: dict, answer: dict, given: dict) -> Mark:
        weights = np.asarray(answer["weights"], np.float64)  # (N_k,)
        chosen = given["key"]
        return Mark(bool(weights[chosen] >= weights.max()), float(weights[chosen]))

    def label(self, shown: dict, given: dict) -> str:  # a token may repeat: its position names it, as picked
        return f"key {given['key']}·{shown['options'][given['key']]}"

    def answer_label(self, shown: dict, answer: dict) -> str:
        key = answer["key"]
        return f"key {key}·{shown['options'][key]}, weight {float(np.max(answer['weights'])):.2f}"

    score_is_weight = True


class Cells(QuestionKind):
    """Which cells may attend? The cells of the N_q × N_k grid a student marks, marked cell by cell."""

    name, title = "cells", "Which cells may attend?"

    def check(self, shown: dict, given: dict) -> dict:
        size = len(shown["queries"]), len(shown["keys"])
        cells = given.get("cells")
        if not isinstance(cells, list) or len(cells) > size[0] * size[1] or not all(
                isinstance(cell, list) and len(cell) == 2 and all(isinstance(v, int) for v in cell)
                and 0 <= cell[0] < size[0] and 0 <= cell[1] < size[1] for cell in cells):
            raise ValueError(f"The answer is a list of [query, key] cells of the {size[0]} × {size[1]} grid. "
                             f"Received: {str(cells)[:80]}")
        return {"cells": sorted({(q, k) for q, k in cells})}

    def mark(self, shown: dict, answer: dict, given: dict) -> Mark:
        right = chosen_grid(shown, given) == np.asarray(answer["mask"], bool)  # (N_q, N_k)
        return Mark(bool(right.all()), float(right.mean()))

    def label(self, shown: dict, given: dict) -> str:
        return f"{len(given['cells'])} cells"

    def answer_label(self, shown: dict, answer: dict) -> str:
        allowed = int(np.asarray(answer["mask"], bool).sum())
        return f"{allowed} cells may attend (blue in the picture)"

    def counts(self, shown: dict, givens: list[dict]):
        return sum((chosen_grid(shown, given).astype(np.int64) for given in givens),
                   np.zeros((len(shown["queries"]), len(shown["keys"])), np.int64))

    def common_wrong(self, shown: dict, answer: dict, givens: list[dict], marks: list[Mark], counts) -> tuple | None:
        return common_cell_slip(shown, counts, len(givens), np.asarray(answer["mask"], bool))


class NextToken(QuestionKind):
    """What will the model write next? One token, typed or picked from those offered (``shown["options"]``)."""

    name, title = "next", "What will the model write next?"

    def check(self, shown: dict, given: dict) -> dict:
        """A piece picked among those offered is kept exactly (a real model's " Paris" is not "Paris"); a typed
        one is tidied (its spaces trimmed and single)."""
        raw = str(given.get("token", ""))
        token = raw if raw in shown.get("options", ()) else " ".join(raw.split())
        if not token or len(token) > MAX_TOKEN_CHARS:
            raise ValueError(f"The answer is one token of 1 to {MAX_TOKEN_CHARS} characters. Received: "
                             f"{token[:60]!r}")
        if "options" in shown and token not in shown["options"]:
            raise ValueError(f"The answer is one of the tokens offered. Received: {token[:60]!r}")
        return {"token": token}

    def mark(self, shown: dict, answer: dict, given: dict) -> Mark:
        correct = given["token"] == answer["token"]
        return Mark(correct, float(correct))

    def label(self, shown: dict, given: dict) -> str:
        return given["token"]

    def answer_label(self, shown: dict, answer: dict) -> str:
        return answer["token"]

    def counts(self, shown: dict, givens: list[dict]):
        return dict(Counter(given["token"] for given in givens).most_common())


QUESTION_KINDS = {kind.name: kind for kind in (
    WhereItLooks(), Cells(), PickOne("head", "Which head does this?", "head"), NextToken(),
    PickOne("method", "Which explanation is right?", "method"), PickOne("choice", "Multiple choice", "option"))}
KINDS = {name: kind.title for name, kind in QUESTION_KINDS.items()}  # a kind's name -> its title


def kind_of(name: str) -> QuestionKind:
    """The kind a question is stored as; ValueError naming an unknown one."""
    if name not in QUESTION_KINDS:
        raise ValueError(f"A question's kind is one of {sorted(QUESTION_KINDS)}. Received: kind={str(name)[:40]!r}")
    return QUESTION_KINDS[name]


def check_kind(kind: str) -> str:
    return kind_of(kind).name


def check_given(kind: str, shown: dict, given) -> dict:
    """A student's answer checked against what the question offers: the answer as kept; ValueError naming it."""
    if not isinstance(given, dict):
        raise ValueError(f"An answer is a mapping. Received: {type(given).__name__}")
    return kind_of(kind).check(shown, given)


def chosen_grid(shown: dict, given: dict) -> np.ndarray:
    """``(N_q, N_k)`` bool: the cells a student marked as may-attend."""
    grid = np.zeros((len(shown["queries"]), len(shown["keys"])), bool)
    for query, key in given["cells"]:
        grid[query, key] = True
    return grid


def mark(kind: str, shown: dict, answer: dict, given: dict) -> Mark:
    """``given`` (checked) against the model's ``answer``."""
    return kind_of(kind).mark(shown, answer, given)


def label_of(kind: str, shown: dict, given: dict) -> str:
    """A student's answer as the class sees it in a tally: the option's label, the token, or the cells' count."""
    return kind_of(kind).label(shown, given)


def answer_label(kind: str, shown: dict, answer: dict) -> str:
    """The model's answer in words: the key it looks at most and with what weight, the head, the token, the method,
    the option, or how many cells may attend."""
    return kind_of(kind).answer_label(shown, answer)


def tally(kind: str, shown: dict, givens: list[dict], answer: dict | None = None) -> Tally:
    """Count ``givens`` (checked answers); with ``answer`` (after the reveal) mark them too."""
    asked = kind_of(kind)
    counts = asked.counts(shown, givens)
    if answer is None or not givens:
        return Tally(len(givens), counts)
    marks = [asked.mark(shown, answer, given) for given in givens]
    return Tally(len(givens), counts, float(np.mean([m.correct for m in marks])),
                 float(np.mean([m.score for m in marks])), asked.common_wrong(shown, answer, givens, marks, counts))


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
