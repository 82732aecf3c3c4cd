"""Measures of a Vision Transformer's attention over an image's patches (`transformer.core.vision`: token 0 is CLS,
token ``1 + p`` patch p of a 4 × 4 grid, row-major)."""

from __future__ import annotations

import numpy as np

GRID = 4


def patch_distances() -> np.ndarray:
    """``(16, 16)``: the distance between two patches' centres, in patches (a neighbour is 1)."""
    rows, cols = np.divmod(np.arange(GRID * GRID), GRID)
    return np.hypot(rows[:, None] - rows[None], cols[:, None] - cols[None])


def mean_attention_distance(weights) -> np.ndarray:
    """``(L, H, 17, 17)`` -> ``(L, H)``: each head's distance from a patch to the patches it attends to, weighted by
    its attention renormalised over the patches (CLS has no place), averaged over the 16 patch queries (Dosovitskiy
    et al. 2021, Figure 7 right, in patches rather than pixels)."""
    weights = np.asarray(weights, np.float64)
    if weights.ndim != 4 or weights.shape[-2:] != (1 + GRID * GRID, 1 + GRID * GRID):
        raise ValueError(f"weights must be (L, H, 17, 17). Received: weights.shape={weights.shape}")
    patches = weights[..., 1:, 1:]  # (L, H, 16, 16): patch queries to patch keys
    totals = patches.sum(-1, keepdims=True)
    shares = np.divide(patches, totals, out=np.zeros_like(patches), where=totals > 0)
    return (shares * patch_distances()).sum(-1).mean(-1)  # (L, H)


def position_similarity(table) -> np.ndarray:
    """``(17, D)`` learned positions -> ``(16, 16)``: the cosine similarity of every two patches' positions
    (Dosovitskiy et al. 2021, Figure 7 centre); CLS's row is left out."""
    table = np.asarray(table, np.float64)
    if table.ndim != 2 or table.shape[0] != 1 + GRID * GRID:
        raise ValueError(f"table must be (17, D). Received: table.shape={table.shape}")
    patches = table[1:]
    norms = np.linalg.norm(patches, axis=-1, keepdims=True)
    unit = np.divide(patches, norms, out=np.zeros_like(patches), where=norms > 0)
    return unit @ unit.T


def on_grid(values) -> np.ndarray:
    """``(…, 16)`` per patch -> ``(…, 4, 4)`` laid out as the image's patches."""
    values = np.asarray(values)
    return values.reshape(*values.shape[:-1], GRID, GRID)
