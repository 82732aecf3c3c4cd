"""Attention flow beside rollout for one query: what reaches its last-layer output from each input token."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.labels import position_labels
from viz.style import ALLOWED_COLOR, FOCUS_COLOR, TEMPLATE_JSON, left_title, wrap_title


def flow_beside_rollout(rollout: np.ndarray, flow: np.ndarray, key_tokens, query_label: str, layers: int,
                        *, width_px: int | None = None) -> go.Figure:
    """Args: rollout, flow: ``(N_k,)`` one query's rows (each summing to 1 over the drawn keys); key_tokens: the
    N_k drawn keys' tokens; query_label: the query's position label; layers: how many layers they run through."""
    labels = position_labels(key_tokens)
    bars = [dict(type="bar", name=name, x=labels, y=np.asarray(values, np.float32), marker=dict(color=colour),
                 hovertemplate=f"query {query_label}<br>key %{{x}}<br>{name} %{{y:.4f}}<extra></extra>")
            for name, values, colour in (("rollout", rollout, ALLOWED_COLOR), ("flow", flow, FOCUS_COLOR))]
    title = f"query {query_label}: what reaches its output through {layers} layers, by rollout and by flow"
    layout = dict(title=left_title(wrap_title(title, width_px)), height=360, barmode="group",
                  margin=dict(t=70, l=60, r=20, b=90), legend=dict(orientation="h", y=1.02, x=1, xanchor="right",
                                                                  yanchor="bottom"),
                  xaxis=dict(type="category", tickangle=-45), yaxis=dict(range=[0, 1], title=dict(text="share")))
    return go.Figure(data=bars, layout={**layout, "template": TEMPLATE_JSON}, _validate=False)
