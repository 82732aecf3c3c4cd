"""Incremental decoding with a key/value cache: each step runs the decoder for the newest position only.

The decoder's self-attention keys and values of earlier positions do not change (the look-ahead
mask keeps each position from seeing later ones), so they are kept; the cross-attention keys and
values of the source are computed once. `KVCache.step` must give what the whole model gives for
the last position of the prefix (`transformer.decoding` checks it at every step).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from transformer.attention import attention_stages
from transformer.positional import positional_encoding


class KVCache:
    """The cache of one source line's decoding. ``keys[l]``, ``values[l]``: ``(1, H, t, d_k)`` self-attention
    keys and values of decoder layer ``l`` for the ``t`` positions decoded so far; ``cross[l]``: the source's
    ``(1, H, N_s, d_k)`` keys and values for that layer's cross-attention."""

    def __init__(self, model, memory, memory_mask):
        self.model, self.memory_mask = model, memory_mask  # memory (1, N_s, D); mask (1, 1, 1, N_s)
        blocks = model.decoder.blocks
        self.keys, self.values = [None] * len(blocks), [None] * len(blocks)
        self.cross = []
        for attention in model.attention_layers("cross"):
            self.cross.append((attention.split_heads(attention.transform_key(memory)),  # (1, H, N_s, d_k)
                               attention.split_heads(attention.transform_value(memory))))  # (1, H, N_s, d_k)

    @property
    def length(self) -> int:
        """Positions cached so far."""
        return 0 if self.keys[0] is None else int(self.keys[0].shape[2])

    def step(self, token_id: int) -> np.ndarray:
        """Feed the token at the next position; return the logits ``(V,)`` of the token after it."""
        position, d_model = self.length, self.model.d_model
        x = self.model.target_embedding(tf.constant([[token_id]], tf.int32))  # (1, 1, D)
        x = x + positional_encoding(position + 1, d_model)[position]  # (1, 1, D): the encoding of this position
        for layer, block in enumerate(self.model.decoder.blocks):
            x = self._self_attention(layer, block.self_attention_block.layer_norm, x)  # (1, 1, D)
            x = self._cross_attention(layer, block.cross_attention_block.layer_norm, x)  # (1, 1, D)
            x = block.feed_forward_block(x)  # (1, 1, D)
        return self.model.project_logits(x)[0, -1].numpy()  # (V,)

    def _self_attention(self, layer: int, layer_norm, x):
        attention = self.model.attention_layers("decoder")[layer]
        q = attention.split_heads(attention.transform_query(x))  # (1, H, 1, d_k)
        k = attention.split_heads(attention.transform_key(x))  # (1, H, 1, d_k)
        v = attention.split_heads(attention.transform_value(x))  # (1, H, 1, d_k)
        if self.keys[layer] is not None:
            k = tf.concat([self.keys[layer], k], axis=2)  # (1, H, t + 1, d_k)
            v = tf.concat([self.values[layer], v], axis=2)  # (1, H, t + 1, d_k)
        self.keys[layer], self.values[layer] = k, v
        stages = attention_stages(q, k, v)  # every cached position is at or before this one: no mask needed
        return layer_norm(x + attention.transform_out(attention.merge_heads(stages.output)))

    def _cross_attention(self, layer: int, layer_norm, x):
        attention = self.model.attention_layers("cross")[layer]
        q = attention.split_heads(attention.transform_query(x))  # (1, H, 1, d_k)
        keys, values = self.cross[layer]
        stages = attention_stages(q, keys, values, self.memory_mask)  # (1, H, 1, N_s) weights
        return layer_norm(x + attention.transform_out(attention.merge_heads(stages.output)))

    def arrays(self) -> list[dict]:
        """Per decoder layer: ``{"keys", "values"}`` ``(H, t, d_k)`` and ``{"cross_keys", "cross_values"}``
        ``(H, N_s, d_k)`` as float32 NumPy."""
        return [{"keys": k[0].numpy(), "values": v[0].numpy(), "cross_keys": ck[0].numpy(),
                 "cross_values": cv[0].numpy()} for k, v, (ck, cv) in zip(self.keys, self.values, self.cross)]

    def bytes(self) -> int:
        """Memory the cache holds, from its tensors' sizes (nothing is copied out)."""
        tensors = [*self.keys, *self.values, *(tensor for pair in self.cross for tensor in pair)]
        return sum(tensor.dtype.size * int(np.prod(tensor.shape)) for tensor in tensors)
