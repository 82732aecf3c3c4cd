"""Figure builders: NumPy in, go.Figure out; labels, colour scales, masked cells, pooling, payloads."""

import base64
import json
import math
import re

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from transformer.analysis.measures import (
    attention_checks,
    head_statistics,
    logsumexp_softmax,
    mask_fills,
    naive_softmax,
    neuron_terms,
    scaling_experiment,
    stable_softmax,
)
from viz import attention, head_view, induction, lab, masks, neuron, positional, shapes, training
from viz import heads as heads_figures
from viz.export import arrays_npz, matrix_csv
from viz.labels import GAP_MARK, PANEL_MARK, pooled_labels, position_labels
from viz.pooling import max_pool
from viz.sizes import MIN_PANEL_PX, NARROW_PX, TICK_PX, TICK_WIDTH_PX, TITLE_CHAR_PX, TITLE_PAD_PX
from viz.style import MASKED_COLOR, left_title

RNG = np.random.default_rng(0)
TOKENS = ["the", "cat", "the", "<pad>"]
TOKENS7 = ["1", "2", "3", "4", "5", "0", "0"]


def test_position_labels_keep_repeated_tokens_distinct():
    labels = position_labels(TOKENS)
    assert labels == ["0·the", "1·cat", "2·the", "3·&lt;pad&gt;"] and len(set(labels)) == 4
    assert position_labels(["x" * 40])[0].endswith("…") and len(position_labels(["x" * 40])[0]) <= 14


def test_mask_grid_draws_one_uint8_panel_per_mask_with_distinct_colours_and_hover():
    mask = np.tril(np.ones((4, 4), bool))[None]
    fig = masks.mask_grid(mask, [TOKENS], [TOKENS], ["line 1"])
    (panel,) = fig.data
    assert isinstance(fig, go.Figure)
    np.testing.assert_array_equal(panel.z, mask[0].astype(np.uint8))
    assert (panel.zmin, panel.zmax) == (0, 1)
    low, high = panel.colorscale[0][1], panel.colorscale[-1][1]
    assert low != high  # blocked and allowed cells are visibly different
    assert "%{y}" in panel.hovertemplate and "%{x}" in panel.hovertemplate and "%{z}" in panel.hovertemplate
    assert "may attend" in panel.hovertemplate and "blocked" in panel.hovertemplate
    assert list(panel.x) == position_labels(TOKENS)
    assert fig.layout.xaxis.type == "category" and fig.layout.yaxis.autorange == "reversed"


def test_panels_are_laid_out_without_automargin_and_with_room_for_labels():
    long_tokens = ["a-very-long-token"] * 4
    fig = masks.mask_grid(np.ones((2, 4, 4), bool), [long_tokens, TOKENS], [long_tokens, TOKENS], ["a", "b"])
    assert fig.layout.xaxis.automargin is False and fig.layout.yaxis2.automargin is False
    assert fig.layout.margin.l >= 12 * 6  # the longest label (cut to 12 characters) fits on the left
    assert fig.layout.xaxis.domain[1] < fig.layout.xaxis2.domain[0]  # a gap for panel 2's labels
    assert [a.text for a in fig.layout.annotations] == ["a", "b"]


def test_broadcast_rows_and_fully_masked_rows():
    rows = masks.broadcast_rows(3, 8, 7)
    assert [r["shape"] for r in rows] == [(3, 1, 1, 7), (7, 7), (3, 1, 7, 7)]
    assert all(r["broadcasts_to"] == (3, 8, 7, 7) for r in rows)
    table = masks.broadcast_table(3, 8, 7).splitlines()
    assert len(table) == 2 + 3 and table[0].count("|") == 5 == table[2].count("|")
    assert "`(3, 1, 1, 7)`" in table[2] and "`(7, 7)`" in table[3] and table[4].endswith("| heads |")
    grid = np.ones((2, 3, 3), bool)
    grid[1, 2] = False
    assert masks.fully_masked_rows(grid) == [(1, 2)]


def test_head_grid_one_panel_per_head_fixed_scale_and_masked_cells():
    weights = RNG.random((6, 4, 4)).astype(np.float32)
    mask = np.ones((4, 4), bool)
    mask[:, 3] = False
    fig = attention.head_grid(weights, mask, TOKENS, TOKENS)  # 4 panels a row: rows of 4 and 2
    panels = [t for t in fig.data if t.coloraxis]
    assert [p.name for p in panels] == [f"head {h}" for h in range(6)] and len(fig.data) == 6 + 2
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 1
    for head, panel in enumerate(panels):
        np.testing.assert_array_equal(panel.z, np.where(mask, weights[head], np.nan))
        assert "weight" in panel.hovertemplate and "query %{y}" in panel.hovertemplate
        assert f"<extra>head {head}</extra>" in panel.hovertemplate
    # the panels of a row share one pair of axes; each panel's keys stay distinct categories that read the same
    assert [(p.xaxis, p.yaxis) for p in panels] == [("x", "y")] * 4 + [("x2", "y2")] * 2
    assert all([x.replace(PANEL_MARK, "") for x in p.x] == position_labels(TOKENS) for p in panels)
    assert len({x for p in panels[:4] for x in p.x}) == 16
    # one grey layer a row: 1 exactly on every panel's masked cells, NaN on allowed cells and the gaps
    first_row = [t for t in fig.data if not t.coloraxis][0]
    assert first_row.colorscale[0][1] == MASKED_COLOR and "blocked" in first_row.hovertemplate
    assert first_row.hoverongaps is False and all(p.hoverongaps is False for p in panels)
    categories = list(first_row.x)
    for panel in panels[:4]:
        columns = [categories.index(x) for x in panel.x]
        assert columns == list(range(columns[0], columns[0] + 4))  # consecutive, in order
        np.testing.assert_array_equal(first_row.z[:, columns], np.where(mask, np.nan, 1.0))
    assert np.isnan(first_row.z).sum() == first_row.z.size - 4 * 4  # gaps are blank
    # cells are the same size on every row: a row's width follows its number of categories
    second_row = [t for t in fig.data if not t.coloraxis][1]
    widths = [fig.layout.xaxis.domain[1], fig.layout.xaxis2.domain[1]]
    assert widths[0] == 1.0 and widths[1] == pytest.approx(len(second_row.x) / len(categories))
    assert [a.text for a in fig.layout.annotations] == [f"head {h}" for h in range(6)]
    # each title sits on its row's x axis over its panel's middle key, so a zoom into one panel keeps only its title
    assert [(a.xref, a.yref) for a in fig.layout.annotations] == [("x", "paper")] * 4 + [("x2", "paper")] * 2
    middles = [np.mean([categories.index(x) for x in panel.x]) for panel in panels[:4]]
    assert [a.x for a in fig.layout.annotations[:4]] == pytest.approx(middles)
    # each row's x range is its categories: Plotly otherwise widens a category axis until the titles on it fit,
    # and a short row's panel (the mean of heads alone) shrank to a sliver in a narrow chart
    assert list(fig.layout.xaxis.range) == [-0.5, len(categories) - 0.5]
    assert list(fig.layout.xaxis2.range) == [-0.5, len(second_row.x) - 0.5]


def _title_px(text: str) -> float:
    return len(text) * TITLE_CHAR_PX


MASK_TITLES = ["look-ahead"] + ["target, line 1"] * 3


@pytest.mark.parametrize("titles, length", [(["line 1", "line 2", "line 3"], 7), (MASK_TITLES, 7),
                                            (MASK_TITLES, 200)])  # 200: pooled, with long labels and gaps
def test_a_mask_grid_asks_for_the_width_at_which_its_titles_stay_apart_and_in_the_chart(titles, length):
    tokens = [[str(i % 10) for i in range(length)]] * len(titles)
    grid = masks.mask_grid(np.ones((len(titles), length, length), bool), tokens, tokens, titles, columns=len(titles))
    width = grid.layout.meta["min_width_px"]
    plot_px = width - grid.layout.margin.l - grid.layout.margin.r
    middles = [grid.layout.margin.l + sum(getattr(grid.layout, f"xaxis{i + 1 if i else ''}").domain) / 2 * plot_px
               for i in range(len(titles))]  # px from the chart's left, drawn that wide
    for left, right, first, second in zip(middles, middles[1:], titles, titles[1:]):
        assert right - left >= (_title_px(first) + _title_px(second)) / 2 + TITLE_PAD_PX - 1
    assert middles[0] >= _title_px(titles[0]) / 2 - 1 and middles[-1] + _title_px(titles[-1]) / 2 <= width + 1
    if length == 7:  # the default sizes
        assert width <= 600  # a 1000 px window with the sidebar open gives a chart 540 px


