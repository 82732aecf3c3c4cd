"""The Class page's pictures (viz/class_tally.py): shares and weights on the fixed 0–1 scale, keys apart when a token
repeats, hover naming query and key, the model's answer only where it is given."""

import numpy as np

from viz.class_tally import cell_picker, cell_shares, cells_marked, key_picker, key_strip, option_bars

KEYS = ["<s>", "the", "cat", "the"]


def test_the_key_strip_draws_the_class_share_and_after_the_reveal_the_models_row():
    before = key_strip(KEYS, [0, 2, 2, 1], 5, "3·the")
    heat = before.data[0]
    assert list(heat.y) == ["the class"] and (heat.zmin, heat.zmax) == (0, 1)
    assert np.allclose(heat.z, [[0, 0.4, 0.4, 0.2]])
    assert list(heat.x) == ["0·&lt;s&gt;", "1·the", "2·cat", "3·the"]  # text, never HTML
    assert "query 3·the → key 1·the" in heat.customdata[0][1] and "2 of 5" in heat.customdata[0][1]
    after = key_strip(KEYS, [0, 2, 2, 1], 5, "3·the", weights=[0.1, 0.2, 0.6, 0.1], chosen=2)
    assert list(after.data[0].y) == ["the class", "the model"] and np.allclose(after.data[0].z[1], [0.1, 0.2, 0.6, 0.1])
    assert after.layout.shapes[0].x0 == 1.5 and after.layout.meta["click"]
    assert "weight" not in key_picker(KEYS, "3·the").to_json().replace("line", "")  # the question: no weight drawn


def test_the_cells_are_shares_of_the_class_and_the_students_own_right_or_wrong():
    causal = np.tril(np.ones((3, 3), bool))
    shares = cell_shares(["a", "b", "a"], ["a", "b", "a"], np.array([[2, 0, 0], [2, 1, 0], [1, 1, 2]]), 2, causal)
    assert len(shares.data) == 2 and np.allclose(shares.data[0].z, [[1, 0, 0], [1, 0.5, 0], [0.5, 0.5, 1]])
    assert list(shares.data[0].y) == ["0·a", "1·b", "2·a"] and "query %{y} → key %{x}" in shares.data[0].hovertemplate
    assert len(cell_shares(["a"], ["a"], np.array([[1]]), 1).data) == 1  # before the reveal: no mask
    marked = cells_marked(["a", "b", "a"], ["a", "b", "a"], np.eye(3, dtype=bool), causal)
    assert marked.data[0].z.tolist() == [[1, 1, 1], [0, 1, 1], [0, 0, 1]]
    assert cell_picker(["a", "b"], ["a", "b"], np.eye(2, dtype=bool)).layout.meta["click"]


def test_the_bars_colour_the_right_option_after_the_reveal():
    bars = option_bars(["x", "y", "z"], [1, 3, 0], right=1, chosen=0)
    assert list(bars.data[0].x) == [1, 3, 0] and list(bars.data[0].y) == ["1. x", "2. y ✓ the model's", "3. z"]
    colours = list(bars.data[0].marker.color)
    assert colours[1] != colours[0] == colours[2] and list(bars.data[0].marker.line.width) == [3, 0, 0]
