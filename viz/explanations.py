"""Which explanation is right: one example's map over the source tokens by every method, side by side, the aligned
source token of each output token outlined; and the scores of every method on many examples."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.labels import position_labels, written_labels
from viz.panels import axis_pair, grid_domains, min_width_meta, panel_title
from viz.style import (
    ALLOWED_COLOR,
    DIVERGING_SCALE,
    FOCUS_COLOR,
    TEMPLATE_JSON,
    left_title,
    title_lines,
    wrap_title,
)

NARROW_PX = 700  # below this width the panels go one under another


def row_scaled(values: np.ndarray) -> np.ndarray:
    """Each row divided by its largest magnitude: ``(T, N_s)`` in [−1, 1], a row of zeros stays zeros."""
    values = np.asarray(values, np.float64)
    largest = np.abs(values).max(-1, keepdims=True)
    return np.divide(values, largest, out=np.zeros_like(values), where=largest > 0)


def explanation_maps(maps: dict, source_tokens, target_tokens, aligned, width_px: int | None = None,
                     *, read_tokens=None) -> go.Figure:
    """Args: maps: ``{method: (T, N_s)}`` each method's map of one example (rows: target tokens, columns: source
    tokens); aligned: for each target token the source index it comes from, or None; read_tokens: the token each
    output position reads (teacher forced: ``<s>`` and the answer so far), its row then named as every page names
    a decoder position, with what it writes (``"0·<s>→f"``). Each row is drawn scaled to its largest magnitude on
    one diverging scale (−1 to 1: gradient × input can be negative); the aligned cell is outlined, and a row's top
    source token marked."""
    methods = list(maps)
    across = 1 if width_px is not None and width_px < NARROW_PX else 3
    down = -(-len(methods) // across)
    x_labels = position_labels(source_tokens)
    y_labels = (position_labels(target_tokens) if read_tokens is None
                else written_labels(read_tokens, target_tokens))
    data, layout, annotations = [], {}, []
    for index, ((x_domain, y_domain), method) in enumerate(zip(grid_domains(len(methods), across, down, 0.06,
                                                                             0.16 if across > 1 else 0.08), methods)):
        grid = row_scaled(maps[method])
        suffix = "" if index == 0 else str(index + 1)
        data.append(dict(type="heatmap", z=grid.astype(np.float32), x=x_labels, y=y_labels, coloraxis="coloraxis",
                         xaxis=f"x{suffix}", yaxis=f"y{suffix}",
                         customdata=np.asarray(maps[method], np.float32),
                         hovertemplate=f"{method}<br>output %{{y}} ← source %{{x}}<br>value %{{customdata:.4f}} "
                                       "(%{z:.2f} of the row's largest)<extra></extra>"))
        pairs = [(j, at) for j, at in enumerate(aligned) if at is not None]
        data.append(dict(type="scatter", mode="markers", xaxis=f"x{suffix}", yaxis=f"y{suffix}", showlegend=False,
                         x=[x_labels[at] for _, at in pairs], y=[y_labels[j] for j, _ in pairs],
                         marker=dict(symbol="square-open", size=14, color=FOCUS_COLOR, line=dict(width=2)),
                         hovertemplate="output %{y} comes from source %{x}<extra>aligned</extra>"))
        tops = np.asarray(maps[method]).argmax(-1)
        data.append(dict(type="scatter", mode="markers", xaxis=f"x{suffix}", yaxis=f"y{suffix}", showlegend=False,
                         x=[x_labels[top] for top in tops], y=y_labels[: len(tops)],
                         marker=dict(symbol="circle", size=5, color=ALLOWED_COLOR),
                         hovertemplate=f"{method}: output %{{y}}'s top source %{{x}}<extra>top</extra>"))
        layout.update(axis_pair(index, dict(domain=x_domain, type="category", tickangle=-45),
                                dict(domain=y_domain, type="category", autorange="reversed")))
        annotations.append(panel_title(method, x_domain, y_domain, size=14))
    title = wrap_title("One example, every method: rows are output tokens, columns source tokens; the aligned cell "
                       "outlined", width_px)
    top = 36 + 22 * title_lines(title)  # the title's lines, then the first row's panel titles
    height = top + 60 + down * (90 + 18 * max(len(target_tokens), 4))  # a panel: its rows and its rotated labels
    layout.update(title=left_title(title, height), height=height, annotations=annotations,
                  meta=min_width_meta(methods, across, left_px=70, right_px=20, gap_share=0.06),
                  margin=dict(t=top, l=70, r=20, b=60), template=TEMPLATE_JSON,
                  coloraxis=dict(colorscale=DIVERGING_SCALE, cmin=-1, cmax=1,
                                 colorbar=dict(title=dict(text="of the row's largest", side="right"), len=0.6)))
    return go.Figure(data=data, layout=layout, _validate=False)


def faithfulness_bars(methods, top1, aopc, random_aopc: float, title: str, width_px: int | None = None) -> go.Figure:
    """Two bar groups a method: the share of output tokens whose top source token is the aligned one, and the
    deletion test's AOPC (the mean drop in the aligned token's probability, top 1–3 deleted), with random deletion's
    AOPC as a dashed line."""
    methods = list(methods)
    bars = [dict(type="bar", name=name, x=methods, y=np.asarray(values, np.float32), marker=dict(color=colour),
                 hovertemplate=f"%{{x}}<br>{name} %{{y:.3f}}<extra></extra>")
            for name, values, colour in (("top-1 is the aligned token", top1, ALLOWED_COLOR),
                                         ("AOPC (deletion)", aopc, FOCUS_COLOR))]
    random_line = dict(type="line", xref="paper", x0=0, x1=1, y0=random_aopc, y1=random_aopc,
                       line=dict(color="grey", dash="dash"))
    layout = dict(title=left_title(wrap_title(title, width_px)), height=400, barmode="group", template=TEMPLATE_JSON,
                  margin=dict(t=100, l=60, r=20, b=110), shapes=[random_line],
                  annotations=[dict(x=1, xref="paper", y=random_aopc, text=f"random deletion {random_aopc:.3f}",
                                    showarrow=False, xanchor="right", yanchor="bottom")],
                  legend=dict(orientation="h", y=1.02, x=0, xanchor="left", yanchor="bottom"),
                  xaxis=dict(type="category", tickangle=-30), yaxis=dict(title=dict(text="share; probability drop")))
    return go.Figure(data=bars, layout=layout, _validate=False)
