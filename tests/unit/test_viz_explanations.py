"""The explanations' figures: a panel a method on one diverging scale, rows scaled to their largest magnitude, the
aligned cells outlined, distinct labels for repeated tokens; the scores' bars with random deletion's line."""

import numpy as np

from viz.explanations import explanation_maps, faithfulness_bars, row_scaled


def _maps():
    rng = np.random.default_rng(0)
    maps = {name: rng.random((3, 4)) for name in ("cross", "rollout", "flow", "norms", "gradient", "head")}
    maps["gradient"] -= 0.5  # signed
    return maps


def test_rows_are_scaled_to_their_largest_magnitude_and_zero_rows_stay_zero():
    values = np.array([[1.0, -4.0, 2.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(row_scaled(values), [[0.25, -1.0, 0.5], [0.0, 0.0, 0.0]])


def test_a_panel_a_method_on_one_scale_with_the_aligned_cells_outlined():
    fig = explanation_maps(_maps(), ["a", "b", "a", "c"], ["a", "b", "a"], [0, None, 2])
    heatmaps = [trace for trace in fig.data if trace.type == "heatmap"]
    assert len(heatmaps) == 6 and {trace.coloraxis for trace in heatmaps} == {"coloraxis"}
    assert fig.layout.coloraxis.cmin == -1 and fig.layout.coloraxis.cmax == 1
    assert list(heatmaps[0].x) == ["0·a", "1·b", "2·a", "3·c"]  # repeated tokens stay distinct
    assert all(np.abs(np.asarray(trace.z)).max() <= 1 + 1e-6 for trace in heatmaps)
    outlined = [trace for trace in fig.data if trace.type == "scatter" and "aligned" in trace.hovertemplate]
    assert len(outlined) == 6 and list(outlined[0].x) == ["0·a", "2·a"] and list(outlined[0].y) == ["0·a", "2·a"]
    assert "output %{y} ← source %{x}" in heatmaps[0].hovertemplate
    assert [a.text for a in fig.layout.annotations] == list(_maps())


def test_on_a_phone_the_panels_go_one_under_another():
    wide = explanation_maps(_maps(), list("abcd"), list("abc"), [0, 1, 2])
    narrow = explanation_maps(_maps(), list("abcd"), list("abc"), [0, 1, 2], width_px=390)
    assert wide.layout.xaxis2.domain[0] > 0 and narrow.layout.xaxis2.domain[0] == 0
    assert narrow.layout.height > wide.layout.height


def test_the_bars_show_both_scores_a_method_and_random_deletion_as_a_line():
    fig = faithfulness_bars(["a", "b"], [1.0, 0.5], [0.8, 0.3], 0.25, "title")
    assert [trace.name for trace in fig.data] == ["top-1 is the aligned token", "AOPC (deletion)"]
    assert fig.layout.shapes[0].y0 == 0.25 and "0.250" in fig.layout.annotations[0].text
