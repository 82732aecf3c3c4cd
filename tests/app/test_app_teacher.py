"""For the teacher: one control that resets every setting, settings carried over from another page named where they
change what a page shows, and lessons on Home that open as shareable addresses and draw."""

from __future__ import annotations

import pytest
from app_support import no_errors, open_page
from chart_support import figure_specs

from ui import state
from ui.lessons import LESSONS

pytestmark = pytest.mark.app


def test_reset_returns_every_setting_and_the_link_to_its_default():
    at = open_page("attention", {"d_model": "128", "heads": "8", "focus": "3", "mask_family": "causal",
                                 "src": "a b c", "tgt": "a b c", "stack": "decoder", "view": "Model view"})
    no_errors(at)
    at.sidebar.button(key="reset_all").click().run()
    no_errors(at)
    for key, field in state.FIELDS.items():
        assert at.session_state[key] == field.default, key
    assert not dict(at.query_params)


@pytest.mark.parametrize("page", ["attention", "heads", "query_key", "dot_product_lab", "shapes"])
def test_a_mask_family_chosen_on_the_masks_page_is_named_where_it_changes_the_picture(page):
    at = open_page(page, {"mask_family": "window", "mask_size": "3"})
    no_errors(at)
    notice = [element for element in at.info if "From the Masks page" in element.value]
    assert notice and "window" in notice[0].value
    at.button(key=f"carried_mask_family_{page}").click().run()
    assert at.session_state["mask_family"] == "paper"
    assert not [element for element in at.info if "From the Masks page" in element.value]


def test_a_trained_model_names_no_carried_mask_family():
    at = open_page("attention", {"mask_family": "window", "weights": "dates"})
    assert not [element for element in at.info if "From the Masks page" in element.value]


def test_home_offers_the_lessons_as_addresses():
    """Each lesson a button that opens it in this session, and its address beside it to share."""
    at = open_page("home")
    no_errors(at)
    text = " ".join(element.value for element in at.caption)
    buttons = [button.label for button in at.button]
    for number, lesson in enumerate(LESSONS, start=1):
        assert lesson.address in text and f"{number}. {lesson.title}" in buttons


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.page for lesson in LESSONS])
def test_each_lesson_opens_without_a_notice_and_draws(lesson):
    at = open_page(lesson.page, lesson.params)
    no_errors(at)
    assert not at.warning, [warning.value for warning in at.warning]  # every parameter read as written
    assert figure_specs(at), "nothing drawn"
    for key, raw in lesson.params.items():
        assert state.dump(at.session_state[key]) == raw, key
