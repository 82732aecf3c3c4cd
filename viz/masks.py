"""Mask figures: True = may attend drawn in blue, blocked in light grey."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.common import (
    ALLOWED_COLOR, BLOCKED_COLOR, FULL_RESOLUTION, category_axes, max_pool, pool_factor, pooled_labels,
    position_labels,
)


def _mask_traces(mask, query_labels, key_labels):
    """One trace for allowed cells, one for blocked ones, each with its own hover word."""
    mask = np.asarray(mask, dtype=bool)  # (N_q, N_k)
    gap = 1 if max(mask.shape) <= 64 else 0
    traces = []
    for value, color, word in ((True, ALLOWED_COLOR, "attend"), (False, BLOCKED_COLOR, "blocked")):
        z = np.where(mask == value, 1.0, np.nan).astype(np.float32)
        traces.append(go.Heatmap(
            z=z, x=key_labels, y=query_labels, colorscale=[[0, color], [1, color]], showscale=False,
            xgap=gap, ygap=gap, name=word, hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{word}<extra></extra>",
        ))
    return traces


def mask_grid(masks, query_tokens, key_tokens, titles, columns: int = 3) -> go.Figure:
    """One panel per batch element.

    Args:
      masks: ``(B, N_q, N_k)`` bool, True = may attend (a ``(B, 1, 1, N)`` padding
        mask must be broadcast to ``(B, N, N)`` first, as attention sees it).
      query_tokens, key_tokens: ``B`` token sequences of lengths N_q and N_k.
      titles: ``B`` panel titles.

    Above 128 positions each panel is max-pooled (a block is allowed when any of its
    cells is) and its title says so, to keep what is sent small.
    """
    masks = np.asarray(masks, dtype=bool)
    count = masks.shape[0]
    factor = max(pool_factor(masks.shape[-2], FULL_RESOLUTION), pool_factor(masks.shape[-1], FULL_RESOLUTION))
    if factor > 1:  # a block counts as allowed when any cell in it is
        masks = max_pool(masks, factor, factor, fill=False)
        titles = [f"{title} (max-pooled {factor}×{factor})" for title in titles]
    columns = max(1, min(columns, count))
    rows = -(-count // columns)
    fig = make_subplots(rows=rows, cols=columns, subplot_titles=list(titles),
                        horizontal_spacing=0.08, vertical_spacing=0.12 if rows > 1 else 0.1)
    for index in range(count):
        row, col = index // columns + 1, index % columns + 1
        query_labels = pooled_labels(position_labels(query_tokens[index]), factor)
        key_labels = pooled_labels(position_labels(key_tokens[index]), factor)
        for trace in _mask_traces(masks[index], query_labels, key_labels):
            fig.add_trace(trace, row=row, col=col)
        category_axes(fig, row=row, col=col)
    fig.update_layout(
        height=max(320, 300 * rows), margin=dict(t=60, l=10, r=10, b=10), showlegend=False,
        xaxis_title="key", yaxis_title="query",
    )
    return fig


def mask_figure(mask, query_tokens, key_tokens, title: str) -> go.Figure:
    """A single ``(N_q, N_k)`` mask, e.g. the look-ahead mask."""
    return mask_grid(np.asarray(mask, bool)[None], [query_tokens], [key_tokens], [title], columns=1)


def broadcast_rows(batch: int, heads: int, length: int) -> list[dict]:
    """How each mask's real shape broadcasts against the attention logits ``(B, H, N_q, N_k)``."""
    logits = (batch, heads, length, length)
    return [
        dict(mask="padding mask", shape=(batch, 1, 1, length), broadcasts_to=logits,
             shared_over="heads and query positions"),
        dict(mask="look-ahead mask", shape=(length, length), broadcasts_to=logits,
             shared_over="batch elements and heads"),
        dict(mask="target mask", shape=(batch, 1, length, length), broadcasts_to=logits,
             shared_over="heads"),
    ]


def fully_masked_rows(masks) -> list[tuple[int, int]]:
    """``(batch element, query position)`` pairs whose every key is blocked."""
    masks = np.asarray(masks, dtype=bool)  # (B, N_q, N_k)
    return [tuple(map(int, pair)) for pair in np.argwhere(~masks.any(axis=-1))]
