"""Shared pieces of every figure: token labels, colour scales, pooling, heatmap layers.

Axes carry "position·token" labels so repeated tokens stay distinct categories;
hover reads them back with %{x} / %{y}, so no per-cell strings are sent.
"""

from __future__ import annotations

import html
import math

import numpy as np
import plotly.colors
import plotly.graph_objects as go

_BLUES = plotly.colors.sequential.Blues  # ColorBrewer Blues, white to dark blue

# Written out, not by name: figures built without validation (panels_figure) send the name as it is,
# and Plotly.js's own "Blues" runs the other way (0 = dark blue, 1 = light grey, close to the masked grey).
WEIGHT_COLORSCALE = [[index / (len(_BLUES) - 1), colour] for index, colour in enumerate(_BLUES)]  # 0 = white
MASKED_COLOR = "#8c8c8c"  # masked cells: solid grey, never a shade of the weight scale
ALLOWED_COLOR = "#2b8cbe"
BLOCKED_COLOR = "#f0f0f0"
DIVERGING_COLORSCALE = "RdBu_r"
MAX_LABEL_CHARS = 12
FULL_RESOLUTION = 128  # larger matrices are max-pooled before they are sent
FULL_RESOLUTION_WINDOW = 256  # one head unpooled: at most this many positions a side (~0.75 MB)
CELL_BUDGET = 80_000  # cells per multi-panel figure (~0.9 MB as float32 weights + mask layers)


def escape(text: str) -> str:
    """Plotly reads a few HTML tags in labels (``<s>``, ``<b>`` …): entities keep every token literal."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def short(token: str) -> str:
    """A token cut to MAX_LABEL_CHARS (with an ellipsis), escaped for a Plotly axis or hover."""
    token = str(token)
    return escape(token if len(token) <= MAX_LABEL_CHARS else token[: MAX_LABEL_CHARS - 1] + "…")


def position_labels(tokens) -> list[str]:
    """``["0·the", "1·cat", "2·the"]``: distinct even when tokens repeat (empty token: ``"0"``)."""
    return [f"{index}·{short(token)}" if token != "" else str(index) for index, token in enumerate(tokens)]


def pool_factor(length: int, limit: int = FULL_RESOLUTION) -> int:
    """Block size that brings ``length`` to at most ``limit`` cells."""
    return max(1, math.ceil(length / limit))


def max_pool(array: np.ndarray, factor_q: int, factor_k: int, fill=0.0) -> np.ndarray:
    """Max over ``factor_q × factor_k`` blocks of the last two axes (padding with ``fill``)."""
    *lead, n_q, n_k = array.shape
    out_q, out_k = math.ceil(n_q / factor_q), math.ceil(n_k / factor_k)
    padded = np.full((*lead, out_q * factor_q, out_k * factor_k), fill, dtype=array.dtype)
    padded[..., :n_q, :n_k] = array
    blocks = padded.reshape(*lead, out_q, factor_q, out_k, factor_k)
    return blocks.max(axis=(-3, -1))


def pooled_labels(labels, factor: int) -> list[str]:
    """Labels of pooled blocks: ``"0–3·the…"`` names the block's first token."""
    if factor == 1:
        return list(labels)
    groups = range(0, len(labels), factor)
    return [f"{start}–{min(start + factor, len(labels)) - 1}·{labels[start].split('·', 1)[-1]}" for start in groups]


def category_axes(fig: go.Figure, row=None, col=None, reverse_y=True, **kwargs) -> None:
    """Category axes (labels are never merged), query rows from top to bottom."""
    fig.update_xaxes(type="category", tickangle=-45, automargin=True, row=row, col=col, **kwargs)
    fig.update_yaxes(type="category", autorange="reversed" if reverse_y else True, automargin=True,
                     row=row, col=col, **kwargs)


# Panel grids are laid out here rather than by make_subplots and Plotly's automargin:
# automargin makes the browser lay a figure out several times (about half of its
# drawing time), and make_subplots costs ~30 ms of validation per figure on the server.
CHAR_PX = 7  # width of one tick-label character at Plotly's default 12 px font
NOMINAL_WIDTH_PX = 1100  # the main column of the wide layout, to turn pixels into paper units
TITLE_PX = 26  # room above a panel for its title


def label_px(labels, shown: bool = True, rotated: bool = False) -> int:
    """Pixels a column of tick labels needs (rotated −45°: its height below the axis)."""
    if not shown or not len(labels):
        return 6
    chars = max(len(html.unescape(str(label))) for label in labels)
    return int(chars * CHAR_PX * 0.75) + 30 if rotated else chars * CHAR_PX + 14


def axis_ids(index: int) -> tuple[str, str]:
    """Plotly's trace references for panel ``index`` (0-based): ``("x", "y")``, ``("x2", "y2")`` …"""
    suffix = "" if index == 0 else str(index + 1)
    return f"x{suffix}", f"y{suffix}"


