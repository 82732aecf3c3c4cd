"""Training curves: loss and token accuracy against step."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.panels import grid_domains, panel_title
from viz.style import TEMPLATE_JSON, figure, fixed_margins


def progress_figure(history) -> go.Figure:
    """``history``: ``[(step, loss, token accuracy), ...]``."""
    rows = np.asarray(history, dtype=np.float64).reshape(-1, 3)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("loss (label-smoothed)", "token accuracy (training batch)"),
                        figure=figure())
    fig.add_trace(go.Scatter(x=rows[:, 0], y=rows[:, 1], mode="lines+markers", name="loss",
                             hovertemplate="step %{x}<br>loss %{y:.4f}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=rows[:, 0], y=rows[:, 2], mode="lines+markers", name="accuracy",
                             hovertemplate="step %{x}<br>accuracy %{y:.3f}<extra></extra>"), row=1, col=2)
    fig.update_xaxes(title="step")
    fig.update_yaxes(range=[0, 1.02], row=1, col=2)
    fig.update_layout(height=320, showlegend=False)
    return fixed_margins(fig, top=50)


def timeline_figure(steps, loss, accuracy, scores, role: str, marked_step: int,
                    measure: str = "accuracy") -> go.Figure:
    """Training against the step, a snapshot a point: the loss and the task's accuracy on the probe (top; ``measure``
    says what it counts), and every head's ``role`` score on the probe (bottom, a line a head, on the weights' 0–1
    scale, ticks every 0.25); ``marked_step``: a vertical line where the head grid below is scrubbed to. ``scores``:
    ``(T, L, H)``. Laid out here and not validated, as the panel grids (docs/performance.md); the tests validate
    it."""
    steps, scores = np.asarray(steps), np.asarray(scores, dtype=np.float64)  # (T,), (T, L, H)
    layers, heads = scores.shape[1:]
    data = [dict(type="scatter", x=steps, y=loss, mode="lines+markers", name="loss", xaxis="x", yaxis="y",
                 hovertemplate="step %{x}<br>loss %{y:.3f}<extra></extra>"),
            dict(type="scatter", x=steps, y=accuracy, mode="lines+markers", name="accuracy", xaxis="x", yaxis="y3",
                 hovertemplate=f"step %{{x}}<br>{measure} %{{y:.3f}}<extra></extra>")]  # its own right axis
    data += [dict(type="scatter", x=steps, y=scores[:, layer, head], mode="lines", name=f"L{layer} H{head}",
                  line=dict(dash="solid" if layer == layers - 1 else "dot"), xaxis="x2", yaxis="y2",
                  hovertemplate=f"layer {layer} head {head}<br>step %{{x}}<br>score %{{y:.2f}}<extra></extra>")
             for layer in range(layers) for head in range(heads)]
    (x_domain, top), (_, bottom) = grid_domains(2, 1, 2, x_gap=0.0, y_gap=0.12)  # shared x, one above the other
    titles = (f"loss (training batch) and {measure} (probe)", f"{role.replace('_', ' ')} score of each head (probe)")
    quarters = dict(tickmode="linear", tick0=0, dtick=0.25)  # 0, 0.25, …, 1: round ticks on the 0–1 axes
    marked = dict(type="line", x0=marked_step, x1=marked_step, y0=0, y1=1, line=dict(color="grey", dash="dash"))
    return go.Figure(data=data, layout=dict(
        template=TEMPLATE_JSON, height=600, legend=dict(orientation="h", x=0, y=-0.12, yanchor="top"),
        margin=dict(t=50, l=64, r=60, b=110),
        xaxis=dict(anchor="y", domain=x_domain, matches="x2", showticklabels=False, automargin=False),
        yaxis=dict(anchor="x", domain=top, title=dict(text="loss"), automargin=False),
        xaxis2=dict(anchor="y2", domain=x_domain, title=dict(text="step"), automargin=False),
        yaxis2=dict(anchor="x2", domain=bottom, range=[0, 1.02], title=dict(text="score"), automargin=False,
                    **quarters),
        yaxis3=dict(overlaying="y", anchor="x", side="right", range=[0, 1.02], title=dict(text=measure),
                    showgrid=False, automargin=False, **quarters),
        annotations=[panel_title(text, x_domain, domain) for text, domain in zip(titles, (top, bottom))],
        shapes=[dict(marked, xref="x", yref="y domain"), dict(marked, xref="x2", yref="y2 domain")]),
        _validate=False)
