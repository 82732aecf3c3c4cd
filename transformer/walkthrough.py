"""One multi-head attention of the live model, opened up: every intermediate as NumPy.

Used by the dot-product lab and the shapes page, and to check this engine
against ``keras.layers.MultiHeadAttention`` on the live inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from transformer.live import (
    MODELS, STACKS, LiveConfig, ModelCache, _masks, encode_batches, encode_trained, on_engine_thread, validate,
)
from transformer.reference import compare_with_keras


@dataclass(frozen=True)
class Walkthrough:
    """Intermediates of one attention layer for the whole batch.

    tensors: name -> array, in the order the computation makes them (see
      `MultiHeadAttention.trace`): ``query``/``key``/``value`` ``(B, N, d_model)``,
      ``*_projected`` ``(B, N, d_model)``, ``*_heads`` ``(B, H, N, d_k)``,
      ``scores``/``scaled``/``masked``/``weights`` ``(B, H, N_q, N_k)``,
      ``context`` ``(B, H, N_q, d_k)``, ``merged``/``output`` ``(B, N_q, d_model)``.
    mask: ``(B, N_q, N_k)`` bool, True = may attend.
    keras_difference: max |this engine - keras.layers.MultiHeadAttention| over
      ``{"output", "weights"}``, same weights and inputs, rows with an allowed key.
    """

    stack: str
    layer: int
    tensors: dict
    mask: np.ndarray
    keras_difference: dict

    @property
    def shapes(self) -> dict:
        return {name: tuple(array.shape) for name, array in self.tensors.items()}


def _inputs_of_layer(model, stack, layer, src, tgt, src_mask, tgt_mask):
    """The attention sublayer of (stack, layer) and its query, key, value and mask."""
    memory = model.source_positions(model.source_embedding(src))  # (B, N_s, D)
    for block in model.encoder.blocks[: layer if stack == "encoder" else None]:
        memory, _ = block(memory, mask=src_mask)  # (B, N_s, D)
    if stack == "encoder":
        return model.encoder.blocks[layer].self_attention_block.sublayer, (memory, memory, memory, src_mask)
    y = model.target_positions(model.target_embedding(tgt))  # (B, N_t, D)
    for block in model.decoder.blocks[:layer]:
        y, _, _ = block(y, memory, self_mask=tgt_mask, memory_mask=src_mask)  # (B, N_t, D)
    block = model.decoder.blocks[layer]
    if stack == "decoder":
        return block.self_attention_block.sublayer, (y, y, y, tgt_mask)
    y, _ = block.self_attention_block(y, y, y, mask=tgt_mask)  # (B, N_t, D)
    return block.cross_attention_block.sublayer, (y, memory, memory, src_mask)


@on_engine_thread
def attention_walkthrough(config: LiveConfig, stack: str = "encoder", layer: int = 0,
                          cache: ModelCache = MODELS) -> Walkthrough:
    """Every intermediate of the attention sublayer ``stack`` / ``layer`` for ``config``."""
    validate(config)
    if stack not in STACKS:
        raise ValueError(f"stack must be one of {STACKS}. Received: stack={stack!r}")
    if not isinstance(layer, int) or not 0 <= layer < config.num_layers:
        raise ValueError(f"layer must be from 0 to {config.num_layers - 1}. Received: layer={layer!r}")
    batches = encode_trained(config)[0] if config.trained else encode_batches(config)
    entry = cache.for_config(config)
    with tf.device(entry.device):
        _, _, _, run_source, run_target = _masks(config, batches)
        layer_attention, (query, key, value, mask) = _inputs_of_layer(
            entry.model, stack, layer, batches.source.ids, batches.target.ids, run_source, run_target
        )
        tensors = {name: t.numpy() for name, t in layer_attention.trace(query, key, value, mask).items()}
        full_mask = tf.broadcast_to(mask, tf.shape(tensors["weights"]))[:, 0].numpy()  # (B, N_q, N_k)
        difference = compare_with_keras(layer_attention, query, key, value, full_mask)
    return Walkthrough(stack, layer, tensors, full_mask, difference)
