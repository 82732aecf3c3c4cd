"""Attention for long sequences, block by block: what a view needs, never every layer's H·N² weights.

Above `FULL_ATTENTION_MAX` positions every `MultiHeadAttention` of the model computes its queries
`QUERY_BLOCK` at a time: a block's weights ``(B, H, Q_b, N_k)`` give that block's output, are
max-pooled to the view's cells and cropped to the windows the views keep exact (the full-resolution
head, the head view's positions around a focus), and are then dropped.
The checks the Attention page shows (row sums, masked cells, non-finite values) are measured on
each block as it goes. The run is eager (the block loop needs static lengths).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

from transformer.core.attention import AttentionHook, attention_stages

FULL_ATTENTION_MAX = 512  # longer sequences run block-wise
QUERY_BLOCK = 128  # queries a block (a multiple of every pool factor up to 128)
VIEW_CELLS = 128  # cells a side of the pooled maps


def power_of_two_block(length: int, cells: int = VIEW_CELLS) -> int:
    """The block size (a power of two) that brings ``length`` to at most ``cells``."""
    return 1 << max(0, math.ceil(math.log2(max(1, math.ceil(length / cells)))))


@dataclass
class CheckTotals:
    """What `transformer.analysis.measures.attention_checks` measures, gathered block by block over one stack."""

    non_finite: int = 0
    row_gap: float = 0.0  # max |row sum − 1| over rows with an allowed key
    masked_max: float = 0.0  # max |weight| on masked cells
    empty_gap: float = 0.0  # max |row sum| over rows with no allowed key

    def add(self, weights, mask) -> None:
        """weights: ``(B, H, Q_b, N_k)``; mask: broadcastable bool, True = may attend."""
        mask = tf.cast(mask, tf.bool)  # broadcastable to (B, H, Q_b, N_k): never spread to it
        if mask.shape.rank == 0:  # no mask: one row of its value for every query
            mask = tf.fill(tf.shape(weights)[-1:], mask)  # (N_k,)
        sums = tf.reduce_sum(weights, -1)  # (B, H, Q_b)
        allowed = tf.broadcast_to(tf.reduce_any(mask, -1), tf.shape(sums))  # (B, H, Q_b)
        finite = bool(tf.reduce_all(tf.math.is_finite(sums)))  # a NaN or inf in a row shows in its sum
        if not finite:  # rare
            self.non_finite += int(tf.reduce_sum(tf.cast(~tf.math.is_finite(weights), tf.int32)))
            weights = tf.where(tf.math.is_nan(weights), math.inf, weights)  # as attention_checks: gaps it touches: inf
            sums = tf.reduce_sum(weights, -1)
        self.row_gap = max(self.row_gap, float(tf.reduce_max(tf.where(allowed, tf.abs(sums - 1), 0.0))))
        self.empty_gap = max(self.empty_gap, float(tf.reduce_max(tf.where(allowed, 0.0, tf.abs(sums)))))
        if finite:
            self.masked_max = max(self.masked_max, _largest_masked(weights, mask))
        else:  # inf × 0 would be NaN
            self.masked_max = max(self.masked_max, float(tf.reduce_max(tf.where(~mask, tf.abs(weights), 0.0))))


def _largest_masked(weights, mask) -> float:
    """The largest |weight| on a cell ``mask`` forbids; weights ``(B, H, Q_b, N_k)``, finite; mask bool,
    broadcastable. A mask with one row of keys for every query (padding) is read by one matrix product: no weight
    below 0 and no mass on masked keys means none there; otherwise every cell is looked at."""
    if bool(tf.reduce_all(mask)):
        return 0.0
    batch, keys = weights.shape[0], weights.shape[-1]
    if mask.shape.rank == 4 and mask.shape[1] == mask.shape[2] == 1:  # (B, 1, 1, N_k)
        masked = tf.reshape(tf.cast(~mask, weights.dtype), (mask.shape[0], keys, 1))  # (B, N_k, 1)
        mass = tf.matmul(tf.reshape(weights, (batch, -1, keys)), masked)  # (B, H·Q_b, 1)
        if float(tf.reduce_min(weights)) >= 0 and float(tf.reduce_max(mass)) == 0:
            return 0.0
    return float(tf.reduce_max(tf.where(mask, 0.0, tf.abs(weights))))  # (B, H, Q_b, N_k) looked at


@dataclass
class LayerView:
    """The kernel of one `MultiHeadAttention` in a block-wise run (`BlockHook`); gathers its windows and its stack's
    checks."""

    factor: int
    windows: tuple  # ((first query, first key, size), …) kept exact
    checks: CheckTotals | None  # None: no checks (the Cost page times attention alone)
    kept: list = field(default_factory=list)  # a call's list: one (B, H, rows, cols) array a window

    def attend(self, q, k, v, mask=None, bias=None):
        """``q (B, H, N_q, d_k)``, ``k``, ``v (B, H, N_k, d_k)`` -> ``(output (B, H, N_q, d_v), pooled
        (B, H, ⌈N_q/f⌉, ⌈N_k/f⌉))``, queries `QUERY_BLOCK` at a time."""
        n_q = q.shape[2]
        mask = _unless_every_key_allowed(mask)
        outputs, pooled, cropped = [], [], [[] for _ in self.windows]
        for start in range(0, n_q, QUERY_BLOCK):
            end = min(n_q, start + QUERY_BLOCK)
            block_mask = _rows(mask, start, end)  # (B, 1, Q_b or 1, N_k)
            block_bias = None if bias is None else bias[:, start:end]  # (H, Q_b, N_k)
            stages = attention_stages(q[:, :, start:end], k, v, block_mask, bias=block_bias)
            outputs.append(stages.output)  # (B, H, Q_b, d_v)
            pooled.append(_max_pool(stages.weights, self.factor))  # (B, H, ⌈Q_b/f⌉, ⌈N_k/f⌉)
            if self.checks is not None:
                self.checks.add(stages.weights, block_mask if block_mask is not None else True)
            for parts, window in zip(cropped, self.windows):
                parts.append(_crop(stages.weights, start, end, window))
        self.kept.append([_joined(parts, q.shape[:2]) for parts in cropped])
        return tf.concat(outputs, axis=2), tf.concat(pooled, axis=2)


def _unless_every_key_allowed(mask):
    """None for a mask that allows every key (the kernel then makes no masked pass over each block's weights: the
    same weights), else the mask as a tensor."""
    if mask is None:
        return None
    mask = tf.cast(mask, tf.bool)  # broadcastable to (B, H, N_q, N_k)
    return None if bool(tf.reduce_all(mask)) else mask


def _rows(mask, start: int, end: int):
    """Query rows ``start:end`` of a mask broadcastable to ``(B, H, N_q, N_k)`` (a one-row mask as it is)."""
    if mask is None:
        return None
    mask = tf.convert_to_tensor(mask)
    return mask if mask.shape[-2] == 1 else mask[..., start:end, :]


def _max_pool(weights, factor: int):
    """``(B, H, R, N_k)`` -> ``(B, H, ⌈R/f⌉, ⌈N_k/f⌉)``, the largest weight of each f × f block (zero padded)."""
    if factor == 1:
        return weights
    batch, heads, rows, keys = weights.shape
    pad_rows, pad_keys = -rows % factor, -keys % factor
    if pad_rows or pad_keys:
        weights = tf.pad(weights, [[0, 0], [0, 0], [0, pad_rows], [0, pad_keys]])  # (B, H, R', N_k')
    rows, cells = rows + pad_rows, (keys + pad_keys) // factor
    keys_pooled = tf.reduce_max(tf.reshape(weights, (batch, heads, rows, cells, factor)), axis=-1)  # (B, H, R', c)
    return tf.reduce_max(tf.reshape(keys_pooled, (batch, heads, rows // factor, factor, cells)), axis=3)  # (…, R'/f, c)


def pooled_maps(maps, factor: int):
    """``(…, N_q, N_k)`` -> ``(…, ⌈N_q/f⌉, ⌈N_k/f⌉)``, the largest weight of each f × f block (zero padded), on the
    tensor's device and in a traced graph too (lengths may be unknown until run)."""
    if factor == 1:
        return maps
    shape = tf.shape(maps)
    n_q, n_k = shape[-2], shape[-1]
    padded = tf.pad(maps, tf.concat([tf.zeros((tf.rank(maps) - 2, 2), tf.int32),
                                     [[0, -n_q % factor], [0, -n_k % factor]]], axis=0))  # (…, N_q', N_k')
    rows, cols = (n_q + factor - 1) // factor, (n_k + factor - 1) // factor
    blocks = tf.reshape(padded, tf.concat([shape[:-2], [rows, factor, cols, factor]], axis=0))  # (…, r, f, c, f)
    return tf.reduce_max(blocks, axis=[-3, -1])  # (…, ⌈N_q/f⌉, ⌈N_k/f⌉)


