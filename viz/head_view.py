"""The head view: queries in a column on the left, keys on the right, a line for each weight.

One colour a head, opacity by weight on the fixed 0–1 scale (in ten steps, one path shape each), so
a strong link reads at a glance and the heads can be told apart; the traces are the tokens and the legend.
Hovering a token keeps only its lines (its browser code beside this file, ``head_view.js``, reading
``meta.head_view`` and ``meta.lines``); clicking one focuses it on the page.
"""

from __future__ import annotations

import base64

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from viz.labels import position_labels
from viz.sizes import NARROW_PX
from viz.style import FIRST_LINE_PX, FOCUS_COLOR, MASKED_COLOR, TEMPLATE_JSON, left_title, title_lines

HEAD_COLORS = plotly.colors.qualitative.Dark24
MAX_POSITIONS = 64  # a side; longer sequences show a window of this many positions
MIN_WEIGHT = 0.01  # thinner lines are left out
MAX_LINES = 12_000  # the strongest lines kept beyond this (a figure stays well under 1 MB)
OPACITY_STEPS = 10
ROW_PX = 18


def head_color(head: int) -> str:
    return HEAD_COLORS[head % len(HEAD_COLORS)]


def window(length: int, around: int | None, size: int = MAX_POSITIONS) -> tuple[int, int]:
    """``(first, end)`` of the at most ``size`` positions shown of ``length``, centred on ``around`` if given."""
    if length <= size:
        return 0, length
    first = 0 if around is None else min(max(0, around - size // 2), length - size)
    return first, first + size


def _kept_lines(weights, heads, focus, min_weight: float, max_lines: int):
    """``(head, query, key, weight)`` arrays of the lines drawn, how many were left out by the budget and how many
    were under ``min_weight``."""
    wanted = np.zeros(weights.shape, bool)  # (H, N_q, N_k)
    wanted[list(heads)] = True
    if focus is not None:
        along, index = focus
        only = np.zeros(weights.shape[1:], bool)  # (N_q, N_k)
        if along == "query":
            only[index] = True
        else:
            only[:, index] = True
        wanted &= only
    shown = wanted & (weights >= min_weight)  # (H, N_q, N_k)
    faint = int(wanted.sum() - shown.sum())
    head, query, key = np.nonzero(shown)
    strength = weights[head, query, key]
    budget_cut = max(0, len(strength) - max_lines)
    if budget_cut:
        strongest = np.argsort(strength)[::-1][:max_lines]
        head, query, key, strength = head[strongest], query[strongest], key[strongest], strength[strongest]
    return head, query, key, strength, budget_cut, faint


BAND = 0.8  # the share of a token's row its heads' lines spread over


def head_offsets(heads) -> tuple[dict, float]:
    """Each drawn head's offset within a token's row (rows apart), so that heads' lines between the same query and
    key lie side by side, as BertViz draws them, not on top of each other (only the last showed); and the line
    width that keeps neighbours apart (2 px, down to 1 px for many heads)."""
    heads = list(heads)
    spacing = min(0.2, BAND / max(len(heads), 1))  # rows between two heads' lines
    middle = (len(heads) - 1) / 2
    width = float(np.clip(spacing * ROW_PX - 0.5, 1.0, 2.0))
    return {h: round((rank - middle) * spacing, 3) for rank, h in enumerate(heads)}, width


def _line_shapes(head, query, key, strength, heads) -> tuple[list[dict], list[dict]]:
    """One path shape a head and opacity step, each line a segment ``M0,query+o L1,key+o`` (``o``: the head's
    offset in the row, `head_offsets`, of the drawn ``heads``), in the head's legend group; and each shape's lines
    as numbers, ``{"query", "key"}`` typed arrays and its ``offset`` (the chart's own code keeps a hovered token's
    lines from these: it reads no path). Shapes, not traces: a focus or hover redraws the shapes alone (Plotly's
    relayout), not every trace."""
    shapes, ends = [], []
    offsets, width = head_offsets(heads)
    steps = np.minimum(OPACITY_STEPS - 1, (strength * OPACITY_STEPS).astype(int))  # 0 … 9
    for h in sorted(set(head.tolist())):
        for step in range(OPACITY_STEPS):
            chosen = (head == h) & (steps == step)
            if not chosen.any():
                continue
            queries, keys = query[chosen], key[chosen]  # (lines,) each
            offset = offsets[h]
            path = "".join(f"M0,{q + offset:g}L1,{k + offset:g}" for q, k in zip(queries.tolist(), keys.tolist()))
            shapes.append(dict(type="path", path=path, xref="x", yref="y", layer="below",
                               line=dict(color=head_color(h), width=width),
                               opacity=max(0.06, (step + 0.5) / OPACITY_STEPS),
                               name=f"head {h}", legendgroup=f"head {h}", showlegend=False))
            ends.append(dict(query=_typed(queries), key=_typed(keys), offset=offset))
    return shapes, ends


def _typed(values) -> dict:
    """Positions (at most ``size`` of them: under 256 as drawn) as Plotly's typed-array JSON, base64 bytes."""
    values = np.asarray(values)
    dtype = "u1" if values.size == 0 or values.max() < 256 else "<i2"
    return {"dtype": dtype.lstrip("<"), "bdata": base64.b64encode(values.astype(dtype).tobytes()).decode()}


def _legend_traces(heads) -> list[dict]:
    """One legend entry a head in its full colour (its lines are drawn fainter): a click hides the head's line
    shapes too (Plotly hides a legend group's shapes with its traces)."""
    return [dict(type="scatter", mode="lines", x=[None], y=[None], line=dict(color=head_color(h), width=3),
                 name=f"head {h}", legendgroup=f"head {h}", hoverinfo="skip") for h in heads]


def _strongest(weights, heads, index: int, labels, side: str, *, count: int = 3) -> str:
    """Hover text of a token: per head the keys it attends to most (a query) or the queries that attend to it
    most (a key), with their weights."""
    parts = []
    for h in heads:
        line = weights[h, index] if side == "query" else weights[h, :, index]  # (N_k,) or (N_q,)
        best = [i for i in np.argsort(line)[::-1][:count] if line[i] > 0]
        parts.append(f"head {h}: " + (", ".join(f"{labels[i]} {line[i]:.2f}" for i in best) or "no weight"))
    return "<br>".join(parts)


def _token_trace(side: str, labels, hovers, blocked, first: int) -> dict:
    """A column of tokens: queries at x = 0 (text to the left), keys at x = 1 (to the right); a blocked token's
    text and marker grey (its text in the theme's colour otherwise)."""
    x = 0.0 if side == "query" else 1.0
    text = [f'<span style="color:{MASKED_COLOR}">{label}</span>' if out else label
            for label, out in zip(labels, blocked)]
    return dict(type="scatter", mode="markers+text", x=[x] * len(labels), y=list(range(len(labels))),
                text=text, textposition="middle left" if side == "query" else "middle right",
                marker=dict(size=7, color=[MASKED_COLOR if out else "#555" for out in blocked]),
                hovertext=hovers, hoverinfo="text", showlegend=False, name=f"{side}s",
                meta=dict(side=side, first=first))


def head_view(weights, mask, query_tokens, key_tokens, *, heads=None, focus=None, title: str = "",
              min_weight: float = MIN_WEIGHT, max_lines: int = MAX_LINES, size: int = MAX_POSITIONS,
              start: tuple | None = None, width_px: int | None = None) -> go.Figure:
    """Lines from each query (left) to each key (right) of one layer, one colour a head.

    Args:
      weights: ``(H, N_q, N_k)`` in [0, 1].  mask: ``(N_q, N_k)`` bool, True = may attend.
      heads: the heads drawn (default all).  focus: ``("query", i)`` keeps query i's lines only,
        ``("key", j)`` the lines into key j; above ``size`` positions the window shown is centred on it.
      start: ``(first query, first key)`` when ``weights`` holds only the window from there (``(H, rows, cols)``,
        a block-wise run's exact window, see `window`); the tokens and the mask still cover every position.
      width_px: the chart's width when known (a phone's column): room kept for the legend's rows of heads.
    Keys a focused query may not attend to (or keys no query may attend to) are drawn grey.
    """
    weights = np.asarray(weights, dtype=np.float32)
    n_q, n_k = len(query_tokens), len(key_tokens)
    mask = np.broadcast_to(np.asarray(mask, bool), (n_q, n_k))
    heads = list(range(weights.shape[0]) if heads is None else heads)
    along, position = focus if focus is not None else (None, None)
    if start is None:
        q0, q1 = window(n_q, position, size)  # both axes around the focus: queries and keys in step (self-attention)
        k0, k1 = window(n_k, position, size)
        shown = weights[:, q0:q1, k0:k1]  # (H, n_q', n_k')
    else:
        (q0, k0), shown = start, weights[:, :size, :size]  # (H, n_q', n_k')
        q1, k1 = q0 + shown.shape[1], k0 + shown.shape[2]
    local_focus = None
    if focus is not None and (q0 <= position < q1 if along == "query" else k0 <= position < k1):
        local_focus = (along, position - (q0 if along == "query" else k0))
    head, query, key, strength, budget_cut, faint = _kept_lines(shown, heads, local_focus, min_weight, max_lines)
    q_labels = position_labels(query_tokens)[q0:q1]
    k_labels = position_labels(key_tokens)[k0:k1]
    shown_mask = mask[q0:q1, k0:k1]
    key_blocked = (~shown_mask[local_focus[1]] if local_focus and along == "query" else ~shown_mask.any(0))
    query_blocked = ~shown_mask.any(1)
    hovers_q = [f"query {label} attends to<br>{_strongest(shown, heads, row, k_labels, 'query')}"
                for row, label in enumerate(q_labels)]
    hovers_k = [f"key {label}" + (" (masked)" if blocked else "") + " is attended by<br>"
                + _strongest(shown, heads, column, q_labels, "key") for column, (label, blocked)
                in enumerate(zip(k_labels, key_blocked))]
    traces = _legend_traces(heads) + [_token_trace("query", q_labels, hovers_q, query_blocked, q0),
                                      _token_trace("key", k_labels, hovers_k, key_blocked, k0)]
    rows = max(q1 - q0, k1 - k0)
    band = _focus_band(local_focus)
    lines, line_ends = _line_shapes(head, query, key, strength, heads)
    text = "<br>".join(filter(None, (title, _note(n_q, n_k, (q0, q1), (k0, k1), min_weight, faint, budget_cut,
                                                  len(strength)))))  # what is left out: a line of its own
    height_above = legend_top(title_lines(text), len(heads), width_px)
    height = height_above + 20 + rows * ROW_PX
    layout = dict(
        title=left_title(text, chart_height=height), height=height, margin=dict(t=height_above, l=10, r=10, b=10),
        hovermode="closest",
        xaxis=dict(range=[-0.45, 1.45], visible=False, fixedrange=True),
        yaxis=dict(range=[rows - 0.5, -0.5], visible=False, fixedrange=True),
        legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom", title=dict(text="heads (click to hide)",
                                                                             side="top")),
        # a column narrower than NARROW_PX (a phone) reports its width, and the legend's rows are laid out for it;
        # lines: {shape index: each line's query and key} of the line shapes (after the focus band, under them)
        meta=dict(head_view=True, click=True, lines={len(band) + index: ends for index, ends in enumerate(line_ends)},
                  **({} if width_px else {"min_width_px": NARROW_PX - 1})),
        shapes=band + lines,
    )
    return go.Figure(data=traces, layout={**layout, "template": TEMPLATE_JSON}, _validate=False)