def test_a_head_grid_asks_for_the_width_at_which_its_titles_stay_apart_and_its_panels_show():
    for heads, columns in ((4, 5), (16, 4)):
        weights = RNG.random((heads + 1, 7, 7)).astype(np.float32)
        names = [f"head {h}" for h in range(heads)] + ["mean of heads"]
        grid = attention.head_grid(weights, np.ones((7, 7), bool), TOKENS7, TOKENS7, names=names, columns=columns)
        width = grid.layout.meta["min_width_px"]
        plot_px = width - grid.layout.margin.l - grid.layout.margin.r
        axis = grid.layout.xaxis
        cell_px = (axis.domain[1] - axis.domain[0]) * plot_px / (axis.range[1] - axis.range[0])
        assert 7 * cell_px >= MIN_PANEL_PX - 1
        notes = grid.layout.annotations
        for first, second in zip(notes[:columns - 1], notes[1:columns]):
            apart_px = (second.x - first.x) * cell_px
            assert apart_px >= (_title_px(first.text) + _title_px(second.text)) / 2 + TITLE_PAD_PX - 1
        if heads % columns == 0:  # the mean alone on the last row: its title must not leave the chart on the left
            mean = notes[-1]
            assert grid.layout.margin.l + (mean.x + 0.5) * cell_px >= _title_px(mean.text) / 2 - 1
        else:
            assert width <= 540  # the default grid fits a 1000 px window with the sidebar open


def test_the_model_view_asks_for_the_width_at_which_its_first_title_stays_in_the_chart():
    view = attention.model_view(RNG.random((2, 32, 7, 7)).astype(np.float32), np.ones((7, 7), bool))
    plot_px = view.layout.meta["min_width_px"] - view.layout.margin.l - view.layout.margin.r
    axis, first = view.layout.xaxis, view.layout.annotations[0]
    cell_px = (axis.domain[1] - axis.domain[0]) * plot_px / (axis.range[1] - axis.range[0])
    assert first.text == "head 0" and view.layout.margin.l + (first.x + 0.5) * cell_px >= _title_px(first.text) / 2 - 1
    # above 8 heads the columns read "head 0, 1, 2 …": 32 titles "head h" made the view 1,670 px wide at the least
    assert [note.text for note in view.layout.annotations[:16]] == ["head 0"] + [str(h) for h in range(1, 16)]
    assert view.layout.meta["min_width_px"] < 1400
    eight = attention.model_view(RNG.random((1, 8, 7, 7)).astype(np.float32), np.ones((7, 7), bool))
    assert [note.text for note in eight.layout.annotations][:8] == [f"head {h}" for h in range(8)]


def _panel_px(view, width_px: float) -> tuple[float, float]:
    """The first panel's drawn width and height (px) of a model view drawn ``width_px`` wide."""
    margin, axis = view.layout.margin, view.layout.xaxis
    plot_w, plot_h = width_px - margin.l - margin.r, view.layout.height - margin.t - margin.b
    cell_px = (axis.domain[1] - axis.domain[0]) * plot_w / (axis.range[1] - axis.range[0])
    keys = np.shape(view.data[1].z)[1]
    return cell_px * keys, (view.layout.yaxis.domain[1] - view.layout.yaxis.domain[0]) * plot_h


def test_the_model_view_keeps_title_room_for_its_top_row_only_and_fits_a_phone_with_a_row_per_layer():
    """SmolLM2's 30 × 9 heads at 390 px were tall thin panels (27 × 100 px) 4,034 px down a column they were wider
    than, each row keeping room for titles only the top row has (issue 89)."""
    weights, mask = RNG.random((30, 9, 14, 14)).astype(np.float32), np.tril(np.ones((14, 14), bool))
    wide = attention.model_view(weights, mask, "decoder")
    second, first = wide.layout.yaxis2.domain, wide.layout.yaxis.domain
    assert (first[0] - second[1]) * (wide.layout.height - wide.layout.margin.t - wide.layout.margin.b) < 14
    phone = attention.model_view(weights, mask, "decoder", fit_px=358)
    assert phone.layout.meta["min_width_px"] <= 358
    assert [note.text for note in phone.layout.annotations][:9] == [f"H{h}" for h in range(9)]
    assert sum(re.fullmatch(r"L\d+", note.text) is not None for note in phone.layout.annotations) == 30  # per layer
    width, height = _panel_px(phone, 358)
    assert 0.8 < height / width < 1.25, (width, height)  # square, as its cells are
    assert phone.layout.height < 1400


def test_every_panel_labels_the_same_keys_spaced_to_fit_a_wide_chart():
    """Spaced for a chart TICK_WIDTH_PX wide: they fit, and labelling more keys would not (the browser keeps
    fewer of them in a narrower chart: test_browser)."""
    tokens = [f"w{i}" for i in range(60)]
    fig = attention.head_grid(RNG.random((5, 60, 60)), np.ones((60, 60), bool), tokens, tokens, columns=5)
    panels = [t for t in fig.data if t.coloraxis]
    shown = list(fig.layout.xaxis.tickvals)
    assert set(shown) <= {x for p in panels for x in p.x}  # real keys, never a gap
    per_panel = [[x for x in p.x if x in shown] for p in panels]
    assert all([x.replace(PANEL_MARK, "") for x in keys] == [x.replace(PANEL_MARK, "") for x in per_panel[0]]
               for keys in per_panel) and per_panel[0][0] == "0·w0"
    step = [x.replace(PANEL_MARK, "") for x in panels[0].x].index(per_panel[0][1])  # every step-th key labelled
    assert step > 1 and 5 * len(per_panel[0]) * TICK_PX <= TICK_WIDTH_PX
    assert 5 * math.ceil(len(tokens) / (step - 1)) * TICK_PX > TICK_WIDTH_PX - 200  # - the y labels and colour bar


def test_a_long_or_pooled_head_grid_still_labels_its_axes():
    """Above 40 positions too (they were unlabelled): every k-th key and Plotly's choice of queries."""
    for length in (100, 300):  # 300: a max-pooled view
        tokens = [f"w{i}" for i in range(length)]
        fig = attention.head_grid(RNG.random((2, length, length)), np.ones((length, length), bool), tokens, tokens)
        assert fig.layout.xaxis.showticklabels and fig.layout.yaxis.showticklabels
        assert 2 <= len(fig.layout.xaxis.tickvals) <= 2 * length // 2 and fig.layout.xaxis.tickvals[0].startswith("0")


def test_a_long_figure_title_is_drawn_in_the_panel_titles_size():
    """A cropped or pooled view's note ran past a 540 px chart at Plotly's 17 px (test_browser checks it drawn)."""
    assert "font" not in left_title("4 heads and their mean")
    assert left_title("head 0 — full resolution, cropped: queries 0–255, keys 0–255 of 300×300")["font"]["size"] == 14


def test_a_token_cannot_collide_with_another_panels_keys():
    """Panel categories differ by invisible marks; the same marks typed in a token are dropped from its label."""
    assert position_labels([f"a{PANEL_MARK}", f"b{GAP_MARK}"]) == ["0·a", "1·b"]


def test_long_sequences_are_pooled_and_labelled():
    weights = RNG.random((2, 300, 300)).astype(np.float32)
    fig = attention.head_grid(weights, np.ones((300, 300), bool), ["t"] * 300, ["t"] * 300)
    assert [np.shape(t.z) for t in fig.data if t.coloraxis] == [(100, 100)] * 2
    assert "max-pooled 3×3" in fig.layout.title.text
    full = attention.single_head(weights[0], np.ones((300, 300), bool), ["t"] * 300, ["t"] * 300)
    head = [trace for trace in full.data if trace.coloraxis][0]  # nothing masked: no grey layer before it
    assert np.shape(head.z) == (256, 256)  # exact values, in a window
    np.testing.assert_array_equal(head.z, weights[0, :256, :256])
    assert "cropped: queries 0–255, keys 0–255 of 300×300" in full.layout.title.text


