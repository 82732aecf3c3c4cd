"""Attention heatmaps: one panel per head, a layers × heads model view, per-head statistics.

Weights share one fixed 0–1 colour scale; masked cells are solid grey with their
own hover; matrices longer than 128 positions are max-pooled and titled so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from viz.labels import pooled_labels, position_labels
from viz.panels import panels_figure, weight_rows
from viz.pooling import CELL_BUDGET, FULL_RESOLUTION, FULL_RESOLUTION_WINDOW, block_to_fit, max_pool, pooled_note
from viz.style import left_title, title_lines, weight_coloraxis, wrap_title

ROW_TITLE_PX = 22  # a model view's layer names, rotated, right of its rows


def reduce_view(weights, mask, query_labels, key_labels, limit: int = FULL_RESOLUTION, pooled: int = 1):
    """Max-pool ``(..., N_q, N_k)`` weights and mask to at most ``limit`` cells per axis.

    A pooled cell shows the largest weight in its block and counts as masked only
    when every cell of the block is. ``pooled``: the weights come already max-pooled by this factor
    (a block-wise run), while the mask and labels are the whole sequence's. Returns ``(weights, mask,
    query_labels, key_labels, factor)``, the factor counted from the whole sequence.
    """
    weights = np.asarray(weights, dtype=np.float32)
    factor = max(block_to_fit(weights.shape[-2], limit), block_to_fit(weights.shape[-1], limit))
    total = factor * pooled
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), (len(query_labels), len(key_labels)))
    if total == 1:
        return weights, mask, list(query_labels), list(key_labels), 1
    return (
        max_pool(weights, factor, factor) if factor > 1 else weights,
        max_pool(mask, total, total, fill=False),
        pooled_labels(list(query_labels), total),
        pooled_labels(list(key_labels), total),
        total,
    )


def pooled_keys(padded_keys, factor: int):
    """``(N_k,)`` padding keys pooled by ``factor`` as `reduce_view` pools the mask: a pooled key is padding when
    every key of its block is; None stays None."""
    if padded_keys is None or factor == 1:
        return padded_keys
    return ~max_pool(~np.asarray(padded_keys, bool)[None, :], 1, factor, fill=False)[0]


def pooled_focus(focus, factor: int, offsets=(0, 0), shown=None):
    """``focus`` (``("query" | "key", position)`` or None) in a view pooled by ``factor`` whose queries and keys
    start at ``offsets``; None when the position is outside the ``shown = (N_q, N_k)`` cells."""
    if focus is None:
        return None
    along, position = focus
    index = (position - offsets[along == "key"]) // factor
    if index < 0 or (shown is not None and index >= shown[along == "key"]):
        return None
    return along, index


def head_grid(weights, mask, query_tokens, key_tokens, title="", *, columns: int = 4,
              limit: int = FULL_RESOLUTION, names=None, focus=None, pooled: int = 1, key_positions=None,
              fit_px: int | None = None, value_name: str = "weight", value_max: float = 1.0,
              click_side: str | None = None, padded_keys=None) -> go.Figure:
    """One heatmap per head.

    Args:
      weights: ``(H, N_q, N_k)`` in [0, 1].
      mask: ``(N_q, N_k)`` bool, True = may attend (cells where False are drawn grey).
      query_tokens, key_tokens: token text of length N_q and N_k.
      names: panel titles (default ``"head h"``).
      focus: ``("query", i)`` outlines query i's row in every panel, ``("key", j)`` key j's column; None: none.
      pooled: the weights come max-pooled by this factor (a block-wise run); mask and tokens are whole.
      key_positions: each key's place in the sequence when some keys were taken out (its axis label says it).
      fit_px: lay it out for a column this wide (a phone): fewer panels to a row, the title wrapped.
      value_name, value_max: another quantity than weights (value-weighted norms: "‖α·f(x)‖", their largest), on
        the same colour scale from 0 to ``value_max``.
      click_side: the side a click on a cell focuses, drawn in the browser at once (`viz.panels.focus_meta`).
      padded_keys: ``(N_k,)`` bool, True for a padding key (its blocked cells sand, not grey: `weight_rows`).
    """
    weights = np.asarray(weights, dtype=np.float32)
    limit = min(limit, max(8, int((CELL_BUDGET / weights.shape[0]) ** 0.5)))  # many heads: coarser panels
    shown, shown_mask, q_labels, k_labels, factor = reduce_view(
        weights, mask, position_labels(query_tokens), position_labels(key_tokens, key_positions), limit, pooled
    )
    names = list(names) if names is not None else [f"head {h}" for h in range(shown.shape[0])]
    note = pooled_note(factor, (len(query_tokens), len(key_tokens)))
    first, *more = title.split("<br>")  # a second line of the title stays the second line
    title = wrap_title("<br>".join([" — ".join(filter(None, (first, note))), *more]), fit_px)
    return _heatmap_panels(shown, shown_mask, q_labels, k_labels, names, columns=columns, title=title,
                           focus=pooled_focus(focus, factor), factor=factor, fit_px=fit_px, value_name=value_name,
                           value_max=value_max, click_side=click_side, padded_keys=pooled_keys(padded_keys, factor))


def _heatmap_panels(weights, mask, q_labels, k_labels, names, *, columns: int, title: str, panel_px=240, focus=None,
                    factor: int = 1, fit_px: int | None = None, value_name: str = "weight",
                    value_max: float = 1.0, start: tuple = (0, 0), click_side: str | None = None,
                    padded_keys=None) -> go.Figure:
    """``(P, N_q, N_k)`` weight panels sharing the fixed 0–1 colour axis, every axis labelled (long ones thinned).
    A click on a cell reports its position to the page (``meta.click``; ``start``: a cropped window's first cell)."""
    traces, layout = weight_rows(weights, mask, q_labels, k_labels, names, columns, panel_px=panel_px,
                                 top_px=23 + 21 * title_lines(title) if title else 10, focus=focus,  # 17 px lines
                                 click_factor=factor, fit_px=fit_px, value_name=value_name, click_start=start,
                                 click_side=click_side, padded_keys=padded_keys)
    layout["meta"] = {**layout["meta"], "click": True}
    return panels_figure(traces, layout, title=left_title(title, layout["height"]),
                         coloraxis=weight_coloraxis(value_name, value_max))


def window_starts(length: int, size: int = FULL_RESOLUTION_WINDOW) -> list[int]:
    """Where a full-resolution window of ``size`` may start along an axis of ``length``: half-window steps."""
    step = max(1, size // 2)
    return sorted({*range(0, max(1, length - size + 1), step), max(0, length - size)})


def single_head(weights, mask, query_tokens, key_tokens, title="", *, start=(0, 0),
                size: int = FULL_RESOLUTION_WINDOW, focus=None, window: bool = False, value_name: str = "weight",
                value_max: float = 1.0, click_side: str | None = None, padded_keys=None) -> go.Figure:
    """One ``(N_q, N_k)`` head at full resolution: every cell exact, never pooled.

    Above ``size`` positions only a ``size × size`` window starting at ``start =
    (first query, first key)`` is drawn (so the figure stays under 1 MB), and the
    title says which part of the matrix it is. Labels keep their absolute positions.
    ``window``: ``weights`` is that window already (a block-wise run's crop), not the whole head.
    ``value_name``, ``value_max``, ``click_side``, ``padded_keys``: as `head_grid`'s.
    """
    weights = np.asarray(weights, dtype=np.float32)  # (N_q, N_k), or the window
    n_q, n_k = len(query_tokens), len(key_tokens)
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), (n_q, n_k))
    q0, k0 = (min(max(0, int(s)), max(0, n - size)) for s, n in zip(start, (n_q, n_k)))
    rows, cols = slice(q0, q0 + size), slice(k0, k0 + size)
    labels_q, labels_k = position_labels(query_tokens)[rows], position_labels(key_tokens)[cols]
    name = title or "head"
    shown_q, shown_k = len(labels_q), len(labels_k)
    shown = weights[:shown_q, :shown_k] if window else weights[rows, cols]  # (≤ size, ≤ size)
    if (shown_q, shown_k) != (n_q, n_k):
        note = (f"full resolution, cropped: queries {q0}–{q0 + shown_q - 1}, keys {k0}–{k0 + shown_k - 1} "
                f"of {n_q}×{n_k}")
    else:
        note = f"full resolution {n_q}×{n_k}" if max(n_q, n_k) > FULL_RESOLUTION else ""
    return _heatmap_panels(shown[None], mask[rows, cols], labels_q, labels_k, [name], columns=1,
                           title=" — ".join(filter(None, (title, note))), panel_px=420,
                           focus=pooled_focus(focus, 1, (q0, k0), (shown_q, shown_k)), value_name=value_name,
                           value_max=value_max, start=(q0, k0), click_side=click_side,
                           padded_keys=None if padded_keys is None else np.asarray(padded_keys, bool)[cols])


