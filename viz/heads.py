"""What heads do, as layers × heads heatmaps: role scores (0–1, the weights' scale), distance and entropy (their
own scales), and what ablating each head costs (a diverging scale, 0 white)."""

from __future__ import annotations

import numpy as np
from plotly.subplots import make_subplots

from viz.style import DIVERGING_COLORSCALE, TEMPLATE, WEIGHT_COLORSCALE, left_title

ROLE_TITLES = {"previous_token": "previous token", "duplicate_token": "duplicate token", "induction": "induction",
               "first_token": "first token", "self": "self", "pattern": "pattern"}


def _cells(values: np.ndarray, fmt: str) -> list[list[str]]:
    return [["—" if np.isnan(value) else format(value, fmt) for value in row] for row in values]


def _grid(panels, title: str, columns: int):
    rows = -(-len(panels) // columns)
    fig = make_subplots(rows=rows, cols=min(columns, len(panels)), subplot_titles=[name for name, _ in panels],
                        horizontal_spacing=0.08, vertical_spacing=0.22 if rows > 1 else 0.1)
    fig.update_layout(template=TEMPLATE, title=left_title(title), height=70 + rows * 230,
                      margin=dict(t=80, l=60, r=20, b=40))
    return fig


def role_grid(scores: dict, lines: int, title: str = "", columns: int = 3, pattern: str = ""):
    """One heatmap per role, layers down, heads across, on the weights' fixed 0–1 scale. ``scores``: ``{role:
    (L, H)}`` (NaN: no row showed the pattern); ``lines``: how many lines each score averages over (hover)."""
    names = [ROLE_TITLES.get(role, role) + (f" ({pattern})" if role == "pattern" and pattern else "")
             for role in scores]
    fig = _grid(list(zip(names, scores.values())), title, columns)
    for index, values in enumerate(scores.values()):
        layers, heads = values.shape
        fig.add_heatmap(
            z=values, x=[f"H{h}" for h in range(heads)], y=[f"L{layer}" for layer in range(layers)],
            coloraxis="coloraxis", text=_cells(values, ".2f"), texttemplate="%{text}",
            hovertemplate=f"{names[index]}<br>layer %{{y}}, head %{{x}}<br>score %{{text}} over {lines} lines"
                          "<extra></extra>",
            row=index // columns + 1, col=index % columns + 1)
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category")
    fig.update_layout(coloraxis=dict(colorscale=WEIGHT_COLORSCALE, cmin=0.0, cmax=1.0,
                                     colorbar=dict(title=dict(text="share"))))
    return fig


def measure_grid(distance: np.ndarray, entropy: np.ndarray, lines: int, title: str = ""):
    """Mean attention distance (positions) and entropy (bits) of every head, layers × heads, each on its own scale."""
    fig = _grid([("mean distance (positions)", distance), ("entropy (bits)", entropy)], title, 2)
    for col, (name, values, fmt, scale) in enumerate((("distance", distance, ".1f", "Oranges"),
                                                      ("entropy", entropy, ".2f", "Purples")), start=1):
        layers, heads = values.shape
        fig.add_heatmap(z=values, x=[f"H{h}" for h in range(heads)], y=[f"L{layer}" for layer in range(layers)],
                        colorscale=scale, showscale=False, text=_cells(values, fmt), texttemplate="%{text}",
                        hovertemplate=f"{name}<br>layer %{{y}}, head %{{x}}<br>%{{text}} over {lines} lines"
                                      "<extra></extra>", row=1, col=col)
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category")
    return fig


def importance_grid(accuracy_change: np.ndarray, loss_change: np.ndarray, stacks, count: int, title: str = ""):
    """What ablating each head costs: per stack, the change in exact accuracy (points) and in loss, layers × heads.
    ``accuracy_change``, ``loss_change``: ``(stacks, L, H)``; ``stacks``: their names, in that order."""
    panels = []
    for index, stack in enumerate(stacks):
        panels += [(f"{stack}: accuracy change (points)", accuracy_change[index] * 100),
                   (f"{stack}: loss change", loss_change[index])]
    fig = _grid(panels, title, 2)
    largest = max(float(np.nanmax(np.abs(accuracy_change))) * 100, 1.0)
    largest_loss = max(float(np.nanmax(np.abs(loss_change))), 1e-3)
    for index, (name, values) in enumerate(panels):
        layers, heads = values.shape
        accuracy = index % 2 == 0
        fig.add_heatmap(
            z=values, x=[f"H{h}" for h in range(heads)], y=[f"L{layer}" for layer in range(layers)],
            colorscale=DIVERGING_COLORSCALE, reversescale=accuracy, zmid=0.0,
            zmin=-(largest if accuracy else largest_loss), zmax=largest if accuracy else largest_loss,
            showscale=False, text=_cells(values, "+.1f" if accuracy else "+.3f"), texttemplate="%{text}",
            hovertemplate=f"{name} with this head ablated<br>layer %{{y}}, head %{{x}}: %{{text}} "
                          f"on {count} examples<extra></extra>",
            row=index // 2 + 1, col=index % 2 + 1)
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category")
    return fig