def test_single_head_window_keeps_exact_values_and_absolute_labels():
    weights = RNG.random((512, 512)).astype(np.float32)
    mask = np.tril(np.ones((512, 512), bool))
    tokens = [f"t{i}" for i in range(512)]
    fig = attention.single_head(weights, mask, tokens, tokens, "head 1", start=(128, 256))
    masked, attend = fig.data
    np.testing.assert_array_equal(attend.z, np.where(mask, weights, np.nan)[128:384, 256:512])
    assert attend.y[0] == "128·t128" and attend.x[0] == "256·t256" and attend.x[-1] == "511·t511"
    assert "queries 128–383, keys 256–511 of 512×512" in fig.layout.title.text
    assert len(fig.to_json()) < 1_000_000
    assert attention.window_starts(512) == [0, 128, 256] and attention.window_starts(100) == [0]
    assert attention.window_starts(300) == [0, 44]  # half-window steps, and the last full window
    # a start past the end is pulled back so the window stays full
    late = attention.single_head(weights, mask, tokens, tokens, start=(500, 500))
    assert late.data[1].y[0] == "256·t256"


def test_figure_payload_stays_small_at_n_512():
    weights = RNG.random((8, 512, 512)).astype(np.float32)
    fig = attention.head_grid(weights, np.ones((512, 512), bool), ["tok"] * 512, ["tok"] * 512)
    assert len(fig.to_json()) < 1_000_000


def test_max_pool_and_pooled_labels():
    array = np.arange(16, dtype=float).reshape(4, 4)
    np.testing.assert_array_equal(max_pool(array, 2, 2), [[5, 7], [13, 15]])
    np.testing.assert_array_equal(max_pool(np.arange(5.0)[None], 1, 2), [[1, 3, 4]])
    assert pooled_labels(position_labels(["a", "b", "c"]), 2) == ["0–1·a", "2–2·c"]


PANEL_FIGURES = [  # built without Plotly's validation (panels_figure)
    lambda: masks.mask_grid(np.tril(np.ones((3, 4, 4), bool)), [TOKENS] * 3, [TOKENS] * 3, ["a", "b", "c"]),
    lambda: attention.head_grid(RNG.random((5, 4, 4)), np.tril(np.ones((4, 4), bool)), TOKENS, TOKENS, "t"),
    lambda: attention.head_grid(RNG.random((2, 300, 300)), np.ones((300, 300), bool), ["t"] * 300, ["t"] * 300),
    lambda: attention.single_head(RNG.random((4, 4)), np.tril(np.ones((4, 4), bool)), TOKENS, TOKENS, "head 0"),
    lambda: attention.model_view(RNG.random((2, 3, 5, 5)), np.ones((5, 5), bool), "encoder"),
    lambda: attention.model_view(RNG.random((2, 3, 5, 5)), np.ones((5, 5), bool), "encoder", focus=("key", 2)),
    lambda: attention.head_grid(RNG.random((3, 4, 4)), np.ones((4, 4), bool), TOKENS, TOKENS, focus=("query", 1)),
    lambda: head_view.head_view(RNG.random((3, 4, 4)), np.tril(np.ones((4, 4), bool)), TOKENS, TOKENS,
                                focus=("query", 2)),
    lambda: neuron.neuron_view(neuron_terms(RNG.random((2, 4, 8)), RNG.random((2, 4, 8)),
                                            np.tril(np.ones((4, 4), bool)), 1, 2, 1), TOKENS, TOKENS, 1, 2, 1),
    lambda: lab.stages_figure([dict(values=RNG.standard_normal((4, 3)), rows=TOKENS, columns=["d0", "d1", "d2"],
                                    title="Q"),
                               dict(values=np.tril(np.full((4, 4), 0.25)), rows=TOKENS, columns=TOKENS, title="softmax",
                                    mask=np.tril(np.ones((4, 4), bool)), weights=True)]),
    lambda: lab.scaling_figure(scaling_experiment(d_ks=(4, 64), samples=50)),
    lambda: lab.scaling_figure(scaling_experiment(d_ks=(4, 64), samples=50), fit_px=350),
    lambda: training.timeline_figure(np.arange(4) * 50, RNG.random(4), RNG.random(4), RNG.random((4, 2, 3)),
                                     "induction", 100),
    lambda: heads_figures.role_grid({"previous_token": RNG.random((2, 4)), "self": np.full((2, 4), np.nan)}, 8, "t"),
    lambda: heads_figures.measure_grid(RNG.random((2, 4)), RNG.random((2, 4)), 8, "t"),
    lambda: heads_figures.importance_grid(RNG.standard_normal((3, 2, 4)), RNG.standard_normal((3, 2, 4)),
                                          ("encoder", "decoder", "cross"), 20, "t"),
    lambda: induction.position_loss_figure(list("abcxabc"), RNG.random(6) * 5, 0, 4, 3, 300, "line<br>two",
                                           fit_px=300),
]


@pytest.mark.parametrize("make", PANEL_FIGURES)
def test_unvalidated_panel_figures_send_what_validation_would(make):
    """Validation also rewrites shorthand that Plotly.js reads another way or not at all: a colour scale's
    name ("Blues" runs from dark blue to light grey in Plotly.js, the reverse of plotly.py's) and a title
    given as a bare string (ignored by Plotly.js 3). What is sent must be what validation would write."""
    fig = make()
    sent = json.loads(pio.to_json(fig, validate=False))  # what ui.chart sends
    assert sent == json.loads(go.Figure(fig.to_dict()).to_json())
    if "coloraxis" in sent["layout"]:  # attention weights: 0 is white, 1 dark blue
        assert sent["layout"]["coloraxis"]["colorscale"][0] == [0.0, "rgb(247,251,255)"]
        assert sent["layout"]["coloraxis"]["colorscale"][-1] == [1.0, "rgb(8,48,107)"]
        # a role score is the share of a head's weight on its pattern: the same scale, its own name
        assert sent["layout"]["coloraxis"]["colorbar"]["title"] in ({"text": "weight"}, {"text": "share"})


@pytest.mark.parametrize("make", PANEL_FIGURES)
def test_unvalidated_panel_figures_are_valid_plotly(make):
    """Panel grids skip Plotly's validation when built (it cost ~10 ms a move): Plotly validates them here."""
    fig = make()
    validated = go.Figure(fig.to_dict())  # raises on any property Plotly does not know or accept
    assert len(validated.data) == len(fig.data) and validated.layout.height == fig.layout.height
    with pytest.raises(ValueError):  # the check can fail: a property Plotly does not know
        go.Figure({**fig.to_dict(), "layout": {**fig.to_dict()["layout"], "xaxis": {"domian": [0, 1]}}})


def test_model_view_has_layers_times_heads_panels():
    fig = attention.model_view(RNG.random((2, 3, 5, 5)), np.ones((5, 5), bool), "encoder")
    assert len([t for t in fig.data if t.coloraxis]) == 6


def test_head_statistics():
    weights = np.zeros((2, 3, 3))
    weights[0] = np.eye(3)  # attends to itself: distance 0, entropy 0
    weights[1] = 1 / 3
    stats = head_statistics(weights, np.ones((3, 3), bool), np.array([False, False, True]))
    np.testing.assert_allclose(stats["entropy"], [0, np.log2(3)], atol=1e-9)  # bits
    np.testing.assert_allclose(stats["mean_distance"], [0, 8 / 9], atol=1e-9)
    np.testing.assert_allclose(stats["padding_share"], [1 / 3, 1 / 3], atol=1e-9)
    np.testing.assert_allclose(stats["max_weight"], [1, 1 / 3])


