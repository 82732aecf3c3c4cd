"""One multi-head attention of the live model, opened up: every intermediate as NumPy.

Used by the dot-product lab and the shapes page, and to check this engine
against ``keras.layers.MultiHeadAttention`` on the live inputs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from transformer.analysis.reference import keras_gaps, keras_twin
from transformer.core.attention import batch_and_length
from transformer.core.blockwise import FULL_ATTENTION_MAX
from transformer.live.config import LiveConfig
from transformer.live.model_cache import MODELS, ModelCache
from transformer.live.plan import plan_of
from transformer.runtime.device import device_label


@dataclass(frozen=True)
class Walkthrough:
    """Intermediates of one attention layer for the whole batch.

    tensors: name -> array, in the order the computation makes them (see
      `MultiHeadAttention.intermediates`): ``query``/``key``/``value`` ``(B, N, d_model)``,
      ``*_projected`` ``(B, N, d_model)``, ``*_heads`` ``(B, H, N, d_k)``,
      ``scores``/``scaled``/``masked``/``weights`` ``(B, H, N_q, N_k)``,
      ``context`` ``(B, H, N_q, d_k)``, ``merged``/``output`` ``(B, N_q, d_model)``.
    mask: ``(B, N_q, N_k)`` bool, True = may attend.
    keras_difference: max |this engine - keras.layers.MultiHeadAttention| over
      ``{"output", "weights"}``, same weights and inputs, rows with an allowed key.
    device_label, tf_version: where it ran (``"CPU"``, ``"GPU:0 — …"``) and with which TensorFlow, as in
      `LiveResult`.
    """

    stack: str
    layer: int
    tensors: dict
    mask: np.ndarray
    keras_difference: dict
    compute_seconds: float = 0.0  # the layer's run (with its Keras check) and the copy of its tensors to NumPy
    device_label: str = ""
    device: str = ""  # "/CPU:0" or "/GPU:0"
    tf_version: str = ""

    @property
    def shapes(self) -> dict:
        return {name: tuple(array.shape) for name, array in self.tensors.items()}


def _full_mask(mask, query, key):
    """A ``(B, 1, 1 or N_q, N_k)`` mask broadcast to ``(B, N_q, N_k)``."""
    (batch, n_q), n_k = batch_and_length(query), batch_and_length(key)[1]
    return tf.broadcast_to(mask, (batch, 1, n_q, n_k))[:, 0]  # (B, N_q, N_k)


def _walk_function(model, stack, layer, twin, hook=None):
    """``walk(src, tgt, src_mask, tgt_mask)`` -> (the layer's intermediates, its full mask, Keras gaps); the
    layers before it run with ``hook`` (an ablation)."""
    def walk(src, tgt, src_mask, tgt_mask):
        attention, (query, key, value, mask) = model.attention_inputs(stack, layer, src, tgt, src_mask, tgt_mask,
                                                                      hook)
        full_mask = _full_mask(mask, query, key)  # (B, N_q, N_k)
        gaps = keras_gaps(attention, twin, query, key, value, full_mask)
        return attention.intermediates(query, key, value, mask), full_mask, gaps
    return walk


def _check_function(model, stack, layer, twin, hook=None):
    """``check(src, tgt, src_mask, tgt_mask)`` -> Keras gaps only (no intermediates leave the graph)."""
    def check(src, tgt, src_mask, tgt_mask):
        attention, (query, key, value, mask) = model.attention_inputs(stack, layer, src, tgt, src_mask, tgt_mask,
                                                                      hook)
        return keras_gaps(attention, twin, query, key, value, _full_mask(mask, query, key))
    return check


def _run_layer_function(config: LiveConfig, stack: str, layer: int, cache: ModelCache, kind: str, make_function,
               line: int | None = None):
    """Validate, then run the model's `ModelFunction` ``(kind, stack, layer)`` made by ``make_function`` on
    ``config``'s batch (only its line ``line`` when given). One function per model, stack and layer:
    eager at first, traced once the engine is idle. Returns its outputs, the seconds the run took (not
    the model's build, nor the graph's making) and the device it ran on."""
    plan = plan_of(config)
    if config.seq_len > FULL_ATTENTION_MAX:
        raise ValueError(f"One layer's every intermediate is held whole (scores, weights … (B, H, N, N)): up to "
                         f"N = {FULL_ATTENTION_MAX}. Received: seq_len={config.seq_len}")
    if stack not in config.stacks:
        raise ValueError(f"A {config.architecture} model's stacks are {config.stacks}. Received: stack={stack!r}")
    if not isinstance(layer, int) or not 0 <= layer < config.num_layers:
        raise ValueError(f"layer must be from 0 to {config.num_layers - 1}. Received: layer={layer!r}")
    inputs = plan.inputs
    lines = plan.rows(None if line is None else (line,))
    entry = plan.model(cache)
    model = entry.model
    ablate = plan.ablate
    with tf.device(entry.device):
        version = (config.weights, entry.seed)  # a new seed redraws our weights in place: the twin copies them again
        twin = keras_twin(model.attention_layers(stack)[layer], version=version)
        hook = entry.ablation_hook(ablate, config.ablation, inputs.means)  # the layers before: ablated as the model
        key = (kind, stack, layer) + ((config.ablation,) if hook else ())  # one function per ablation kind
        function = entry.function(key, lambda: make_function(model, stack, layer, twin, hook))
        started = time.perf_counter()
        outputs = function(*plan.model_inputs(lines))  # B' = len(lines)
        return outputs, time.perf_counter() - started, entry.device


def attention_walkthrough(config: LiveConfig, stack: str = "encoder", layer: int = 0,
                          cache: ModelCache = MODELS) -> Walkthrough:
    """Every intermediate of the attention sublayer ``stack`` / ``layer`` for ``config``."""
    (tensors, full_mask, gaps), seconds, device = _run_layer_function(config, stack, layer, cache, "walkthrough",
                                                                       _walk_function)
    started = time.perf_counter()
    arrays = {name: tensor.numpy() for name, tensor in tensors.items()}
    seconds += time.perf_counter() - started
    return Walkthrough(stack, layer, arrays, full_mask.numpy(), {name: float(gap) for name, gap in gaps.items()},
                       compute_seconds=seconds, device_label=device_label(device), device=device,
                       tf_version=tf.__version__)


def keras_difference(config: LiveConfig, stack: str = "encoder", layer: int = 0,
                     cache: ModelCache = MODELS, line: int | None = None) -> dict:
    """`Walkthrough.keras_difference` alone: max |this engine - keras.layers.MultiHeadAttention| over
    ``{"output", "weights"}``, without copying the layer's intermediates out (at N = 512 they are
    ~100 MB). ``line``: check that line of the batch only (the one a page shows), else every line."""
    gaps, _, _ = _run_layer_function(config, stack, layer, cache, "keras", _check_function, line)
    return {name: float(gap) for name, gap in gaps.items()}
