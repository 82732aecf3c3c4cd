"""A head's query–key space as a scatter (WebGL from `WEBGL_FROM` points): queries and keys of many lines in one
plane, coloured by position, token or side; a click on a query names its line and position. Both axes share one
range and one unit length, so a distance reads the same in every direction."""

from __future__ import annotations

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from viz.labels import short
from viz.style import figure, fixed_margins

COLOURINGS = ("position", "token", "side")
# Mid-tones only, so that the first positions read on white and on the dark theme alike (Viridis starts near black)
POSITION_SCALE = [[0.0, "#d9480f"], [0.33, "#2b8a3e"], [0.67, "#1c7ed6"], [1.0, "#ae3ec9"]]
SIDE_COLOURS = {"query": "#636efa", "key": "#ef553b"}
TOKEN_COLOURS = 10  # the most frequent tokens get a colour each; the rest share grey
WEBGL_FROM = 2000  # points: below, SVG draws faster (a WebGL context costs ~250 ms in a software-rendered browser)


def _token_colours(tokens) -> list[str]:
    names, counts = np.unique(np.asarray(tokens, dtype=object), return_counts=True)
    palette = plotly.colors.qualitative.Plotly
    frequent = {name: palette[i] for i, name in enumerate(names[np.argsort(-counts, kind="stable")][:TOKEN_COLOURS])}
    return [frequent.get(token, "#bbbbbb") for token in tokens]


def query_key_figure(points, is_query, lines, positions, tokens, colour_by: str = "position", title: str = "",
                     clickable: bool = True) -> go.Figure:
    """``points (n, 2)``, per point ``is_query``, ``lines``, ``positions`` ``(n,)`` and ``tokens``; queries as
    circles, keys as crosses. ``colour_by``: one of `COLOURINGS`. Hover names the side, token, line and position; a
    query's click gives ``{"query": position, "line": line}`` (``layout.meta.click``)."""
    if colour_by not in COLOURINGS:
        raise ValueError(f"colour_by must be one of {COLOURINGS}. Received: colour_by={colour_by!r}")
    points, is_query = np.asarray(points, np.float64), np.asarray(is_query, bool)
    lines, positions = np.asarray(lines), np.asarray(positions)
    token_colours = _token_colours(tokens) if colour_by == "token" else None
    scatter = go.Scattergl if len(points) >= WEBGL_FROM else go.Scatter
    reach = 1.05 * float(np.abs(points).max(initial=1e-9))
    extent = [-reach, reach]  # one range on both axes, one unit as long on each: distance reads true
    fig = figure()
    for side, chosen in (("query", is_query), ("key", ~is_query)):
        index = np.flatnonzero(chosen)
        colour = (SIDE_COLOURS[side] if colour_by == "side" else
                  [token_colours[i] for i in index] if colour_by == "token" else positions[index])
        marker = dict(size=7 if side == "query" else 8, symbol="circle" if side == "query" else "x",
                      color=colour, opacity=0.8)
        if colour_by == "position":
            marker.update(colorscale=POSITION_SCALE, cmin=0, cmax=max(int(positions.max(initial=0)), 1),
                          colorbar=dict(title=dict(text="position"), x=1.02) if side == "query" else None,
                          showscale=side == "query")
        fig.add_trace(scatter(
            x=points[index, 0], y=points[index, 1], mode="markers", name=f"{side}s", marker=marker,
            customdata=np.stack([[short(tokens[i]) for i in index], lines[index] + 1, positions[index]], axis=1)
            if len(index) else None,
            meta={"scatter": side} if side == "query" and clickable else None,
            hovertemplate=f"{side} %{{customdata[0]}}<br>line %{{customdata[1]}}, position %{{customdata[2]}}"
                          "<extra></extra>"))
    fig.update_layout(title=dict(text=title, x=0, xanchor="left"), height=520, meta={"click": clickable},
                      showlegend=False,  # circles are queries, crosses keys (the hover says so): ~7 ms a redraw
                      xaxis=dict(title="PC 1", zeroline=False, range=extent, constrain="domain"),
                      yaxis=dict(title="PC 2", zeroline=False, range=extent, scaleanchor="x", constrain="domain"))
    return fixed_margins(fig, top=80, right=90)