def test_checks_flag_broken_arrays():
    weights = np.array([[[0.5, 0.5, 0.0], [0.0, 0.0, 0.0]]])
    mask = np.array([[[True, True, False], [False, False, False]]])
    assert all(check.passed for check in attention_checks(weights, mask, {"output": 1e-7, "weights": 0.0}))
    leaky = weights.copy()
    leaky[0, 0] = [0.4, 0.4, 0.2]  # weight on a masked key
    failed = {c.name for c in attention_checks(leaky, mask) if not c.passed}
    assert failed == {"masked weights are exactly 0"}
    negative = weights.copy()
    negative[0, 0] = [0.6, 0.6, -0.2]  # a negative weight on a masked key: its row still sums to 1
    by_name = {c.name: c for c in attention_checks(negative, mask)}
    assert not by_name["masked weights are exactly 0"].passed and by_name["masked weights are exactly 0"].value == 0.2
    broadcast = np.broadcast_to(weights, (2, 3, 2, 3))  # (L, H, N_q, N_k) against a (1, 2, 3) mask
    assert all(check.passed for check in attention_checks(broadcast, mask))
    unnormalised = weights * 0.9
    assert {c.name for c in attention_checks(unnormalised, mask) if not c.passed} == {
        "rows sum to 1 where a key is allowed"}
    nan = weights.copy()
    nan[0, 1, 0] = np.nan
    assert "no NaN or inf" in {c.name for c in attention_checks(nan, mask) if not c.passed}
    assert not attention_checks(weights, mask, {"output": 0.1, "weights": 0})[-1].passed
    assert all(check.passed for check in attention_checks(weights.astype(np.float32), mask))
    masked_nan = weights.copy()
    masked_nan[0, 0, 2] = np.nan  # on a masked cell: counted, and the masked-weight gap is infinite
    by_name = {c.name: c for c in attention_checks(masked_nan, mask)}
    assert by_name["no NaN or inf"].value == 1 and by_name["masked weights are exactly 0"].value == np.inf


def test_positional_figures():
    encoding = RNG.random((16, 8)).astype(np.float32)
    assert np.shape(positional.encoding_heatmap(encoding).data[0].z) == (16, 8)
    assert len(positional.dimension_lines(encoding, [1, 2]).data) == 2
    assert len(positional.dimensions_offset(encoding, [0, 1, 2]).data) == 3
    assert len(positional.positions_offset(encoding, [0, 5]).data) == 2
    np.testing.assert_allclose(positional.wavelengths(4), [2 * np.pi, 2 * np.pi * 100])
    assert np.shape(positional.similarity_figure(encoding).data[0].z) == (16, 16)
    assert "max-pooled" in positional.similarity_figure(RNG.random((300, 4))).layout.title.text
    big = positional.encoding_heatmap(RNG.random((512, 1024)).astype(np.float32))
    assert np.shape(big.data[0].z) == (171, 342) and "one in every 3" in big.layout.title.text
    assert len(big.to_json()) < 1_000_000


def test_lab_figures_and_numerics():
    fig = lab.stages_figure([dict(values=np.array([[1.0, -np.inf]]), rows=["q"], columns=["a", "b"], title="masked",
                                  mask=np.array([[True, False]]))])
    assert len(fig.data) == 2 and "(1, 2)" in fig.layout.annotations[0].text
    weights = lab.stages_figure([dict(values=np.array([[0.2, 0.8]]), rows=["q"], columns=["a", "b"], title="softmax",
                                      weights=True)])
    assert weights.data[0].zmin == 0 and weights.data[0].zmax == 1 and weights.data[0].showscale is not False
    experiment = scaling_experiment(d_ks=(4, 64, 256), samples=400)
    assert experiment["variance_raw"][2] > 100 and abs(experiment["variance_scaled"][2] - 1) < 0.3
    assert experiment["entropy_raw"][2] < experiment["entropy_scaled"][2]
    assert experiment["max_entropy"] == 4.0  # bits, as every other entropy in the lab: log2(16 keys)
    assert 3.0 < experiment["entropy_scaled"][0] <= 4.0
    scaling = lab.scaling_figure(experiment)
    assert "bits" in " ".join(a.text for a in scaling.layout.annotations) and "log2 N" in scaling.data[-1].name
    assert len(scaling.data) == 5
    for name in ("q·k", "q·k / sqrt(d_k)"):  # one colour per series, in both panels
        assert len({trace.line.color for trace in scaling.data if trace.name == name}) == 1
    assert len({trace.line.color for trace in scaling.data}) == 3
    fills = mask_fills(np.array([1.0, 2.0, 3.0]), np.array([False, False, False]))
    assert np.isnan(fills["-inf"]).all() and np.allclose(fills["add -1e9"], 1 / 3) and (fills["select"] == 0).all()
    big = np.array([0.0, 500.0, 1000.0])
    assert np.isnan(naive_softmax(big)).any()
    np.testing.assert_allclose(stable_softmax(big), logsumexp_softmax(big))
    assert "NaN" in lab.bars_figure(["a"], [np.nan], "x").data[0].text


def test_lab_stages_are_cropped_to_128_exact_cells_and_say_so():
    values = RNG.standard_normal((512, 300)).astype(np.float32)
    mask = np.ones((512, 300), bool)
    mask[:, 200:] = False
    fig = lab.stages_figure([dict(values=values, rows=position_labels(["t"] * 512),
                                  columns=position_labels(["k"] * 300), title="Q·Kᵀ", mask=mask)])
    np.testing.assert_array_equal(fig.data[0].z, values[:128, :128])
    assert "(512, 300) — first 128×128 shown" in fig.layout.annotations[0].text
    assert fig.layout.xaxis.showticklabels is not False and fig.layout.yaxis.showticklabels is not False  # thinned
    small = lab.stages_figure([dict(values=values[:7, :16], rows=["a"] * 7, columns=["b"] * 16, title="Q")])
    largest = np.abs(values[:7, :16]).max()
    assert small.layout.annotations[0].text.startswith("Q<br>") and f"(7, 16) · ±{largest:.3g}</span>" in \
        small.layout.annotations[0].text


def test_the_labs_stages_are_one_figure_three_to_a_row_one_on_a_phone_with_one_weights_bar():
    """A browser draws one chart of eight panels ~3× faster than eight charts (docs/performance.md)."""
    rows, dims = ["a", "b", "c"], ["d0", "d1"]
    causal = np.tril(np.ones((3, 3), bool))
    stages = [dict(values=RNG.standard_normal((3, 2)), rows=rows, columns=dims, title=name) for name in "QKV"] + [
        dict(values=RNG.standard_normal((3, 3)), rows=rows, columns=rows, title=name, mask=causal)
        for name in ("scores", "scaled", "masked")] + [
        dict(values=np.where(causal, 0.5, 0.0), rows=rows, columns=rows, title="softmax", mask=causal, weights=True),
        dict(values=RNG.standard_normal((3, 2)), rows=rows, columns=dims, title="· V")]
    fig = lab.stages_figure(stages)
    assert [a.text.split("<br>")[0] for a in fig.layout.annotations] == [s["title"] for s in stages]
    assert fig.layout.height == 3 * lab.STAGE_ROW_PX and len({trace.xaxis for trace in fig.data}) == 8
    assert [trace for trace in fig.data if trace.showscale is not False] == [fig.data[-3]]  # the 0–1 bar: softmax's
    assert fig.layout.xaxis.domain[1] < fig.layout.xaxis2.domain[0]  # side by side
    phone = lab.stages_figure(stages, fit_px=380)
    assert phone.layout.height == 8 * lab.STAGE_ROW_PX and phone.layout.xaxis2.domain == phone.layout.xaxis.domain


ENCODING = RNG.random((16, 8)).astype(np.float32)
OTHER_FIGURES = [  # every builder that is not a panel grid (those have test_panels_are_laid_out_...)
    lambda: positional.encoding_heatmap(ENCODING),
    lambda: positional.dimension_lines(ENCODING, [1, 2]),
    lambda: positional.dimensions_offset(ENCODING, [0, 1]),
    lambda: positional.positions_offset(ENCODING, [0, 5]),
    lambda: positional.wavelength_figure(8),
    lambda: positional.similarity_figure(ENCODING),
    lambda: lab.stages_figure([dict(values=np.array([[1.0, -np.inf]]), rows=["q"], columns=["a", "b"], title="masked",
                                    mask=np.array([[True, False]]))]),
    lambda: lab.scaling_figure(scaling_experiment(d_ks=(4, 64), samples=50)),
    lambda: lab.bars_figure(["a", "b"], [0.25, 0.75], "select"),
    lambda: training.progress_figure([(0, 2.5, 0.1), (50, 1.0, 0.6)]),
    lambda: shapes.tensor_diagram((3, 8, 7, 16), ("B", "H", "N_q", "d_k"), "query_heads"),
]