def _crop(weights, start: int, end: int, window: tuple):
    """The part of a block's ``(B, H, Q_b, N_k)`` weights inside ``window``, or None."""
    first_query, first_key, size = window
    low, high = max(start, first_query), min(end, first_query + size)
    if low >= high:
        return None
    return weights[:, :, low - start:high - start, first_key:first_key + size]  # (B, H, rows, ≤ size)


def _joined(parts, batch_heads) -> np.ndarray:
    """A window's rows from every block, ``(B, H, rows, cols)`` (no rows: ``(B, H, 0, 0)``)."""
    kept = [part for part in parts if part is not None]
    return tf.concat(kept, axis=2).numpy() if kept else np.zeros((*batch_heads, 0, 0), np.float32)


class BlockHook(AttentionHook):
    """Runs every attention layer of a model block-wise: ``views`` maps a layer's ``site`` (None: a layer on its
    own, as the Cost page times) to its `LayerView`."""

    def __init__(self, views: dict):
        self.views = views

    def kernel(self, layer):
        return self.views.get(layer.site)


@dataclass(frozen=True)
class BlockwiseResult:
    """attention: ``{stack: (L, B, H, ⌈N_q/f⌉, ⌈N_k/f⌉)}`` pooled by ``factor``; window_weights: ``{stack:
    ((L, B, H, rows, cols), …)}`` the exact weights of each of ``windows``; checks: ``{stack: CheckTotals}``."""

    attention: dict
    factor: int
    windows: tuple
    window_weights: dict
    checks: dict


