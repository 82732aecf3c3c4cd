"""The Images page through AppTest: the match model's image, prediction and every head; a click on a pixel flips it
and the link keeps it; a click on a head's patch looks from it; the digits' test images (the picker follows the
model); bad links get a notice; an image task trained on the Train page opens here, and its link in a new
session."""

import time

import numpy as np
import pytest
from app_support import decode, no_errors, open_page, specs

from transformer.analysis.flow import attention_flow
from transformer.analysis.measures import attention_rollout
from transformer.live.images import example_image, read_image

pytestmark = pytest.mark.app


def _titled(at, part):
    return next(spec for spec in specs(at) if part in spec["layout"]["title"]["text"])


def _probabilities(at) -> np.ndarray:
    """The bars beside the image, in the image's own figure (its panel's title names the prediction)."""
    image = next(spec for spec in specs(at) if any(trace["type"] == "bar" for trace in spec["data"]))
    assert image["layout"]["annotations"][0]["text"].startswith("Predicted: ")
    return decode(next(trace for trace in image["data"] if trace["type"] == "bar")["y"])


def test_the_match_image_its_prediction_and_every_head_from_cls_come_from_one_reading():
    at = open_page("images")
    no_errors(at)
    image, label = example_image("match", 0)
    reading = read_image("match", image)
    assert f"right answer: patch {label + 1}" in _titled(at, "match image 0")["layout"]["title"]["text"]
    np.testing.assert_allclose(decode(_titled(at, "match image 0")["data"][0]["z"]), image)
    np.testing.assert_allclose(_probabilities(at), reading.probabilities, atol=1e-6)
    heads = _titled(at, "attention from CLS")
    grid = np.asarray(decode(heads["data"][0]["z"]), float)  # every head in one heatmap, a gap between panels
    assert grid.shape == (9, 19) and len(heads["layout"]["annotations"]) == 8
    np.testing.assert_allclose(grid[0:4, 15:19].ravel(), reading.weights[0, 3, 0, 1:], atol=1e-6)  # layer 0, head 3
    np.testing.assert_allclose(grid[5:9, 0:4].ravel(), reading.weights[1, 0, 0, 1:], atol=1e-6)  # layer 1, head 0
    assert np.isnan(grid[4]).all() and np.isnan(grid[:, 4]).all()
    assert any("the corner (patch 0) puts" in caption.value for caption in at.caption)
    assert next(button for button in at.button if button.label == "Undo every edit").disabled  # nothing to undo


def test_flipped_pixels_in_the_link_are_drawn_and_read_and_undo_brings_the_image_back():
    """A click on a pixel adds it to img_flip (tests/browser/test_browser_images.py clicks one); here the link."""
    at = open_page("images", {"img_flip": "21 0", "img_from": "4"})
    no_errors(at)
    original = example_image("match", 0)[0]
    flipped = _titled(at, "Edited: match image 0 · 2 pixels flipped")
    drawn = np.asarray(decode(flipped["data"][0]["z"]), float)
    assert drawn[2, 5] == 1 - original[2, 5] and drawn[0, 0] == 1 - original[0, 0]
    np.testing.assert_array_equal(np.delete(drawn.ravel(), [0, 21]), np.delete(original.ravel(), [0, 21]))
    reading = read_image("match", drawn.astype(np.float32))
    np.testing.assert_allclose(_probabilities(at), reading.probabilities, atol=1e-6)
    assert _titled(at, "attention from patch 3")
    flows = _titled(at, "Rollout and flow to patch 3's output")  # the flow from the token asked, of this image
    flow_row = attention_flow(reading.weights, queries=[4])[0]  # (17,): CLS, then the patches
    np.testing.assert_allclose(np.asarray(decode(flows["data"][1]["z"]), float).ravel(), flow_row[1:], atol=1e-6)
    np.testing.assert_allclose(np.asarray(decode(flows["data"][0]["z"]), float).ravel(),
                               attention_rollout(reading.weights)[4, 1:], atol=1e-6)
    at = next(button for button in at.button if button.label == "Undo every edit").click().run()
    no_errors(at)
    assert at.session_state["img_flip"] == [] and "img_flip" not in at.query_params


def test_the_digits_show_a_test_image_and_the_picker_follows_the_model():
    at = open_page("images", {"img_model": "digits", "img_pick": "7", "img_from": "6"})
    no_errors(at)
    image, label = example_image("digits", 7)
    assert f"right answer: {label}" in _titled(at, "test digit 7")["layout"]["title"]["text"]
    assert at.number_input(key="img_pick").max == 299
    at.radio(key="img_model").set_value("match").run()
    no_errors(at)
    assert at.number_input(key="img_pick").max == 2**31 - 1 and at.number_input(key="img_pick").value == 7
    far = open_page("images", {"img_model": "digits", "img_pick": "5000"})
    no_errors(far)
    assert far.number_input(key="img_pick").value == 0
    assert any("test images 0–299: showing image 0" in notice.value for notice in far.warning)  # on this run


