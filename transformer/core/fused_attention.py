"""One query block of long attention as one compiled function (XLA): the output, the weights max-pooled to the
view's cells and the checks' row sums, without writing the block's normalised weights out; and the max-pooling
both kernels share.

The eager kernel (`attention_stages`) passes over a block's ``(B, H, Q_b, N_k)`` scores five or six times (scale,
mask, softmax's max, exp, sum and divide, then the pooling); here the unnormalised ``exp(scaled − max)`` is written
once and everything else is read from it, ``1 / sum`` applied to the small results: softmax(x)·V = (exp·V) / sum,
and a row's largest weight in a cell is its largest exp there over the same sum. Compiled once a shape a process.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import tensorflow as tf

FUSED_MIN_CELLS = 1 << 28  # B·H·N_q·N_k of a layer from which a CPU run compiles its blocks (below: eager is as fast)


class FusedBlock(NamedTuple):
    """output ``(B, H, Q_b, d_v)``; pooled ``(B, H, ⌈Q_b/f⌉, ⌈N_k/f⌉)`` the largest weight of each f × f cell;
    row_sums ``(B, H, Q_b)`` the sum of each row's weights. A masked key's weight is 0 by construction (its
    exponential is multiplied by the mask)."""

    output: tf.Tensor
    pooled: tf.Tensor
    row_sums: tf.Tensor


def worth_fusing(query, n_k: int) -> bool:
    """Whether a layer's run of ``query (B, H, N_q, d_k)`` against ``n_k`` keys compiles its blocks: on the CPU,
    from `FUSED_MIN_CELLS` weights a layer (a compile, ~0.5–1 s a shape, costs what eager loses on a few blocks)."""
    batch, heads, n_q = query.shape[:3]
    return "GPU" not in query.device and batch * heads * n_q * n_k >= FUSED_MIN_CELLS


def fused_block(query, key, value, mask, bias, factor: int) -> FusedBlock:
    """softmax(Q·Kᵀ / sqrt(d_k) + bias, masked) for ``query (B, H, Q_b, d_k)``, ``key (B, H, N_k, d_k)``, ``value
    (B, H, N_k, d_v)``, ``mask`` bool broadcastable to ``(B, H, Q_b, N_k)`` (True = may attend) or None, ``bias``
    broadcastable or None; pooled by ``factor``. A row with no allowed key weighs 0 everywhere."""
    return _compiled(query, key, value, mask, bias, factor)


@tf.function(jit_compile=True, autograph=False)  # plain Python on static values: nothing to convert
def _compiled(query, key, value, mask, bias, factor):
    scaled = tf.matmul(query / math.sqrt(query.shape[-1]), key, transpose_b=True)  # (B, H, Q_b, N_k)
    if bias is not None:
        scaled = scaled + bias  # (B, H, Q_b, N_k)
    if mask is not None:
        scaled = tf.where(mask, scaled, scaled.dtype.min)  # (B, H, Q_b, N_k), finite everywhere
    exps = tf.exp(scaled - tf.reduce_max(scaled, -1, keepdims=True))  # (B, H, Q_b, N_k), unnormalised
    if mask is not None:
        exps = exps * tf.cast(mask, exps.dtype)  # masked and empty rows -> exactly 0
    inverse = tf.math.divide_no_nan(1.0, tf.reduce_sum(exps, -1, keepdims=True))  # (B, H, Q_b, 1), 0: empty row
    output = tf.matmul(exps, value) * inverse  # (B, H, Q_b, d_v)
    cells = key_cells(exps, factor)  # (B, H, Q_b, c, f)
    row_sums = tf.reduce_sum(tf.reduce_sum(cells, -1) * inverse, -1)  # (B, H, Q_b): summed again, cell by cell
    return FusedBlock(output, max_pool_rows(tf.reduce_max(cells, -1) * inverse, factor), row_sums)


def key_cells(weights, factor: int):
    """``(B, H, R, N_k)`` -> ``(B, H, R, ⌈N_k/f⌉, f)``, the keys in cells of ``factor`` (zero padded)."""
    batch, heads, rows, keys = weights.shape
    if keys % factor:
        weights = tf.pad(weights, [[0, 0], [0, 0], [0, 0], [0, -keys % factor]])  # (B, H, R, N_k')
    return tf.reshape(weights, (batch, heads, rows, -(-keys // factor), factor))


def max_pool_rows(weights, factor: int):
    """``(B, H, R, c)`` -> ``(B, H, ⌈R/f⌉, c)``, the largest of each f rows (zero padded)."""
    if factor == 1:
        return weights
    batch, heads, rows, cells = weights.shape
    if rows % factor:
        weights = tf.pad(weights, [[0, 0], [0, 0], [0, -rows % factor], [0, 0]])  # (B, H, R', c)
    return tf.reduce_max(tf.reshape(weights, (batch, heads, -1, factor, cells)), axis=3)  # (B, H, R'/f, c)
