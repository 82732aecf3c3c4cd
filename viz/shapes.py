"""A small diagram of a tensor: its shape drawn as a stack of labelled boxes."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from viz.style import figure

AXIS_COLORS = {"B": "#9ecae1", "H": "#fdae6b", "N": "#a1d99b", "d": "#bcbddc"}


COPY_OFFSET = 0.18  # each copy behind the front one, up and to the right
TOP = 3.2  # the back copy's top is COPY_OFFSET below this line, the "copies" label above it (y axis: -0.6 … 3.6)


def _extent(size: int) -> float:
    return 1.0 + 2.0 * math.log2(max(1, size) + 1) / 10.0


def tensor_diagram(shape, axis_names, title: str) -> go.Figure:
    """Boxes for a tensor of ``shape``: the last two axes as a rectangle (rows × columns),
    leading axes (batch, heads) as copies stacked behind it.

    ``axis_names`` names each axis, e.g. ``("B", "H", "N_q", "d_k")``.
    """
    shape, axis_names = tuple(shape), tuple(axis_names)
    rows, columns = (shape[-2], shape[-1]) if len(shape) >= 2 else (1, shape[-1])
    width, height = _extent(columns), _extent(rows)
    copies = min(4, math.prod(shape[:-2]) if len(shape) > 2 else 1)
    color = AXIS_COLORS.get(axis_names[1][0] if len(axis_names) == 4 else "B", "#9ecae1")
    top = TOP - COPY_OFFSET * copies  # the front copy's top: every stack of copies hangs from the same line
    fig = figure()
    for k in reversed(range(copies)):
        dx = dy = COPY_OFFSET * k
        fig.add_shape(type="rect", x0=dx, y0=top - height + dy, x1=dx + width, y1=top + dy,
                      line=dict(color="#555"), fillcolor=color, opacity=0.9)
    fig.add_annotation(x=width / 2, y=top - height - 0.25, text=f"{axis_names[-1]} = {shape[-1]}", showarrow=False)
    if len(shape) >= 2:
        fig.add_annotation(x=-0.35, y=top - height / 2, text=f"{axis_names[-2]} = {shape[-2]}", showarrow=False,
                           textangle=-90)
    leading = " × ".join(f"{n}={s}" for n, s in zip(axis_names[:-2], shape[:-2]))
    if leading:
        fig.add_annotation(x=width + COPY_OFFSET * copies, y=TOP + 0.2, text=f"copies: {leading}",
                           showarrow=False, xanchor="right")
    fig.update_layout(
        title=f"{title}  {shape}", height=260, showlegend=False, margin=dict(t=40, l=10, r=10, b=10),
        xaxis=dict(visible=False, range=[-0.7, 4.5]), yaxis=dict(visible=False, range=[-0.6, 3.6], scaleanchor="x"),
    )
    return fig