@pytest.mark.parametrize("query, field", [({"img_flip": "3 99"}, "img_flip"), ({"img_from": "17"}, "img_from"),
                                          ({"img_model": "copy"}, "img_model")])
def test_a_bad_link_value_falls_back_with_a_notice(query, field):
    at = open_page("images", query)
    no_errors(at)
    assert field not in at.query_params


def test_a_link_to_an_image_model_this_server_does_not_keep_shows_match_with_a_notice():
    at = open_page("images", {"img_model": "image:0a1b2c3d4e"})
    no_errors(at)
    assert at.radio(key="img_model").value == "match" and "img_model" not in at.query_params
    assert any("keeps no image model image:0a1b2c3d4e" in notice.value for notice in at.warning)


@pytest.mark.slow
def test_the_train_page_trains_an_image_task_and_explore_opens_it_here_and_its_link_in_a_new_session():
    at = open_page("train")
    at.selectbox(key="train_task").set_value("match").run()
    assert at.number_input(key="train_steps_match").value == 600  # the shipped model's settings
    at.number_input(key="train_steps_match").set_value(30)
    at.select_slider(key="train_d_model_match").set_value(16)
    at.button[0].click().run()
    deadline = time.monotonic() + 240
    while not at.session_state["_train_job"].finished and time.monotonic() < deadline:
        time.sleep(1)
    job = at.session_state["_train_job"]
    assert job.status == "done", job.error
    at.run()
    no_errors(at)
    assert any(s.value.startswith("Accuracy on 1,000 fresh images: ") for s in at.success)
    next(b for b in at.button if b.label == "Explore this model's attention").click().run()
    no_errors(at)
    name = at.session_state["img_model"]
    assert name == f"image:{job.key}" and at.radio(key="img_model").value == name
    assert at.radio(key="img_model").options[-1].startswith("Trained here: match, d_model 16, 4 heads, 2 layers")
    reading = read_image(name, example_image(name, 0)[0])
    np.testing.assert_allclose(_probabilities(at), reading.probabilities, atol=1e-6)
    assert reading.weights.shape == (2, 4, 17, 17)
    linked = open_page("images", {"img_model": name, "img_from": "3"})  # another session, by the link
    no_errors(linked)
    assert linked.radio(key="img_model").value == name and _titled(linked, "attention from patch 2")


def test_the_sidebar_shows_no_model_controls_this_page_does_not_run():
    """The page reads its own Vision Transformer: the sidebar's d_model, heads, lines … (the other pages' model)
    showed values it never ran with. It keeps the device, which it does run on, and says where the model is chosen."""
    at = open_page("images")
    no_errors(at)
    shown = {widget.key for widget in [*at.sidebar.select_slider, *at.sidebar.slider, *at.sidebar.selectbox,
                                       *at.sidebar.text_area]}
    assert not shown & {"d_model", "heads", "layers", "seq_len", "weights", "src"}, shown
    assert at.sidebar.radio(key="device") and any("chosen on the page" in c.value for c in at.sidebar.caption)
    masks = open_page("masks", {"d_model": "128", "seq_len": "9"})  # the other pages keep them, through a visit here
    masks.switch_page("app_pages/images.py").run()
    no_errors(masks)
    masks.switch_page("app_pages/masks.py").run()
    no_errors(masks)
    assert masks.sidebar.select_slider(key="d_model").value == 128 and masks.session_state["seq_len"] == 9


def test_the_page_states_the_shape_of_the_model_it_ran_not_a_fixed_one(monkeypatch):
    """Issue 78, item 6: the introduction said "two pre-norm encoder layers of 4 heads" whatever model was chosen."""
    from ui import data

    reading = read_image("match", example_image("match", 0)[0])
    one_layer = type(reading)(**{**reading.__dict__, "weights": reading.weights[:1, :2]})  # as a 1-layer, 2-head model
    monkeypatch.setattr(data, "read_image", lambda *arguments: one_layer)
    at = open_page("images")
    no_errors(at)
    intro = " ".join(m.value for m in at.markdown)
    assert "4 heads" not in intro and "two pre-norm" not in intro
    assert any("This model: 1 pre-norm encoder layer of 2 heads" in c.value for c in at.caption)
