"""Patching as pictures (the Patching page): a map of how much of the answer each site restores, on a diverging
scale centred on 0 (1 = the clean run's answer, 0 = the corrupted run's, negative: further from the clean one),
and one cell's patched run between the clean and the corrupted run (its head's attention on the fixed 0–1 scale)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.labels import position_labels
from viz.style import DIVERGING_SCALE, FOCUS_COLOR, MASKED_COLOR, WEIGHT_COLORSCALE, category_axes, figure

RESTORED_LIMIT = 1.0  # the colour scale's ends: ±1 (a cell beyond keeps the end colour, its hover says the value)


def patch_map_figure(values, raw, rows, columns, cells, *, metric: str, title: str, chosen=None,
                     gap: tuple | None = None, normalise: bool = True) -> go.Figure:
    """``values (R, C)`` restored shares (NaN: no site), ``raw`` the metric's own values, ``rows``/``columns`` the
    labels, ``cells (R, C)`` each cell's site as text; ``chosen``: ``(row, column)`` outlined; ``gap``: the
    ``(clean, corrupted)`` values, named in the title. ``normalise`` False (a gap too small to divide by): each
    cell is its patched run's change from the corrupted run, in the metric's units, on a scale of its own. A click
    on a cell reports it (layout.meta.click)."""
    values, raw = np.asarray(values, np.float64), np.asarray(raw, np.float64)
    hover = np.array([[f"{cells[r][c]}<br>{metric}: {raw[r, c]:.4f}<br>restored {values[r, c]:+.1%} of the "
                       "clean − corrupted gap" for c in range(len(columns))] for r in range(len(rows))])
    if normalise or gap is None:
        shown, limit, bar = values, RESTORED_LIMIT, dict(title=dict(text="restored"), tickvals=[-1, 0, 1],
                                                         ticktext=["−1", "0 corrupted", "1 clean"])
    else:
        shown = raw - gap[1]  # (R, C): the change each patch makes, in the metric's units
        limit, bar = float(max(np.nanmax(np.abs(shown)), 1e-9)), dict(title=dict(text="change"))
    trace = go.Heatmap(z=shown, x=list(columns), y=list(rows), zmid=0, zmin=-limit, zmax=limit,
                       colorscale=DIVERGING_SCALE, customdata=hover, hovertemplate="%{customdata}<extra></extra>",
                       xgap=1, ygap=1, colorbar=dict(thickness=12, **bar))
    if gap is not None:
        said = f"clean − corrupted {gap[0]:.3f} − {gap[1]:.3f} = {gap[0] - gap[1]:.3f}"
        title = f"{title}<br>{said}" + ("" if normalise else ": too small to normalise, raw change drawn")
    fig = figure([trace], dict(height=max(240, 80 + 34 * len(rows)), margin=dict(t=70, l=110, r=20, b=90),
                               title=dict(text=title), meta=dict(click=True), plot_bgcolor=MASKED_COLOR))
    category_axes(fig)
    if chosen is not None:
        row, column = chosen
        fig.add_shape(type="rect", x0=column - 0.5, x1=column + 0.5, y0=row - 0.5, y1=row + 0.5,
                      line=dict(color=FOCUS_COLOR, width=3), xref="x", yref="y")
    return fig


def three_runs_figure(attention, query_tokens, key_tokens, runs, values, head: int, layer_label: str) -> go.Figure:
    """One head's weights ``(N_q, N_k)`` in each run of ``attention`` (a run's ``(H, N_q, N_k)``), side by side,
    titled by the run and its restored share ``values``."""
    queries, keys = position_labels(query_tokens), position_labels(key_tokens)
    titles = [f"{run}<br>restored {value:+.0%}" for run, value in zip(runs, values)]  # two lines: three fit 390 px
    fig = make_subplots(1, len(runs), subplot_titles=titles, shared_yaxes=True, horizontal_spacing=0.04)
    for index, (run, weights) in enumerate(zip(runs, attention)):
        head_weights = np.asarray(weights, np.float64)[head]  # (N_q, N_k)
        hover = np.array([[f"{run} run, {layer_label} H{head}<br>query {q} → key {k} (value {k})<br>weight "
                           f"{head_weights[i, j]:.3f}" for j, k in enumerate(keys)] for i, q in enumerate(queries)])
        fig.add_trace(go.Heatmap(z=head_weights, x=keys, y=queries, coloraxis="coloraxis", customdata=hover,
                                 hovertemplate="%{customdata}<extra></extra>"), 1, index + 1)
        category_axes(fig, row=1, col=index + 1)
    fig.update_layout(coloraxis=dict(colorscale=WEIGHT_COLORSCALE, cmin=0, cmax=1,
                                     colorbar=dict(title=dict(text="weight"), thickness=12)),
                      height=max(330, 150 + 16 * len(queries)), margin=dict(t=90, l=90, r=20, b=90),
                      title=dict(text=f"{layer_label} H{head} in the three runs"))
    return fig
