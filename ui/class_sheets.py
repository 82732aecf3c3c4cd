"""The class's sheets, as CSV: the history (a row a question) and every student's answers (a row an answer), named
only as the teacher's "show names" allows; a cell a spreadsheet would read as a formula is written as text."""

from __future__ import annotations

import csv
import io

from classroom.questions import label_of, mark, tally

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as a formula (OWASP: CSV injection)


def csv_cell(value):
    """A text cell that a spreadsheet would run as a formula, prefixed with ``'`` (shown, never run); numbers and
    other text as they are."""
    return f"'{value}" if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def history_csv(rows) -> bytes:
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["question", "kind", "prompt", "view", "answered", "accuracy", "mean score", "commonest wrong"])
    for question, answered in rows:
        counted = tally(question.kind, question.shown, [a.given for a in answered], question.answer)
        writer.writerow([csv_cell(cell) for cell in (
            question.number, question.kind, question.prompt, question.view, counted.answered,
            "" if counted.accuracy is None else f"{counted.accuracy:.3f}",
            "" if counted.mean_score is None else f"{counted.mean_score:.3f}",
            counted.common_wrong[0] if counted.common_wrong else "")])
    return text.getvalue().encode()


def students_csv(rows, names_shown: bool) -> bytes:
    """Every student's answer to every question with its mark: ``student`` the nickname when the teacher shows
    names, else "student 1", "student 2", … in the order they first answered."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["question", "student", "answer", "right", "score"])
    numbers: dict = {}
    for question, answered in rows:
        for entry in answered:
            number = numbers.setdefault(entry.student, len(numbers) + 1)
            who = (entry.nickname or f"student {number}") if names_shown else f"student {number}"
            marked = mark(question.kind, question.shown, question.answer, entry.given) if question.revealed else None
            writer.writerow([csv_cell(cell) for cell in (
                question.number, who, label_of(question.kind, question.shown, entry.given),
                "" if marked is None else ("yes" if marked.correct else "no"),
                "" if marked is None else f"{marked.score:.3f}")])
    return text.getvalue().encode()
