"""Attention heatmaps: one panel per head, a layers × heads model view, per-head statistics.

Weights share one fixed 0–1 colour scale; masked cells are solid grey with their
own hover; matrices longer than 128 positions are max-pooled and titled so.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.common import (
    CELL_BUDGET, FULL_RESOLUTION, category_axes, max_pool, pool_factor, pooled_labels, position_labels,
    weight_coloraxis, weight_layers,
)


def reduce_view(weights, mask, query_labels, key_labels, limit: int = FULL_RESOLUTION):
    """Max-pool ``(..., N_q, N_k)`` weights and mask to at most ``limit`` cells per axis.

    A pooled cell shows the largest weight in its block and counts as masked only
    when every cell of the block is. Returns ``(weights, mask, query_labels, key_labels, factor)``.
    """
    weights = np.asarray(weights, dtype=np.float32)
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), weights.shape[-2:])
    factor = max(pool_factor(weights.shape[-2], limit), pool_factor(weights.shape[-1], limit))
    if factor == 1:
        return weights, mask, list(query_labels), list(key_labels), 1
    return (
        max_pool(weights, factor, factor),
        max_pool(mask, factor, factor, fill=False),
        pooled_labels(list(query_labels), factor),
        pooled_labels(list(key_labels), factor),
        factor,
    )


def _grid(count: int, columns: int) -> tuple[int, int]:
    columns = max(1, min(columns, count))
    return -(-count // columns), columns


def head_grid(weights, mask, query_tokens, key_tokens, title="", columns: int = 4,
              limit: int = FULL_RESOLUTION, names=None) -> go.Figure:
    """One heatmap per head.

    Args:
      weights: ``(H, N_q, N_k)`` in [0, 1].
      mask: ``(N_q, N_k)`` bool, True = may attend (cells where False are drawn grey).
      query_tokens, key_tokens: token text of length N_q and N_k.
      names: panel titles (default ``"head h"``).
    """
    weights = np.asarray(weights, dtype=np.float32)
    limit = min(limit, max(8, int((CELL_BUDGET / weights.shape[0]) ** 0.5)))  # many heads: coarser panels
    shown, shown_mask, q_labels, k_labels, factor = reduce_view(
        weights, mask, position_labels(query_tokens), position_labels(key_tokens), limit
    )
    heads = shown.shape[0]
    rows, columns = _grid(heads, columns)
    names = list(names) if names is not None else [f"head {h}" for h in range(heads)]
    fig = make_subplots(rows=rows, cols=columns, subplot_titles=names,
                        horizontal_spacing=0.04, vertical_spacing=0.08 / max(1, rows - 1) if rows > 1 else 0.05)
    for head in range(heads):
        row, col = head // columns + 1, head % columns + 1
        for trace in weight_layers(shown[head], shown_mask, q_labels, k_labels, name=names[head]):
            fig.add_trace(trace, row=row, col=col)
    category_axes(fig, showticklabels=len(q_labels) <= 40)
    note = f" — max-pooled {factor}×{factor} view of {weights.shape[-2]}×{weights.shape[-1]}" if factor > 1 else ""
    fig.update_layout(
        title=title + note, coloraxis=weight_coloraxis(), height=max(340, 300 * rows),
        margin=dict(t=70, l=10, r=10, b=10),
    )
    return fig


def single_head(weights, mask, query_tokens, key_tokens, title="") -> go.Figure:
    """One ``(N_q, N_k)`` head at full resolution, whatever its size."""
    fig = head_grid(np.asarray(weights)[None], mask, query_tokens, key_tokens, title, columns=1, names=[title or "head"])
    if max(np.shape(weights)) <= FULL_RESOLUTION:
        return fig
    shown = np.asarray(weights, dtype=np.float32)
    labels_q, labels_k = position_labels(query_tokens), position_labels(key_tokens)
    full = weight_layers(shown, np.broadcast_to(mask, shown.shape), labels_q, labels_k, name=title or "head")
    fig.data = []
    for trace in full:
        fig.add_trace(trace)
    fig.update_layout(title=f"{title} — full resolution {shown.shape[0]}×{shown.shape[1]}")
    return fig


def model_view(weights, mask, stack_title="", limit: int = 32) -> go.Figure:
    """All layers × heads as small multiples, each pooled to at most ``limit`` cells.

    Args:
      weights: ``(L, H, N_q, N_k)``.  mask: ``(N_q, N_k)`` bool, True = may attend.
    """
    weights = np.asarray(weights, dtype=np.float32)
    layers, heads = weights.shape[:2]
    n_q, n_k = weights.shape[-2:]
    shown, shown_mask, q_labels, k_labels, factor = reduce_view(
        weights, mask, [str(i) for i in range(n_q)], [str(j) for j in range(n_k)], limit
    )
    fig = make_subplots(rows=layers, cols=heads, row_titles=[f"layer {l}" for l in range(layers)],
                        column_titles=[f"head {h}" for h in range(heads)],
                        horizontal_spacing=0.01, vertical_spacing=0.02)
    for layer in range(layers):
        for head in range(heads):
            name = f"layer {layer} head {head}"
            for trace in weight_layers(shown[layer, head], shown_mask, q_labels, k_labels, name=name):
                fig.add_trace(trace, row=layer + 1, col=head + 1)
    category_axes(fig, showticklabels=False)
    note = f" (max-pooled {factor}×{factor})" if factor > 1 else ""
    fig.update_layout(title=stack_title + note, coloraxis=weight_coloraxis(), margin=dict(t=70, l=10, r=40, b=10),
                      height=max(260, 120 * layers + 80))
    return fig


STAT_COLUMNS = ("entropy", "max_weight", "mean_distance", "padding_share")
STAT_TITLES = {
    "entropy": "entropy (nats)",
    "max_weight": "max weight",
    "mean_distance": "mean distance (positions)",
    "padding_share": "weight on padding",
}


def stats_figure(stats: dict) -> go.Figure:
    """Bars per head for each statistic of `transformer.analysis.head_statistics`."""
    heads = [f"head {h}" for h in range(len(stats["entropy"]))]
    fig = make_subplots(rows=2, cols=2, subplot_titles=[STAT_TITLES[c] for c in STAT_COLUMNS],
                        vertical_spacing=0.18)
    for index, column in enumerate(STAT_COLUMNS):
        fig.add_trace(go.Bar(x=heads, y=np.asarray(stats[column], dtype=np.float32), name=STAT_TITLES[column],
                             hovertemplate="%{x}<br>%{y:.4f}<extra></extra>"), row=index // 2 + 1, col=index % 2 + 1)
    fig.update_layout(showlegend=False, height=420, margin=dict(t=50, l=10, r=10, b=10))
    return fig
