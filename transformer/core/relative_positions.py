"""Positions inside attention: rotary embeddings (RoFormer) and ALiBi's linear biases.

Imported by `transformer.core.attention` (its layers apply them) and handed on by `transformer.core.positional`.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

ROPE_BASE = 10000.0  # RoFormer's (the spec's LAYER_STYLE default, which a test keeps equal)


def rotary_frequencies(d, base=ROPE_BASE):
    """θ_i = base^(−2i/d) for the ``d / 2`` pairs (2i, 2i+1): ``(d/2,)`` float32 (RoFormer's base: 10000)."""
    return tf.pow(float(base), -tf.range(0, d, 2, dtype=tf.float32) / float(d))  # (d/2,)


def rotary(x, positions, base=ROPE_BASE):
    """Rotary position embedding (Su et al., RoFormer, eq. 34): each pair of dimensions (2i, 2i+1) of the
    vector at position m rotated by the angle m·θ_i, θ_i = base^(−2i/d) (10000 in the paper; a Llama sets its own).

    Args:
      x: ``(..., N, d)`` with even d.  positions: ``(N,)`` the position m of each row.
    Returns: ``x``'s shape and dtype. Rotated queries and keys give q_m·k_n that depends on m − n only.
    """
    x = tf.convert_to_tensor(x)  # (..., N, d)
    d = x.shape[-1]
    if d is None or d % 2:
        raise ValueError(f"rotary needs an even last dimension d. Received: x.shape={tuple(x.shape)}")
    angles = tf.cast(positions, tf.float32)[:, None] * rotary_frequencies(d, base)[None, :]  # (N, d/2)
    cos, sin = tf.cast(tf.cos(angles), x.dtype), tf.cast(tf.sin(angles), x.dtype)  # (N, d/2) each
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., N, d/2) each
    rotated = tf.stack([even * cos - odd * sin, even * sin + odd * cos], axis=-1)  # (..., N, d/2, 2)
    return tf.reshape(rotated, tf.shape(x))  # (..., N, d): pairs back in place


def alibi_slopes(num_heads):
    """ALiBi's per-head slopes as in its reference code (``get_slopes``): for H a power of two the
    geometric sequence 2^(−8/H), 2^(−16/H) … 2^(−8); otherwise those of the power of two below H,
    then every other slope of twice that power. Returns ``(H,)`` float32 NumPy."""
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads < 1:
        raise ValueError(f"num_heads must be a positive integer. Received: num_heads={num_heads!r}")

    def power_of_two(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(num_heads).is_integer():
        return np.array(power_of_two(num_heads), np.float32)
    closest = 2 ** math.floor(math.log2(num_heads))
    extra = alibi_slopes(2 * closest)[0::2][: num_heads - closest]
    return np.array([*power_of_two(closest), *extra], np.float32)


def alibi_bias(num_heads, n_q, n_k, query_start=0):
    """``(H, N_q, N_k)`` float32: −slope_h·|i − j|, ALiBi's bias for query i and key j (for a causal mask,
    j ≤ i, this is the paper's −slope_h·(i − j); a bidirectional encoder sees the same penalty both ways).
    ``query_start``: the position of the first query (cached decoding: the keys start at 0, the queries later)."""
    slopes = tf.constant(alibi_slopes(num_heads))  # (H,)
    distance = tf.abs(query_start + tf.range(n_q)[:, None] - tf.range(n_k)[None, :])  # (N_q, N_k)
    return -slopes[:, None, None] * tf.cast(distance, tf.float32)[None]  # (H, N_q, N_k)
