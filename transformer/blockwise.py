"""Attention for long sequences, block by block: what a view needs, never every layer's H·N² weights.

Above `FULL_ATTENTION_MAX` positions every `MultiHeadAttention` of the model computes its queries
`QUERY_BLOCK` at a time: a block's weights ``(B, H, Q_b, N_k)`` give that block's output, are
max-pooled to the view's cells and cropped to its full-resolution window, and are then dropped.
The checks the Attention page shows (row sums, masked cells, non-finite values) are measured on
each block as it goes. The run is eager (the block loop needs static lengths).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

from transformer.attention import attention_stages

FULL_ATTENTION_MAX = 512  # longer sequences run block-wise
QUERY_BLOCK = 128  # queries a block (a multiple of every pool factor up to 128)
VIEW_CELLS = 128  # cells a side of the pooled maps


def pool_factor(length: int, cells: int = VIEW_CELLS) -> int:
    """The block size (a power of two) that brings ``length`` to at most ``cells``."""
    return 1 << max(0, math.ceil(math.log2(max(1, math.ceil(length / cells)))))


@dataclass
class CheckTotals:
    """What `transformer.analysis.attention_checks` measures, gathered block by block over one stack."""

    non_finite: int = 0
    row_gap: float = 0.0  # max |row sum − 1| over rows with an allowed key
    masked_max: float = 0.0  # max |weight| on masked cells
    empty_gap: float = 0.0  # max |row sum| over rows with no allowed key

    def add(self, weights, mask) -> None:
        """weights: ``(B, H, Q_b, N_k)``; mask: broadcastable bool, True = may attend."""
        mask = tf.broadcast_to(tf.cast(mask, tf.bool), tf.shape(weights))  # (B, H, Q_b, N_k)
        sums = tf.reduce_sum(weights, -1)  # (B, H, Q_b)
        allowed = tf.reduce_any(mask, -1)  # (B, H, Q_b)
        self.non_finite += int(tf.reduce_sum(tf.cast(~tf.math.is_finite(weights), tf.int32)))
        self.row_gap = max(self.row_gap, float(tf.reduce_max(tf.where(allowed, tf.abs(sums - 1), 0.0))))
        self.empty_gap = max(self.empty_gap, float(tf.reduce_max(tf.where(allowed, 0.0, tf.abs(sums)))))
        self.masked_max = max(self.masked_max, float(tf.reduce_max(tf.where(mask, 0.0, tf.abs(weights)))))


@dataclass
class LayerView:
    """Set on one `MultiHeadAttention` for a block-wise run; gathers its crop and its stack's checks."""

    factor: int
    crop: tuple | None  # (first query, first key, size) of the exact window, or None
    checks: CheckTotals | None  # None: no checks (the Cost page times attention alone)
    crops: list = field(default_factory=list)

    def attend(self, q, k, v, mask=None, bias=None):
        """``q (B, H, N_q, d_k)``, ``k``, ``v (B, H, N_k, d_k)`` -> ``(output (B, H, N_q, d_v), pooled
        (B, H, ⌈N_q/f⌉, ⌈N_k/f⌉))``, queries `QUERY_BLOCK` at a time."""
        n_q = q.shape[2]
        outputs, pooled, cropped = [], [], []
        for start in range(0, n_q, QUERY_BLOCK):
            end = min(n_q, start + QUERY_BLOCK)
            block_mask = _rows(mask, start, end)  # (B, 1, Q_b or 1, N_k)
            block_bias = None if bias is None else bias[:, start:end]  # (H, Q_b, N_k)
            stages = attention_stages(q[:, :, start:end], k, v, block_mask, bias=block_bias)
            outputs.append(stages.output)  # (B, H, Q_b, d_v)
            pooled.append(_max_pool(stages.weights, self.factor))  # (B, H, ⌈Q_b/f⌉, ⌈N_k/f⌉)
            if self.checks is not None:
                self.checks.add(stages.weights, block_mask if block_mask is not None else True)
            if self.crop is not None:
                cropped.append(_crop(stages.weights, start, end, self.crop))
        if self.crop is not None:
            kept = [c for c in cropped if c is not None]
            self.crops.append(tf.concat(kept, axis=2).numpy() if kept else np.zeros((*q.shape[:2], 0, 0), np.float32))
        return tf.concat(outputs, axis=2), tf.concat(pooled, axis=2)


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
    padded = tf.pad(weights, [[0, 0], [0, 0], [0, pad_rows], [0, pad_keys]])  # (B, H, R', N_k')
    blocks = tf.reshape(padded, (batch, heads, (rows + pad_rows) // factor, factor, (keys + pad_keys) // factor,
                                 factor))  # (B, H, R'/f, f, N_k'/f, f)
    return tf.reduce_max(blocks, axis=[3, 5])  # (B, H, R'/f, N_k'/f)


def _crop(weights, start: int, end: int, crop: tuple):
    """The part of a block's ``(B, H, Q_b, N_k)`` weights inside the crop window, or None."""
    first_query, first_key, size = crop
    low, high = max(start, first_query), min(end, first_query + size)
    if low >= high:
        return None
    return weights[:, :, low - start:high - start, first_key:first_key + size]  # (B, H, rows, ≤ size)


def attention_layers(model) -> dict:
    """``{stack: [MultiHeadAttention of each layer]}`` of a `Transformer`."""
    return {
        "encoder": [block.self_attention_block.sublayer for block in model.encoder.blocks],
        "decoder": [block.self_attention_block.sublayer for block in model.decoder.blocks],
        "cross": [block.cross_attention_block.sublayer for block in model.decoder.blocks],
    }


@dataclass(frozen=True)
class BlockwiseResult:
    """attention: ``{stack: (L, B, H, ⌈N_q/f⌉, ⌈N_k/f⌉)}`` pooled by ``factor``; crops: ``{stack: (L, B, H,
    rows, cols)}`` exact weights of the window ``crop``; checks: ``{stack: CheckTotals}``."""

    attention: dict
    factor: int
    crop: tuple | None
    crops: dict
    checks: dict


def blockwise_attention(model, stacks, src, tgt, src_mask, tgt_mask, crop=None,
                        cells: int = VIEW_CELLS) -> BlockwiseResult:
    """Run ``model`` eagerly with every attention layer block-wise; the maps of ``stacks``, pooled to at most
    ``cells`` a side, the exact ``crop = (first query, first key, size)`` window, and each stack's checks."""
    factor = pool_factor(max(src.shape[1], tgt.shape[1]), cells)
    layers = attention_layers(model)
    checks = {stack: CheckTotals() for stack in layers}
    views = {id(layer): LayerView(factor, crop, checks[stack]) for stack in layers for layer in layers[stack]}
    try:
        for stack in layers:
            for layer in layers[stack]:
                layer.block_view = views[id(layer)]
        weights = {}
        memory, weights["encoder"] = model.encode(src, src_mask)  # (B, N_s, D), L × pooled
        if "decoder" in stacks or "cross" in stacks:
            _, weights["decoder"], weights["cross"] = model.decode(tgt, memory, src_mask, tgt_mask)
    finally:
        for stack in layers:
            for layer in layers[stack]:
                layer.block_view = None
    attention = {stack: tf.stack(weights[stack]).numpy() for stack in stacks}  # (L, B, H, n_q, n_k)
    crops = {stack: np.stack([views[id(layer)].crops[-1] for layer in layers[stack]])
             for stack in stacks} if crop is not None else {}
    return BlockwiseResult(attention, factor, crop, crops, {stack: checks[stack] for stack in stacks})
