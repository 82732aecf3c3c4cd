"""Figures of the dot-product lab: one head's stages, the scaling argument, mask fills."""

from __future__ import annotations

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from viz.panels import axis_ids, axis_pair, grid_domains, label_px, panel_title
from viz.pooling import FULL_RESOLUTION
from viz.style import DIVERGING_SCALE, MASKED_COLOR, TEMPLATE_JSON, WEIGHT_COLORSCALE, figure, fixed_margins


def _stage_traces(values, row_labels, column_labels, mask=None, weights=False, *, limit: int = FULL_RESOLUTION):
    """One stage's heatmap (and its blocked cells, grey), as trace dicts, and the subtitle of its shape:
    ``(traces, subtitle)``.

    ``values`` is ``(R, C)``; ``mask`` (same shape, True = may attend) draws blocked cells grey, whatever their
    value (-inf included). Weights use the fixed 0–1 scale; other stages a diverging scale centred on 0 (its
    range in the subtitle). Only the first ``limit`` rows and columns are drawn (exact values; the subtitle says
    so when it crops)."""
    full_shape = np.shape(values)
    values = np.asarray(values, dtype=np.float32)[:limit, :limit]
    row_labels, column_labels = list(row_labels)[:limit], list(column_labels)[:limit]
    blocked = np.zeros(values.shape, bool) if mask is None else ~np.asarray(mask, bool)[:limit, :limit]
    shown = np.where(blocked | ~np.isfinite(values), np.nan, values).astype(np.float32)
    if weights:
        scale, spread = dict(colorscale=WEIGHT_COLORSCALE, zmin=0.0, zmax=1.0), ""
    else:
        largest = float(np.nanmax(np.abs(shown))) if np.isfinite(shown).any() else 1.0
        scale, spread = dict(colorscale=DIVERGING_SCALE, zmin=-largest or -1.0, zmax=largest or 1.0), \
            f" · ±{largest:.3g}"
    traces = [dict(type="heatmap", z=shown, x=column_labels, y=row_labels, **scale,
                   hovertemplate="row %{y}<br>column %{x}<br>value %{z:.4f}<extra></extra>")]
    if blocked.any():
        traces.append(dict(
            type="heatmap", z=np.where(blocked, 1.0, np.nan).astype(np.float32), x=column_labels, y=row_labels,
            colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]], showscale=False,
            hovertemplate="row %{y}<br>column %{x}<br>masked (−∞ before softmax)<extra></extra>"))
    cropped = f" — first {values.shape[0]}×{values.shape[1]} shown" if values.shape != full_shape else ""
    return traces, f"{tuple(full_shape)}{cropped}{spread}"


STAGES_MIN_WIDTH_PX = 480  # three panels to a row (~160 px each, as the three columns were in a 1000 px window);
# narrower (a phone), one. Below the 540 px column of a 1000 px window with the sidebar: no width fitting there
STAGE_ROW_PX = 330


