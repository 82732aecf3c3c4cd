"""A class's answers as pictures (the Class page): where the class looks (a heat strip over the keys), which cells it
marks (a grid of shares), which option it picks (bars); after the reveal the model's answer beside them. And a
student's own: the strip and the grid it clicks to answer, then its answer against the model's. Shares and weights
on the fixed 0–1 scale; keys labelled by position (repeated tokens stay apart)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.labels import position_labels
from viz.style import ALLOWED_COLOR, BLOCKED_COLOR, FOCUS_COLOR, MASKED_COLOR, WEIGHT_COLORSCALE, category_axes, figure

RIGHT_COLOR, WRONG_COLOR = ALLOWED_COLOR, FOCUS_COLOR  # a student's cell right, or wrong
CHOSEN_LINE = dict(color=FOCUS_COLOR, width=3)


def _shares(counts, answered: int) -> np.ndarray:
    return np.asarray(counts, np.float64) / max(answered, 1)


def key_strip(key_tokens, counts, answered: int, query: str, weights=None, chosen: int | None = None) -> go.Figure:
    """The class's picks over the keys of one query: row "the class" the share who chose each key ``(N_k,)``; with
    ``weights`` (after the reveal) row "the model" its attention weights ``(N_k,)``; ``chosen``: a student's own
    key, outlined. A key cell is clickable (the student's answer: layout.meta.click)."""
    labels = position_labels(key_tokens)
    rows, hover = [_shares(counts, answered)], []
    names = ["the class"]
    counts = np.asarray(counts, np.int64)
    hover.append([f"query {query} → key {label}<br>{count} of {answered} chose it" for label, count in
                  zip(labels, counts)])
    if weights is not None:
        rows.append(np.asarray(weights, np.float64))
        names.append("the model")
        hover.append([f"query {query} → key {label}<br>the model's weight {weight:.2f}" for label, weight in
                      zip(labels, rows[-1])])
    fig = figure([go.Heatmap(z=np.array(rows), x=labels, y=names, zmin=0, zmax=1, colorscale=WEIGHT_COLORSCALE,
                             customdata=np.array(hover), hovertemplate="%{customdata}<extra></extra>",
                             colorbar=dict(title=dict(text="share"), thickness=12))],
                 dict(height=120 + 60 * len(rows), margin=dict(t=40, l=90, r=20, b=80),
                      title=dict(text=f"Where will query {query} look?"), meta=dict(click=True)))
    category_axes(fig)
    if chosen is not None:
        fig.add_shape(type="rect", x0=chosen - 0.5, x1=chosen + 0.5, y0=-0.5, y1=len(rows) - 0.5,
                      line=CHOSEN_LINE, xref="x", yref="y")
    return fig


def key_picker(key_tokens, query: str, chosen: int | None = None) -> go.Figure:
    """What a student clicks to answer *where will this query look*: the keys, no weight drawn; ``chosen`` outlined."""
    labels = position_labels(key_tokens)
    picked = np.zeros((1, len(labels)))
    if chosen is not None:
        picked[0, chosen] = 1
    fig = figure([go.Heatmap(z=picked, x=labels, y=[f"query {query}"], zmin=0, zmax=1, showscale=False,
                             colorscale=[[0, "#ffffff"], [1, FOCUS_COLOR]], xgap=2,
                             hovertemplate="query " + query + " → key %{x}: click to choose it<extra></extra>")],
                 dict(height=170, margin=dict(t=40, l=90, r=20, b=80), meta=dict(click=True),
                      title=dict(text="Click the key you think it looks at most")))
    category_axes(fig)
    return fig


def cell_shares(query_tokens, key_tokens, counts, answered: int, mask=None, slips=None) -> go.Figure:
    """The class's cells: the share who marked each cell as may-attend ``(N_q, N_k)``; with ``mask`` (after the
    reveal, True = may attend) the real mask beside it, each cell the class slipped on marked with how many did
    (``slips`` ``(N_q, N_k)``: `classroom.questions.cell_slips`)."""
    queries, keys = position_labels(query_tokens), position_labels(key_tokens)
    panels = 1 if mask is None else 2
    fig = make_subplots(1, panels, subplot_titles=["the class:<br>share who marked it"] +  # two lines: no overlap
                        (["the mask<br>(✗n: n slipped)"] if panels == 2 else []), horizontal_spacing=0.12)
    fig.update_layout(template=figure().layout.template)
    fig.add_trace(go.Heatmap(z=_shares(counts, answered), x=keys, y=queries, zmin=0, zmax=1,
                             colorscale=WEIGHT_COLORSCALE, colorbar=dict(title=dict(text="share"), thickness=12,
                                                                         x=1.02),
                             hovertemplate="query %{y} → key %{x}<br>%{z:.0%} marked it<extra></extra>"), 1, 1)
    if mask is not None:  # each cell the class slipped on says how many did (a blocked cell marked, one left out)
        mask = np.asarray(mask, bool)
        slips = np.zeros(mask.shape, np.int64) if slips is None else np.asarray(slips, np.int64)  # (N_q, N_k)
        fig.add_trace(go.Heatmap(z=mask.astype(np.uint8), x=keys, y=queries, zmin=0, zmax=1, showscale=False,
                                 colorscale=[[0, BLOCKED_COLOR], [0.5, BLOCKED_COLOR], [0.5, ALLOWED_COLOR],
                                             [1, ALLOWED_COLOR]],
                                 text=np.where(slips > 0, np.char.add("✗", slips.astype(str)), ""),
                                 texttemplate="%{text}", textfont=dict(color=FOCUS_COLOR, size=13),
                                 customdata=slips,
                                 hovertemplate="query %{y} → key %{x}<br>mask %{z} (1 may attend)<br>"
                                               "%{customdata} got it wrong<extra></extra>"),
                      1, 2)
    for column in range(1, panels + 1):
        category_axes(fig, row=1, col=column)
    fig.update_layout(height=380, margin=dict(t=80, l=80, r=60, b=80))
    return fig


GRID_LINES = "#9e9e9e"  # the picker's cell borders: the background between its cells (xgap, ygap)
SLIP_COLOURS = {0: "#ffffff", 1: RIGHT_COLOR, 2: "#fdd49e", 3: WRONG_COLOR}  # blocked, right, left out, marked wrongly


def cell_picker(query_tokens, key_tokens, chosen) -> go.Figure:
    """The empty N × N grid a student marks, ``chosen`` ``(N_q, N_k)`` bool the cells sent so far. Marked in the
    browser (viz/class_tally.js, ``meta.mark_cells``): a click toggles a cell, a drag over cells (a row, a block)
    marks them, or clears them where all were marked; the figure's own button sends the grid once. An invisible
    point a cell carries its ``[query, key]`` (``customdata``) and the hover; the drag selects those points."""
    queries, keys = position_labels(query_tokens), position_labels(key_tokens)
    chosen = np.asarray(chosen, bool)
    n_q, n_k = chosen.shape
    rows, columns = np.divmod(np.arange(n_q * n_k), n_k)
    grid = go.Heatmap(z=chosen.astype(np.uint8), x=keys, y=queries, zmin=0, zmax=1, showscale=False, xgap=2, ygap=2,
                      colorscale=[[0, "#ffffff"], [0.5, "#ffffff"], [0.5, ALLOWED_COLOR], [1, ALLOWED_COLOR]],
                      hoverinfo="skip")
    points = go.Scatter(x=[keys[k] for k in columns], y=[queries[q] for q in rows], mode="markers",
                        customdata=np.stack([rows, columns], axis=1).tolist(), showlegend=False,  # a list: pairs
                        marker=dict(size=14, color="rgba(0,0,0,0)"), unselected=dict(marker=dict(opacity=0)),
                        hovertemplate="query %{y} → key %{x}<br>click to mark or unmark; drag over a row or a block"
                                      "<extra></extra>")
    send = dict(type="buttons", showactive=False, x=0, y=1.02, xanchor="left", yanchor="bottom",
                buttons=[dict(label=f"Send my cells ({int(chosen.sum())} marked)", method="skip", args=[None])])
    fig = figure([grid, points],
                 dict(height=400, margin=dict(t=70, l=80, r=20, b=80), plot_bgcolor=GRID_LINES, dragmode="select",
                      updatemenus=[send], meta=dict(mark_cells=dict(chosen=np.argwhere(chosen).tolist(), rows=n_q,
                                                                    cols=n_k)),
                      title=dict(text="Mark each cell where the query may attend (click, or drag over cells)")))
    category_axes(fig, fixedrange=True)
    return fig


def cells_marked(query_tokens, key_tokens, chosen, mask) -> go.Figure:
    """A student's cells against the mask, four kinds: marked and may attend (blue, right), blocked and left alone
    (white: nothing done, nothing wrong), may attend but left out (light orange), blocked but marked (orange)."""
    queries, keys = position_labels(query_tokens), position_labels(key_tokens)
    chosen, mask = np.asarray(chosen, bool), np.asarray(mask, bool)
    kinds = np.where(mask, np.where(chosen, 1, 2), np.where(chosen, 3, 0)).astype(np.uint8)  # (N_q, N_k)
    words = np.array(["blocked; you left it: right", "may attend; you marked it: right",
                      "may attend; you left it out", "blocked; you marked it"])[kinds]
    scale = [[edge, SLIP_COLOURS[kind]] for kind in range(4) for edge in (kind / 4, (kind + 1) / 4)]
    fig = figure([go.Heatmap(z=kinds, x=keys, y=queries, zmin=-0.5, zmax=3.5, showscale=False, colorscale=scale,
                             customdata=words, xgap=2, ygap=2,
                             hovertemplate="query %{y} → key %{x}<br>%{customdata}<extra></extra>")],
                 dict(height=400, margin=dict(t=80, l=80, r=20, b=80), plot_bgcolor=GRID_LINES,
                      title=dict(text="Your cells: blue right,<br>light orange left out, orange marked but blocked")))
    category_axes(fig)
    return fig


def option_bars(options, counts, right: int | None = None, chosen: int | None = None) -> go.Figure:
    """How many picked each option; after the reveal the ``right`` one blue, the others grey; ``chosen`` outlined."""
    labels = [f"{index + 1}. {option}" + (" ✓ the model's" if index == right else "")
              for index, option in enumerate(options)]
    colours = [ALLOWED_COLOR if right is None or index == right else MASKED_COLOR for index in range(len(options))]
    widths = [3 if index == chosen else 0 for index in range(len(options))]
    fig = figure([go.Bar(x=np.asarray(counts, np.int64), y=labels, orientation="h",
                         marker=dict(color=colours, line=dict(color=FOCUS_COLOR, width=widths)),
                         hovertemplate="%{y}: %{x} chose it<extra></extra>")],
                 dict(height=80 + 40 * len(options), margin=dict(t=30, l=160, r=20, b=40),
                      xaxis=dict(title=dict(text="students"), rangemode="tozero", dtick=1)))
    fig.update_yaxes(type="category", autorange="reversed")
    return fig
