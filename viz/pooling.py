"""Large matrices made small enough to send: max-pooling and the limits that decide it."""

from __future__ import annotations

import math

import numpy as np

FULL_RESOLUTION = 128  # larger matrices are max-pooled before they are sent
FULL_RESOLUTION_WINDOW = 256  # one head unpooled: at most this many positions a side (~0.75 MB)
CELL_BUDGET = 80_000  # cells per multi-panel figure (~0.9 MB as float32 weights + mask layers)


def block_to_fit(length: int, limit: int = FULL_RESOLUTION) -> int:
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


def pooled_note(factor: int, shape) -> str:
    """What a view max-pooled by ``factor`` from a ``(…, N_q, N_k)`` matrix says of itself; "" when not pooled."""
    return f"max-pooled {factor}×{factor} view of {shape[-2]}×{shape[-1]}" if factor > 1 else ""
