"""The Class page's pictures (viz/class_tally.py): shares and weights on the fixed 0–1 scale, keys apart when a token
repeats, hover naming query and key, the model's answer only where it is given."""

import numpy as np

from classroom.questions import cell_slips
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
    counts = np.array([[2, 0, 0], [2, 1, 0], [1, 1, 2]])
    shares = cell_shares(["a", "b", "a"], ["a", "b", "a"], counts, 2, causal, cell_slips(counts, 2, causal))
    assert len(shares.data) == 2 and np.allclose(shares.data[0].z, [[1, 0, 0], [1, 0.5, 0], [0.5, 0.5, 1]])
    assert list(shares.data[0].y) == ["0·a", "1·b", "2·a"] and "query %{y} → key %{x}" in shares.data[0].hovertemplate
    assert len(cell_shares(["a"], ["a"], np.array([[1]]), 1).data) == 1  # before the reveal: no mask
    assert list(shares.data[1].text[0]) == ["", "", ""] and list(shares.data[1].text[2]) == ["✗1", "✗1", ""]
    marked = cells_marked(["a", "b", "a"], ["a", "b", "a"], np.eye(3, dtype=bool), causal)
    # issue 87, item 5: a cell the student never touched and the mask blocks is not "right, blue": four kinds
    assert np.asarray(marked.data[0].z).tolist() == [[1, 0, 0], [2, 1, 0], [2, 2, 1]]
    assert "left out" in marked.layout.title.text and "marked" in marked.layout.title.text


def test_the_cell_picker_marks_cells_in_the_browser_and_sends_them_once():
    """Issue 87, item 5: every click was a round trip (a 7 × 7 mask ~28 of them) on a grid with no visible
    borders. The grid draws its borders; a click or a drag marks cells in the browser (meta.mark_cells, an
    invisible point a cell for the drag's selection) and the figure's own button sends them once."""
    picker = cell_picker(["a", "b", "c"], ["a", "b", "c"], np.eye(3, dtype=bool))
    meta = picker.layout.meta
    assert not meta.get("click") and meta["mark_cells"] == {"chosen": [[0, 0], [1, 1], [2, 2]], "rows": 3, "cols": 3}
    grid, points = picker.data
    assert grid.xgap >= 2 and picker.layout.plot_bgcolor not in (None, "white", "#ffffff")  # borders show
    assert sorted(map(tuple, points.customdata)) == [(q, k) for q in range(3) for k in range(3)]
    assert picker.layout.dragmode == "select"
    button = picker.layout.updatemenus[0].buttons[0]
    assert button.method == "skip" and button.label == "Send my cells (3 marked)"


def test_the_bars_colour_the_right_option_after_the_reveal():
    bars = option_bars(["x", "y", "z"], [1, 3, 0], right=1, chosen=0)
    assert list(bars.data[0].x) == [1, 3, 0] and list(bars.data[0].y) == ["1. x", "2. y ✓ the model's", "3. z"]
    colours = list(bars.data[0].marker.color)
    assert colours[1] != colours[0] == colours[2] and list(bars.data[0].marker.line.width) == [3, 0, 0]
