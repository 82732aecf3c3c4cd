"""The Images page's figure builders (viz/images.py): NumPy in, a figure out whose data are exactly what was given."""

import numpy as np

from viz.images import (
    STRIDE,
    grid_of_grids,
    head_overlays,
    image_and_prediction,
    overlay_patch,
    rollout_and_flow,
)

RNG = np.random.default_rng(0)


def test_the_image_is_drawn_as_given_with_its_patch_borders_and_numbers_and_a_click_names_a_pixel():
    image = RNG.random((8, 8)).astype(np.float32)
    fig = image_and_prediction(image, "an image", np.eye(3)[1] * 0.9 + 0.05, ("a", "b", "c"), chosen=6, right=2)
    heatmap, borders, numbers, bars = fig.data
    np.testing.assert_array_equal(heatmap.z, image)
    assert fig.layout.meta["click"] and (heatmap.zmin, heatmap.zmax) == (0, 1)
    segments = [(x0, y0, x1, y1) for x0, y0, x1, y1 in zip(borders.x[0::3], borders.y[0::3], borders.x[1::3],
                                                            borders.y[1::3])]
    assert len(segments) == 10 and {x0 for x0, _, x1, _ in segments if x0 == x1} == {-0.5, 1.5, 3.5, 5.5, 7.5}
    assert list(numbers.text) == [str(p) for p in range(16)] and (numbers.x[6], numbers.y[6]) == (4.5, 2.5)
    assert borders.hoverinfo == numbers.hoverinfo == "skip"  # a click reports the pixel under them
    [outline] = fig.layout.shapes  # patch 5 (token 6): row 1, column 1
    assert (outline.x0, outline.x1, outline.y0, outline.y1) == (1.5, 3.5, 1.5, 3.5)
    assert list(bars.marker.color)[1] != list(bars.marker.color)[0] and list(bars.marker.line.width)[2] > 0
    assert (bars.xaxis, bars.yaxis) == ("x2", "y2") and fig.layout.annotations[0].text == "Predicted: b (95.0%)"
    assert fig.layout.xaxis.domain[1] < fig.layout.xaxis2.domain[0]  # side by side, the bars on the right


def test_on_a_phone_the_bars_go_below_the_image_and_a_wide_layout_asks_for_room():
    probabilities, classes = np.full(4, 0.25), ("a", "b", "c", "d")
    wide = image_and_prediction(np.zeros((8, 8)), "t", probabilities, classes)
    narrow = image_and_prediction(np.zeros((8, 8)), "t", probabilities, classes, width_px=380)
    assert wide.layout.meta["min_width_px"] > 380 and "min_width_px" not in narrow.layout.meta
    assert narrow.layout.yaxis2.domain[1] < narrow.layout.yaxis.domain[0]
    assert tuple(narrow.layout.xaxis2.domain) == (0, 1)
    long = image_and_prediction(np.zeros((8, 8)), "Edited: match image 123456 · 12 pixels flipped", probabilities,
                                classes, width_px=300)
    assert "<br>" in long.layout.title.text and long.layout.margin.t > narrow.layout.margin.t  # room for its lines


def test_every_heads_panel_holds_its_weights_and_the_pixels_lie_over_their_own_quarter_cells():
    weights = RNG.random((2, 3, 17, 17)).astype(np.float32)  # (L, H, 17, 17)
    image = (RNG.random((8, 8)) > 0.5).astype(np.float32)
    fig = head_overlays(weights, image, token=4)
    heatmap, overlay = fig.data
    z, pixels = np.asarray(heatmap.z, float), np.asarray(overlay.z, float)
    assert z.shape == (2 * STRIDE - 1, 3 * STRIDE - 1) and pixels.shape == (2 * z.shape[0], 2 * z.shape[1])
    for layer in range(2):
        for head in range(3):
            top, left = layer * STRIDE, head * STRIDE
            np.testing.assert_allclose(z[top:top + 4, left:left + 4].ravel(), weights[layer, head, 4, 1:], atol=1e-6)
            drawn = pixels[2 * top:2 * top + 8, 2 * left:2 * left + 8]
            np.testing.assert_array_equal(np.nan_to_num(drawn), image)  # dark pixels: nothing drawn (NaN)
    assert np.isnan(z[4]).all() and np.isnan(pixels[8:10]).all()  # the gap between layers
    assert (overlay.x0, overlay.dx, overlay.y0, overlay.dy) == (-0.25, 0.5, -0.25, 0.5)  # pixel centres
    assert overlay.hoverinfo == "skip" and fig.layout.meta["click"]
    assert [a.text for a in fig.layout.annotations][:2] == [f"L0 H0 · CLS {weights[0, 0, 4, 0]:.2f}",
                                                            f"L0 H1 · CLS {weights[0, 1, 4, 0]:.2f}"]
    assert overlay_patch(1, STRIDE + 2) == 6 and overlay_patch(4, 0) is None  # a click's cell -> its patch


def test_rollout_and_flow_share_one_scale_and_the_positions_grid_puts_each_patch_at_its_place():
    rollout, flow = RNG.random(17).astype(np.float32), RNG.random(17).astype(np.float32)
    fig = rollout_and_flow(rollout, flow, token=0, layers=2)
    np.testing.assert_allclose(np.asarray(fig.data[0].z).ravel(), rollout[1:])
    np.testing.assert_allclose(np.asarray(fig.data[1].z).ravel(), flow[1:])
    assert fig.layout.coloraxis.cmax == max(rollout[1:].max(), flow[1:].max())
    similarity = RNG.random((16, 16)).astype(np.float32)
    laid = grid_of_grids(similarity)
    np.testing.assert_array_equal(laid[5:9, 10:14].ravel(), similarity[6])  # patch 6: block row 1, column 2


def _colour_at(colorscale, value: float) -> tuple:
    """The (r, g, b, a) a Plotly colour scale of named or rgba stops gives ``value`` at its nearest stop."""
    named = {"black": (0, 0, 0, 1.0), "white": (255, 255, 255, 1.0)}
    stop = min(colorscale, key=lambda entry: abs(entry[0] - value))[1]
    if stop in named:
        return named[stop]
    r, g, b, a = (float(part) for part in stop[stop.index("(") + 1:-1].split(","))
    return r, g, b, a


def test_the_heads_panels_draw_the_image_as_the_main_image_does_light_pixels_light():
    """Issue 78, item 1: every panel drew the image as its negative (a light pixel black)."""
    image = np.zeros((8, 8), np.float32)
    image[0, 0] = 1.0  # one white pixel in a black image
    main = image_and_prediction(image, "image", np.array([0.5, 0.5]), ["a", "b"]).data[0]
    overlay = head_overlays(RNG.random((1, 2, 17, 17)).astype(np.float32), image, token=0).data[1]
    white_main, white_panel = _colour_at(main.colorscale, 1.0), _colour_at(overlay.colorscale, 1.0)
    assert white_main[:3] == white_panel[:3] == (255, 255, 255) and white_panel[3] == 1.0  # light drawn light
    assert _colour_at(overlay.colorscale, 0.0)[3] == 0.0  # a dark pixel lets the attention's colour through
