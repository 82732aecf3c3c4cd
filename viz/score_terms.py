"""Why a head attends: one query–key score split by the parts of the residual stream.

Left: the terms of the score, a query part (rows) × key part (columns) grid that sums to the scaled score, on a
diverging scale around 0 (they are logits, not weights). Right: what in the key made this key win — each key-side
part's terms minus their mean over the keys the query may see. Part names: "token", "position", "L0H1" (a head's
output), "L0X1" (a cross-attention head's), "L0FF", "bias"; the encoder's begin "enc ".
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.labels import position_labels
from viz.neuron import SIGNED_COLORSCALE
from viz.style import ALLOWED_COLOR, FOCUS_COLOR, TEMPLATE_JSON, left_title, wrap_title

VALUES_SHOWN_UP_TO = 12  # parts a side; more and the numbers on the cells no longer fit
WIDE_MIN_PX = 620  # the grid beside the bars; a narrower column (a phone) gets them one above the other


def score_terms_view(grid: np.ndarray, preference: np.ndarray, query_parts, key_parts, query_tokens, key_tokens, *,
                     head: int, query: int, key: int, score: float, weight: float,
                     width_px: int | None = None) -> go.Figure:
    """Args: grid: ``(P_q, P_k)`` the terms of query ``query``'s score for key ``key`` (they sum to ``score``);
    preference: ``(P_k,)`` each key-side part's terms at this key minus their mean over the allowed keys;
    query_tokens, key_tokens: the line's N_q and N_k tokens; weight: the head's weight on the pair; width_px: the
    column's width on a phone (the grid above the bars), None: any."""
    q_label, k_label = position_labels(query_tokens)[query], position_labels(key_tokens)[key]
    grid = grid.astype(np.float32)
    bound = float(max(np.abs(grid).max(), 1e-6))
    shown = len(query_parts) <= VALUES_SHOWN_UP_TO and len(key_parts) <= VALUES_SHOWN_UP_TO
    heatmap = dict(type="heatmap", x=list(key_parts), y=list(query_parts), z=grid, colorscale=SIGNED_COLORSCALE,
                   zmin=-bound, zmax=bound, xaxis="x", yaxis="y",
                   colorbar=dict(title=dict(text="logit"), len=0.9, x=0.52),
                   hovertemplate=f"query {q_label} part %{{y}}<br>key {k_label} part %{{x}}<br>"
                                 "term %{z:.4f}<extra></extra>",
                   **(dict(texttemplate="%{z:.2f}", textfont=dict(size=10)) if shown else {}))
    winner = int(np.argmax(preference)) if len(preference) else -1
    bars = dict(type="bar", orientation="h", x=preference.astype(np.float32), y=list(key_parts), xaxis="x2",
                yaxis="y2", marker=dict(color=[FOCUS_COLOR if index == winner else ALLOWED_COLOR
                                               for index in range(len(key_parts))]),
                hovertemplate=f"key {k_label}, part %{{y}}<br>%{{x:+.4f}} against the mean of the keys query "
                              f"{q_label} may see<extra></extra>")
    title = (f"head {head}: why query {q_label} attends to key {k_label} — score {score:.3f} (the grid's sum), "
             f"weight {weight:.3f}")
    narrow = width_px is not None and width_px < WIDE_MIN_PX
    if narrow:  # a phone: the grid above the bars, no numbers on the cells
        heatmap.pop("texttemplate", None)
        heatmap["colorbar"] = dict(title=dict(text="logit"), len=0.5, y=1, yanchor="top", thickness=12)
    grid_x, bars_x = ([0, 0.82], [0.3, 1]) if narrow else ([0, 0.5], [0.68, 1])
    grid_y, bars_y = ([0.5, 1], [0, 0.34]) if narrow else ([0, 1], [0, 1])
    layout = dict(
        title=left_title(wrap_title(title, width_px)), height=760 if narrow else 480, showlegend=False,
        margin=dict(t=110 if narrow else 70, l=90, r=20, b=60),
        **({} if narrow else dict(meta=dict(min_width_px=WIDE_MIN_PX))),  # wider: a phone's column reports its own
        xaxis=dict(type="category", domain=grid_x, anchor="y", tickangle=-45, title=dict(text="key part")),
        yaxis=dict(type="category", domain=grid_y, autorange="reversed", title=dict(text="query part")),
        xaxis2=dict(domain=bars_x, anchor="y2", zeroline=True, title=dict(text="this key − the mean key")),
        yaxis2=dict(type="category", domain=bars_y, anchor="x2", autorange="reversed"),
    )
    return go.Figure(data=[heatmap, bars], layout={**layout, "template": TEMPLATE_JSON}, _validate=False)
