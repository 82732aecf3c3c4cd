"""The induction and training-timeline figure builders: NumPy in, figures out."""

import numpy as np

from ui.training_timeline import formed_at
from viz.induction import ablation_figure, position_loss_figure
from viz.training import timeline_figure


def test_the_loss_chart_draws_a_bar_a_predicted_token_and_shades_both_occurrences():
    tokens = ["a", "b", "c", "x", "a", "b", "c"]
    loss = np.array([5.0, 5.1, 5.2, 5.3, 0.2, 0.1])  # (N - 1,): predicting tokens 1..6
    fig = position_loss_figure(tokens, loss, first=0, second=4, size=3, vocabulary=300, title="line")
    bars = fig.data[0]
    assert list(bars.x) == ["1·b", "2·c", "3·x", "4·a", "5·b", "6·c"] and list(bars.y) == list(loss)
    assert "after a (position 0) the next token is b" in bars.customdata[0]
    rectangles = [shape for shape in fig.layout.shapes if shape.type == "rect"]
    assert [(r.x0, r.x1) for r in rectangles] == [(-1.5, 1.5), (2.5, 5.5)]  # positions 0-2 and 4-6 as bars
    lines = [shape for shape in fig.layout.shapes if shape.type == "line"]
    assert np.isclose(lines[0].y0, np.log(300))


def test_the_ablation_chart_gives_each_group_both_occurrences_and_names_its_heads():
    accuracy = {"none": {"second": 0.95, "first": 0.01}, "induction": {"second": 0.02, "first": 0.0}}
    groups = {"none": (), "induction": ((1, 0), (1, 2))}
    fig = ablation_figure(accuracy, groups, {"none": "none", "induction": "the induction heads"}, lines=200)
    assert [trace.name for trace in fig.data] == ["second occurrence", "first occurrence"]
    assert list(fig.data[0].y) == [0.95, 0.02] and list(fig.data[0].customdata) == ["none", "L1 H0, L1 H2"]
    assert "over 200 lines" in fig.data[0].hovertemplate and fig.layout.yaxis.range == (0, 1.02)


def test_the_timeline_draws_loss_accuracy_and_a_line_a_head_with_the_scrubbed_step_marked():
    steps = [0, 10, 20]
    scores = np.array([[[0.1, 0.0], [0.2, 0.1]], [[0.3, 0.1], [0.6, 0.2]], [[0.7, 0.1], [0.9, 0.3]]])  # (T, L, H)
    fig = timeline_figure(steps, [5.0, 4.0, 3.0], [0.0, 0.5, 0.9], scores, "induction", marked_step=10)
    names = [trace.name for trace in fig.data]
    assert names == ["loss", "accuracy", "L0 H0", "L0 H1", "L1 H0", "L1 H1"]
    assert list(fig.data[4].y) == [0.2, 0.6, 0.9] and fig.data[1].yaxis == "y3"
    assert any(shape.x0 == 10 for shape in fig.layout.shapes)
    assert "induction score" in fig.layout.annotations[1].text


def test_formed_at_is_the_first_step_a_head_reaches_the_threshold():
    scores = np.array([[[0.1, 0.2]], [[0.4, 0.55]], [[0.9, 0.9]]])  # (T, L=1, H=2)
    assert formed_at([100, 200, 300], scores) == 200
    assert formed_at([100, 200, 300], scores * 0.1) is None
    assert formed_at([], scores[:0]) is None  # only step 0 has been taken (the Train page drew a traceback)
