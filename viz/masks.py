"""Mask figures: True = may attend drawn in blue, blocked in light grey."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.labels import pooled_labels, position_labels
from viz.panels import axis_ids, label_px, panel_layout, panels_figure
from viz.pooling import FULL_RESOLUTION, block_to_fit, max_pool, pooled_note
from viz.style import ALLOWED_COLOR, BLOCKED_COLOR, left_title, title_lines, wrap_title

MASK_COLORSCALE = [[0.0, BLOCKED_COLOR], [0.5, BLOCKED_COLOR], [0.5, ALLOWED_COLOR], [1.0, ALLOWED_COLOR]]


def _mask_trace(mask, query_labels, key_labels, panel: int = 0) -> dict:
    """One heatmap trace dict: 1 (may attend) in blue, 0 (blocked) in light grey, sent as uint8."""
    x_id, y_id = axis_ids(panel)
    return dict(type="heatmap", z=np.asarray(mask, dtype=np.uint8), x=key_labels, y=query_labels,
                xaxis=x_id, yaxis=y_id, colorscale=MASK_COLORSCALE, zmin=0, zmax=1, showscale=False,
                hovertemplate="query %{y}<br>key %{x}<br>mask %{z} (1 = may attend, 0 = blocked)<extra></extra>")


def mask_grid(masks, query_tokens, key_tokens, titles, *, columns: int = 3, fit_px: int | None = None) -> go.Figure:
    """One panel per batch element.

    Args:
      masks: ``(B, N_q, N_k)`` bool, True = may attend (a ``(B, 1, 1, N)`` padding
        mask must be broadcast to ``(B, N, N)`` first, as attention sees it).
      query_tokens, key_tokens: ``B`` token sequences of lengths N_q and N_k.
      titles: ``B`` panel titles.
      fit_px: lay it out for a column this wide (a phone): fewer panels to a row, the title wrapped.

    Above 128 positions each panel is max-pooled (a block is allowed when any of its
    cells is) and the figure's title says so, to keep what is sent small. (Said in each
    panel's title, it made the titles of four panels run into each other.)
    """
    masks = np.asarray(masks, dtype=bool)
    factor = max(block_to_fit(masks.shape[-2], FULL_RESOLUTION), block_to_fit(masks.shape[-1], FULL_RESOLUTION))
    note = pooled_note(factor, masks.shape)
    if factor > 1:  # a block counts as allowed when any cell in it is
        note = wrap_title(note + ": a block is blue when any of its cells is", fit_px)
        masks = max_pool(masks, factor, factor, fill=False)
    query_labels = [pooled_labels(position_labels(tokens), factor) for tokens in query_tokens]
    key_labels = [pooled_labels(position_labels(tokens), factor) for tokens in key_tokens]
    traces = [_mask_trace(mask, query_labels[index], key_labels[index], panel=index)
              for index, mask in enumerate(masks)]
    layout = panel_layout(
        list(titles), columns, panel_px=280 if len(masks) > 1 else 300, top_px=26 + 18 * title_lines(note) if note
        else 40, fit_px=fit_px,
        x_labels_px=label_px([label for labels in key_labels for label in labels], rotated=True),
        y_labels_px=label_px([label for labels in query_labels for label in labels]),
    )
    return panels_figure(traces, layout, title=left_title(note, layout["height"]))


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


def broadcast_table(batch: int, heads: int, length: int) -> str:
    """``broadcast_rows`` as a Markdown table (one text element: the browser redraws it cheaply)."""
    lines = ["| mask | shape | broadcasts to | shared over |", "| --- | --- | --- | --- |"]
    lines += [f"| {row['mask']} | `{row['shape']}` | `{row['broadcasts_to']}` | {row['shared_over']} |"
              for row in broadcast_rows(batch, heads, length)]
    return "\n".join(lines)


def fully_masked_rows(masks) -> list[tuple[int, int]]:
    """``(batch element, query position)`` pairs whose every key is blocked."""
    masks = np.asarray(masks, dtype=bool)  # (B, N_q, N_k)
    return [tuple(map(int, pair)) for pair in np.argwhere(~masks.any(axis=-1))]
