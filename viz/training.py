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
