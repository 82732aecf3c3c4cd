"""The Explanations page through AppTest: a model without an alignment is told which to pick (and the buttons pick
them), a trained model's six methods are scored on the examples of the URL's count, one line's maps follow the line
picker, and a line not of the task's form is a message."""

import pytest
from app_support import heatmaps, no_errors, open_page, specs

from transformer.live.faithfulness import METHODS

pytestmark = pytest.mark.app


def _scored(query):
    at = open_page("explanations", query)
    no_errors(at)
    button = next(button for button in at.button if button.label.startswith("Score the six methods"))
    at = button.click().run()
    no_errors(at)
    return at


def test_random_weights_are_told_which_models_to_pick_and_a_button_picks_one():
    at = open_page("explanations")
    no_errors(at)
    assert any("Pick a trained model of dates, translate, copy, reverse, sort" in info.value for info in at.info)
    at = next(button for button in at.button if button.label == "copy").click().run()
    no_errors(at)
    assert at.session_state["weights"] == "copy" and at.query_params["weights"] == "copy"
    assert any(button.label == "Score the six methods on 50 examples" for button in at.button)


def test_the_six_methods_are_scored_on_the_links_count_and_one_lines_maps_are_drawn():
    at = _scored({"weights": "copy", "ex_count": "10"})
    assert at.select_slider(key="ex_count").value == 10
    table = at.dataframe[-1].value
    assert list(table["method"]) == list(METHODS)
    assert table["top-1 aligned"].iloc[0] >= 0.95  # copy's last cross-attention layer reads the copied token
    assert ((table["AOPC random"] > 0) & (table["AOPC random"] < 1)).all()
    bars = next(spec for spec in specs(at) if "10 examples of copy: each method" in spec["layout"]["title"]["text"])
    assert len(bars["data"]) == 2
    maps = next(spec for spec in specs(at) if "every method" in spec["layout"]["title"]["text"])
    grids = heatmaps(maps)
    lines = at.session_state["src"].splitlines()
    assert len(grids) == 6 and grids[0].shape == (len(lines[0].split()), len(lines[0].split()))
    at.selectbox(key="element").set_value(1).run()
    no_errors(at)
    maps = next(spec for spec in specs(at) if "every method" in spec["layout"]["title"]["text"])
    assert heatmaps(maps)[0].shape[1] == len(lines[1].split()) and at.query_params["element"] == "1"


def test_a_line_not_of_the_tasks_form_is_a_message_not_a_traceback():
    at = _scored({"weights": "dates", "ex_count": "10", "src": "hello"})
    assert any("is not a date in a form this task reads" in error.value for error in at.error)
    assert at.dataframe  # the scores above it stay


def test_a_count_the_page_does_not_offer_falls_back_with_a_notice():
    at = open_page("explanations", {"weights": "copy", "ex_count": "7"})
    no_errors(at)
    assert at.select_slider(key="ex_count").value == 50
    assert any("ex_count" in str(element.value) for element in [*at.warning, *at.toast, *at.info])
