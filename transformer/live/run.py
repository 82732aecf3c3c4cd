"""The one plain-data entry point: a frozen `LiveConfig` in, a `LiveResult` of NumPy arrays out.

The app calls `run_live` (and `transformer.live.walkthrough` for one layer's intermediates); it never
touches a tensor. The way of a configuration: `plan_of` (plan: checked once, its source, device, ids and
masks) -> `Plan.model` (model_cache: built once per architecture, seeded, or loaded) -> its attention
`ModelFunction` on the engine thread -> NumPy.
"""

from __future__ import annotations

import time

import numpy as np
import tensorflow as tf

from transformer.core.blockwise import FULL_ATTENTION_MAX, blockwise_attention, power_of_two_block
from transformer.core.shape import STACKS
from transformer.live.config import LiveConfig, check_budget
from transformer.live.inputs import encoding_array
from transformer.live.model_cache import MODELS, ModelCache
from transformer.live.plan import Plan, plan_of
from transformer.live.result import LiveResult
from transformer.live.run_cost import RunCost, check_cost, live_cost
from transformer.runtime.device import device_label


def _stacks(stacks, config: LiveConfig) -> tuple:
    """``stacks`` in `STACKS` order, those ``config``'s architecture has; ValueError naming any other name."""
    unknown = [stack for stack in stacks if stack not in STACKS]
    if unknown:
        raise ValueError(f"stacks must be among {STACKS}. Received: stacks={tuple(stacks)!r}")
    return tuple(stack for stack in config.stacks if stack in stacks)


def _windows(windows) -> tuple:
    """``windows`` as a tuple of ``(first query, first key, size)`` int triples; ValueError naming a bad one."""
    windows = tuple(tuple(window) for window in windows)
    bad = [window for window in windows if len(window) != 3 or not all(isinstance(v, (int, np.integer)) for v in window)
           or min(window) < 0 or window[2] < 1]
    if bad:
        raise ValueError("Each window is (first query, first key, size): positions from 0, a size from 1. "
                         f"Received: windows={windows!r}")
    return tuple(tuple(int(value) for value in window) for window in windows)


def line_count(config: LiveConfig) -> int:
    """B, the number of source (= target) lines of ``config``; ValueError on bad input, as `run_live`."""
    return plan_of(config).batch


def sequence_lengths(config: LiveConfig) -> tuple[int, int]:
    """``(N_source, N_target)`` of ``config``'s lines (a trained model's target is its own length); ValueError on
    bad input, as `run_live`."""
    return _lengths(plan_of(config))


def _dimensions(model, config: LiveConfig) -> tuple:
    """``(d_model, layers, heads)`` of ``model``, or of ``config`` when no model was built."""
    if model is None:
        return config.d_model, config.num_layers, config.num_heads
    return model.d_model, model.num_layers, model.num_heads