def panel_layout(titles, columns: int, *, x_labels_px: int = 6, y_labels_px: int = 6, panel_px: int = 260,
                 top_px: int = 40, gap_px: int = 16, row_titles=None, show_ticks: bool = True,
                 category: bool = True, reverse_y: bool = True, shared_y: bool = False) -> dict:
    """A layout dict with one pair of axes per panel, laid out row by row, and the panel titles.

    Margins and gaps come from the tick labels' measured size (``label_px``), so no
    axis needs automargin. y axes run top to bottom (queries in reading order).
    ``shared_y``: every panel has the same rows, so only the first column labels them.
    """
    columns = max(1, min(columns, len(titles)))
    title_px = TITLE_PX if any(titles) else 4
    gap_x = ((0 if shared_y else y_labels_px) + gap_px) / NOMINAL_WIDTH_PX
    width = (1.0 - gap_x * (columns - 1)) / columns
    row_px = panel_px + x_labels_px + title_px
    height = top_px + -(-len(titles) // columns) * row_px
    layout = dict(height=height, showlegend=False, annotations=[],
                  margin=dict(t=top_px + title_px, l=y_labels_px, r=40 if row_titles else 10, b=x_labels_px))
    plot_px = height - layout["margin"]["t"] - x_labels_px
    for index, title in enumerate(titles):
        row, col = divmod(index, columns)
        x_domain = [col * (width + gap_x), min(1.0, col * (width + gap_x) + width)]
        y_top = 1.0 - row * row_px / plot_px
        y_domain = [max(0.0, y_top - panel_px / plot_px), y_top]
        y_ticks = show_ticks and not (shared_y and col > 0)
        layout.update(_panel_axes(index, x_domain, y_domain, show_ticks, y_ticks, category, reverse_y))
        if title:
            layout["annotations"].append(_note(title, sum(x_domain) / 2, y_top, "center", "bottom", font=dict(size=14)))
        if row_titles and col == columns - 1:
            layout["annotations"].append(_note(row_titles[row], 1.0, sum(y_domain) / 2, "left", "middle", textangle=90))
    return layout


def _panel_axes(index, x_domain, y_domain, x_ticks, y_ticks, category, reverse_y) -> dict:
    """The x and y axis entries of panel ``index`` (no automargin; hidden labels hide their ticks too)."""
    x_id, y_id = axis_ids(index)
    kind = dict(type="category") if category else {}
    x_axis = dict(domain=x_domain, anchor=y_id, tickangle=-45, automargin=False, showticklabels=x_ticks, **kind)
    y_axis = dict(domain=y_domain, anchor=x_id, autorange="reversed" if reverse_y else True, automargin=False,
                  showticklabels=y_ticks, **kind)
    for axis, ticks in ((x_axis, x_ticks), (y_axis, y_ticks)):
        if not ticks:
            axis["ticks"] = ""
    return {x_id.replace("x", "xaxis"): x_axis, y_id.replace("y", "yaxis"): y_axis}


def _note(text, x, y, xanchor, yanchor, **style) -> dict:
    """A paper-positioned annotation: a panel or row title."""
    shift = dict(yshift=4) if yanchor == "bottom" else dict(xshift=6)
    return dict(text=text, x=x, y=y, xref="paper", yref="paper", xanchor=xanchor, yanchor=yanchor,
                showarrow=False, **shift, **style)


def fixed_margins(fig: go.Figure, *, top: int = 40, left: int = 64, right: int = 10, bottom: int = 50) -> go.Figure:
    """Margins sized for numeric tick labels and an axis title, so no axis needs automargin."""
    fig.update_xaxes(automargin=False)
    fig.update_yaxes(automargin=False)
    fig.update_layout(margin=dict(t=top, l=left, r=right, b=bottom))
    return fig


def panels_figure(traces, layout, **extra) -> go.Figure:
    """One go.Figure from trace dicts and a ``panel_layout`` (plus layout ``extra``), not validated.

    Plotly's validation walks every property of every panel: ~10 ms of a slider move's server
    time for the default head grid of five panels, ~4 ms without it. The builders' output is
    validated in the tests instead (``tests/test_viz.py``).
    """
    return go.Figure(data=list(traces), layout={**layout, **extra}, _validate=False)


def weight_layers(weights, mask, query_labels, key_labels, name="", coloraxis="coloraxis", panel: int = 0):
    """Two heatmap trace dicts for panel ``panel``: weights where allowed, then grey cells where masked.

    Args:
      weights: ``(N_q, N_k)`` in [0, 1].  mask: ``(N_q, N_k)`` bool, True = may attend.
    """
    weights = np.asarray(weights, dtype=np.float32)
    mask = np.asarray(mask, dtype=bool)
    shown = np.where(mask, weights, np.nan).astype(np.float32)  # (N_q, N_k)
    blocked = np.where(mask, np.nan, 1.0).astype(np.float32)  # (N_q, N_k)
    suffix = f"<extra>{name}</extra>" if name else "<extra></extra>"
    x_id, y_id = axis_ids(panel)
    common = dict(type="heatmap", x=key_labels, y=query_labels, xaxis=x_id, yaxis=y_id)
    attend = dict(common, z=shown, coloraxis=coloraxis, name=name,
                  hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.4f}" + suffix)
    masked = dict(common, z=blocked, showscale=False, name=f"{name} masked",
                  colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]], zmin=0, zmax=1,
                  hovertemplate="query %{y}<br>key %{x}<br>blocked by the mask (weight 0)" + suffix)
    return attend, masked


def weight_coloraxis(title="weight") -> dict:
    """The fixed 0–1 colour scale every attention figure shares."""
    return dict(colorscale=WEIGHT_COLORSCALE, cmin=0.0, cmax=1.0, colorbar=dict(title=title))