def stages_figure(stages: list[dict], fit_px: int | None = None) -> go.Figure:
    """A head's stages in one figure, three to a row (one in a column ``fit_px`` wide narrower than
    `STAGES_MIN_WIDTH_PX`): each ``dict(values, rows, columns, title, mask=None, weights=False)`` as
    `_stage_traces` draws it, its title and shape above its panel; the weights' 0–1 colour bar beside them. One
    figure, because a browser draws one chart of eight panels ~3× faster than eight charts; laid out here and not
    validated, as the panel grids (docs/performance.md); the tests validate it."""
    across = 1 if fit_px and fit_px < STAGES_MIN_WIDTH_PX else min(3, len(stages))
    down = -(-len(stages) // across)
    domains = grid_domains(len(stages), across, down, x_gap=0.08, y_gap=0.36 / down)
    layout = dict(height=STAGE_ROW_PX * down, annotations=[], template=TEMPLATE_JSON,
                  margin=dict(t=50, r=10, **_label_margins(stages, across, down)),
                  **(dict(meta=dict(min_width_px=STAGES_MIN_WIDTH_PX)) if across > 1 else {}))
    data, bar_drawn = [], False  # one 0–1 bar, at the end of the first weights panel's row (clear of the next row)
    for index, stage in enumerate(stages):
        traces, subtitle = _stage_traces(stage["values"], stage["rows"], stage["columns"], stage.get("mask"),
                                         stage.get("weights", False))
        (x_domain, y_domain), (x_id, y_id) = domains[index], axis_ids(index)
        if stage.get("weights") and not bar_drawn:
            row_end = domains[min(index // across * across + across, len(stages)) - 1][0]  # its row's last panel
            traces[0]["colorbar"] = dict(x=row_end[1] + 0.01, xanchor="left", y=sum(y_domain) / 2,
                                         len=y_domain[1] - y_domain[0], thickness=12)
            bar_drawn = True
        else:
            traces[0]["showscale"] = False
        data += [dict(trace, xaxis=x_id, yaxis=y_id) for trace in traces]
        layout.update(axis_pair(index, dict(type="category", tickangle=-45, automargin=False, domain=x_domain),
                                dict(type="category", autorange="reversed", automargin=False, domain=y_domain)))
        layout["annotations"].append(panel_title(
            f"{stage['title']}<br><span style='font-size:11px'>{subtitle}</span>", x_domain, y_domain, size=13))
    return go.Figure(data=data, layout=layout, _validate=False)


def _label_margins(stages: list[dict], across: int, down: int) -> dict:
    """Left and bottom margins (px, ``l`` and ``b``) wide enough for the first column's row labels and the bottom
    row's (rotated) column labels: 40 at least, as every figure's labelled side."""
    left = max(40, *(label_px(stage["rows"][:FULL_RESOLUTION]) for stage in stages[::across]))
    bottom = max(40, *(label_px(stage["columns"][:FULL_RESOLUTION], rotated=True)
                       for index, stage in enumerate(stages) if index + across >= down * across))
    return dict(l=left, b=bottom)


def dimension_labels(count: int) -> list[str]:
    return [f"d{j}" for j in range(count)]


SCALING_MIN_WIDTH_PX = 520  # two panels and a legend: narrower (a phone), the panel titles run into each other


def scaling_figure(experiment: dict, fit_px: int | None = None) -> go.Figure:
    """Variance of q·k and softmax entropy against d_k, with and without 1/sqrt(d_k); side by side, or one above
    the other in a column ``fit_px`` wide that is too narrow for two (a phone). Laid out here and not validated,
    as the panel grids (docs/performance.md); the tests validate it."""
    d_k = list(experiment["d_k"])
    stacked = bool(fit_px) and fit_px < SCALING_MIN_WIDTH_PX
    domains = grid_domains(2, 1 if stacked else 2, 2 if stacked else 1, x_gap=0.1, y_gap=0.18)
    scaled_colour, raw_colour = plotly.colors.qualitative.Plotly[:2]
    data = []
    for key, name, line in (("raw", "q·k", dict(dash="dot", color=raw_colour)),  # the same colours in both panels
                            ("scaled", "q·k / sqrt(d_k)", dict(dash="solid", color=scaled_colour))):
        data.append(dict(type="scatter", x=d_k, y=experiment[f"variance_{key}"], name=name, line=line,
                         xaxis="x", yaxis="y",
                         hovertemplate="d_k %{x}<br>variance %{y:.3f}<extra>" + name + "</extra>"))
        data.append(dict(type="scatter", x=d_k, y=experiment[f"entropy_{key}"], name=name, line=line,
                         showlegend=False, xaxis="x2", yaxis="y2",
                         hovertemplate="d_k %{x}<br>entropy %{y:.3f} bits<extra>" + name + "</extra>"))
    data.append(dict(type="scatter", x=d_k, y=[experiment["max_entropy"]] * len(d_k), name="uniform (log2 N)",
                     line=dict(color="grey", dash="dash"), xaxis="x2", yaxis="y2"))
    log_d_k = dict(type="log", dtick=1, title=dict(text="d_k"), automargin=False)  # decades only: a narrow chart
    layout = dict(template=TEMPLATE_JSON, annotations=[], **(dict(meta=dict(min_width_px=SCALING_MIN_WIDTH_PX))
                                                            if not stacked else {}))
    for index, (title, (x_domain, y_domain)) in enumerate(zip(("variance of q·k", "softmax entropy (bits)"),
                                                              domains)):
        layout.update(axis_pair(index, dict(log_d_k, domain=x_domain),
                                dict(domain=y_domain, automargin=False, **(dict(type="log", dtick=1) if index == 0
                                                                           else {}))))
        layout["annotations"].append(panel_title(title, x_domain, y_domain))
    if stacked:  # the legend under the panels
        layout.update(height=700, legend=dict(orientation="h", x=0, y=-0.12, yanchor="top"),
                      margin=dict(t=50, l=64, r=10, b=140))
    else:
        layout.update(height=360, margin=dict(t=50, l=64, r=10, b=50))
    return go.Figure(data=data, layout=layout, _validate=False)


def bars_figure(labels, values, title: str) -> go.Figure:
    """Bars of one probability row (e.g. a softmax under different mask fills); NaN bars are marked."""
    values = np.asarray(values, dtype=np.float64)
    text = ["NaN" if np.isnan(v) else f"{v:.3g}" for v in values]
    fig = figure(go.Bar(x=list(labels), y=np.nan_to_num(values, nan=0.0), text=text, textposition="outside",
                        hovertemplate="%{x}<br>%{text}<extra></extra>"))
    fig.update_layout(title=title, yaxis=dict(range=[0, 1.15], title="weight"), height=280)
    return fixed_margins(fig, top=50)