def run_live(config: LiveConfig, cache: ModelCache = MODELS, *, stacks=STACKS, lines=None, windows=(),
             means_of: LiveConfig | None = None, pool_to: int | None = None) -> LiveResult:
    """Compute what the pages draw for ``config``; ValueError on bad input.

    ``stacks``: the attention maps to compute, of those the architecture has (``result.attention`` has these keys
    only: no "encoder" for a decoder-only model, only "encoder" for an encoder-only one); a page
    that draws none passes ``()``: the model does not run, and a random-weights model is not even
    built (masks and positional encodings need only the configuration).
    ``lines``: the lines (0-based batch rows) whose attention maps are computed, in that order; None:
    every line. A line's maps do not depend on the other lines, so one line's are the same either way.
    ``windows``: ``((first query, first key, size), …)``, the windows a block-wise run keeps exact (else ignored).
    ``means_of``: the configuration whose lines define mean-ablation's means (None: ``config``'s own; a page that
    runs its lines in parts passes the whole): `transformer.live.plan.ablation_means`.
    ``pool_to``: at most this many cells a side; longer maps come back max-pooled on the model's device before the
    copy to NumPy (``attention_factor`` says by how much), for a caller that draws only pooled maps.
    """
    plan = plan_of(config, means_of)
    _check_pool_to(pool_to)
    windows = _windows(windows)
    stacks = _stacks(stacks, config)
    inputs = plan.inputs
    batches, predictions = inputs.batches, inputs.predictions
    check_budget(config, plan.batch)
    rows = plan.rows(lines)
    if stacks:  # what the forward passes will cost, refused past the hard limits before anything is spent
        check_cost(live_cost(config, len(rows), *_lengths(plan)))
    own = plan.source.own_run(config, inputs, plan.device, stacks, rows)
    if own is not None:  # a model from outside: transformer.live.outside
        return own
    own_shape = not plan.source.supports.shape  # a trained model: its sizes are read off it, maps drawn or not
    entry = plan.model(cache) if stacks or own_shape else None  # masks need no model (~0.5 s build)
    device = entry.device if entry else plan.device
    d_model, layers, heads = _dimensions(entry.model if entry else None, config)
    ablate = plan.ablate
    pool = _pool_factor(pool_to, batches.source.ids.shape[1], batches.target.ids.shape[1])
    function = (entry.attention_function(stacks, ablate, config.ablation, inputs.means, pool)
                if stacks and config.seq_len <= FULL_ATTENTION_MAX else None)
    masks = inputs.masks
    blockwise = None
    with tf.device(device):
        started = time.perf_counter()
        model_inputs = plan.model_inputs(rows)
        if stacks and config.seq_len > FULL_ATTENTION_MAX:  # eager, queries a block at a time
            blockwise = blockwise_attention(entry.model, stacks, *model_inputs, windows=windows)
            attention = blockwise.attention  # (L, B', H, ⌈N_q/f⌉, ⌈N_k/f⌉)
        else:
            attention = function(*model_inputs) if function else {}
            attention = {name: weights.numpy() for name, weights in attention.items()}  # (L, B, H, N_q, N_k)
        seconds = time.perf_counter() - started
    encoding = encoding_array(config.seq_len, d_model, device)  # (N, D)
    (batch, n_source), n_target = batches.source.ids.shape, batches.target.ids.shape[1]
    applied = {
        "encoder": np.broadcast_to(masks.run_source[:, 0], (batch, n_source, n_source)),
        "decoder": masks.run_target[:, 0],
        "cross": np.broadcast_to(masks.run_source[:, 0].any(axis=1, keepdims=True), (batch, n_target, n_source)),
    }
    return LiveResult(
        config=config,
        source_tokens=batches.source.tokens, target_tokens=batches.target.tokens,
        source_ids=batches.source.ids, target_ids=batches.target.ids,
        source_truncated=batches.source.truncated, target_truncated=batches.target.truncated,
        pad_ids=batches.pad_ids,
        source_padding_mask=masks.source_padding, target_padding_mask=masks.target_padding,
        subsequent_mask=masks.future, target_mask=masks.target,
        positional_encoding=encoding, attention=attention, applied_masks=applied,
        device=device, device_label=device_label(device), tf_version=tf.__version__,
        layers=layers, heads=heads,
        compute_seconds=seconds, traces=function.traces if function else 0, builds=cache.builds,
        notices=batches.notices,
        predictions=predictions,
        lines=rows,
        **(dict(attention_factor=blockwise.factor, windows=blockwise.windows, window_weights=blockwise.window_weights,
                block_checks=blockwise.checks) if blockwise else dict(attention_factor=pool if function else 1)),
    )


def read_lines(config: LiveConfig, cache: ModelCache = MODELS) -> LiveResult:
    """``config``'s lines as its model reads them (tokens, ids, masks, the model's sizes, a trained model's
    answers), no attention computed: `run_live` asked for no stacks."""
    return run_live(config, cache, stacks=())


def _lengths(plan: Plan) -> tuple[int, int]:
    """``(N_source, N_target)`` of ``plan``'s lines as the model runs them."""
    batches = plan.inputs.batches
    return batches.source.ids.shape[1], batches.target.ids.shape[1]


def run_cost(config: LiveConfig, stacks=STACKS, lines=None) -> RunCost:
    """What `run_live` of ``config`` would cost (`transformer.live.run_cost`): nothing when no stack is drawn (the
    model does not run); ValueError on bad input, as `run_live`."""
    plan = plan_of(config)
    if not _stacks(stacks, config):
        return RunCost(0.0, 0, "no model run")
    return live_cost(config, len(plan.rows(lines)), *_lengths(plan))


def _check_pool_to(pool_to) -> None:
    """ValueError unless ``pool_to`` is None or a whole number of cells from 1."""
    if pool_to is not None and (not isinstance(pool_to, (int, np.integer)) or pool_to < 1):
        raise ValueError("pool_to is the most cells a side a pooled map may have, from 1. "
                         f"Received: pool_to={pool_to!r}")


def _pool_factor(pool_to: int | None, *lengths: int) -> int:
    """1 without ``pool_to`` or when every length fits it; else the power of two that brings them to it."""
    return 1 if pool_to is None or max(lengths) <= pool_to else power_of_two_block(max(lengths), pool_to)