@pytest.mark.parametrize("make", OTHER_FIGURES)
def test_every_labelled_axis_has_room_whatever_the_default_template(make):
    """Streamlit makes its own template, which has no automargin, Plotly's default once imported: an axis
    whose labels rely on the "plotly" template's automargin has them cut off in the app. Each labelled axis
    turns automargin on itself, or the figure's margin on that side leaves room for numbers and a title."""
    layout = make().layout
    for name in [key for key in layout.to_plotly_json() if key.startswith(("xaxis", "yaxis"))]:
        axis = layout[name]
        if axis.visible is False or axis.showticklabels is False or axis.automargin is True:
            continue
        assert (layout.margin.b if name.startswith("x") else layout.margin.l) >= 40, (name, layout.margin)


@pytest.mark.parametrize("make", PANEL_FIGURES + OTHER_FIGURES)
def test_every_figure_draws_in_its_own_colours_under_streamlits_template(make):
    """Streamlit's template (Plotly's default once Streamlit is imported) holds placeholder colours that
    only st.plotly_chart replaces; ui.chart sends figures as they are, so a figure must not use them."""
    from streamlit.elements.lib.streamlit_plotly_theme import configure_streamlit_plotly_theme

    default = pio.templates.default
    try:
        configure_streamlit_plotly_theme()  # what importing Streamlit does
        assert pio.templates.default == "streamlit" and "#000001" in repr(pio.templates["streamlit"].to_plotly_json())
        sent = pio.to_json(make(), validate=False)  # what ui.chart sends
    finally:
        pio.templates.default = default
    assert "#0000" not in sent, "a Streamlit placeholder colour is in the figure"
    assert json.loads(sent)["layout"]["template"]["layout"]["colorway"][:2] == ["#636EFA", "#EF553B"]


def test_shape_diagram_titles_the_shape():
    fig = shapes.tensor_diagram((3, 8, 7, 16), ("B", "H", "N_q", "d_k"), "query_heads")
    assert "(3, 8, 7, 16)" in fig.layout.title.text and len(fig.layout.shapes) == 4


def test_tensor_diagrams_hang_from_the_same_top_line_and_stay_in_their_frame():
    """Just under the title whatever the shape (no gap above a small tensor), and the largest fits."""
    tops = set()
    for shape in [(3, 7, 64), (3, 4, 7, 16), (512, 512), (64, 8, 512, 512)]:
        axes = ("B", "H", "N_q", "N_k")[-len(shape):]
        fig = shapes.tensor_diagram(shape, axes, "t")
        tops.add(round(max(box.y1 for box in fig.layout.shapes), 6))  # the stack's top edge
        (x_low, x_high), (y_low, y_high) = fig.layout.xaxis.range, fig.layout.yaxis.range
        for box in fig.layout.shapes:
            assert x_low <= box.x0 < box.x1 <= x_high and y_low <= box.y0 < box.y1 <= y_high, (shape, box)
        for note in fig.layout.annotations:
            assert x_low <= note.x <= x_high and y_low <= note.y <= y_high - 0.1, (shape, note.text)
    assert len(tops) == 1


def test_exports():
    csv = matrix_csv(np.eye(2), ["a", "b"], ["x", "y"]).decode()
    assert csv.splitlines()[0] == ",x,y" and csv.splitlines()[1] == "a,1.0,0.0"
    import io
    data = np.load(io.BytesIO(arrays_npz(mask=np.ones((2, 2), bool))), allow_pickle=False)
    assert data["mask"].all()


@pytest.mark.parametrize("builder", ["mask_grid", "single_head"])
def test_builders_accept_html_tokens_as_plain_labels(builder):
    tokens = ["<img src=x onerror=alert(1)>", "b"]
    if builder == "mask_grid":
        fig = masks.mask_grid(np.ones((1, 2, 2), bool), [tokens], [tokens], ["t"], columns=1)
    else:
        fig = attention.single_head(np.eye(2), np.ones((2, 2), bool), tokens, tokens, "t")
    assert fig.data[0].x[0].startswith("0·&lt;img")  # Plotly shows the entity as "<img", never a tag


def test_large_masks_are_pooled_and_small():
    mask = np.tril(np.ones((512, 512), bool))[None].repeat(3, 0)
    fig = masks.mask_grid(mask, [["t"] * 512] * 3, [["t"] * 512] * 3, ["a", "b", "c"])
    assert np.shape(fig.data[0].z) == (128, 128) and "max-pooled 4×4 view of 512×512" in fig.layout.title.text
    assert [note.text for note in fig.layout.annotations] == ["a", "b", "c"]  # panel titles stay short
    assert len(fig.to_json()) < 1_000_000


def test_the_decoding_figures_validate_and_keep_weights_on_the_fixed_scale():
    import plotly.graph_objects as go

    from viz.decoding import cache_heatmaps, distribution, look_ahead_row, step_attention

    weights = np.random.default_rng(0).dirichlet(np.ones(5), size=(2, 4)).astype(np.float32)  # (L, H, N_k)
    fig = step_attention(weights, list("abcde"), "self")
    go.Figure(fig.to_dict())  # validates
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 1
    panels = [np.asarray(t.z) for t in fig.data if t.name and t.name.startswith("layer")]
    np.testing.assert_allclose(panels[0][-1], weights[0].mean(0), atol=1e-6)  # the last row is the mean of heads
    row = look_ahead_row(2, 5, list("abcde"))
    assert np.asarray(row.data[0].z).tolist() == [[1, 1, 1, 0, 0]]  # lower triangular: keys 0..2 may be attended
    bars = distribution([("x", 0.7), (" ", 0.2), ("</s>", 0.1)], " ", "next")
    assert list(bars.data[0].y) == ["&lt;/s&gt;", "␣ (space)", "x"] and bars.data[0].marker.color[1] == "#2b8cbe"
    cache = {"keys": np.ones((4, 6, 3), np.float32), "values": -np.ones((4, 6, 3), np.float32)}
    heat = cache_heatmaps(cache, 2, 5, "cache")
    assert len(heat.data) == 1 and np.asarray(heat.data[0].z).shape == (3, 8 * 4 - 1)  # 2 × 4 panels of d_k 3, gaps


# ----------------------------------------------------------------- head view, focus outlines, neuron view


def _line_shapes(fig):
    return [shape for shape in fig.layout.shapes if shape.legendgroup and not shape.showlegend]


SEGMENT = r"M0,(-?[\d.]+)L1,(-?[\d.]+)"


def _segments(fig):
    """``(head, query, key, opacity)`` of every line the head view draws (``M0,query+o L1,key+o`` in a path, ``o``
    the head's offset in the row)."""
    drawn = []
    for shape in _line_shapes(fig):
        head = int(shape.legendgroup.split()[-1])
        drawn += [(head, round(float(q)), round(float(k)), shape.opacity)
                  for q, k in re.findall(SEGMENT, shape.path)]
    return drawn


def test_the_head_view_draws_a_line_per_weight_with_opacity_by_weight_and_one_colour_a_head():
    weights = np.array([[[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.005, 0.795]],
                        [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]], np.float32)
    fig = head_view.head_view(weights, np.tril(np.ones((3, 3), bool)), ["a", "b", "a"], ["a", "b", "a"])
    lines = {(h, q, k): opacity for h, q, k, opacity in _segments(fig)}
    expected = {(h, q, k) for h, q, k in zip(*np.nonzero(weights >= head_view.MIN_WEIGHT))}
    assert set(lines) == expected  # 0.005 and the zeros are left out
    assert "10 lines under 0.01 left out" in fig.layout.title.text
    thin = head_view.head_view(np.full((1, 200, 200), 1 / 200, np.float32), np.ones((200, 200), bool),
                               [str(i) for i in range(200)], [str(i) for i in range(200)])
    assert not _segments(thin) and "every weight here is under 0.01 (attention spread thin)" in thin.layout.title.text
    for (h, q, k), opacity in lines.items():  # ten opacity steps on the fixed 0–1 scale
        assert abs(opacity - weights[h, q, k]) <= 0.1, (h, q, k, opacity)
    colours = {shape.legendgroup: shape.line.color for shape in _line_shapes(fig)}
    assert colours == {"head 0": head_view.head_color(0), "head 1": head_view.head_color(1)}
    legend = [(trace.legendgroup, trace.line.color) for trace in fig.data if trace.showlegend is not False]
    assert legend == [("head 0", head_view.head_color(0)), ("head 1", head_view.head_color(1))]  # its click hides them
    tokens = [trace for trace in fig.data if (trace.meta or {}).get("side")]
    assert [list(t.text) for t in tokens] == [["0·a", "1·b", "2·a"]] * 2  # repeated tokens stay distinct
    assert "query 1·b" in tokens[0].hovertext[1] and "0·a 0.50" in tokens[0].hovertext[1]