def _head_titles(heads: int, spelled_out: int = 8, phone: bool = False) -> list[str]:
    """``head 0`` … over each column of the model view; above ``spelled_out`` heads ``head 0, 1, 2 …``: a row of
    32 "head h" titles is wider than the page. On a phone ``H0, H1 …`` (the Heads page's names), which fit."""
    if phone:
        return [f"H{h}" for h in range(heads)]
    return [f"head {h}" if heads <= spelled_out or h == 0 else str(h) for h in range(heads)]


@dataclass(frozen=True)
class _ModelViewStyle:
    """How the model view names and spaces its grid: on a desktop, or on a phone (``phone``: short head titles;
    rows named as the titles, "L3"; narrow gaps; a colour bar beside the row names)."""

    phone: bool
    right_px: int
    gap_px: int

    def row_title(self, layer: int) -> str:
        return f"L{layer}" if self.phone else f"layer {layer}"


_DESKTOP_VIEW, _PHONE_VIEW = _ModelViewStyle(False, 110, 8), _ModelViewStyle(True, 96, 3)


def model_view(weights, mask, stack_title="", *, limit: int = 32, focus=None, pooled: int = 1,
               roles=None, value_name: str = "weight", value_max: float = 1.0,
               click_side: str | None = None, padded_keys=None, fit_px: int | None = None) -> go.Figure:
    """All layers × heads as small multiples, each pooled to at most ``limit`` cells, a row per layer.

    Args:
      weights: ``(L, H, N_q, N_k)``.  mask: ``(N_q, N_k)`` bool, True = may attend.
      focus: as `head_grid`'s, outlined in every panel.  pooled: as `head_grid`'s.
      roles: optional ``(L, H)`` text, each head's role (`transformer.analysis.heads.role_text`), in its hover.
      value_name, value_max, click_side, padded_keys: as `head_grid`'s.
      fit_px: lay it out for a column this wide (a phone): shorter titles, panels as tall as they are wide.
    """
    weights = np.asarray(weights, dtype=np.float32)
    layers, heads = weights.shape[:2]
    n_q, n_k = np.shape(mask)[-2:] if pooled > 1 else weights.shape[-2:]
    shown, shown_mask, q_labels, k_labels, factor = reduce_view(
        weights, mask, [str(i) for i in range(n_q)], [str(j) for j in range(n_k)], limit, pooled
    )
    names = [f"layer {layer} head {h}" + (f" · {roles[layer][h]}" if roles is not None else "")
             for layer in range(layers) for h in range(heads)]
    style = _PHONE_VIEW if fit_px else _DESKTOP_VIEW
    titles = _head_titles(heads, phone=style.phone) + [""] * (heads * (layers - 1))  # head names on the top row
    traces, layout = weight_rows(shown.reshape(layers * heads, *shown.shape[-2:]), shown_mask, q_labels, k_labels,
                                 names, heads, titles=titles, row_titles=[style.row_title(i) for i in range(layers)],
                                 panel_px=100, gap_px=style.gap_px, show_ticks=False, top_px=44,
                                 right_px=style.right_px,
                                 focus=pooled_focus(focus, factor), click_factor=factor, value_name=value_name,
                                 click_side=click_side, padded_keys=pooled_keys(padded_keys, factor),
                                 fit_px=fit_px, wrap=False)
    layout["meta"] = {**layout["meta"], "click": True}
    note = f" (max-pooled {factor}×{factor})" if factor > 1 else ""
    coloraxis = weight_coloraxis(value_name, value_max)
    if style.phone:  # its bar right of the rows' titles, which 2 % of a phone's plot (Plotly's default) would cover
        plot_px = fit_px - layout["margin"]["l"] - style.right_px
        coloraxis["colorbar"] |= dict(x=1 + ROW_TITLE_PX / plot_px, thickness=14)
    return panels_figure(traces, layout, title=left_title(stack_title + note), coloraxis=coloraxis)
