"""Grids of panels laid out by hand: one pair of category axes per panel or per row, sized in pixels.

Panel grids are laid out here rather than by make_subplots and Plotly's automargin:
automargin makes the browser lay a figure out several times, and make_subplots costs
~30 ms of validation per figure on the server (docs/performance.md). Sizes: viz.sizes.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from viz.labels import GAP_MARK, PANEL_MARK
from viz.sizes import (
    CHAR_PX,
    LABELLED_WIDTH_PX,
    MIN_PANEL_PX,
    NOMINAL_WIDTH_PX,
    TICK_PX,
    TICK_WIDTH_PX,
    TITLE_CHAR_PX,
    TITLE_PAD_PX,
    TITLE_PX,
)
from viz.style import FOCUS_COLOR, MASKED_COLOR, PADDING_COLOR, TEMPLATE_JSON


def label_px(labels, shown: bool = True, rotated: bool = False) -> int:
    """Pixels a column of tick labels needs (rotated −45°: its height below the axis)."""
    if not shown or not len(labels):
        return 6
    chars = max(len(html.unescape(str(label))) for label in labels)
    return int(chars * CHAR_PX * 0.75) + 30 if rotated else chars * CHAR_PX + 14


def _text_px(text, size_px: float = 14) -> float:
    """About how wide a title's ``text`` is drawn at ``size_px`` (TITLE_CHAR_PX a character at 14 px)."""
    return len(html.unescape(str(text))) * TITLE_CHAR_PX * size_px / 14


def min_width_meta(titles, columns: int, *, left_px: float, right_px: float, gap_share: float,
                   min_panel_px: int = MIN_PANEL_PX) -> dict:
    """``layout.meta`` naming the narrowest width (px) a grid of panels is drawn at: there, each panel is at
    least ``min_panel_px`` wide, the titles of neighbouring panels (``columns`` to a row) do not run into
    each other, and the outer ones stay within the margins (``left_px``, ``right_px``). ``ui.chart`` keeps
    the chart that wide; a narrower column (a phone) scrolls it sideways. ``gap_share``: the part of the
    distance from one panel's middle to the next one's that is gap (the gaps scale with the chart).
    """
    widths = [_text_px(title) for title in titles]
    panel = max([min_panel_px]
                + [width - 2 * left_px for width in widths[::columns]]  # a row's first title, centred on its panel
                + [width - 2 * right_px for width in widths[columns - 1::columns]])  # a full row's last one
    apart = [(widths[i] + widths[i + 1]) / 2 + TITLE_PAD_PX for i in range(len(widths) - 1) if (i + 1) % columns]
    pitch = max([panel / (1 - gap_share), *apart])  # from one panel's middle to the next one's
    return {"min_width_px": math.ceil(left_px + right_px + (columns - gap_share) * pitch)}


def grid_domains(count: int, across: int, down: int, x_gap: float, y_gap: float) -> list[tuple[list, list]]:
    """``(x domain, y domain)`` of each of ``count`` panels, row by row from the top, spaced as make_subplots's
    ``horizontal_spacing`` ``x_gap`` and ``vertical_spacing`` ``y_gap`` space them."""
    width, height = (1 - x_gap * (across - 1)) / across, (1 - y_gap * (down - 1)) / down
    domains = []
    for index in range(count):
        row, col = divmod(index, across)
        top = 1 - row * (height + y_gap)
        domains.append(([col * (width + x_gap), min(1.0, col * (width + x_gap) + width)],
                        [max(0.0, top - height), min(1.0, top)]))  # no −1e-17 at the edges
    return domains


def panel_title(text: str, x_domain, y_domain, size: int = 16) -> dict:
    """A panel's title centred above it, as make_subplots writes one (``size`` px)."""
    return dict(text=text, x=sum(x_domain) / 2, y=y_domain[1], xref="paper", yref="paper", xanchor="center",
                yanchor="bottom", showarrow=False, font=dict(size=size))


def axis_pair(index: int, x_axis: dict, y_axis: dict) -> dict:
    """Layout entries ``{"xaxisN": …, "yaxisN": …}`` of panel ``index``, each anchored to the other."""
    x_id, y_id = axis_ids(index)
    return {x_id.replace("x", "xaxis"): dict(x_axis, anchor=y_id),
            y_id.replace("y", "yaxis"): dict(y_axis, anchor=x_id)}