def test_the_head_view_names_each_line_shapes_lines_as_numbers_for_the_browser():
    """The chart's own code keeps a hovered token's lines from layout.meta.lines (it parses no path)."""
    fig = head_view.head_view(RNG.random((3, 4, 4)), np.tril(np.ones((4, 4), bool)), TOKENS, TOKENS,
                              focus=("query", 2))
    lines = fig.layout.meta["lines"]
    assert lines and all(fig.layout.shapes[index].legendgroup for index in lines)  # line shapes, not the band
    for index, ends in lines.items():
        path = fig.layout.shapes[index].path
        query, key = (np.frombuffer(base64.b64decode(ends[side]["bdata"]), ends[side]["dtype"]).tolist()
                      for side in ("query", "key"))
        drawn = [(float(q) - ends["offset"], float(k) - ends["offset"]) for q, k in re.findall(SEGMENT, path)]
        np.testing.assert_allclose(drawn, list(zip(query, key)), atol=1e-9)


def test_the_head_views_heads_lines_to_one_key_lie_side_by_side():
    """Issue 87, item 17: every head's line from a query to the same key was drawn on top of the others (only the
    last showed); each head has its own offset in the row, symmetric about its middle, as BertViz draws them."""
    weights = np.zeros((4, 3, 3), np.float32)
    weights[:, 2, 0] = 1.0  # every head: query 2 → key 0
    fig = head_view.head_view(weights, np.ones((3, 3), bool), ["a", "b", "c"], ["a", "b", "c"])
    paths = {shape.path for shape in _line_shapes(fig) if "L1," in shape.path and shape.opacity > 0.9}
    assert len(paths) == 4  # four lines, four places
    starts = sorted(float(re.match(SEGMENT, path).group(1)) for path in paths)
    assert all(1.5 < start < 2.5 for start in starts)  # inside query 2's row
    assert np.allclose(np.diff(starts), np.diff(starts)[0]) and abs(np.mean(starts) - 2) < 1e-9
    offsets, width = head_view.head_offsets(range(12))
    assert max(offsets.values()) - min(offsets.values()) <= head_view.BAND and 1 <= width <= 2


def test_positions_travel_as_bytes_under_256_and_as_int16_above():
    small, large = head_view._typed([0, 63, 255]), head_view._typed([0, 300, 4095])
    assert small["dtype"] == "u1" and np.frombuffer(base64.b64decode(small["bdata"]), "u1").tolist() == [0, 63, 255]
    assert large["dtype"] == "i2" and np.frombuffer(base64.b64decode(large["bdata"]), "<i2").tolist() == [0, 300, 4095]


def test_the_head_views_top_margin_keeps_room_for_its_title_lines_and_the_legends_rows():
    weights, mask = RNG.random((16, 4, 4)), np.ones((4, 4), bool)
    one = head_view.head_view(weights[:4], mask, TOKENS, TOKENS, title="layer 0")
    two = head_view.head_view(weights[:4], mask, TOKENS, TOKENS, title="layer 0<br>12 lines under 0.01 left out")
    assert two.layout.margin.t - one.layout.margin.t == 20  # a title line more
    assert one.layout.meta["min_width_px"] == NARROW_PX - 1  # a phone's column reports its width (ui/chart.py) …
    phone = head_view.head_view(weights, mask, TOKENS, TOKENS, title="layer 0", width_px=370)
    wide = head_view.head_view(weights, mask, TOKENS, TOKENS, title="layer 0")
    assert "min_width_px" not in phone.layout.meta  # … and the legend is laid out for it: 16 heads, 3 or 4 to a row
    assert phone.layout.margin.t - wide.layout.margin.t == 2 * head_view.LEGEND_ROW_PX  # 5 rows against 3
    assert one.layout.legend.title.side == "top"  # the legend's title above its entries: they have the width


def test_the_head_view_keeps_a_focused_tokens_lines_and_only_the_heads_asked_for():
    weights = np.full((4, 6, 6), 1 / 6, np.float32)
    by_query = _segments(head_view.head_view(weights, np.ones((6, 6), bool), TOKENS7[:6], TOKENS7[:6],
                                             heads=[1, 3], focus=("query", 4)))
    assert {(h, q) for h, q, _, _ in by_query} == {(1, 4), (3, 4)} and len(by_query) == 2 * 6
    by_key = _segments(head_view.head_view(weights, np.ones((6, 6), bool), TOKENS7[:6], TOKENS7[:6],
                                           focus=("key", 0)))
    assert {k for _, _, k, _ in by_key} == {0} and len(by_key) == 4 * 6


def test_the_head_view_above_64_positions_draws_a_window_around_the_focus_and_says_so():
    weights = np.zeros((2, 200, 200), np.float32)
    weights[:, np.arange(200), np.arange(200)] = 1.0  # each query attends to itself
    tokens = [str(i) for i in range(200)]
    fig = head_view.head_view(weights, np.ones((200, 200), bool), tokens, tokens, focus=("query", 150))
    first = 150 - head_view.MAX_POSITIONS // 2
    assert f"queries {first}–{first + 63} and keys {first}–{first + 63} of 200×200" in fig.layout.title.text
    token_traces = [t for t in fig.data if (t.meta or {}).get("side")]
    assert [t.meta["first"] for t in token_traces] == [first, first] and len(token_traces[0].text) == 64
    assert _segments(fig) == [(h, 150 - first, 150 - first, 0.95) for h in (0, 1)]


def test_the_head_view_of_an_exact_window_draws_what_the_whole_map_draws():
    weights = RNG.random((2, 200, 200)).astype(np.float32)
    tokens, mask = [str(i) for i in range(200)], np.tril(np.ones((200, 200), bool))
    whole = head_view.head_view(weights, mask, tokens, tokens, focus=("key", 150))
    first, end = head_view.window(200, 150)
    part = head_view.head_view(weights[:, first:end, first:end], mask, tokens, tokens, focus=("key", 150),
                               start=(first, first))  # a block-wise run's window: the tokens and mask whole
    assert pio.to_json(part) == pio.to_json(whole)


def test_the_head_view_keeps_the_strongest_lines_within_its_budget_and_says_how_many():
    weights = RNG.random((2, 10, 10)).astype(np.float32)
    fig = head_view.head_view(weights, np.ones((10, 10), bool), TOKENS7 + ["a"] * 3, TOKENS7 + ["a"] * 3,
                              max_lines=50)
    drawn = _segments(fig)
    above = int(np.sum(weights >= head_view.MIN_WEIGHT))
    assert len(drawn) == 50 and f"only the 50 strongest of {above} lines" in fig.layout.title.text
    weakest_drawn = min(weights[h, q, k] for h, q, k, _ in drawn)
    assert np.sum(weights > weakest_drawn) <= 50


def test_the_head_view_greys_the_keys_a_focused_query_may_not_attend_to():
    fig = head_view.head_view(np.full((1, 4, 4), 0.25, np.float32), np.tril(np.ones((4, 4), bool)), TOKENS,
                              TOKENS, focus=("query", 1))
    keys = [t for t in fig.data if (t.meta or {}).get("side") == "key"][0]
    assert list(keys.marker.color)[1:] == ["#555", MASKED_COLOR, MASKED_COLOR]
    assert keys.text[2] == f'<span style="color:{MASKED_COLOR}">2·the</span>' and keys.text[1] == "1·cat"


