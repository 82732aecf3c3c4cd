"""Shared pieces of every figure: token labels, colour scales, pooling, heatmap layers.

Axes carry "position·token" labels so repeated tokens stay distinct categories;
hover reads them back with %{x} / %{y}, so no per-cell strings are sent.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

WEIGHT_COLORSCALE = "Blues"  # 0 = white: a zero weight looks empty
MASKED_COLOR = "#8c8c8c"  # masked cells: solid grey, never a shade of the weight scale
ALLOWED_COLOR = "#2b8cbe"
BLOCKED_COLOR = "#f0f0f0"
DIVERGING_COLORSCALE = "RdBu_r"
MAX_LABEL_CHARS = 12
FULL_RESOLUTION = 128  # larger matrices are max-pooled before they are sent
CELL_BUDGET = 80_000  # cells per multi-panel figure (~0.9 MB as float32 weights + mask layers)


def escape(text: str) -> str:
    """Plotly reads a few HTML tags in labels (``<s>``, ``<b>`` …): entities keep every token literal."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def short(token: str) -> str:
    """A token cut to MAX_LABEL_CHARS (with an ellipsis), escaped for a Plotly axis or hover."""
    token = str(token)
    return escape(token if len(token) <= MAX_LABEL_CHARS else token[: MAX_LABEL_CHARS - 1] + "…")


def position_labels(tokens) -> list[str]:
    """``["0·the", "1·cat", "2·the"]``: distinct even when tokens repeat (empty token: ``"0"``)."""
    return [f"{index}·{short(token)}" if token != "" else str(index) for index, token in enumerate(tokens)]


def pool_factor(length: int, limit: int = FULL_RESOLUTION) -> int:
    """Block size that brings ``length`` to at most ``limit`` cells."""
    return max(1, math.ceil(length / limit))


def max_pool(array: np.ndarray, factor_q: int, factor_k: int, fill=0.0) -> np.ndarray:
    """Max over ``factor_q × factor_k`` blocks of the last two axes (padding with ``fill``)."""
    *lead, n_q, n_k = array.shape
    out_q, out_k = math.ceil(n_q / factor_q), math.ceil(n_k / factor_k)
    padded = np.full((*lead, out_q * factor_q, out_k * factor_k), fill, dtype=array.dtype)
    padded[..., :n_q, :n_k] = array
    blocks = padded.reshape(*lead, out_q, factor_q, out_k, factor_k)
    return blocks.max(axis=(-3, -1))


def pooled_labels(labels, factor: int) -> list[str]:
    """Labels of pooled blocks: ``"0–3·the…"`` names the block's first token."""
    if factor == 1:
        return list(labels)
    groups = range(0, len(labels), factor)
    return [f"{start}–{min(start + factor, len(labels)) - 1}·{labels[start].split('·', 1)[-1]}" for start in groups]


def category_axes(fig: go.Figure, row=None, col=None, reverse_y=True, **kwargs) -> None:
    """Category axes (labels are never merged), query rows from top to bottom."""
    fig.update_xaxes(type="category", tickangle=-45, automargin=True, row=row, col=col, **kwargs)
    fig.update_yaxes(type="category", autorange="reversed" if reverse_y else True, automargin=True,
                     row=row, col=col, **kwargs)


def weight_layers(weights, mask, query_labels, key_labels, name="", coloraxis="coloraxis"):
    """Two heatmap traces: weights where allowed, then grey cells where masked.

    Args:
      weights: ``(N_q, N_k)`` in [0, 1].  mask: ``(N_q, N_k)`` bool, True = may attend.
    """
    weights = np.asarray(weights, dtype=np.float32)
    mask = np.asarray(mask, dtype=bool)
    shown = np.where(mask, weights, np.nan).astype(np.float32)  # (N_q, N_k)
    blocked = np.where(mask, np.nan, 1.0).astype(np.float32)  # (N_q, N_k)
    suffix = f"<extra>{name}</extra>" if name else "<extra></extra>"
    attend = go.Heatmap(
        z=shown, x=key_labels, y=query_labels, coloraxis=coloraxis, name=name,
        hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.4f}" + suffix,
    )
    masked = go.Heatmap(
        z=blocked, x=key_labels, y=query_labels, showscale=False, name=f"{name} masked",
        colorscale=[[0, MASKED_COLOR], [1, MASKED_COLOR]], zmin=0, zmax=1,
        hovertemplate="query %{y}<br>key %{x}<br>blocked by the mask (weight 0)" + suffix,
    )
    return attend, masked


def weight_coloraxis(title="weight") -> dict:
    """The fixed 0–1 colour scale every attention figure shares."""
    return dict(colorscale=WEIGHT_COLORSCALE, cmin=0.0, cmax=1.0, colorbar=dict(title=title))
