"""The Heads page's figure builders: NumPy in, figures out."""

import numpy as np

from viz.heads import importance_grid, measure_grid, role_grid


def test_role_grid_draws_a_role_a_panel_on_the_fixed_weight_scale_and_marks_missing_scores():
    scores = {"previous_token": np.array([[0.9, 0.1], [np.nan, 0.2]]), "self": np.zeros((2, 2)),
              "pattern": np.ones((2, 2))}
    fig = role_grid(scores, lines=16, title="encoder", pattern="window")
    assert [trace.type for trace in fig.data] == ["heatmap"] * 4  # three roles, and the NaN's grey "—" cell
    grey = fig.data[1]
    assert (grey.xaxis, grey.yaxis) == (fig.data[0].xaxis, fig.data[0].yaxis) and grey.showscale is False
    assert np.isnan(grey.z[0][0]) and grey.z[1][0] == 1 and grey.text[1][0] == "—" and "no score" in grey.hovertemplate
    assert all(np.isfinite(trace.z).all() for trace in fig.data[2:])  # the panels with every score: no grey cells
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 1
    assert fig.data[0].text[1][0] == "—" and fig.data[0].text[0][0] == "0.90"
    assert [a.text for a in fig.layout.annotations] == ["previous token", "self", "pattern (window)"]
    assert "over 16 lines" in fig.data[0].hovertemplate and list(fig.data[0].y) == ["L0", "L1"]


def test_measure_grid_gives_distance_and_entropy_their_own_scales():
    fig = measure_grid(np.array([[1.0, 2.5]]), np.array([[0.5, 3.0]]), lines=4)
    assert len(fig.data) == 2 and fig.data[0].colorscale != fig.data[1].colorscale
    assert fig.data[0].text[0] == ["1.0", "2.5"] and fig.data[1].text[0] == ["0.50", "3.00"]


def test_importance_grid_centres_its_diverging_scale_on_no_change():
    accuracy = np.zeros((3, 2, 2))
    accuracy[2, 0, 1] = -0.5
    loss = np.zeros((3, 2, 2))
    loss[2, 0, 1] = 0.2
    fig = importance_grid(accuracy, loss, ("encoder", "decoder", "cross"), count=200)
    assert len(fig.data) == 6 and all(trace.zmid == 0 for trace in fig.data)
    assert fig.data[4].text[0][1] == "-50.0" and fig.data[5].text[0][1] == "+0.200"
    assert fig.data[4].zmin == -50 and "on 200 examples" in fig.data[4].hovertemplate


def test_a_role_grid_on_a_phone_wraps_its_title_and_puts_fewer_panels_across():
    """Issue 87, item 18: at 390 px the role grid's title was cut at "(the sideba" and three panels sat side by
    side in 300 px."""
    import numpy as np

    from viz.heads import role_grid

    scores = {role: np.full((2, 4), 0.5) for role in ("previous", "first", "self")}
    title = "encoder: role scores over the 16 lines of the sidebar's model (the sidebar's lines)"
    wide, narrow = role_grid(scores, 16, title), role_grid(scores, 16, title, fit_px=350)
    assert "<br>" in narrow.layout.title.text and "<br>" not in wide.layout.title.text
    assert narrow.layout.margin.t > wide.layout.margin.t  # room for the wrapped lines above the panels' names
    starts = {round(axis["domain"][0], 3) for name, axis in narrow.layout.to_plotly_json().items()
              if name.startswith("xaxis")}
    assert len(starts) == 1  # one panel across
