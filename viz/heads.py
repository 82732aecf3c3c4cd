"""What heads do, as layers × heads heatmaps: role scores (0–1, the weights' scale), distance and entropy (their
own scales), and what ablating each head costs (a diverging scale, 0 white)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.panels import axis_ids, axis_pair, grid_domains, panel_title
from viz.style import (
    DIVERGING_SCALE,
    TEMPLATE_JSON,
    WEIGHT_COLORSCALE,
    left_title,
    scale_list,
    title_lines,
    wrap_title,
)

ROLE_TITLES = {"previous_token": "previous token", "duplicate_token": "duplicate token", "induction": "induction",
               "first_token": "first token", "self": "self", "pattern": "pattern",
               "alignment": "alignment (on the source token each output comes from)"}


def _cells(values: np.ndarray, fmt: str) -> list[list[str]]:
    return [["—" if np.isnan(value) else format(value, fmt) for value in row] for row in values]


ORANGES, PURPLES = scale_list("Oranges"), scale_list("Purples")


NO_SCORE_COLOR = "#d9d9d9"  # a head with no score: light grey with a dash, never a shade of a scale


def _no_score(values: np.ndarray, name: str, why: str) -> dict | None:
    """A grey cell with "—" over each NaN of ``values`` (Plotly draws nothing for NaN, and a panel of NaN had no
    axes at all), its hover saying ``why``; None when every cell has a score."""
    missing = np.isnan(values)
    if not missing.any():
        return None
    return dict(z=np.where(missing, 1.0, np.nan), colorscale=[[0, NO_SCORE_COLOR], [1, NO_SCORE_COLOR]],
                showscale=False, text=[["—" if cell else "" for cell in row] for row in missing],
                texttemplate="%{text}", hovertemplate=f"{name}<br>layer %{{y}}, head %{{x}}: no score ({why})"
                                                      "<extra></extra>")


GRID_PANEL_PX = 160  # a layers × heads panel's least width: fewer across where a narrow chart has no room


def _grid(panels, title: str, columns: int, heatmaps: list[dict], *, why: str = "nothing to average",
          fit_px: int | None = None, **layout) -> go.Figure:
    """``panels`` (name, values) in a grid ``columns`` across, one heatmap dict each (``heatmaps``: layers down,
    heads across, category axes), the names above them, a NaN cell grey with "—" (``why`` in its hover); laid out
    here and not validated, as the panel grids (docs/performance.md); the tests validate them. ``fit_px``: a
    chart this wide (a phone): the title wrapped to it, and as many panels across as fit."""
    if fit_px:
        columns = max(1, min(columns, int((fit_px - 80) // GRID_PANEL_PX)))
        title = wrap_title(title, fit_px)
    across, down = min(columns, len(panels)), -(-len(panels) // columns)
    domains = grid_domains(len(panels), across, down, x_gap=0.08, y_gap=0.22 if down > 1 else 0.1)
    data, axes, names = [], {}, []
    for index, ((name, values), heatmap, (x_domain, y_domain)) in enumerate(zip(panels, heatmaps, domains)):
        layers, heads = values.shape
        x_id, y_id = axis_ids(index)
        cells = dict(type="heatmap", x=[f"H{h}" for h in range(heads)], y=[f"L{layer}" for layer in range(layers)],
                     xaxis=x_id, yaxis=y_id)
        data.append(dict(cells, z=values, **heatmap))
        if (no_score := _no_score(values, name, why)) is not None:
            data.append(dict(cells, **no_score))
        axes.update(axis_pair(index, dict(domain=x_domain, type="category"),  # layer labels on a row's first panel
                              dict(domain=y_domain, type="category", autorange="reversed",
                                   showticklabels=index % across == 0)))  # (others sat on their neighbour's cells)
        names.append(panel_title(name, x_domain, y_domain))
    top = 80 + 20 * max(title_lines(title) - 1, 0)  # a wrapped title's lines above the panels' names
    return go.Figure(data=data, layout=dict(template=TEMPLATE_JSON, title=left_title(title), annotations=names,
                                            height=top - 10 + down * 230, margin=dict(t=top, l=60, r=20, b=40),
                                            **axes, **layout), _validate=False)


def role_grid(scores: dict, lines: int, title: str = "", *, columns: int = 3, pattern: str = "",
              fit_px: int | None = None):
    """One heatmap per role, layers down, heads across, on the weights' fixed 0–1 scale. ``scores``: ``{role:
    (L, H)}`` (NaN: no row showed the pattern); ``lines``: how many lines each score averages over (hover)."""
    names = [ROLE_TITLES.get(role, role) + (f" ({pattern})" if role == "pattern" and pattern else "")
             for role in scores]
    heatmaps = [dict(coloraxis="coloraxis", text=_cells(values, ".2f"), texttemplate="%{text}",
                     hovertemplate=f"{name}<br>layer %{{y}}, head %{{x}}<br>score %{{text}} over {lines} lines"
                                   "<extra></extra>")
                for name, values in zip(names, scores.values())]
    return _grid(list(zip(names, scores.values())), title, columns, heatmaps,
                 why="no query row of these lines has a cell of this pattern: no repeated token, say", fit_px=fit_px,
                 coloraxis=dict(colorscale=WEIGHT_COLORSCALE, cmin=0.0, cmax=1.0,
                                colorbar=dict(title=dict(text="share"))))


def measure_grid(distance: np.ndarray | None, entropy: np.ndarray, lines: int, title: str = "", *,
                 length: int | None = None, fit_px: int | None = None):
    """Mean attention distance (positions) and entropy (bits) of every head, layers × heads, each on its own fixed
    scale when ``length`` (N_k) is given: 0 to N_k − 1 positions, 0 to log2 N_k bits (uniform attention).
    ``distance`` None: no distance panel (cross-attention has no shared position axis)."""
    measures = [("distance", "mean distance (positions)", distance, ".1f", ORANGES,
                 max(length - 1, 1) if length else None),
                ("entropy", "entropy (bits)", entropy, ".2f", PURPLES, np.log2(max(length, 2)) if length else None)]
    measures = [measure for measure in measures if measure[2] is not None]
    heatmaps = [dict(colorscale=scale, showscale=False, text=_cells(values, fmt), texttemplate="%{text}",
                     hovertemplate=f"{name}<br>layer %{{y}}, head %{{x}}<br>%{{text}} over {lines} lines"
                                   + (f" (0 to {high:.3g})" if high else "") + "<extra></extra>",
                     **(dict(zmin=0.0, zmax=float(high)) if high else {}))
                for name, _, values, fmt, scale, high in measures]
    return _grid([(title_, values) for _, title_, values, *_ in measures], title, 2, heatmaps, fit_px=fit_px)


def importance_grid(accuracy_change: np.ndarray, loss_change: np.ndarray, stacks, count: int, title: str = ""):
    """What ablating each head costs: per stack, the change in exact accuracy (points) and in loss, layers × heads.
    ``accuracy_change``, ``loss_change``: ``(stacks, L, H)``; ``stacks``: their names, in that order."""
    panels = []
    for index, stack in enumerate(stacks):
        panels += [(f"{stack}: accuracy change (points)", accuracy_change[index] * 100),
                   (f"{stack}: loss change", loss_change[index])]
    largest = max(float(np.nanmax(np.abs(accuracy_change))) * 100, 1.0)
    largest_loss = max(float(np.nanmax(np.abs(loss_change))), 1e-3)
    heatmaps = []
    for index, (name, values) in enumerate(panels):
        accuracy = index % 2 == 0
        heatmaps.append(dict(
            colorscale=DIVERGING_SCALE, reversescale=accuracy, zmid=0.0,
            zmin=-(largest if accuracy else largest_loss), zmax=largest if accuracy else largest_loss,
            showscale=False, text=_cells(values, "+.1f" if accuracy else "+.3f"), texttemplate="%{text}",
            hovertemplate=f"{name} with this head ablated<br>layer %{{y}}, head %{{x}}: %{{text}} "
                          f"on {count} examples<extra></extra>"))
    return _grid(panels, title, 2, heatmaps)
