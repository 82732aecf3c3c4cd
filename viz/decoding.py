"""Figures of one decoding step: where the newest position looks, what it may choose, what the cache keeps."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.labels import position_labels, short
from viz.panels import grid_domains, panels_figure, weight_rows
from viz.sizes import CHAR_PX
from viz.style import (
    ALLOWED_COLOR,
    BLOCKED_COLOR,
    DIVERGING_COLORSCALE,
    figure,
    fixed_margins,
    left_title,
    title_lines,
    weight_coloraxis,
)


def step_attention(weights, key_tokens, title: str, fit_px: int | None = None) -> go.Figure:
    """One panel per layer: its heads (rows, and their mean last) over the keys, for the newest position.

    Args:
      weights: ``(L, H, N_k)`` in [0, 1]: a step's self-attention (keys: the prefix) or cross-attention
        (keys: the source).
      key_tokens: N_k token texts.
      fit_px: lay it out for a column this wide (a phone): fewer panels to a row.
    """
    weights = np.asarray(weights, np.float32)  # (L, H, N_k)
    layers, heads, n_k = weights.shape
    panels = np.concatenate([weights, weights.mean(axis=1, keepdims=True)], axis=1)  # (L, H + 1, N_k)
    rows = [f"head {h}" for h in range(heads)] + ["mean"]
    names = [f"layer {layer}" for layer in range(layers)]
    labels = position_labels(key_tokens)
    # the gap between two layers' panels holds a rotated label's reach to the left: the first key of layer 1 ran
    # into the last one of layer 0
    reach_px = int(max(len(label) for label in labels) * CHAR_PX * 0.75) if labels else 0
    traces, layout = weight_rows(panels, np.ones((heads + 1, n_k), bool), rows, labels, names, columns=layers,
                                 panel_px=max(90, 22 * (heads + 1)), top_px=44, fit_px=fit_px,
                                 gap_px=max(16, reach_px))
    return panels_figure(traces, layout, title=left_title(title), coloraxis=weight_coloraxis())


def look_ahead_row(step: int, length: int, tokens) -> go.Figure:
    """The look-ahead mask's row for position ``step`` over the ``length`` positions decoded in the end:
    keys up to ``step`` may be attended (blue), later ones are blocked (grey)."""
    allowed = (np.arange(length) <= step).astype(np.uint8)[None]  # (1, length)
    labels = position_labels(list(tokens)[:length])
    fig = figure(go.Heatmap(z=allowed, x=labels, y=[f"query {step}"], zmin=0, zmax=1, showscale=False,
                            colorscale=[[0, BLOCKED_COLOR], [0.5, BLOCKED_COLOR], [0.5, ALLOWED_COLOR],
                                        [1, ALLOWED_COLOR]],
                            hovertemplate="key %{x}<br>mask %{z} (1 = may attend)<extra></extra>"),
                 dict(height=150, title=left_title(f"look-ahead mask, row {step}")))  # short: fits a phone
    fig.update_xaxes(type="category", tickangle=-45)
    fig.update_yaxes(type="category")
    return fixed_margins(fig, top=40, left=70, bottom=60)


def distribution(top, chosen: str, title: str) -> go.Figure:
    """Bars of the most probable next tokens (``[(token, probability)]``, most probable first); the chosen one
    is drawn dark."""
    tokens = [short(token) if token.strip() else "␣ (space)" for token, _ in top][::-1]  # a space stays visible
    colours = [ALLOWED_COLOR if token == chosen else "#9ecae1" for token, _ in top][::-1]
    fig = figure(go.Bar(x=[p for _, p in top][::-1], y=tokens, orientation="h", marker_color=colours,
                        hovertemplate="next token %{y}<br>probability %{x:.4f}<extra></extra>"),
                 dict(height=40 + 20 * title_lines(title) + 24 * len(top), title=left_title(title)))
    fig.update_xaxes(range=[0, 1], title_text="probability")
    fig.update_yaxes(type="category")
    return fixed_margins(fig, top=20 + 20 * title_lines(title), left=90, bottom=50)


CACHE_PANELS_ACROSS = 16  # cache panels a row: 64 heads' keys and values are 8 rows, each panel still a panel
CACHE_ROW_PX = 360  # a row's positions in at most this many pixels (40 a position up to 9)
CACHE_ROW_GAP_PX = 36  # between rows: the next row's panel titles


def cache_heatmaps(layer_cache: dict, step: int, source_length: int, title: str) -> go.Figure:
    """One layer's key/value cache after ``step``: per head, the keys and the values kept (positions × d_k), the
    keys first, `CACHE_PANELS_ACROSS` panels a row. A row is one heatmap, its panels side by side with a blank column
    between (one trace a row, not one a panel: 64 heads' 128 panels took 0.5 s a step to build, every step of a
    decode built with the page, the server's other sessions waiting)."""
    keys, values = layer_cache["keys"][:, : step + 1], layer_cache["values"][:, : step + 1]  # (H, t + 1, d_k)
    heads, d_k = keys.shape[0], keys.shape[2]
    panels = np.concatenate([keys, values])  # (2H, t + 1, d_k)
    limit = float(np.abs(panels).max()) or 1.0
    positions = panels.shape[1]  # step + 1, or all the cache holds
    across = min(len(panels), CACHE_PANELS_ACROSS)
    down = -(-len(panels) // across)
    row_px = max(120, min(40 * positions, CACHE_ROW_PX))  # at least 120: one row left the colour bar's labels
    plot_px = down * row_px + (down - 1) * CACHE_ROW_GAP_PX
    top = 20 + 20 * title_lines(title)
    fig = figure(layout=dict(height=plot_px + top + 70, title=left_title(title)))
    domains = grid_domains(down, 1, down, x_gap=0.0, y_gap=CACHE_ROW_GAP_PX / plot_px if down > 1 else 0.0)
    ticks = list(range(0, positions, max(1, positions // 8)))  # whole positions, never −0.5 or 0.5
    for row in range(down):
        first, end = row * across, min((row + 1) * across, len(panels))
        names = [("K" if index < heads else "V", index % heads) for index in range(first, end)]
        blank = np.full((positions, 1), np.nan)
        z = np.concatenate([part for index in range(first, end) for part in (panels[index], blank)][:-1],
                           axis=1)  # (t + 1, panels · (d_k + 1) − 1)
        columns = [f"{kind} h{head} · d{dim}" for kind, head in names for dim in [*range(d_k), None]][:-1]
        columns = [column if column else f"gap {number}" for number, column in enumerate(columns)]
        suffix = "" if row == 0 else str(row + 1)
        fig.add_trace(go.Heatmap(z=z, x=columns, xaxis=f"x{suffix}", yaxis=f"y{suffix}", coloraxis="coloraxis",
                                 name=f"cache row {row}", hoverongaps=False,
                                 hovertemplate="%{x}<br>position %{y}<br>%{z:.3f}<extra></extra>"))
        centres = [columns[(d_k + 1) * panel + d_k // 2] for panel in range(len(names))]
        fig.update_layout({f"xaxis{suffix}": dict(domain=[0, 1], anchor=f"y{suffix}", type="category",
                                                  tickmode="array", tickvals=centres, tickangle=0,
                                                  ticktext=[f"{kind} h{head}" for kind, head in names],
                                                  tickfont=dict(size=10)),
                           f"yaxis{suffix}": dict(domain=domains[row][1], anchor=f"x{suffix}", autorange="reversed",
                                                  tickmode="array", tickvals=ticks,
                                                  title_text="position" if row == 0 else "")})
    fig.update_layout(coloraxis=dict(colorscale=DIVERGING_COLORSCALE, cmin=-limit, cmax=limit,
                                     colorbar=dict(thickness=12, nticks=5)))
    return fixed_margins(fig, top=top, left=70, right=10, bottom=50)
