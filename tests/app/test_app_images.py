"""The Images page through AppTest: the match model's image, prediction and every head; a click on a pixel flips it
and the link keeps it; a click on a head's patch looks from it; the digits' test images (the picker follows the
model); bad links get a notice."""

import numpy as np
import pytest
from app_support import decode, no_errors, open_page, specs

from transformer.live.images import example_image, read_image

pytestmark = pytest.mark.app


def _titled(at, part):
    return next(spec for spec in specs(at) if part in spec["layout"]["title"]["text"])


def test_the_match_image_its_prediction_and_every_head_from_cls_come_from_one_reading():
    at = open_page("images")
    no_errors(at)
    image, label = example_image("match", 0)
    reading = read_image("match", image)
    assert f"right answer: patch {label + 1}" in _titled(at, "match image 0")["layout"]["title"]["text"]
    np.testing.assert_allclose(decode(_titled(at, "match image 0")["data"][0]["z"]), image)
    probabilities = _titled(at, "Predicted")
    np.testing.assert_allclose(decode(probabilities["data"][0]["y"]), reading.probabilities, atol=1e-6)
    heads = _titled(at, "attention from CLS")
    grid = np.asarray(decode(heads["data"][0]["z"]), float)  # every head in one heatmap, a gap between panels
    assert grid.shape == (9, 19) and len(heads["layout"]["annotations"]) == 8
    np.testing.assert_allclose(grid[0:4, 15:19].ravel(), reading.weights[0, 3, 0, 1:], atol=1e-6)  # layer 0, head 3
    np.testing.assert_allclose(grid[5:9, 0:4].ravel(), reading.weights[1, 0, 0, 1:], atol=1e-6)  # layer 1, head 0
    assert np.isnan(grid[4]).all() and np.isnan(grid[:, 4]).all()
    assert any("the corner (patch 0) puts" in caption.value for caption in at.caption)


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
    np.testing.assert_allclose(decode(_titled(at, "Predicted")["data"][0]["y"]), reading.probabilities, atol=1e-6)
    assert _titled(at, "attention from patch 3")
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


@pytest.mark.parametrize("query, field", [({"img_flip": "3 99"}, "img_flip"), ({"img_from": "17"}, "img_from"),
                                          ({"img_model": "copy"}, "img_model")])
def test_a_bad_link_value_falls_back_with_a_notice(query, field):
    at = open_page("images", query)
    no_errors(at)
    assert field not in at.query_params
