"""The Cost view: time and memory of one attention layer against N, log–log, with N and N² guides."""

from __future__ import annotations

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from viz.style import TEMPLATE_JSON, left_title

COLORS = plotly.colors.qualitative.Plotly


def _guides(lengths, anchor: float, axis: str) -> list[dict]:
    """Dotted N and N² lines through ``anchor`` at the first length."""
    lengths = np.asarray(lengths, dtype=float)
    return [dict(type="scatter", mode="lines", x=lengths, y=anchor * (lengths / lengths[0]) ** power,
                 line=dict(color="#888", dash=dash, width=1), name=name, legendgroup=name,
                 showlegend=axis == "", hoverinfo="skip", xaxis=f"x{axis}", yaxis=f"y{axis}")
            for power, dash, name in ((1, "dot", "∝ N"), (2, "dash", "∝ N²"))]


def _quadratic_from(crossovers) -> tuple[list[dict], list[dict]]:
    """A dotted vertical line on both panels at each ``(N, what)`` of ``crossovers``, where the N² terms become half
    the FLOPs of that series' layer (its key/value heads move it); one note in the left panel's corner names them
    all, a line each (a note at each line ran into the next one and the right panel)."""
    shapes = [dict(type="line", xref=f"x{axis}", yref=f"y{axis} domain", x0=n, x1=n, y0=0, y1=1,
                   line=dict(color="#d62728", dash="dot", width=1)) for n, _ in crossovers for axis in ("", "2")]
    lines = [f"N = {n:,g}{what}" for n, what in crossovers]
    note = dict(text="N² terms half the FLOPs from<br>" + "<br>".join(lines), xref="x domain", yref="y domain",
                x=0.02, y=0.98, xanchor="left", yanchor="top", showarrow=False, align="left",
                bgcolor="rgba(255,255,255,0.75)", font=dict(size=11, color="#d62728"))
    return shapes, [note]


def exponent_text(exponent: float) -> str:
    """`` (time ∝ N^1.23)``, or nothing for an exponent too few lengths could fit (NaN never reaches a label)."""
    return f" (time ∝ N^{exponent:.2f})" if np.isfinite(exponent) else ""


def cost_figure(series, device_label: str = "", quadratic_from=()) -> go.Figure:
    """``series``: `transformer.analysis.cost.Series` list. Left: seconds; right: bytes; both against N.
    ``quadratic_from``: ``((N, what), …)``, where the N² terms become half a series' FLOPs (d_model·(1 + H_kv/H)),
    marked on both (an int: one, for every series)."""
    traces = []
    for index, one in enumerate(series):
        colour = COLORS[index % len(COLORS)]
        name = one.label + exponent_text(one.exponent)
        for axis, values, unit in (("", one.seconds, "s"), ("2", [b / 2**20 for b in one.bytes], "MB")):
            traces.append(dict(type="scatter", mode="lines+markers", x=list(one.lengths), y=list(values),
                               name=name, legendgroup=name, showlegend=axis == "", line=dict(color=colour),
                               xaxis=f"x{axis}", yaxis=f"y{axis}", customdata=list(one.density),
                               hovertemplate=f"{one.label}<br>N %{{x}}<br>%{{y:.4g}} {unit}<br>allowed cells "
                                             "%{customdata:.1%}<extra></extra>"))
    first = series[0]
    traces += _guides(first.lengths, first.seconds[-1] / (first.lengths[-1] / first.lengths[0]) ** 2, "")
    positive = [b / 2**20 for b in first.bytes if b > 0]
    if positive:
        traces += _guides(first.lengths, positive[-1] / (first.lengths[-1] / first.lengths[0]) ** 2, "2")
    axis = dict(type="log", title=dict(text="sequence length N"))
    layout = dict(
        title=left_title(f"one attention layer, measured on {device_label}" if device_label else "one attention layer"),
        height=460, margin=dict(t=50, l=70, r=20, b=60),
        xaxis=dict(axis, domain=[0, 0.45]), yaxis=dict(type="log", title=dict(text="seconds (median)")),
        xaxis2=dict(axis, domain=[0.55, 1.0], anchor="y2"),
        yaxis2=dict(type="log", title=dict(text="peak memory, MB" + ("" if series[0].measured else
                                                                      " (counted)")), anchor="x2"),
        legend=dict(orientation="h", y=-0.25, x=0),
    )
    if isinstance(quadratic_from, (int, float)):
        quadratic_from = ((quadratic_from, ""),)
    if quadratic_from:
        layout["shapes"], layout["annotations"] = _quadratic_from(quadratic_from)
    return go.Figure(data=traces, layout={**layout, "template": TEMPLATE_JSON}, _validate=False)
