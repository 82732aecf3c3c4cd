"""Attention for long sequences, block by block: what a view needs, never every layer's H·N² weights.

Above `FULL_ATTENTION_MAX` positions every `MultiHeadAttention` of the model computes its queries
`QUERY_BLOCK` at a time: a block's weights ``(B, H, Q_b, N_k)`` give that block's output, are
max-pooled to the view's cells and cropped to the windows the views keep exact (the full-resolution
head, the head view's positions around a focus), and are then dropped.
The checks the Attention page shows (row sums, masked cells, non-finite values) are measured on
each block as it goes. The loop is eager (it needs static lengths); on the CPU a layer of at least
`FUSED_MIN_CELLS` weights runs each block that attends over all its keys as one compiled function
(`transformer.core.fused_attention`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

from transformer.core.attention import AttentionHook, attention_stages
from transformer.core.fused_attention import FusedBlock, fused_block, key_cells, max_pool_rows, worth_fusing

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
    keys_left_out: int = 0  # most keys a block left out (`KeptKeys`: no query of it may attend them; 0, unmeasured)
    compiled_blocks: int = 0  # blocks measured by `fused_block`'s row sums

    def add(self, weights, mask) -> None:
        """weights: ``(B, H, Q_b, N_k)``; mask: broadcastable bool, True = may attend."""
        mask = tf.cast(mask, tf.bool)  # broadcastable to (B, H, Q_b, N_k): never spread to it
        if mask.shape.rank == 0:  # no mask: one row of its value for every query
            mask = tf.fill(tf.shape(weights)[-1:], mask)  # (N_k,)
        sums = tf.reduce_sum(weights, -1)  # (B, H, Q_b)
        allowed = _allowed_rows(mask, sums)  # (B, H, Q_b)
        finite = bool(tf.reduce_all(tf.math.is_finite(sums)))  # a NaN or inf in a row shows in its sum
        if not finite:  # rare
            self.non_finite += int(tf.reduce_sum(tf.cast(~tf.math.is_finite(weights), tf.int32)))
            weights = tf.where(tf.math.is_nan(weights), math.inf, weights)  # as attention_checks: gaps it touches: inf
            sums = tf.reduce_sum(weights, -1)
        self._add_row_gaps(sums, allowed)
        if finite:
            self.masked_max = max(self.masked_max, _largest_masked(weights, mask))
        else:  # inf × 0 would be NaN
            self.masked_max = max(self.masked_max, float(tf.reduce_max(tf.where(~mask, tf.abs(weights), 0.0))))

    def add_fused(self, block: FusedBlock, mask) -> None:
        """The row gaps from a compiled block's row sums (`fused_block`, finite); mask as in `add`. Its masked
        weights are 0 by construction, not measured."""
        self._add_row_gaps(block.row_sums, _allowed_rows(mask, block.row_sums))
        self.compiled_blocks += 1

    def _add_row_gaps(self, sums, allowed) -> None:
        """sums, allowed: ``(B, H, Q_b)``, each row's weight sum and whether it has an allowed key."""
        self.row_gap = max(self.row_gap, float(tf.reduce_max(tf.where(allowed, tf.abs(sums - 1), 0.0))))
        self.empty_gap = max(self.empty_gap, float(tf.reduce_max(tf.where(allowed, 0.0, tf.abs(sums)))))