LEGEND_ENTRY_PX = 90  # one head's legend entry: its line sample, "head 12" and the gap after it
LEGEND_ROW_PX = 30
WIDE_PX = 680  # a chart's width assumed where the page was not told it: at least a wide window's main column


def legend_top(lines: int, heads: int, width_px: int | None) -> int:
    """The top margin: the title's ``lines`` (its first centred FIRST_LINE_PX from the top, `left_title`), then the
    legend's title and its rows of ``heads`` entries, as many as a ``width_px`` chart needs (WIDE_PX if unknown)."""
    rows = -(-heads * LEGEND_ENTRY_PX // max((width_px or WIDE_PX) - 20, LEGEND_ENTRY_PX))
    return FIRST_LINE_PX + 20 * max(lines - 1, 0) + 14 + LEGEND_ROW_PX * (1 + rows)


def _focus_band(local_focus) -> list[dict]:
    if local_focus is None:
        return []
    along, index = local_focus
    x0, x1 = (-0.45, 0.02) if along == "query" else (0.98, 1.45)
    return [dict(type="rect", x0=x0, x1=x1, y0=index - 0.5, y1=index + 0.5, line=dict(width=0),
                 fillcolor=FOCUS_COLOR, opacity=0.25, layer="below")]


def _note(n_q, n_k, queries, keys, min_weight, faint, budget_cut, drawn) -> str:
    """What the view leaves out, in words."""
    parts = []
    if (queries[1] - queries[0], keys[1] - keys[0]) != (n_q, n_k):
        parts.append(f"queries {queries[0]}–{queries[1] - 1} and keys {keys[0]}–{keys[1] - 1} of {n_q}×{n_k}")
    if faint and not drawn and not budget_cut:
        parts.append(f"every weight here is under {min_weight:g} (attention spread thin): no line drawn")
    else:
        parts.append(f"{faint:,} line{'s' if faint != 1 else ''} under {min_weight:g} left out")
    if budget_cut:
        parts.append(f"only the {drawn:,} strongest of {drawn + budget_cut:,} lines")
    return "; ".join(parts)
