"""What RoPE and ALiBi do, as plain arrays for the Positional encoding page (computed by the engine's own
`rotary` and `alibi_bias`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from transformer.core.positional import alibi_bias, alibi_slopes, rotary, rotary_frequencies
from transformer.core.relative_positions import ROPE_BASE


@dataclass(frozen=True)
class PositionViews:
    """rope_angles: ``(N, d_k/2)`` radians m·θ_i of pair i at position m (None for an odd d_k);
    rope_dots: ``(N, N)`` (R_m q)·(R_n k) for one fixed q and k, which depends on m − n only;
    alibi_slopes: ``(H,)``; alibi_bias: ``(H, N, N)`` −slope_h·|i − j|."""

    rope_angles: np.ndarray | None
    rope_dots: np.ndarray | None
    alibi_slopes: np.ndarray
    alibi_bias: np.ndarray


def position_views(length: int, d_k: int, heads: int, seed: int = 0, rope_base: float = ROPE_BASE) -> PositionViews:
    """RoPE's angles and rotated dot products (θ_i = rope_base^(−2i/d_k)) and ALiBi's slopes and biases."""
    if not (isinstance(length, int) and length >= 1 and isinstance(d_k, int) and d_k >= 1):
        raise ValueError(f"length and d_k must be positive integers. Received: length={length!r}, d_k={d_k!r}")
    if not rope_base > 1:
        raise ValueError(f"RoPE's base must be above 1. Received: rope_base={rope_base!r}")
    angles = dots = None
    if d_k % 2 == 0:
        positions = tf.range(length)  # (N,)
        frequencies = rotary_frequencies(d_k, rope_base)  # (d_k/2,)
        angles = (tf.cast(positions, tf.float32)[:, None] * frequencies[None, :]).numpy()  # (N, d_k/2)
        q, k = np.random.default_rng(seed).standard_normal((2, 1, d_k)).astype(np.float32)  # (1, d_k) each
        rotated_q = rotary(np.repeat(q, length, 0), positions, rope_base)  # (N, d_k): q at every position
        rotated_k = rotary(np.repeat(k, length, 0), positions, rope_base)  # (N, d_k)
        dots = tf.matmul(rotated_q, rotated_k, transpose_b=True).numpy()  # (N, N)
    return PositionViews(angles, dots, alibi_slopes(heads), alibi_bias(heads, length, length).numpy())
