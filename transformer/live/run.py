"""The one plain-data entry point: a frozen `LiveConfig` in, a `LiveResult` of NumPy arrays out.

The app calls `run_live` (and `transformer.live.walkthrough` for one layer's intermediates); it never
touches a tensor. The way of a configuration: `plan_of` (plan: checked once, its source, device, ids and
masks) -> `Plan.model` (model_cache: built once per architecture, seeded, or loaded) -> its attention
`ModelFunction` on the engine thread -> NumPy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

from transformer.core.blockwise import FULL_ATTENTION_MAX, blockwise_attention, power_of_two_block
from transformer.core.shape import ARCHITECTURE_STACKS, STACKS
from transformer.external.registry import EXTERNAL
from transformer.live.config import LiveConfig, check_budget
from transformer.live.inputs import encoding_array
from transformer.live.model_cache import MODELS, ModelCache
from transformer.live.plan import Plan, plan_of
from transformer.live.run_cost import RunCost, check_cost, live_cost
from transformer.live.sources import EXTERNAL_PAD_ID
from transformer.runtime.device import device_label
from transformer.tasks import SPECIALS


@dataclass(frozen=True)
class LiveResult:
    """Plain NumPy results of one configuration (B lines, N = seq_len, L layers, H heads).

    source_ids, target_ids: ``(B, N)`` int32; source_tokens, target_tokens: ``(B, N)`` text.
    source_padding_mask, target_padding_mask: ``(B, 1, 1, N)`` bool, True = may attend.
    subsequent_mask: ``(N, N)`` bool, lower triangular. target_mask: ``(B, 1, N, N)`` bool.
    positional_encoding: ``(N, d_model)`` float32.
    attention: ``{"encoder" | "decoder" | "cross": (L, B', H, N_q, N_k) float32}``, the stacks asked for,
      for the B' lines in ``lines`` (every line unless ``run_live`` was given some).
    lines: the 0-based lines (batch rows) ``attention`` holds, in its order. Every other field covers all B.
    Above 512 positions the run is block-wise: ``attention`` is max-pooled by ``attention_factor`` (to at most
    128 cells a side), ``window_weights`` holds the exact weights of each of ``windows`` and ``block_checks``
    the checks.
    layers, heads: the model's L and H (a trained model's own, whatever the config says).
    applied_masks: ``{stack: (B, N_q, N_k) bool}``, the mask each stack really used
      (all True where a toggle switched a mask off); a model from outside's per layer in ``layer_masks``
      (`mask_of`), padding's query rows and key columns both blocked (padding is never run).
    With trained weights the target is ``<s>`` + the model's own prediction, so
    the decoder side has N_t = (the task's longest target for N source tokens) + 1 positions.
    """

    config: LiveConfig
    source_tokens: tuple
    target_tokens: tuple
    source_ids: np.ndarray
    target_ids: np.ndarray
    source_truncated: tuple
    target_truncated: tuple
    pad_ids: tuple
    source_padding_mask: np.ndarray
    target_padding_mask: np.ndarray
    subsequent_mask: np.ndarray
    target_mask: np.ndarray
    positional_encoding: np.ndarray
    attention: dict
    applied_masks: dict
    layers: int
    heads: int
    device: str
    device_label: str
    tf_version: str
    compute_seconds: float
    traces: int
    builds: int
    attention_factor: int = 1  # > 1: a block-wise run; ``attention`` is max-pooled f × f (transformer.core.blockwise)
    windows: tuple = ()  # ((first query, first key, size), …) of ``window_weights``
    window_weights: dict = field(default_factory=dict)  # {stack: ((L, B', H, rows, cols), …)} exact, a window each
    block_checks: dict = field(default_factory=dict)  # {stack: blockwise.CheckTotals} of a block-wise run
    notices: tuple = field(default=())
    predictions: tuple = field(default=())  # trained weights: {source, prediction, expected, correct} per line
    lines: tuple = field(default=())
    layer_masks: dict = field(default_factory=dict)  # {stack: (L, B, N_q, N_k)}: a model whose layers differ

    def mask_of(self, stack: str, line: int, layer: int) -> np.ndarray:
        """``(N_q, N_k)`` bool: the mask ``stack``'s layer ``layer`` ran with on batch line ``line`` (a model from
        outside may have a causal layer beside bidirectional ones)."""
        if stack in self.layer_masks:
            return self.layer_masks[stack][layer, line]
        return self.applied_masks[stack][line]

    def masks_of(self, stack: str, line: int) -> np.ndarray:
        """Every layer's mask of ``stack`` on ``line``, broadcastable to ``(L, H, N_q, N_k)``: ``(L, 1, N_q, N_k)``
        where the layers differ, else ``(N_q, N_k)``."""
        if stack in self.layer_masks:
            return self.layer_masks[stack][:, line, None]
        return self.applied_masks[stack][line]

    def tokens_of(self, stack: str, line: int) -> tuple[tuple, tuple]:
        """``(query tokens, key tokens)`` of ``stack``'s attention for batch line ``line`` (N_q and N_k texts)."""
        queries, keys = stack_sides(stack, self.source_tokens, self.target_tokens)
        return tuple(queries[line]), tuple(keys[line])

    def real_queries(self, stack: str, line: int) -> np.ndarray:
        """``(N_q,)`` bool: True for the queries of ``stack`` on ``line`` that are not padding (a padding query still
        has keys: the padding mask masks keys)."""
        ids = stack_sides(stack, self.source_ids, self.target_ids)[0][line]  # (N_q,)
        return ~np.isin(ids, self.pad_ids)

    def special_keys(self, stack: str, line: int) -> np.ndarray:
        """``(N_k,)`` bool: True for the keys of ``stack`` on ``line`` that are padding, ``<s>`` or ``</s>``."""
        ids = stack_sides(stack, self.source_ids, self.target_ids)[1][line]  # (N_k,)
        tokens = np.array(self.tokens_of(stack, line)[1], dtype=object)
        return np.isin(ids, self.pad_ids) | np.isin(tokens, SPECIALS)


def stack_sides(stack: str, source, target) -> tuple:
    """``(the queries' side, the keys' side)`` of ``stack``'s attention, for any pair of per-side values (tokens,
    ids, lengths): the encoder attends from source to source, the decoder target to target, cross target to source."""
    return (source if stack == "encoder" else target), (target if stack == "decoder" else source)


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


def _external_stack(config: LiveConfig, model) -> str:
    """A model from outside has one stack: "decoder" (causal) or "encoder"; ValueError when ``config``'s
    architecture says otherwise."""
    architecture = "decoder-only" if model.causal else "encoder-only"
    if config.architecture != architecture:
        raise ValueError(f"{model.name} is {'a causal language model' if model.causal else 'a bidirectional encoder'}:"
                         f" architecture={architecture!r}. Received: architecture={config.architecture!r}")
    return ARCHITECTURE_STACKS[architecture][0]


def _external_result(plan: Plan, stacks: tuple, rows: tuple) -> LiveResult:
    """`run_live` for a model from outside: each line run at its own length, its weights placed in the padded
    ``(L, B', H, N, N)`` (zeros where padding is)."""
    config, device = plan.config, plan.device
    model = EXTERNAL.get(config.weights)
    stack = _external_stack(config, model)
    batches, masks = plan.inputs.batches, plan.inputs.masks
    n = config.seq_len
    attention, started = {}, time.perf_counter()
    if stack in stacks:
        weights = np.zeros((model.num_layers, len(rows), model.num_heads, n, n), np.float32)  # (L, B', H, N, N)
        with tf.device(device):
            for index, row in enumerate(rows):
                kept = int((batches.source.ids[row] != EXTERNAL_PAD_ID).sum())
                weights[:, index, :, :kept, :kept] = model.weights_of_ids(batches.source.ids[row, :kept])
        attention[stack] = weights
    seconds = time.perf_counter() - started
    real = batches.source.ids != EXTERNAL_PAD_ID  # (B, N): padding is drawn, never run
    layer_masks = model.layer_masks(n)[:, None] & real[None, :, :, None] & real[None, :, None, :]  # (L, B, N, N)
    applied = {stack: layer_masks[0]}  # (B, N, N): the first layer's; `LiveResult.mask_of` gives each layer's
    hidden = model.hidden_size
    return LiveResult(
        config=config, source_tokens=batches.source.tokens, target_tokens=batches.target.tokens,
        source_ids=batches.source.ids, target_ids=batches.target.ids,
        source_truncated=batches.source.truncated, target_truncated=batches.target.truncated,
        pad_ids=batches.pad_ids, source_padding_mask=masks.source_padding, target_padding_mask=masks.target_padding,
        subsequent_mask=masks.future, target_mask=masks.target,
        positional_encoding=np.zeros((0, hidden), np.float32), attention=attention, applied_masks=applied,
        device=device, device_label=device_label(device), tf_version=tf.__version__,
        layers=model.num_layers, heads=model.num_heads, compute_seconds=seconds, traces=0, builds=0,
        notices=batches.notices, predictions=(), lines=rows, layer_masks={stack: layer_masks})


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
    if not plan.source.supports.inside:
        return _external_result(plan, stacks, rows)
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