def _allowed_rows(mask, sums):
    """``(B, H, Q_b)`` bool: the rows of ``mask`` (broadcastable, or None: every key) with an allowed key."""
    if mask is None:
        return tf.ones_like(sums, tf.bool)
    return tf.broadcast_to(tf.reduce_any(tf.cast(mask, tf.bool), -1), tf.shape(sums))


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
        (B, H, ⌈N_q/f⌉, ⌈N_k/f⌉))``, queries `QUERY_BLOCK` at a time, each block over the keys some of its queries
        may attend where those are few (`KeptKeys`)."""
        n_q, n_k = q.shape[2], k.shape[2]
        mask = _unless_every_key_allowed(mask)
        one_row = mask is None or mask.shape[-2] == 1  # the same keys for every query (padding): chosen once
        layer_keys = KeptKeys.of(mask, n_k, self.factor) if one_row else None
        k, v, mask, bias = _gathered(layer_keys, k, v, mask, bias)  # (B, H, N_k or K, d_k), …
        outputs, pooled, cropped = [], [], [[] for _ in self.windows]
        fusing = worth_fusing(q, n_k)
        for start in range(0, n_q, QUERY_BLOCK):
            end = min(n_q, start + QUERY_BLOCK)
            block_mask = _rows(mask, start, end)  # (B, 1, Q_b or 1, N_k or K)
            block_bias = None if bias is None else bias[:, start:end]  # (H, Q_b, N_k or K)
            kept = layer_keys if one_row else KeptKeys.of(block_mask, n_k, self.factor)  # a look-ahead block's past
            block_k, block_v, block_mask, block_bias = (k, v, block_mask, block_bias) if one_row else _gathered(
                kept, k, v, block_mask, block_bias)
            if fusing and kept is None and not any(_overlaps(start, end, window) for window in self.windows):
                block = self._fused(q[:, :, start:end], block_k, block_v, block_mask, block_bias)
                if block is not None:
                    outputs.append(block.output)  # (B, H, Q_b, d_v)
                    pooled.append(block.pooled)  # (B, H, ⌈Q_b/f⌉, ⌈N_k/f⌉)
                    continue
            stages = attention_stages(q[:, :, start:end], block_k, block_v, block_mask, bias=block_bias)
            outputs.append(stages.output)  # (B, H, Q_b, d_v)
            if self.checks is not None:
                self.checks.add(stages.weights, block_mask if block_mask is not None else True)
                self.checks.keys_left_out = max(self.checks.keys_left_out, 0 if kept is None else kept.left_out)
            weights = stages.weights  # (B, H, Q_b, N_k), or (B, H, Q_b, K) over the kept keys
            pooled.append(_max_pool(weights, self.factor) if kept is None else kept.max_pool(weights))
            for parts, window in zip(cropped, self.windows):
                parts.append(_crop(weights, start, end, window, kept))
        self.kept.append([_joined(parts, q.shape[:2]) for parts in cropped])
        return tf.concat(outputs, axis=2), tf.concat(pooled, axis=2)

    def _fused(self, q, k, v, mask, bias) -> FusedBlock | None:
        """One block compiled (`fused_block`), its checks added; None where a row is not finite (the eager kernel
        then counts the NaNs and infs the checks show)."""
        block = fused_block(q, k, v, mask, bias, self.factor)
        if not bool(tf.reduce_all(tf.math.is_finite(block.row_sums))):
            return None
        if self.checks is not None:
            self.checks.add_fused(block, mask)
        return block


def _gathered(kept, k, v, mask, bias):
    """``k``, ``v``, ``mask``, ``bias`` over ``kept``'s keys (as they are where ``kept`` is None)."""
    if kept is None:
        return k, v, mask, bias
    return kept.keys(k), kept.keys(v), kept.columns(mask), None if bias is None else kept.columns(bias)