def test_focus_outlines_follow_pooling_and_a_cropped_window():
    grid = attention.head_grid(RNG.random((2, 300, 300)), np.ones((300, 300), bool), ["t"] * 300, ["t"] * 300,
                               focus=("key", 200))
    factor = 3
    assert [(s.x0, s.x1) for s in grid.layout.shapes][0] == (200 // factor - 0.5, 200 // factor + 0.5)
    stride = grid.data[0].meta["stride"]  # every trace of a row: a click's column modulo the panels' stride
    assert grid.data[1].meta == {"factor": factor, "stride": stride} and grid.layout.meta["click"] is True
    assert len(grid.data[0].x) < stride < 2 * len(grid.data[0].x)  # one panel's categories and the gap
    cropped = attention.single_head(RNG.random((400, 400)), np.ones((400, 400), bool), ["t"] * 400, ["t"] * 400,
                                    start=(128, 0), focus=("query", 130))
    assert [(s.y0, s.y1) for s in cropped.layout.shapes] == [(1.5, 2.5)]
    assert all(trace.meta["first"] == [128, 0] for trace in cropped.data)  # a click: the window's first query
    outside = attention.single_head(RNG.random((400, 400)), np.ones((400, 400), bool), ["t"] * 400, ["t"] * 400,
                                    start=(128, 0), focus=("query", 10))
    assert not outside.layout.shapes


def _moved_as_the_browser_moves_them(focus: dict, index: int) -> list[dict]:
    """viz/panels.js's focusOutlines, in Python: the outlines of index 0 moved along the focused side."""
    low, high = ("y0", "y1") if focus["side"] == "query" else ("x0", "x1")
    return [{**shape, low: shape[low] + index, high: shape[high] + index} for shape in focus["outlines"]]


def _as_text(shapes) -> str:
    """Shapes as JSON text, keys sorted (viz/panels.js's shapesText): what the chart compares."""
    return json.dumps(shapes, sort_keys=True)


@pytest.mark.parametrize("side", ["query", "key"])
def test_a_focus_drawn_in_the_browser_is_as_text_the_one_the_server_draws(side):
    """A click's outlines are drawn at once in the browser from ``meta.focus``; the server's run then sends its own,
    which the chart compares as text and does not draw again: for every row and column of a grid of two rows and
    of the model view, they are the same."""
    weights, mask = RNG.random((6, 5, 7)), np.tril(np.ones((5, 7), bool))
    builders = {
        "grid": lambda focus: attention.head_grid(weights, mask, TOKENS7[:5], TOKENS7, columns=4, focus=focus,
                                                  click_side=side),
        "model view": lambda focus: attention.model_view(weights.reshape(3, 2, 5, 7), mask, focus=focus,
                                                         click_side=side),
    }
    for name, build in builders.items():
        drawn = json.loads(build(None).to_json())["layout"]
        focus = drawn["meta"]["focus"]
        assert focus["side"] == side and focus["at"] is None and "shapes" not in drawn, name
        for index in range(5 if side == "query" else 7):
            server = json.loads(build((side, index)).to_json())["layout"]
            assert _as_text(server["shapes"]) == _as_text(_moved_as_the_browser_moves_them(focus, index)), name
            assert server["meta"]["focus"]["at"] == index
    pooled = attention.head_grid(RNG.random((2, 300, 300)), np.ones((300, 300), bool), ["t"] * 300, ["t"] * 300,
                                 click_side=side)
    assert "focus" not in pooled.layout.meta  # a pooled cell is many positions: the server draws its focus


def test_the_neuron_view_draws_q_k_their_product_and_the_softmax_with_masked_keys_marked():
    q, k = RNG.standard_normal((2, 4, 8)), RNG.standard_normal((2, 4, 8))
    mask = np.tril(np.ones((4, 4), bool))
    terms = neuron_terms(q, k, mask, 0, 1, 0)
    fig = neuron.neuron_view(terms, TOKENS, TOKENS, 0, 1, 0)
    strip, bars, blocked = fig.data
    np.testing.assert_allclose(np.asarray(strip.z), np.stack([q[0, 1], k[0, 0], q[0, 1] * k[0, 0]]), atol=1e-6)
    np.testing.assert_allclose(np.asarray(bars.y), stable_softmax(np.array([q[0, 1] @ k[0, 0], q[0, 1] @ k[0, 1]])
                                                                  / np.sqrt(8)).tolist() + [0, 0], atol=1e-6)
    assert list(blocked.x) == ["2·the", "3·&lt;pad&gt;"] and f"÷ √8 = {terms.scaled:.4f}" in fig.layout.title.text
    masked = neuron.neuron_view(neuron_terms(q, k, mask, 0, 1, 3), TOKENS, TOKENS, 0, 1, 3)
    assert "masked (weight 0)" in masked.layout.title.text


def test_a_grid_with_nothing_masked_names_its_categories_on_the_axis_gaps_included():
    """Plotly leaves out the categories of a heatmap with no finite cell: with nothing masked (hidden specials) a
    grey layer of NaN named no gaps, and the panels ran together. Then there is no grey layer, and the axis names
    every category."""
    fig = attention.head_grid(RNG.random((3, 4, 5)), np.ones((4, 5), bool), list("abcd"), list("vwxyz"),
                              columns=3, key_positions=[1, 2, 4, 5, 6])
    assert [trace.name for trace in fig.data] == ["head 0", "head 1", "head 2"]
    categories = fig.layout.xaxis.categoryarray
    gap = (len(categories) - 15) // 2
    assert gap >= 1 and len(categories) == 15 + 2 * gap
    assert list(categories[:5]) == ["1·v", "2·w", "4·x", "5·y", "6·z"]  # each key's own position
    assert [trace.x[0] for trace in fig.data] == [categories[0], categories[5 + gap], categories[10 + 2 * gap]]
    masked = attention.head_grid(RNG.random((3, 4, 5)), np.tril(np.ones((4, 5), bool)), list("abcd"), list("vwxyz"))
    assert masked.data[0].name == "masked" and masked.layout.xaxis.categoryarray is None


def test_a_grid_laid_out_for_a_phones_column_fits_it_with_fewer_panels_to_a_row():
    """A chart reports a narrow column's width (ui.chart.column_px); the grid is laid out for it: fewer panels to a
    row where the titles need it, the title wrapped, and its narrowest width within the column."""
    weights, mask = RNG.random((5, 11, 60)), np.ones((11, 60), bool)  # 60 keys: too many to label at any count
    title = "cross-attention, layer 1: rows are the characters written, columns those read"
    wide = attention.head_grid(weights, mask, ["q"] * 11, ["k"] * 60, title=title, columns=5)
    narrow = attention.head_grid(weights, mask, ["q"] * 11, ["k"] * 60, title=title, columns=5, fit_px=350)
    assert wide.layout.meta["min_width_px"] > 350 >= narrow.layout.meta["min_width_px"]
    assert len({trace.yaxis for trace in narrow.data}) > len({trace.yaxis for trace in wide.data})  # more rows
    assert "<br>" in narrow.layout.title.text and "<br>" not in wide.layout.title.text
    masks_grid = masks.mask_grid(np.ones((4, 7, 7), bool), [TOKENS7] * 4, [TOKENS7] * 4, list("abcd"), columns=4,
                                 fit_px=350)
    assert masks_grid.layout.meta["min_width_px"] <= 350
    experiment = scaling_experiment(d_ks=(4, 64), samples=50)
    assert lab.scaling_figure(experiment, fit_px=350).layout.meta is None  # one panel above the other
    assert lab.scaling_figure(experiment).layout.meta["min_width_px"] > 350


def _luminance(colour: str) -> float:
    red, green, blue = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def test_blocked_cells_stand_apart_from_both_themes_backgrounds_and_from_the_allowed_blue():
    from viz.style import ALLOWED_COLOR, BLOCKED_COLOR

    light, dark = _luminance("#ffffff"), _luminance("#171614")  # Streamlit's light and dark backgrounds
    blocked = _luminance(BLOCKED_COLOR)
    assert light - blocked > 0.3 and blocked - dark > 0.2  # neither nearly white nor nearly black
    assert abs(blocked - _luminance(ALLOWED_COLOR)) > 0.05 and BLOCKED_COLOR == MASKED_COLOR


def test_a_decoding_steps_layers_keep_their_rotated_labels_apart_and_the_next_token_title_clears_the_tool_bar():
    from viz import decoding

    tokens = ["<s>", "ko", "agri", "mav", "na", "pav"]
    fig = decoding.step_attention(RNG.random((2, 4, 6)), tokens, "masked self-attention of position 5")
    heads = [trace for trace in fig.data if trace.coloraxis]
    layer_1 = heads[1].x  # layer 1's keys follow layer 0's and the gap on one axis
    gap = list(fig.layout.xaxis.categoryarray or fig.data[0].x).index(layer_1[0]) - 6
    cell_px = (1100 - 90 - fig.layout.margin.l) / (12 + gap)  # at the nominal width
    assert gap * cell_px >= len("5·pav") * 7 * 0.75  # a rotated label's reach to the left fits in the gap
    bars = decoding.distribution([("ruk", 0.9), ("dul", 0.1)], "ruk", "next token<br>temperature 1.0")
    assert bars.layout.margin.t >= 60 and bars.layout.title.text.startswith("next token<br>")


def test_a_one_key_panel_is_placed_by_its_first_category_not_by_a_one_element_x():
    """Plotly drew a one-column heatmap of categories one category to the right: a decoding's first step (one key)
    lost its second layer's panel off the axis."""
    from viz import decoding

    fig = decoding.step_attention(np.ones((2, 4, 1)), ["<s>"], "masked self-attention of position 0")
    layers = [trace for trace in fig.data if trace.coloraxis]
    assert [(trace.x, trace.xtype, trace.dx) for trace in layers] == [(None, "scaled", 1)] * 2
    assert [trace.x0 for trace in layers] == [fig.layout.xaxis.categoryarray[0], fig.layout.xaxis.categoryarray[-1]]


def test_the_training_timeline_says_what_its_accuracy_counts_on_round_ticks():
    fig = training.timeline_figure(np.arange(4) * 50, RNG.random(4), RNG.random(4), RNG.random((4, 2, 3)),
                                   "induction", 100, measure="token accuracy (teacher forced)")
    layout = fig.layout
    for axis in (layout.yaxis2, layout.yaxis3):
        assert (axis.tick0, axis.dtick) == (0, 0.25)
    assert "token accuracy" in layout.yaxis3.title.text


def test_a_grid_takes_fewer_panels_to_a_row_where_that_labels_every_key():
    """#52.13: 26 keys in 5 panels gave each ~7 px and every 4th label; 2 panels to a row give each key its room."""
    from viz.panels import labelled_columns
    from viz.sizes import TICK_PX

    assert labelled_columns(5, 26, 900, 16) == 2 and (900 - 16) / 2 / 26 >= TICK_PX
    assert labelled_columns(5, 7, 900, 16) == 5  # every key fits already
    assert labelled_columns(5, 60, 900, 16) == 5  # not even two would: the labels thin, the grid stays low
    weights, mask = RNG.random((5, 11, 26)), np.ones((11, 26), bool)
    grid = attention.head_grid(weights, mask, ["q"] * 11, [f"k{i}" for i in range(26)], columns=5)
    assert len({trace.yaxis for trace in grid.data}) == 3  # 2 + 2 + 1 panels


def test_the_score_terms_view_draws_the_grid_and_the_key_side_bars_with_the_winner_marked():
    from viz.score_terms import score_terms_view
    from viz.style import FOCUS_COLOR

    parts = ("token", "position", "L0H0", "bias")
    grid = np.arange(16, dtype=np.float32).reshape(4, 4) - 8
    preference = np.array([0.1, 2.0, -0.5, 0.0], np.float32)
    fig = score_terms_view(grid, preference, parts, parts, ["a", "b", "a"], ["a", "b", "a"], head=1, query=2, key=0,
                           score=-8.0, weight=0.25)
    heatmap, bars = fig.data
    assert list(heatmap.y) == list(parts) and list(heatmap.x) == list(parts)
    assert heatmap.zmin == -8 and heatmap.zmax == 8  # a diverging scale around 0: logits, not weights
    assert bars.marker.color[1] == FOCUS_COLOR and bars.marker.color.count(FOCUS_COLOR) == 1
    title = fig.layout.title.text
    assert "why query 2·a attends to key 0·a" in title and "score -8.000" in title and "weight 0.250" in title
    assert "query 2·a part %{y}" in heatmap.hovertemplate and "key 0·a part %{x}" in heatmap.hovertemplate


@pytest.mark.parametrize("heads, step", [(1, 0), (8, 20), (64, 199), (64, 511)])
def test_the_cache_heatmaps_draw_at_every_allowed_size(heads, step):
    """64 heads made 128 panels whose margins were wider than they were (Plotly: "domain[1] … -0.0021875") (issue
    86, item 5): every panel has a domain inside [0, 1], left to right and top to bottom, none empty."""
    from viz.decoding import cache_heatmaps

    rng = np.random.default_rng(0)
    cache = {"keys": rng.normal(size=(heads, step + 1, 16)), "values": rng.normal(size=(heads, step + 1, 16))}
    fig = cache_heatmaps(cache, step, 0, "layer 0's cache")
    layout = fig.to_plotly_json()["layout"]
    domains = [layout[name].get("domain", [0, 1]) for name in layout if name.startswith(("xaxis", "yaxis"))]
    assert len(fig.data) == -(-2 * heads // 16)  # one trace a row of 16 panels
    assert all(0 <= low < high <= 1 for low, high in domains), domains
    assert fig.layout.height <= 4000  # readable: a long cache is drawn in fewer pixels a position
    z = np.asarray(fig.data[0].z, float)  # the first row: key panels of heads 0, 1, … with a blank column between
    np.testing.assert_allclose(z[:, :16], cache["keys"][0])
    if heads > 1:
        assert np.isnan(z[:, 16]).all()
        np.testing.assert_allclose(z[:, 17:33], cache["keys"][1])


def test_padding_keys_are_drawn_apart_from_the_look_ahead_mask():
    """Issue 87, item 18: the look-ahead and the padding masks shared one grey; a pad key's blocked cells are sand
    now, with their own hover, and a pooled key is padding only when its whole block is."""
    from viz.style import PADDING_COLOR

    n = 6
    causal = np.tril(np.ones((n, n), bool))
    padded = np.array([False, False, False, False, True, True])
    mask = causal & ~padded[None, :]  # (N_q, N_k): the decoder's, padding keys blocked
    fig = attention.head_grid(np.full((2, n, n), 0.1), mask, list("abcd") + ["<pad>"] * 2,
                              list("abcd") + ["<pad>"] * 2, padded_keys=padded)
    blocked = next(trace for trace in fig.data if trace.name == "masked")  # one layer: a window stays < 1 MB
    z = np.array(blocked.z, dtype=float)
    assert (z == 2).sum() == 2 * 2 * n  # sand: every row, two pad keys, two panels
    assert (z == 1).sum() == 2 * np.tri(4, 4, -1).sum()  # grey: the look-ahead's cells among the real keys
    scale = dict((step[0], step[1]) for step in blocked.colorscale)
    assert (blocked.zmin, blocked.zmax) == (1, 2) and scale[0] == MASKED_COLOR and scale[1] == PADDING_COLOR
    assert "sand: a padding key" in blocked.hovertemplate
    assert list(attention.pooled_keys(padded, 2)) == [False, False, True]
    assert list(attention.pooled_keys(np.array([False, True, True, True]), 2)) == [False, True]


def test_the_cost_figures_crossovers_are_named_in_one_note_not_one_each():
    """Issue 87, item 16: three crossover labels, each at its line, ran into each other and the right panel."""
    from transformer.analysis.cost import Series
    from viz.cost import cost_figure

    one = Series("4 heads", (64, 128, 256), (1e-3, 3e-3, 1e-2), (1e6, 4e6, 1.6e7), 1.8, (1.0, 1.0, 1.0))
    fig = cost_figure([one], "CPU", quadratic_from=((512.0, " (4 heads)"), (768.0, " (2 key/value heads)"),
                                                    (1024.0, " (1 key/value head)")))
    notes = [a for a in fig.layout.annotations if "N² terms" in a.text]
    assert len(notes) == 1 and all(f"N = {n}" in notes[0].text for n in ("512", "768", "1,024"))
    assert notes[0].xref == "x domain" and len(fig.layout.shapes) == 6  # a line on each panel, each crossover