def axis_ids(index: int) -> tuple[str, str]:
    """Plotly's trace references for panel ``index`` (0-based): ``("x", "y")``, ``("x2", "y2")`` …"""
    suffix = "" if index == 0 else str(index + 1)
    return f"x{suffix}", f"y{suffix}"


def _row_geometry(rows: int, *, panel_px: int, x_labels_px: int, title_px: int, top_px: int):
    """Height, top margin and each row's y domain (paper units, top row first) of a grid of panel rows."""
    row_px = panel_px + x_labels_px + title_px
    height = top_px + rows * row_px
    top = top_px + title_px
    plot_px = height - top - x_labels_px
    domains = []
    for row in range(rows):
        y_top = 1.0 - row * row_px / plot_px
        domains.append([max(0.0, y_top - panel_px / plot_px), y_top])
    return height, top, domains


def labelled_columns(columns: int, keys: int, width_px: float, gap_px: int, least: int = 2) -> int:
    """Fewer panels to a row where that labels every key: down to the first count (at least ``least``) that gives
    each of a panel's ``keys`` TICK_PX of a row ``width_px`` wide; ``columns`` when even ``least`` would not (the
    labels are thinned then, and more rows would only make the grid taller)."""
    def each_key_px(count: int) -> float:
        return (width_px - gap_px * (count - 1)) / count / keys
    if each_key_px(columns) >= TICK_PX or each_key_px(min(least, columns)) < TICK_PX:
        return columns
    while each_key_px(columns) < TICK_PX:
        columns -= 1
    return columns


def fitting_columns(columns: int, fit_px: int | None, min_width) -> int:
    """The most panels to a row, up to ``columns``, whose grid is at most ``fit_px`` wide at its narrowest
    (``min_width(columns)`` px); ``columns`` when ``fit_px`` is None (a desktop's column)."""
    while fit_px and columns > 1 and min_width(columns) > fit_px:
        columns -= 1
    return columns