def blockwise_attention(model, stacks, src, tgt, src_mask, tgt_mask, windows=(),
                        cells: int = VIEW_CELLS) -> BlockwiseResult:
    """Run ``model`` eagerly with every attention layer block-wise; the maps of ``stacks``, pooled to at most
    ``cells`` a side, the exact weights of each of ``windows = ((first query, first key, size), …)``, and each
    stack's checks."""
    lengths = [ids.shape[1] for ids in (src, tgt) if ids is not None]
    factor = power_of_two_block(max(lengths), cells)
    layers = {stack: model.attention_layers(stack) for stack in model.stacks}
    checks = {stack: CheckTotals() for stack in layers}
    windows = tuple(windows)
    views = {layer.site: LayerView(factor, windows, checks[stack]) for stack in layers for layer in layers[stack]}
    weights = model.attention_maps(stacks, src, tgt, src_mask, tgt_mask, hook=BlockHook(views))  # L × pooled
    attention = {stack: tf.stack(weights[stack]).numpy() for stack in stacks}  # (L, B, H, n_q, n_k)
    window_weights = {stack: tuple(np.stack([views[layer.site].kept[-1][index] for layer in layers[stack]])
                                   for index in range(len(windows))) for stack in stacks}  # (L, B, H, rows, cols)
    return BlockwiseResult(attention, factor, windows, window_weights, {stack: checks[stack] for stack in stacks})
