"""Attention over an image (a Vision Transformer's, `transformer.live.images`): the image with its patch grid (a
click on a pixel flips it), each head's attention from one token drawn over the image, rollout and flow over the
patches, the learned positions' similarity as a grid of grids, each head's mean attention distance, and the
classes' probabilities."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.panels import axis_pair, grid_domains, min_width_meta, panel_title
from viz.style import (
    ALLOWED_COLOR,
    DIVERGING_SCALE,
    FOCUS_COLOR,
    TEMPLATE_JSON,
    left_title,
    title_lines,
    weight_coloraxis,
    wrap_title,
)

IMAGE, PATCH, GRID = 8, 2, 4
GREY = [[0.0, "black"], [1.0, "white"]]  # a pixel's value: 0 black, 1 white
NARROW_PX = 700
WIDE_MIN_PX = 560  # the image beside its bars, no narrower: a phone's column is reported and gets them stacked


def token_name(token: int) -> str:
    """Token 0 is CLS, token ``1 + p`` patch p."""
    return "CLS" if token == 0 else f"patch {token - 1}"


def _patch_borders() -> dict:
    """The patch borders of an 8 × 8 image (pixel centres at 0 … 7) as one line trace, None between segments (ten
    layout shapes cost more to redraw: docs/performance.md)."""
    xs, ys = [], []
    for at in np.arange(-0.5, IMAGE, PATCH):
        xs += [at, at, None, -0.5, IMAGE - 0.5, None]
        ys += [-0.5, IMAGE - 0.5, None, at, at, None]
    return dict(type="scatter", mode="lines", x=xs, y=ys, line=dict(color=FOCUS_COLOR, width=1), hoverinfo="skip",
                showlegend=False)


def _patch_numbers() -> dict:
    """Each patch's number at its centre, as one text trace (an annotation each is measured in the page's layout on
    every redraw)."""
    patches = np.arange(GRID * GRID)
    return dict(type="scatter", mode="text", x=(patches % GRID) * PATCH + 0.5, y=(patches // GRID) * PATCH + 0.5,
                text=[str(p) for p in patches], textfont=dict(size=10, color=FOCUS_COLOR), hoverinfo="skip",
                showlegend=False)


def _pixel_axes() -> tuple[dict, dict]:
    common = dict(range=[-0.5, IMAGE - 0.5], showgrid=False, zeroline=False, tickvals=list(range(IMAGE)))
    return dict(common, constrain="domain"), dict(common, range=[IMAGE - 0.5, -0.5], scaleanchor="x",
                                                  constrain="domain")


def image_and_prediction(image, title: str, probabilities, classes, chosen: int | None = None,
                         right: int | None = None, width_px: int | None = None) -> go.Figure:
    """One figure (one redraw a pixel edit, not two: docs/performance.md): ``image (8, 8)`` in [0, 1] in grey (1
    white) with its 16 patches outlined and numbered, ``chosen`` (a token) outlined thicker; beside it (below it on a
    phone) a bar a class of ``probabilities (C,)``, the predicted one orange, the right one (``right``, when known)
    outlined. A click on a pixel reports it (``meta.click``: row, column); a click on a bar reports nothing."""
    image = np.asarray(image, np.float32)
    narrow = width_px is not None and width_px < NARROW_PX
    image_x, bars_x = ([0.0, 1.0], [0.0, 1.0]) if narrow else ([0.0, 0.36], [0.46, 1.0])
    image_y, bars_y = ([0.42, 1.0], [0.0, 0.3]) if narrow else ([0.0, 1.0], [0.0, 1.0])
    x_axis, y_axis = _pixel_axes()
    bars, bar_axes, bar_title = _probability_bars(probabilities, classes, right, bars_x, bars_y)
    title = wrap_title(title, width_px)
    top_px = 38 + 22 * title_lines(title)  # a phone's title may take two lines
    layout = dict(title=left_title(title), height=top_px + (580 if narrow else 320), template=TEMPLATE_JSON,
                  margin=dict(t=top_px, l=60 if narrow else 40, r=10, b=70), showlegend=False,
                  shapes=_chosen_outline(chosen),
                  xaxis=dict(x_axis, domain=image_x), yaxis=dict(y_axis, domain=image_y), **bar_axes,
                  annotations=[bar_title], meta={"click": True, **({} if narrow else {"min_width_px": WIDE_MIN_PX})})
    return go.Figure(data=[_pixels(image), _patch_borders(), _patch_numbers(), bars], layout=layout,
                     _validate=False)


def _pixels(image: np.ndarray) -> dict:
    rows, cols = np.divmod(np.arange(IMAGE * IMAGE), IMAGE)
    patch = (rows // PATCH) * GRID + cols // PATCH
    return dict(type="heatmap", z=image, zmin=0, zmax=1, colorscale=GREY, showscale=False, xgap=1, ygap=1,
                customdata=patch.reshape(IMAGE, IMAGE),
                hovertemplate="pixel row %{y}, column %{x}: %{z:.2f}<br>patch %{customdata} · click to flip"
                              "<extra></extra>")


def _chosen_outline(chosen: int | None) -> list[dict]:
    if not chosen:
        return []
    row, col = divmod(chosen - 1, GRID)
    return [dict(type="rect", xref="x", yref="y", x0=col * PATCH - 0.5, x1=col * PATCH + 1.5, y0=row * PATCH - 0.5,
                 y1=row * PATCH + 1.5, line=dict(color=ALLOWED_COLOR, width=4))]


def _probability_bars(probabilities, classes, right, x_domain, y_domain) -> tuple[dict, dict, dict]:
    """The bars (on x2/y2), their axes, and their panel's title ("Predicted: …")."""
    probabilities = np.asarray(probabilities, np.float32)
    best = int(np.argmax(probabilities))
    colours = [FOCUS_COLOR if index == best else ALLOWED_COLOR for index in range(len(classes))]
    outline = [3 if index == right else 0 for index in range(len(classes))]
    bars = dict(type="bar", x=list(classes), y=probabilities, xaxis="x2", yaxis="y2",
                marker=dict(color=colours, line=dict(width=outline, color="black")),
                hovertemplate="%{x}: %{y:.3f}<extra></extra>")
    axes = axis_pair(1, dict(type="category", tickangle=-45, domain=x_domain),
                     dict(range=[0, 1], title=dict(text="probability"), domain=y_domain))
    title = panel_title(f"Predicted: {classes[best]} ({probabilities[best]:.1%})", x_domain, y_domain, size=14)
    return bars, axes, title