def panel_layout(titles, columns: int, *, x_labels_px: int = 6, y_labels_px: int = 6, panel_px: int = 260,
                 top_px: int = 40, gap_px: int = 16, fit_px: int | None = None) -> dict:
    """A layout dict with one pair of labelled category axes per panel, laid out row by row, and the titles.

    Margins and gaps come from the tick labels' measured size (``label_px``), so no
    axis needs automargin. y axes run top to bottom (queries in reading order).
    ``fit_px``: lay it out for a column this wide (a phone): fewer panels to a row where needed, and each
    panel's y labels kept clear of its neighbour at that width.
    """
    nominal_px = fit_px or NOMINAL_WIDTH_PX
    gap_x = (y_labels_px + gap_px) / nominal_px

    def meta(count: int) -> dict:
        width = (1.0 - gap_x * (count - 1)) / count
        return min_width_meta(titles, count, left_px=y_labels_px, right_px=10, gap_share=gap_x / (width + gap_x),
                              min_panel_px=MIN_PANEL_PX + (y_labels_px + gap_px if fit_px else 0))

    columns = fitting_columns(max(1, min(columns, len(titles))), fit_px, lambda count: meta(count)["min_width_px"])
    title_px = TITLE_PX if any(titles) else 4
    width = (1.0 - gap_x * (columns - 1)) / columns
    height, top, y_domains = _row_geometry(-(-len(titles) // columns), panel_px=panel_px, x_labels_px=x_labels_px,
                                           title_px=title_px, top_px=top_px)
    layout = dict(height=height, showlegend=False, annotations=[],
                  margin=dict(t=top, l=y_labels_px, r=10, b=x_labels_px), meta=meta(columns))
    for index, title in enumerate(titles):
        row, col = divmod(index, columns)
        x_domain = [col * (width + gap_x), min(1.0, col * (width + gap_x) + width)]
        layout.update(_axes(index, x_domain, y_domains[row]))
        if title:
            layout["annotations"].append(_note(title, sum(x_domain) / 2, y_domains[row][1], "center", "bottom",
                                               font=dict(size=14)))
    return layout


def _axes(index: int, x_domain, y_domain, labelled: bool = True, x_tickvals=None, *, x_count=None,
          x_categories=None) -> dict:
    """The category x and y axes of panel (or row) ``index``: no automargin, y top to bottom.

    Unlabelled axes have no ticks either; ``x_tickvals``: the only x categories labelled (default: Plotly's choice).
    ``x_count``: the x axis shows exactly that many categories (else Plotly's autorange, which also widens the
    axis until the annotations on it fit). ``x_categories``: the categories, in order, named on the axis (else
    the traces name them: Plotly leaves out those of a heatmap with no finite cell).
    """
    common = dict(type="category", automargin=False, showgrid=False, showticklabels=labelled,
                  **({} if labelled else dict(ticks="")))
    x_axis = dict(common, domain=x_domain, tickangle=-45)
    if labelled and x_tickvals is not None:
        x_axis.update(tickmode="array", tickvals=x_tickvals)
    if x_count is not None:
        x_axis.update(range=[-0.5, x_count - 0.5])
    if x_categories is not None:
        x_axis.update(categoryorder="array", categoryarray=x_categories)
    y_axis = dict(common, domain=y_domain, autorange="reversed")
    return axis_pair(index, x_axis, y_axis)


def _note(text, x, y, xanchor, yanchor, xref="paper", **style) -> dict:
    """A panel or row title: at paper ``y``, and at ``x`` on the paper or on the x axis ``xref``."""
    shift = dict(yshift=4) if yanchor == "bottom" else dict(xshift=6)
    return dict(text=text, x=x, y=y, xref=xref, yref="paper", xanchor=xanchor, yanchor=yanchor,
                showarrow=False, **shift, **style)


def panels_figure(traces, layout, **extra) -> go.Figure:
    """One go.Figure from trace dicts and a ``panel_layout`` (plus layout ``extra``), not validated.

    Plotly's validation walks every property of every panel: ~10 ms of a slider move's server
    time for the default head grid of five panels, ~4 ms without it. The builders' output is
    validated in the tests instead (``tests/unit/test_viz.py``).
    """
    if "meta" in layout and extra.get("title"):  # the figure's title must fit the narrowest width too
        widest = max(layout["meta"]["min_width_px"], _title_px(extra["title"]))
        layout = {**layout, "meta": {**layout["meta"], "min_width_px": widest}}
    return go.Figure(data=list(traces), layout={**layout, "template": TEMPLATE_JSON, **extra}, _validate=False)


def _title_px(title: dict) -> int:
    """About how wide a ``left_title`` is drawn, with the 10 px right of it."""
    widest = max(title["text"].split("<br>"), key=lambda line: _text_px(line))
    return math.ceil(_text_px(widest, title.get("font", {}).get("size", 17))) + 10  # 17: Plotly's title size


def weight_rows(weights, mask, query_labels, key_labels, names, columns: int, *, titles=None, row_titles=None,
                panel_px: int = 240, gap_px: int = 16, top_px: int = 40, show_ticks: bool = True,
                right_px: int = 90, focus=None, click_factor: int = 1, fit_px: int | None = None, wrap: bool = True,
                value_name: str = "weight", click_start: tuple = (0, 0),
                click_side: str | None = None, padded_keys=None) -> tuple[list[dict], dict]:
    """Heatmap trace dicts and a layout for panels of attention weights, ``columns`` panels to a row.

    The panels of a row share one pair of axes: the browser lays out and draws every pair of
    axes on every update, and one pair per row instead of per panel halves Plotly's time for
    the default head grid (~70 → ~35 ms a slider move). Each panel is its own trace (its name
    shows in the hover); its key categories end in ``column`` PANEL_MARKs, so they stay
    distinct on the shared axis and look the same; GAP_MARK categories make the gap between
    panels. One grey trace per row draws every masked cell of the row (its own hover).

    Args:
      weights: ``(P, N_q, N_k)`` in [0, 1], one matrix per panel.
      mask: ``(N_q, N_k)`` bool, True = may attend (False cells are grey, never a weight colour).
      query_labels, key_labels: N_q and N_k distinct labels (``position_labels``).
      names: P trace names (the hover); ``titles``: P panel titles (default: the names).
      row_titles: one title right of each row (e.g. the layer).
      focus: ``("query", i)`` outlines row i of every panel, ``("key", j)`` column j; None: no outline.
      click_factor: how many positions one cell stands for (a pooled view), for the chart's click events;
      click_start: ``(query, key)`` of the first cell drawn (a cropped window), for the same.
      click_side: "query" or "key": a click on a cell focuses that side (the page's Attended by switch), and the
        browser draws the new outlines itself (``meta.focus``: `focus_meta`); None, or a pooled view: the server.
      fit_px: lay the grid out for a column this wide (a phone): fewer panels to a row where needed (unless
        ``wrap`` is False: a row stays a row, e.g. a layer's heads), each panel no taller than its cells are wide.
      value_name: what the cells hold, in the hover ("weight"; a value-weighted norm: "‖α·f(x)‖").
      padded_keys: ``(N_k,)`` bool, True for a padding key: its blocked cells are sand, not the mask's grey (the
        padding mask apart from the look-ahead's), with their own hover; None: no key is padding.
    """
    weights = np.asarray(weights, dtype=np.float32)  # (P, N_q, N_k)
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), weights.shape[-2:])  # (N_q, N_k)
    padded = np.zeros(mask.shape[-1], bool) if padded_keys is None else np.asarray(padded_keys, bool)  # (N_k,)
    titles = list(names) if titles is None else list(titles)
    grid = _grid(weights.shape[0], weights.shape[2], columns, titles=titles, query_labels=query_labels,
                 key_labels=key_labels, panel_px=panel_px, gap_px=gap_px, top_px=top_px, show_ticks=show_ticks,
                 right_px=right_px, fit_px=fit_px, wrap=wrap)
    layout = dict(height=grid.height, showlegend=False, annotations=[], plot_bgcolor="white",
                  margin=dict(t=grid.top, l=grid.y_labels_px, r=right_px, b=grid.x_labels_px), meta=grid.meta)
    shown = np.where(mask, weights, np.nan).astype(np.float32)  # (P, N_q, N_k)
    traces, outlines = [], []  # the click side's outlines of position 0, every panel of every row
    for row in range(grid.rows):
        first, last = row * grid.columns, min(grid.panels, (row + 1) * grid.columns)
        categories, blocked, ticks = _row_categories(key_labels, last - first, grid.gap, mask, grid.tick_step,
                                                     padded)
        masked_any = bool(np.isfinite(blocked).any())  # False: nothing masked (hidden specials), no grey layer
        traces += _row_traces(row, shown[first:last], names[first:last], categories, grid.gap, blocked,
                              query_labels, click_meta(click_factor, grid.n_k + grid.gap, click_start),
                              value_name)[0 if masked_any else 1:]
        starts = [column * (grid.n_k + grid.gap) for column in range(last - first)]  # each panel's first category
        if focus is not None:
            layout.setdefault("shapes", []).extend(focus_outlines(row, starts, grid.n_k, len(query_labels), *focus))
        if click_side is not None:
            outlines += focus_outlines(row, starts, grid.n_k, len(query_labels), click_side, 0)
        _label_row(layout, grid, row, titles=titles[first:last], starts=starts, row_titles=row_titles,
                   categories=categories, ticks=ticks, named_categories=None if masked_any else categories,
                   show_ticks=show_ticks)
    if click_side is not None and click_factor == 1:
        layout["meta"] = {**layout["meta"], "focus": focus_meta(click_side, focus, outlines)}
    return traces, layout


