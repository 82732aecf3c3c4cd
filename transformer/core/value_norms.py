"""How much a head moves (Kobayashi et al. 2020, "Attention is Not Only a Weight"): the norm of what each key
adds to a query's output, not only the weight it gets.

Head h's output at query i is ``Σ_j α_ij · f_h(x_j)``, ``f_h(x) = (x W_V + b_V)_h W_O^h`` (its value, through
its rows of the output projection). The value-weighted view is ``‖α_ij · f_h(x_j)‖ = α_ij · ‖f_h(x_j)‖``: a key
that is looked at but carries a small vector moves little. Measured in one forward pass: an `AttentionHook`
sees every attention layer's value input and the layer's own projections give f.
"""

from __future__ import annotations

import tensorflow as tf

from transformer.core.attention import AttentionHook


class _ValueSizes(AttentionHook):
    """Keeps ``‖f_h(x_j)‖`` ``(B, H, N_k)`` of every attention layer it sees, by the layer's ``site``."""

    def __init__(self):
        self.sizes = {}

    def observe(self, layer, query, key, value, mask) -> None:
        values = layer.split_heads(layer.transform_value(value), layer.num_kv_heads)  # (B, H_kv, N_k, d_v)
        values = layer.share_kv_heads(values)  # (B, H, N_k, d_v)
        kernel = tf.reshape(layer.transform_out.kernel, (layer.num_heads, layer.depth, -1))  # (H, d_v, D)
        moved = tf.einsum("bhkv,hvd->bhkd", values, kernel)  # (B, H, N_k, D): f_h(x_j)
        self.sizes[layer.site] = tf.norm(moved, axis=-1)  # (B, H, N_k)


def value_weighted_norms(model, stacks, src, tgt, src_mask=None, tgt_mask=None) -> tuple[dict, dict]:
    """``(norms, weights)``: ``{stack: (L, B, H, N_q, N_k)}`` of ``‖α_ij f_h(x_j)‖`` and of the weights α, from one
    run of ``model`` on these inputs (as `Transformer.attention_maps` takes them)."""
    hook = _ValueSizes()
    weights = model.attention_maps(stacks, src, tgt, src_mask, tgt_mask, hook=hook)  # {stack: L × (B, H, N_q, N_k)}
    norms, stacked = {}, {}
    for stack in stacks:
        layers = model.attention_layers(stack)
        stacked[stack] = tf.stack(weights[stack])  # (L, B, H, N_q, N_k)
        sizes = tf.stack([hook.sizes[layer.site] for layer in layers])  # (L, B, H, N_k)
        norms[stack] = stacked[stack] * sizes[:, :, :, None, :]  # (L, B, H, N_q, N_k)
    return {stack: value.numpy() for stack, value in norms.items()}, \
        {stack: value.numpy() for stack, value in stacked.items()}
