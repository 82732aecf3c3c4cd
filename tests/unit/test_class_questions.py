"""How a class's answers are marked and counted (classroom/questions.py), against sums written out by hand."""

import numpy as np
import pytest

from classroom.questions import KINDS, QUESTION_KINDS, Mark, QuestionKind, check_given, kind_of, mark, tally
from ui.class_student import VIEWS
from ui.class_views import TALLIES

WHERE = {"options": ["<s>", "the", "cat", "the"]}
CELLS = {"queries": ["a", "b", "c"], "keys": ["a", "b", "c"]}
CAUSAL = np.tril(np.ones((3, 3), bool)).tolist()


def test_where_a_query_looks_is_marked_by_the_weight_given_the_key_chosen():
    answer = {"weights": [0.1, 0.2, 0.6, 0.1]}
    assert mark("where", WHERE, answer, {"key": 2}) == Mark(True, 0.6)
    assert mark("where", WHERE, answer, {"key": 3}) == Mark(False, 0.1)
    given = [{"key": 2}, {"key": 2}, {"key": 1}, {"key": 3}, {"key": 1}]
    counted = tally("where", WHERE, given, answer)
    assert counted.counts.tolist() == [0, 2, 2, 1] and counted.answered == 5
    assert counted.accuracy == pytest.approx(2 / 5)
    assert counted.mean_score == pytest.approx((0.6 * 2 + 0.2 * 2 + 0.1) / 5)
    assert counted.common_wrong == ("key 1·the", 2)  # key 3 is another "the", chosen once: told apart
    assert tally("where", WHERE, given).accuracy is None  # before the reveal: counts only


def test_which_cells_may_attend_is_marked_cell_by_cell():
    causal = check_given("cells", CELLS, {"cells": [[0, 0], [1, 0], [1, 1], [2, 0], [2, 1], [2, 2]]})
    everything = check_given("cells", CELLS, {"cells": [[q, k] for q in range(3) for k in range(3)]})
    assert mark("cells", CELLS, {"mask": CAUSAL}, causal) == Mark(True, 1.0)
    assert mark("cells", CELLS, {"mask": CAUSAL}, everything) == Mark(False, 6 / 9)
    counted = tally("cells", CELLS, [causal, everything], {"mask": CAUSAL})
    assert counted.counts.tolist() == [[2, 1, 1], [2, 2, 1], [2, 2, 2]]
    # the cell the class got wrong most, named (it was "9 cells": a count, no cell; issue 87, item 5)
    assert counted.accuracy == 0.5 and counted.common_wrong == ("cell 0·a→1·b: blocked, marked", 1)
    missed = tally("cells", CELLS, [check_given("cells", CELLS, {"cells": [[0, 0]]})] * 3, {"mask": CAUSAL})
    assert missed.common_wrong == ("cell 1·b→0·a: may attend, left out", 3)


def test_a_pick_one_and_a_typed_token_are_right_or_wrong():
    shown = {"options": ["A", "B", "C"]}
    assert mark("choice", shown, {"option": 1}, {"option": 1}) == Mark(True, 1.0)
    assert tally("head", shown, [{"head": 0}, {"head": 2}, {"head": 2}], {"head": 2}).counts.tolist() == [1, 0, 2]
    assert check_given("next", {}, {"token": "  cat \n"}) == {"token": "cat"}
    assert tally("next", {}, [{"token": "cat"}, {"token": "dog"}, {"token": "cat"}], {"token": "dog"}).counts == \
        {"cat": 2, "dog": 1}
    for bad in ({"token": ""}, {"token": "x" * 41}):
        with pytest.raises(ValueError, match="one token"):
            check_given("next", {}, bad)


def test_an_offered_piece_keeps_its_leading_space():
    """A real language model's pieces carry their space (" Paris" is not "Paris", and both may be offered): a
    piece picked among those offered is kept exactly; a typed one is still tidied."""
    shown = {"options": [" Paris", "Paris", " the"]}
    assert check_given("next", shown, {"token": " Paris"}) == {"token": " Paris"}
    assert check_given("next", shown, {"token": "Paris"}) == {"token": "Paris"}
    assert mark("next", shown, {"token": " Paris"}, {"token": "Paris"}) == Mark(False, 0.0)
    with pytest.raises(ValueError, match="one of the tokens offered"):
        check_given("next", shown, {"token": "  London"})


def test_the_classroom_package_imports_no_framework_and_no_other_part_of_the_app():
    """classroom/ is plain Python, NumPy and SQLAlchemy: the pages reach it through ui/class_room.py."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "classroom"
    forbidden = ("streamlit", "tensorflow", "keras", "plotly", "ui", "viz", "transformer", "app_pages")

    def imported(source: str) -> set[str]:
        names = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module.split(".")[0])
        return names

    found = {path.name: sorted(imported(path.read_text()) & set(forbidden)) for path in root.glob("*.py")}
    assert {name: bad for name, bad in found.items() if bad} == {}
    assert imported("import streamlit as st\nfrom ui import state\n") & set(forbidden) == {"streamlit", "ui"}


def test_the_explanations_question_asks_for_the_method_most_often_on_the_aligned_token():
    from ui.class_room import method_asked

    asked = method_asked(("a", "b", "c"), np.array([0.2, 0.9, 0.5]), "dates")
    assert asked.kind == "method" and asked.shown["options"] == ["a", "b", "c"] and asked.answer["method"] == 1
    assert mark("method", asked.shown, asked.answer, check_given("method", asked.shown, {"method": 1})).correct


def test_every_kind_answers_for_itself_and_the_pages_draw_every_kind():
    """A kind is a `QuestionKind` (check, mark, labels, counts); the Class page has its tally figure and its widget:
    a kind added without them fails here, not in a class."""
    assert all(isinstance(kind, QuestionKind) and kind.name == name for name, kind in QUESTION_KINDS.items())
    assert set(TALLIES) == set(VIEWS) == set(QUESTION_KINDS) == set(KINDS)
    with pytest.raises(ValueError, match="kind is one of"):
        kind_of("essay")


def test_a_where_answer_is_scored_by_its_weight_and_named_by_its_position():
    where, head = kind_of("where"), kind_of("head")
    assert where.score_is_weight and not head.score_is_weight
    assert where.label(WHERE, {"key": 3}) == "key 3·the"
    assert where.answer_label(WHERE, {"key": 2, "weights": [0.1, 0.2, 0.6, 0.1]}) == "key 2·cat, weight 0.60"