@dataclass(frozen=True)
class _Grid:
    """A grid of weight panels laid out: ``columns`` to a row (``rows`` rows of ``panels``), ``gap`` blank
    categories between two panels of ``n_k`` keys, a row ``full_row`` categories wide; the figure's ``height``,
    ``top`` margin and rows' ``y_domains``; its label margins, tick step and ``meta`` (min width)."""

    panels: int
    n_k: int
    columns: int
    gap: int
    full_row: int
    rows: int
    height: int
    top: int
    y_domains: list
    y_labels_px: int
    x_labels_px: int
    tick_step: int
    meta: dict


def _grid(panels: int, n_k: int, columns: int, *, titles: list, query_labels, key_labels, panel_px: int,
          gap_px: int, top_px: int, show_ticks: bool, right_px: int, fit_px: int | None, wrap: bool) -> _Grid:
    """How `weight_rows` lays out ``panels`` panels of ``n_k`` keys: fewer to a row where a narrow column (``fit_px``;
    unless ``wrap`` is False) or every key's label needs it."""
    y_labels_px = label_px(query_labels, show_ticks)
    x_labels_px = label_px(key_labels, show_ticks, rotated=True)
    nominal_px = fit_px or NOMINAL_WIDTH_PX

    def gap_and_meta(count: int) -> tuple[int, dict]:
        panel_width_px = max(1.0, (nominal_px - y_labels_px - right_px) / count)
        gap = max(1, round(n_k * gap_px / panel_width_px))  # blank categories between two panels
        return gap, min_width_meta(titles, count, left_px=y_labels_px, right_px=right_px, gap_share=gap / (n_k + gap),
                                   min_panel_px=MIN_PANEL_PX if show_ticks else MIN_PANEL_PX // 2)

    columns = max(1, min(columns, panels))
    if wrap:
        columns = fitting_columns(columns, fit_px, lambda count: gap_and_meta(count)[1]["min_width_px"])
    if show_ticks:  # every key labelled where fewer panels to a row leave room for it
        columns = labelled_columns(columns, n_k, LABELLED_WIDTH_PX - y_labels_px - right_px, gap_px)
    gap, meta = gap_and_meta(columns)
    rows, full_row = -(-panels // columns), columns * n_k + (columns - 1) * gap
    if fit_px:  # on a phone a panel is no taller than its cells are wide
        cell_px = (fit_px - y_labels_px - right_px) / full_row
        panel_px = min(panel_px, max(MIN_PANEL_PX // 2, round(cell_px * len(query_labels))))
    top_titles_only = any(titles[:columns]) and not any(titles[columns:])  # room for them above the first row only
    height, top, y_domains = _row_geometry(rows, panel_px=panel_px, x_labels_px=x_labels_px,
                                           title_px=TITLE_PX if any(titles[columns:]) else 4,
                                           top_px=top_px + (TITLE_PX - 4 if top_titles_only else 0))
    tick_step = max(1, math.ceil(n_k * TICK_PX * columns / (TICK_WIDTH_PX - y_labels_px - right_px)))
    return _Grid(panels, n_k, columns, gap, full_row, rows, height, top, y_domains, y_labels_px, x_labels_px,
                 tick_step, meta)


def _label_row(layout: dict, grid: _Grid, row: int, *, titles: list, starts: list, row_titles, categories, ticks,
               named_categories, show_ticks: bool) -> None:
    """Row ``row``'s panel titles, its row title and its pair of axes, into ``layout``."""
    y_domain = grid.y_domains[row]
    # Titles sit on the row's x axis, over each panel's middle key: a zoom into one panel moves the shared axis, and
    # Plotly hides a title whose key leaves the range (on the paper, it would name another picture).
    layout["annotations"] += [_note(title, start + (grid.n_k - 1) / 2, y_domain[1], "center", "bottom",
                                    xref=axis_ids(row)[0], font=dict(size=14))
                              for title, start in zip(titles, starts) if title]
    width = len(categories) / grid.full_row  # the same cell size on every row
    if row_titles:
        layout["annotations"].append(_note(row_titles[row], width, sum(y_domain) / 2, "left", "middle",
                                           textangle=90))
    layout.update(_axes(row, [0.0, width], y_domain, show_ticks, ticks, x_count=len(categories),
                        x_categories=named_categories))  # no grey layer names the gaps


def focus_meta(side: str, focus, outlines: list[dict]) -> dict:
    """What the browser needs to draw a click's focus itself (viz/panels.js): the side a click focuses, the drawn
    index focused now on that side (None: none) and that side's outlines of index 0 in every panel, which the
    browser moves by the clicked index (`focus_outlines` of index i, as text)."""
    return dict(side=side, at=focus[1] if focus is not None and focus[0] == side else None, outlines=outlines)


def focus_outlines(row: int, starts, n_k: int, n_q: int, along: str, index: int) -> list[dict]:
    """Outlines of query row (``along="query"``) or key column ``index`` in each panel of a row of panels whose
    key categories start at ``starts`` (category axes take positions as numbers: 0 is the first category)."""
    x_id, y_id = axis_ids(row)
    line = dict(color=FOCUS_COLOR, width=2.5)
    if along == "query":
        return [dict(type="rect", xref=x_id, yref=y_id, x0=start - 0.5, x1=start + n_k - 0.5, y0=index - 0.5,
                     y1=index + 0.5, line=line) for start in starts]
    return [dict(type="rect", xref=x_id, yref=y_id, x0=start + index - 0.5, x1=start + index + 0.5, y0=-0.5,
                 y1=n_q - 0.5, line=line) for start in starts]


def click_meta(factor: int, stride: int, start: tuple = (0, 0)) -> dict:
    """A heatmap trace's ``meta``: how the chart (ui/frontend/chart.js, ``clickedPositions``) maps a clicked cell to
    positions. ``factor`` positions a cell (a pooled view); ``stride`` categories a panel, gap included (Plotly
    numbers a cell's column by its place on the row's shared key axis, every panel's trace as the masked layer's);
    ``first``, when not ``(0, 0)``: the ``(query, key)`` of the first cell drawn (a cropped window)."""
    return dict(factor=factor, stride=stride, **({"first": [int(start[0]), int(start[1])]} if any(start) else {}))


def _row_traces(row: int, shown, names, categories, gap: int, blocked, query_labels, meta: dict,
                value_name: str = "weight") -> list[dict]:
    """A row's grey masked-cells layer, then one weight heatmap per panel, all on the row's axes.

    Args:
      shown: ``(P_row, N_q, N_k)`` weights, NaN where masked.  blocked: ``(N_q, len(categories))``.
      meta: every trace's `click_meta`.
    """
    x_id, y_id = axis_ids(row)
    n_k = shown.shape[-1]
    common = dict(type="heatmap", y=query_labels, xaxis=x_id, yaxis=y_id, hoverongaps=False)  # gaps: no hover
    # One layer for every blocked cell (a second one for padding's cells went past a window's 1 MB at N = 512):
    # grey where the mask blocks, sand where it blocks a padding key (`PADDING_CELL`)
    traces = [dict(common, x=categories, z=blocked, showscale=False, name="masked", meta=meta, zmin=1,
                   zmax=PADDING_CELL, colorscale=[[0, MASKED_COLOR], [0.5, MASKED_COLOR], [0.5, PADDING_COLOR],
                                                  [1, PADDING_COLOR]],
                   hovertemplate="query %{y}<br>key %{x}<br>blocked by the mask (weight 0; sand: a padding key)"
                                 "<extra></extra>")]
    for column, (weights, name) in enumerate(zip(shown, names)):
        start = column * (n_k + gap)
        # One key: Plotly draws a one-column heatmap of categories a category too far right (off the axis for the
        # second panel of a row); placed by its first category and a step of one, it lands on its own.
        keys = dict(x=categories[start:start + n_k]) if n_k > 1 else dict(x0=categories[start], dx=1, xtype="scaled")
        traces.append(dict(common, **keys, z=weights, coloraxis="coloraxis", name=name, meta=meta,
                           hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{value_name} %{{z:.4f}}<extra>{name}</extra>"))
    return traces


PADDING_CELL = 2.0  # a masked cell whose key is padding, in a row's blocked layer


def _row_categories(key_labels, panels: int, gap: int, mask, tick_step: int, padded):
    """A row's key categories (panel after panel, gaps between), its masked layer and the categories to label.

    Returns ``(categories, blocked, ticks)``: blocked is ``(N_q, len(categories))`` float32, 1 where a
    panel's cell is masked, `PADDING_CELL` where it is masked and its key (``padded``, ``(N_k,)``) is padding,
    NaN elsewhere (allowed cells and gaps).
    """
    n_q, n_k = mask.shape
    categories, ticks = [], []
    panel_blocked = np.where(mask, np.nan, np.where(padded[None, :], PADDING_CELL, 1.0))  # (N_q, N_k): every panel's
    blocked = np.full((n_q, panels * (n_k + gap) - gap), np.nan, dtype=np.float32)  # (N_q, row categories)
    for column in range(panels):
        if column:
            categories += [GAP_MARK * (index + 1) + PANEL_MARK * column for index in range(gap)]
        panel = [f"{label}{PANEL_MARK * column}" for label in key_labels]
        blocked[:, len(categories):len(categories) + n_k] = panel_blocked
        categories += panel
        ticks += panel[::tick_step]
    return categories, blocked, ticks
