"""Positional-encoding figures (seed 004's three line plots, the heatmap, wavelengths, similarity).

Every builder takes the ``(N, d_model)`` encoding (or d_model) and returns a go.Figure.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from viz.panels import axis_ids, panel_layout, panels_figure
from viz.pooling import CELL_BUDGET, block_to_fit, max_pool
from viz.style import DIVERGING_COLORSCALE, figure, fixed_margins, left_title

ALIBI_COLORSCALE = plotly.colors.get_colorscale("Purples_r")  # written out: these figures are not validated

OFFSET = 4.0  # vertical spacing of the offset plots, as in the seed


def encoding_heatmap(encoding) -> go.Figure:
    """Position × dimension, values in [-1, 1] on a fixed diverging scale.

    Above CELL_BUDGET cells, every k-th position and dimension is drawn (exact
    values, titled so) to keep what is sent to the browser small.
    """
    encoding = np.asarray(encoding, dtype=np.float32)  # (N, D)
    stride = max(1, math.ceil(math.sqrt(encoding.size / CELL_BUDGET)))
    positions, dims = np.arange(0, encoding.shape[0], stride), np.arange(0, encoding.shape[1], stride)
    title = f"one in every {stride} positions and dimensions" if stride > 1 else ""
    return fixed_margins(figure(
        go.Heatmap(z=encoding[::stride, ::stride], x=dims, y=positions, colorscale=DIVERGING_COLORSCALE,
                   zmin=-1, zmax=1, colorbar=dict(title="PE"),
                   hovertemplate="position %{y}<br>dimension %{x}<br>value %{z:.4f}<extra></extra>"),
        layout=dict(title=title, xaxis_title="dimension", yaxis_title="position", yaxis_autorange="reversed",
                    height=420)))


def dimension_lines(encoding, dimensions) -> go.Figure:
    """Chosen dimensions against position (seed: ``plt.plot(pe[:, 4:8])``)."""
    encoding = np.asarray(encoding, dtype=np.float32)
    positions = np.arange(encoding.shape[0])
    fig = figure([
        go.Scatter(x=positions, y=encoding[:, d], mode="lines", name=f"dim {d}",
                   hovertemplate=f"dim {d}<br>position %{{x}}<br>value %{{y:.4f}}<extra></extra>")
        for d in dimensions
    ])
    fig.update_layout(xaxis_title="position", yaxis_title="value", height=380)
    return fixed_margins(fig, top=30)


def dimensions_offset(encoding, dimensions) -> go.Figure:
    """Each chosen dimension as a curve over position, offset sideways by 4 (seed's pe_dim_all)."""
    encoding = np.asarray(encoding, dtype=np.float32)
    positions = np.arange(encoding.shape[0])
    fig = figure([
        go.Scatter(x=encoding[:, d] + OFFSET * i, y=positions, mode="lines", name=f"dim {d}",
                   hovertemplate=f"dim {d}<br>position %{{y}}<extra></extra>")
        for i, d in enumerate(dimensions)
    ])
    fig.update_layout(
        xaxis=dict(title="dimension", tickvals=[OFFSET * i for i in range(len(dimensions))],
                   ticktext=[str(d) for d in dimensions]),
        yaxis=dict(title="position", autorange="reversed"), height=460,
    )
    return fixed_margins(fig, top=30)


def positions_offset(encoding, positions) -> go.Figure:
    """Each chosen position as a curve over dimension, offset upwards by 4 (seed's pe_length_all)."""
    encoding = np.asarray(encoding, dtype=np.float32)
    dims = np.arange(encoding.shape[1])
    fig = figure([
        go.Scatter(x=dims, y=encoding[p] + OFFSET * i, mode="lines", name=f"pos {p}",
                   hovertemplate=f"pos {p}<br>dimension %{{x}}<extra></extra>")
        for i, p in enumerate(positions)
    ])
    fig.update_layout(
        xaxis_title="dimension",
        yaxis=dict(title="position", tickvals=[OFFSET * i for i in range(len(positions))],
                   ticktext=[str(p) for p in positions]),
        height=460,
    )
    return fixed_margins(fig, top=30)


def wavelengths(d_model: int) -> np.ndarray:
    """Wavelength of each sin/cos pair i: ``2π · 10000^(2i/d_model)``, shape ``(ceil(D/2),)``."""
    pairs = np.arange(0, d_model, 2)
    return 2 * np.pi * 10000.0 ** (pairs / d_model)


def wavelength_figure(d_model: int) -> go.Figure:
    """Wavelengths on a log scale: a geometric progression from 2π to 10000·2π."""
    values = wavelengths(d_model)
    fig = figure(go.Scatter(
        x=np.arange(len(values)), y=values, mode="lines+markers",
        hovertemplate="pair %{x} (dims 2i, 2i+1)<br>wavelength %{y:.1f} positions<extra></extra>",
    ))
    fig.update_layout(xaxis_title="dimension pair i", yaxis=dict(title="wavelength (positions)", type="log"),
                      height=340)
    return fixed_margins(fig, top=30)


def similarity(encoding) -> np.ndarray:
    """Dot products between positions' encodings, ``(N, N)``."""
    encoding = np.asarray(encoding, dtype=np.float32)
    return encoding @ encoding.T  # (N, N)


def similarity_figure(encoding) -> go.Figure:
    """PE·PEᵀ: it depends on the offset between positions, so relative position is recoverable.

    Matrices longer than 128 positions are max-pooled (and titled so).
    """
    matrix = similarity(encoding)
    factor = block_to_fit(matrix.shape[0])
    shown = max_pool(matrix, factor, factor, fill=-np.inf) if factor > 1 else matrix
    limit = float(np.abs(matrix).max()) or 1.0
    title = f"max-pooled {factor}×{factor} view" if factor > 1 else ""
    ticks = np.arange(shown.shape[0]) * factor
    return fixed_margins(figure(
        go.Heatmap(z=shown.astype(np.float32), x=ticks, y=ticks, colorscale=DIVERGING_COLORSCALE,
                   zmin=-limit, zmax=limit, colorbar=dict(title="PE·PE"),
                   hovertemplate="position %{y}<br>position %{x}<br>dot product %{z:.3f}<extra></extra>"),
        layout=dict(title=title, xaxis_title="position", yaxis_title="position", yaxis_autorange="reversed",
                    height=420)))


def rope_angles_figure(angles, base: float = 10000.0) -> go.Figure:
    """RoPE's rotation angle m·θ_i (mod 2π) for each position m and dimension pair i: ``(N, d_k/2)``; ``base``:
    θ_i = base^(−2i/d_k), named in the title."""
    angles = np.asarray(angles, dtype=np.float32)
    wrapped = np.mod(angles, 2 * np.pi)  # (N, d_k/2)
    return fixed_margins(figure(  # a title of two short lines: one long line was cut off in a 540 px column
        go.Heatmap(z=wrapped, customdata=angles, x=np.arange(angles.shape[1]), y=np.arange(angles.shape[0]),
                   colorscale="Twilight", zmin=0, zmax=2 * np.pi, colorbar=dict(title="angle mod 2π"),
                   hovertemplate="position %{y}<br>pair %{x}<br>angle %{customdata:.3f} rad<extra></extra>"),
        layout=dict(xaxis_title="dimension pair i (2i, 2i+1)", yaxis_title="position m", yaxis_autorange="reversed",
                    height=380, title=left_title(f"rotation angle m·θ_i<br>θ_i = {base:.0f}^(−2i/d_k)"))),
        top=60)


def rope_offset_figure(dots) -> go.Figure:
    """(R_m q)·(R_n k) for every query position m and key position n: constant along each diagonal."""
    dots = np.asarray(dots, dtype=np.float32)  # (N, N)
    bound = float(np.abs(dots).max()) or 1.0
    spread = max((np.ptp(np.diagonal(dots, offset)) for offset in range(-dots.shape[0] + 1, dots.shape[0])),
                 default=0.0)
    return fixed_margins(figure(  # a title of two short lines: one long line was cut off on a phone
        go.Heatmap(z=dots, colorscale=DIVERGING_COLORSCALE, zmin=-bound, zmax=bound, colorbar=dict(title="q·k"),
                   hovertemplate="query position %{y}<br>key position %{x}<br>q·k %{z:.4f}<extra></extra>"),
        layout=dict(xaxis_title="key position n", yaxis_title="query position m", yaxis_autorange="reversed",
                    height=400, title=left_title(f"rotated q·k<br>spread along a diagonal: {spread:.1e}"))),
        top=60)


def alibi_figure(bias, slopes, fit_px: int | None = None) -> go.Figure:
    """Each head's ALiBi bias −slope·|i − j| ``(H, N, N)`` on one shared scale, the slope in the title.
    ``fit_px``: lay it out for a column this wide (a phone)."""
    bias = np.asarray(bias, dtype=np.float32)
    heads = bias.shape[0]
    columns = min(heads, 4)
    layout = panel_layout([f"head {h}: {slopes[h]:.3g}" for h in range(heads)], columns, panel_px=180,
                          x_labels_px=40, y_labels_px=40, fit_px=fit_px)
    low = float(bias.min()) or -1.0
    traces = []
    for h in range(heads):
        x_id, y_id = axis_ids(h)
        traces.append(dict(type="heatmap", z=bias[h], xaxis=x_id, yaxis=y_id, coloraxis="coloraxis",
                           hovertemplate=f"head {h}<br>query %{{y}}<br>key %{{x}}<br>bias %{{z:.3f}}<extra></extra>"))
    for name in list(layout):
        if name.startswith(("xaxis", "yaxis")):
            layout[name].update(type="linear")
    return panels_figure(traces, layout, coloraxis=dict(colorscale=ALIBI_COLORSCALE, cmin=low, cmax=0.0,
                                                        colorbar=dict(title=dict(text="bias"))))