@dataclass(frozen=True)
class KeptKeys:
    """The keys some query of a block may attend (on some line), where they are at most half of them: the block
    attends over these alone. A padding mask ``(B, 1, 1, N_k)`` chooses them once for every block; a mask with a row
    a query (the look-ahead mask's) a block at a time. Every other key is masked for every query of the block, so
    its weight is exactly 0 (the kernel's, never computed); the pooled maps and the windows put those zeros back."""

    index: tf.Tensor  # (K,) int32, ascending positions of the kept keys
    n_k: int
    factor: int  # the pooled maps' cells are factor × factor
    whole_cells: tf.Tensor  # (⌈N_k/f⌉,) bool: every key of the cell is kept (no 0 from a left-out key in its max)

    @classmethod
    def of(cls, mask, n_k: int, factor: int):
        """The kept keys of ``mask`` (bool, ``(…, rows, N_k)``), or None: no mask, no key allowed, or more than half
        allowed (full rows then cost little more)."""
        if mask is None:
            return None
        allowed = tf.reduce_any(mask, axis=tuple(range(mask.shape.rank - 1)))  # (N_k,) some row may attend
        index = tf.cast(tf.where(allowed)[:, 0], tf.int32)  # (K,)
        if not 0 < index.shape[0] <= n_k // 2:
            return None
        cells = -(-n_k // factor)
        whole = tf.math.bincount(index // factor, minlength=cells, maxlength=cells) == factor  # (c,)
        return cls(index, n_k, factor, whole)

    @property
    def left_out(self) -> int:
        return self.n_k - self.index.shape[0]

    def keys(self, tensor):
        """Keys or values ``(B, H, N_k, d)`` -> ``(B, H, K, d)``."""
        return tf.gather(tensor, self.index, axis=2)

    def columns(self, tensor):
        """A mask or a bias ``(…, N_k)`` -> ``(…, K)``."""
        return tf.gather(tensor, self.index, axis=-1)

    def max_pool(self, weights):
        """``(B, H, R, K)`` kept weights -> ``(B, H, ⌈R/f⌉, ⌈N_k/f⌉)``, as `_max_pool` pools the whole rows."""
        rows = tf.transpose(max_pool_rows(weights, self.factor), (3, 0, 1, 2))  # (K, B, H, ⌈R/f⌉)
        cells = tf.math.unsorted_segment_max(rows, self.index // self.factor, self.whole_cells.shape[0])  # none: lowest
        cells = tf.where(self.whole_cells[:, None, None, None], cells, tf.maximum(cells, 0.0))  # (c, B, H, ⌈R/f⌉)
        return tf.transpose(cells, (1, 2, 3, 0))  # (B, H, ⌈R/f⌉, c)

    def spread(self, weights, first_key: int, size: int):
        """``(B, H, R, K)`` kept weights -> ``(B, H, R, cols)``: the whole rows' keys ``first_key`` … ``+ size``
        (cut at N_k), a left-out key's weight 0."""
        keys = tf.range(first_key, min(first_key + size, self.n_k))  # (cols,)
        found = tf.searchsorted(self.index, keys)  # (cols,) where each key sits, or would, among the kept
        is_kept = tf.gather(tf.concat([self.index, [-1]], 0), found) == keys  # (cols,)
        padded = tf.concat([weights, tf.zeros_like(weights[..., :1])], -1)  # (B, H, R, K + 1), the last column 0
        return tf.gather(padded, tf.where(is_kept, found, tf.shape(self.index)[0]), axis=-1)  # (B, H, R, cols)


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
    return max_pool_rows(tf.reduce_max(key_cells(weights, factor), axis=-1), factor)  # (B, H, ⌈R/f⌉, ⌈N_k/f⌉)


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


def _crop(weights, start: int, end: int, window: tuple, kept: KeptKeys | None = None):
    """The part of a block's ``(B, H, Q_b, N_k)`` weights inside ``window``, or None; ``kept``: the weights are
    ``(B, H, Q_b, K)`` over those keys."""
    low, high = _crop_rows(start, end, window)
    if low >= high:
        return None
    first_key, size = window[1:]
    rows = weights[:, :, low - start:high - start]  # (B, H, rows, N_k or K)
    return rows[..., first_key:first_key + size] if kept is None else kept.spread(rows, first_key, size)


def _crop_rows(start: int, end: int, window: tuple) -> tuple:
    """The query rows ``(low, high)`` of block ``start:end`` inside ``window``; empty: ``low >= high``."""
    first_query, _, size = window
    return max(start, first_query), min(end, first_query + size)


def _overlaps(start: int, end: int, window: tuple) -> bool:
    low, high = _crop_rows(start, end, window)
    return low < high


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