STRIDE = GRID + 1  # a panel's cells and one gap row / column in the one-trace grid of `head_overlays`


def overlay_patch(row: int, col: int) -> int | None:
    """The patch under cell ``(row, col)`` of `head_overlays`' grid (None: a gap)."""
    r, c = row % STRIDE, col % STRIDE
    return None if r == GRID or c == GRID else r * GRID + c


def head_overlays(weights, image, token: int, width_px: int | None = None) -> go.Figure:
    """Args: weights: ``(L, H, 17, 17)``; image: ``(8, 8)``; token: the query (0: CLS, ``1 + p``: patch p). A panel
    a head (a row a layer; two across on a phone): the token's attention to each patch on the fixed 0–1 scale, the
    image's light pixels drawn over it in white (a pixel's opacity its value: the main image's polarity); a panel's
    title gives its weight on CLS. One heatmap
    and one scatter for every panel, on one pair of axes (gaps between panels are empty cells). A click on a patch
    reports its cell (`overlay_patch` names the patch)."""
    weights, image = np.asarray(weights, np.float32), np.asarray(image, np.float32)
    layers, heads = weights.shape[:2]
    across = heads if width_px is None or width_px >= NARROW_PX else min(heads, 2)
    places = [(layer, head) for layer in range(layers) for head in range(heads)]
    down = -(-len(places) // across)
    z = np.full((down * STRIDE - 1, across * STRIDE - 1), np.nan, np.float32)
    names = np.full(z.shape, "", dtype=object)
    pixels = np.full((2 * z.shape[0], 2 * z.shape[1]), np.nan, np.float32)  # a quarter of a patch's cell each
    lit = np.where(image > 0.05, image, np.nan)  # (8, 8): the pixels drawn over every panel
    titles = []
    for index, (layer, head) in enumerate(places):
        top, left = divmod(index, across)
        top, left = top * STRIDE, left * STRIDE
        row = weights[layer, head, token]  # (17,)
        z[top:top + GRID, left:left + GRID] = row[1:].reshape(GRID, GRID)
        names[top:top + GRID, left:left + GRID] = f"layer {layer} head {head}"
        pixels[PATCH * top:PATCH * top + IMAGE, PATCH * left:PATCH * left + IMAGE] = lit
        titles.append(dict(x=left + (GRID - 1) / 2, y=top - 0.5, xref="x", yref="y", yanchor="bottom",
                           showarrow=False, text=f"L{layer} H{head} · CLS {row[0]:.2f}", font=dict(size=12)))
    cell_rows, cell_cols = np.indices(z.shape) % STRIDE  # a cell's place in its panel (GRID: the gap)
    patch_numbers = np.where((cell_rows < GRID) & (cell_cols < GRID), cell_rows * GRID + cell_cols, -1)
    heatmap = dict(type="heatmap", z=z, coloraxis="coloraxis", customdata=np.stack([names, patch_numbers], -1),
                   hovertemplate=f"%{{customdata[0]}}<br>query {token_name(token)} → key patch %{{customdata[1]}}"
                                 "<br>weight %{z:.3f}<extra></extra>")
    # the light pixels over it in white, as opaque as they are light: the main image's polarity (light is light), the
    # attention's colour showing through the dark ones and around each pixel; one heatmap at twice the resolution
    # (not a marker a pixel: docs/performance.md)
    overlay = dict(type="heatmap", z=pixels, x0=-0.25, dx=0.5, y0=-0.25, dy=0.5, zmin=0, zmax=1, showscale=False,
                   colorscale=[[0, "rgba(255,255,255,0)"], [1, "rgba(255,255,255,1)"]], xgap=4, ygap=4,
                   hoverinfo="skip")
    title = wrap_title(f"Each head's attention from {token_name(token)}, over the image (a row a layer)", width_px)
    top_px = 40 + 22 * title_lines(title)
    axis = dict(showticklabels=False, showgrid=False, zeroline=False, constrain="domain")
    return go.Figure(data=[heatmap, overlay], layout=dict(
        title=left_title(title), template=TEMPLATE_JSON, annotations=titles, coloraxis=weight_coloraxis(),
        height=top_px + 30 + down * (170 if across > 2 else 150), margin=dict(t=top_px, l=10, r=10, b=10),
        xaxis=dict(axis, range=[-0.5, z.shape[1] - 0.5]),
        yaxis=dict(axis, range=[z.shape[0] - 0.5, -0.5], scaleanchor="x"),
        meta={**min_width_meta([t["text"] for t in titles], across, left_px=10, right_px=90, gap_share=1 / STRIDE),
              "click": True}),
        _validate=False)


def rollout_and_flow(rollout_row, flow_row, token: int, layers: int, width_px: int | None = None) -> go.Figure:
    """Two 4 × 4 panels over the patches: ``rollout_row``, ``flow_row`` ``(17,)`` (what reaches ``token``'s
    last-layer output from each token) on one scale from 0 to their largest; CLS's share in the titles."""
    rows = [np.asarray(rollout_row, np.float32), np.asarray(flow_row, np.float32)]
    largest = float(max(row[1:].max() for row in rows)) or 1.0
    data, layout, annotations = [], {}, []
    for index, ((x_domain, y_domain), name, row) in enumerate(zip(grid_domains(2, 2, 1, 0.12, 0.0),
                                                                  ("rollout", "flow"), rows)):
        axis = "" if index == 0 else str(index + 1)
        data.append(dict(type="heatmap", z=row[1:].reshape(GRID, GRID), coloraxis="coloraxis", xaxis=f"x{axis}",
                         yaxis=f"y{axis}", customdata=np.arange(16).reshape(GRID, GRID),
                         hovertemplate=f"{name}: from patch %{{customdata}} to {token_name(token)}'s output "
                                       "%{z:.3f}<extra></extra>"))
        common = dict(showgrid=False, zeroline=False, tickvals=list(range(GRID)), constrain="domain")
        layout.update(axis_pair(index, dict(common, domain=x_domain),
                                dict(common, domain=y_domain, autorange="reversed", scaleanchor=f"x{axis}")))
        annotations.append(panel_title(f"{name} · CLS {row[0]:.2f}", x_domain, y_domain, size=13))
    title = wrap_title(f"Rollout and flow to {token_name(token)}'s output", width_px)
    top = 30 + 22 * title_lines(title)
    layout.update(title=left_title(title), template=TEMPLATE_JSON, height=top + 300, annotations=annotations,
                  margin=dict(t=top + 24, l=30, r=10, b=20),
                  coloraxis=weight_coloraxis("share", largest))
    return go.Figure(data=data, layout=layout, _validate=False)


def grid_of_grids(similarity) -> np.ndarray:
    """``(16, 16)`` -> ``(19, 19)``: patch p's row of similarities as a 4 × 4 block at p's place, one NaN row and
    column between blocks."""
    similarity = np.asarray(similarity, np.float32)
    laid = np.full((GRID * GRID + GRID - 1, GRID * GRID + GRID - 1), np.nan, np.float32)
    for patch in range(GRID * GRID):
        r, c = divmod(patch, GRID)
        laid[r * (GRID + 1):r * (GRID + 1) + GRID, c * (GRID + 1):c * (GRID + 1) + GRID] = \
            similarity[patch].reshape(GRID, GRID)
    return laid


def position_similarity_figure(similarity, width_px: int | None = None) -> go.Figure:
    """The learned positions' cosine similarity as Dosovitskiy et al. draw it (Figure 7, centre): at each patch's
    place, a 4 × 4 grid of its similarity to every patch, on −1 to 1."""
    laid = grid_of_grids(similarity)
    owner = np.full(laid.shape, -1)
    other = np.full(laid.shape, -1)
    for patch in range(GRID * GRID):
        r, c = divmod(patch, GRID)
        block = (slice(r * (GRID + 1), r * (GRID + 1) + GRID), slice(c * (GRID + 1), c * (GRID + 1) + GRID))
        owner[block] = patch
        other[block] = np.arange(GRID * GRID).reshape(GRID, GRID)
    heatmap = dict(type="heatmap", z=laid, zmin=-1, zmax=1, colorscale=DIVERGING_SCALE,
                   customdata=np.stack([owner, other], -1),
                   colorbar=dict(title=dict(text="cosine", side="right")),
                   hovertemplate="position of patch %{customdata[0]} · patch %{customdata[1]}: %{z:.2f}"
                                 "<extra></extra>")
    axis = dict(showticklabels=False, showgrid=False, zeroline=False, constrain="domain")
    title = wrap_title("Learned positions: cosine similarity", width_px)
    return go.Figure(data=[heatmap], layout=dict(
        title=left_title(title), template=TEMPLATE_JSON, height=420, margin=dict(t=40 + 22 * title_lines(title), l=10,
                                                                                 r=10, b=10),
        xaxis=axis, yaxis=dict(axis, autorange="reversed", scaleanchor="x")), _validate=False)


def distance_figure(distance, width_px: int | None = None) -> go.Figure:
    """``(L, H)`` mean attention distances (patches) as points a head, by layer (Dosovitskiy et al., Figure 7
    right)."""
    distance = np.asarray(distance, np.float32)
    layers, heads = distance.shape
    points = dict(type="scatter", mode="markers", x=np.repeat(np.arange(layers), heads), y=distance.ravel(),
                  customdata=np.tile(np.arange(heads), layers), marker=dict(size=11, color=ALLOWED_COLOR),
                  hovertemplate="layer %{x} head %{customdata}: %{y:.2f} patches<extra></extra>")
    title = wrap_title("Mean attention distance (patches)", width_px)
    return go.Figure(data=[points], layout=dict(
        title=left_title(title), template=TEMPLATE_JSON, height=320, margin=dict(t=40 + 22 * title_lines(title), l=60,
                                                                                 r=10, b=50),
        xaxis=dict(title=dict(text="layer"), tickvals=list(range(layers)), range=[-0.5, layers - 0.5]),
        yaxis=dict(title=dict(text="distance"), rangemode="tozero")), _validate=False)
