"""Training curves: loss and token accuracy against step."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.style import figure, fixed_margins


def progress_figure(history) -> go.Figure:
    """``history``: ``[(step, loss, token accuracy), ...]``."""
    rows = np.asarray(history, dtype=np.float64).reshape(-1, 3)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("loss (label-smoothed)", "token accuracy"),
                        figure=figure())
    fig.add_trace(go.Scatter(x=rows[:, 0], y=rows[:, 1], mode="lines+markers", name="loss",
                             hovertemplate="step %{x}<br>loss %{y:.4f}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=rows[:, 0], y=rows[:, 2], mode="lines+markers", name="accuracy",
                             hovertemplate="step %{x}<br>accuracy %{y:.3f}<extra></extra>"), row=1, col=2)
    fig.update_xaxes(title="step")
    fig.update_yaxes(range=[0, 1.02], row=1, col=2)
    fig.update_layout(height=320, showlegend=False)
    return fixed_margins(fig, top=50)


def timeline_figure(steps, loss, accuracy, scores, role: str, marked_step: int) -> go.Figure:
    """Training against the step, a snapshot a point: the loss and the task's accuracy on the probe (top), and every
    head's ``role`` score on the probe (bottom, a line a head, on the weights' 0–1 scale); ``marked_step``: a
    vertical line where the head grid below is scrubbed to. ``scores``: ``(T, L, H)``."""
    steps, scores = np.asarray(steps), np.asarray(scores, dtype=np.float64)  # (T,), (T, L, H)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12, figure=figure(),
                        subplot_titles=("loss (training batch) and accuracy (probe)",
                                        f"{role.replace('_', ' ')} score of each head (probe)"))
    fig.add_trace(go.Scatter(x=steps, y=loss, mode="lines+markers", name="loss",
                             hovertemplate="step %{x}<br>loss %{y:.3f}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=steps, y=accuracy, mode="lines+markers", name="accuracy", xaxis="x", yaxis="y3",
                             hovertemplate="step %{x}<br>accuracy %{y:.3f}<extra></extra>"))  # its own right axis
    for layer in range(scores.shape[1]):
        for head in range(scores.shape[2]):
            fig.add_trace(go.Scatter(
                x=steps, y=scores[:, layer, head], mode="lines", name=f"L{layer} H{head}",
                line=dict(dash="solid" if layer == scores.shape[1] - 1 else "dot"),
                hovertemplate=f"layer {layer} head {head}<br>step %{{x}}<br>score %{{y:.2f}}<extra></extra>"),
                row=2, col=1)
    fig.add_vline(x=marked_step, line=dict(color="grey", dash="dash"))
    fig.update_layout(yaxis3=dict(overlaying="y", anchor="x", side="right", range=[0, 1.02], title="accuracy",
                                  showgrid=False),
                      height=600, legend=dict(orientation="h", x=0, y=-0.12,
                                              yanchor="top"))
    fig.update_yaxes(title="loss", row=1, col=1)
    fig.update_yaxes(range=[0, 1.02], title="score", row=2, col=1)
    fig.update_xaxes(title="step", row=2, col=1)
    return fixed_margins(fig, top=50, right=60, bottom=110)
