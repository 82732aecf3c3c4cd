"""Scaled dot-product attention and multi-head attention (paper section 3.2).

Mask convention everywhere in this package: a boolean mask, **True = the
query may attend to the key**, broadcastable to ``(..., N_q, N_k)``.
A query whose keys are all masked gets weights exactly 0 and output 0.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import keras
import tensorflow as tf

from transformer.core.dropout import apply_dropout, dropout_layer
from transformer.core.linear import Linear
from transformer.core.relative_positions import ROPE_BASE, alibi_bias, rotary
from transformer.core.shape import check_heads, check_kv_heads


class AttentionStages(NamedTuple):
    """Every intermediate of one scaled dot-product attention.

    Shapes for query ``(..., N_q, d_k)``, key ``(..., N_k, d_k)`` and value
    ``(..., N_k, d_v)``:
      scores  (..., N_q, N_k)  Q·Kᵀ
      scaled  (..., N_q, N_k)  Q·Kᵀ / sqrt(d_k)
      weights (..., N_q, N_k)  softmax over keys; 0 where masked, 0 on fully masked rows
      output  (..., N_q, d_v)  weights · V
      mask    the mask as given (None: every key allowed)
    ``masked`` (scaled with -inf where the mask is False) is derived on demand, for the pictures.
    """

    scores: tf.Tensor
    scaled: tf.Tensor
    weights: tf.Tensor
    output: tf.Tensor
    mask: tf.Tensor | None = None

    @property
    def masked(self) -> tf.Tensor:
        """``scaled`` with -inf where the mask is False: ``(..., N_q, N_k)``."""
        if self.mask is None:
            return self.scaled
        full_mask = tf.broadcast_to(tf.cast(self.mask, tf.bool), tf.shape(self.scaled))  # (..., N_q, N_k)
        return tf.where(full_mask, self.scaled, tf.constant(-math.inf, self.scaled.dtype))  # -inf if blocked


def masked_softmax(logits, mask=None):
    """Softmax over the last axis that gives exactly 0 where ``mask`` is False.

    Args:
      logits: float tensor ``(..., N_q, N_k)``.
      mask: optional boolean tensor broadcastable to ``logits``; True = may attend.

    Returns:
      Weights shaped like ``logits``. Rows with at least one allowed key sum to 1;
      rows with none are all 0 (never NaN, never spread over masked keys).
    """
    logits = tf.convert_to_tensor(logits)  # (..., N_q, N_k)
    if mask is None:
        return tf.nn.softmax(logits, axis=-1)  # (..., N_q, N_k)
    mask = tf.cast(mask, tf.bool)  # broadcastable: never spread to the logits' shape (tf.where broadcasts)
    lowest = tf.constant(logits.dtype.min, dtype=logits.dtype)  # () the most negative finite value
    filled = tf.where(mask, logits, lowest)  # (..., N_q, N_k), finite everywhere
    weights = tf.nn.softmax(filled, axis=-1)  # (..., N_q, N_k)
    return weights * tf.cast(mask, weights.dtype)  # masked and empty rows -> exactly 0; the rest × 1 exactly


def _as(tensor, dtype):
    tensor = tf.convert_to_tensor(tensor)
    return tensor if tensor.dtype == dtype else tf.cast(tensor, dtype)


def _sqrt_depth(query):
    """``sqrt(d_k)``: a Python float when d_k is static (no eager ops), else a scalar tensor."""
    depth = query.shape[-1]
    if depth is not None:
        return math.sqrt(depth)
    return tf.sqrt(tf.cast(tf.shape(query)[-1], query.dtype))  # ()


def attention_stages(query, key, value, mask=None, dropout=None, training=False, bias=None) -> AttentionStages:
    """Scaled dot-product attention, the package's one kernel: softmax(Q·Kᵀ / sqrt(d_k) + bias) · V.

    Args:
      query: ``(..., N_q, d_k)``.
      key: ``(..., N_k, d_k)``.
      value: ``(..., N_k, d_v)``.
      mask: optional boolean, broadcastable to ``(..., N_q, N_k)``; True = may attend.
      dropout: optional ``keras.layers.Dropout`` on the weights (``training`` only); the
        returned ``weights`` are those before dropout, what a picture of a head shows.
      bias: optional float, broadcastable to ``(..., N_q, N_k)``, added to the scaled logits (ALiBi);
        ``scaled`` includes it.

    Returns:
      `AttentionStages` (scores, scaled, weights, output).
    """
    query = tf.convert_to_tensor(query)  # (..., N_q, d_k)
    key, value = _as(key, query.dtype), _as(value, query.dtype)  # (..., N_k, d_k), (..., N_k, d_v)
    scores = tf.matmul(query, key, transpose_b=True)  # (..., N_q, N_k)
    scaled = scores / _sqrt_depth(query)  # (..., N_q, N_k)
    if bias is not None:
        scaled = scaled + _as(bias, scaled.dtype)  # (..., N_q, N_k)
    weights = masked_softmax(scaled, mask)  # (..., N_q, N_k)
    output = tf.matmul(apply_dropout(dropout, weights, training), value)  # (..., N_q, d_v)
    return AttentionStages(scores, scaled, weights, output, mask)


def scaled_dot_product_attention(query, key, value, mask=None):
    """softmax(Q·Kᵀ / sqrt(d_k)) · V, as in the paper (not the seed's 1/d_k): `attention_stages`' two results.

    Args:
      query: ``(..., N_q, d_k)``.
      key: ``(..., N_k, d_k)``.
      value: ``(..., N_k, d_v)``.
      mask: optional boolean, broadcastable to ``(..., N_q, N_k)``; True = may attend.

    Returns:
      ``(output (..., N_q, d_v), weights (..., N_q, N_k))``.
    """
    stages = attention_stages(query, key, value, mask)
    return stages.output, stages.weights


def batch_and_length(x):
    """``(B, N)`` of ``x`` ``(B, N, ...)``: Python ints where the shape is known (every eager run), scalar
    tensors where it is not (a graph traced with batch and length left free).

    Slicing ``tf.shape(x)`` runs ~8 small ops in an eager run (the slices' bounds are made into tensors);
    splitting and merging the heads did that four times per attention layer, ~10 % of a default model's eager
    forward pass.
    """
    static = tuple(x.shape)[:2]
    if None not in static:
        return static
    dynamic = tf.shape(x)  # (rank,)
    return tuple(dynamic[axis] if size is None else size for axis, size in enumerate(static))




IN_ATTENTION_POSITIONS = (None, "rope", "alibi")


class AttentionCache:
    """What one attention layer keeps between calls of cached decoding: ``keys``, ``values`` ``(B, H_kv, t, d_k)``
    (rotated, with RoPE). Self-attention appends each call's new positions (the look-ahead mask keeps the earlier
    ones from changing); cross-attention (``static``) projects the memory once and reuses it."""

    def __init__(self, static: bool = False):
        self.static = static
        self.keys = self.values = None

    @property
    def length(self) -> int:
        """Positions held: t."""
        return 0 if self.keys is None else int(self.keys.shape[2])


class AttentionHook:
    """The attention layers' override point for one run of a model: `Transformer.encode`, `decode` and ``call``
    hand ``hook`` to every `MultiHeadAttention`, which calls ``observe`` with its inputs before attending and
    uses ``kernel(layer)`` instead of `attention_stages` when that is not None. ``layer.site`` names the layer:
    ``("encoder" | "decoder" | "cross", index)``. The stacks hand it their residual stream too (``stream``)."""

    def observe(self, layer, query, key, value, mask) -> None:
        """``query (B, N_q, d_model)``, ``key``/``value (B, N_k, d_model)``, ``mask`` as the layer got them."""

    def kernel(self, layer):
        """None (scaled dot-product attention), or an object whose ``attend(q, k, v, mask, bias)`` returns
        ``(context (B, H, N_q, d_v), weights)`` from ``q (B, H, N_q, d_k)``, ``k``, ``v (B, H, N_k, d_k)``."""
        return None

    def stream(self, site, x):
        """The residual stream to carry on with at ``site`` (``("encoder" | "decoder", layer)``: entering block
        ``layer``; ``layer`` = L: the stack's output, after its final LayerNorm), ``x (B, N, d_model)``: ``x``."""
        return x


class MaskConsumer:
    """Mixin for layers whose ``mask`` argument is an attention mask used inside ``call``.

    Keras treats a ``mask`` argument as a padding mask to carry along; these layers
    consume it instead, so their outputs carry no Keras mask.
    """

    def compute_mask(self, inputs, previous_mask=None):
        return None


@keras.saving.register_keras_serializable(package="attention_lab")
class MultiHeadAttention(MaskConsumer, keras.layers.Layer):
    """Multi-head attention (paper section 3.2.2) with d_k = d_v = d_model / H.

    Args:
      d_model: model width; the output has this last dimension.
      num_heads: H, a divisor of d_model.
      dropout: dropout rate on the attention weights during training.
      num_kv_heads: H_kv key/value heads, a divisor of H (None: H, the paper). Query head h uses key/value
        head ``h // (H / H_kv)`` (grouped-query attention, Ainslie et al. 2023; 1 = multi-query, Shazeer 2019).
      positions: ``"rope"`` rotates queries and keys by their positions (RoFormer), ``"alibi"`` adds
        ``-slope_h·|i − j|`` to head h's logits (Press et al. 2022); None: neither (the paper's positions
        are added to the embeddings, outside this layer).
      use_bias: the four projections add a bias (the paper); False: none (a Llama).
      rope_base: RoPE's base (θ_i = base^(−2i/d_k); 10000 in RoFormer).

    Call arguments:
      query: ``(B, N_q, d_model)``.
      key: ``(B, N_k, d_model)``.
      value: ``(B, N_k, d_model)``.
      mask: optional boolean, broadcastable to ``(B, H, N_q, N_k)``; True = may attend.
        A padding mask is ``(B, 1, 1, N_k)``, a target mask ``(B, 1, N_q, N_k)``.
      training: apply dropout when True.

    Returns:
      ``(output (B, N_q, d_model), weights (B, H, N_q, N_k))``; weights are those
      before dropout, so they are what the picture of a head should show.
    """

    def __init__(self, d_model, num_heads, dropout=0.0, num_kv_heads=None, positions=None, use_bias=True,
                 rope_base=ROPE_BASE, **kwargs):
        super().__init__(**kwargs)
        check_heads(d_model, num_heads)
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        check_kv_heads(num_heads, num_kv_heads)
        if positions not in IN_ATTENTION_POSITIONS:
            raise ValueError(f"positions must be one of {IN_ATTENTION_POSITIONS}. Received: positions={positions!r}")
        self.d_model = d_model  # model width
        self.num_heads = num_heads  # H
        self.num_kv_heads = num_kv_heads  # H_kv
        self.depth = d_model // num_heads  # d_k = d_v
        self.dropout = dropout
        self.positions = positions
        self.use_bias, self.rope_base = use_bias, rope_base
        self.transform_query = Linear(d_model, use_bias=use_bias, name="transform_query")
        self.transform_key = Linear(num_kv_heads * self.depth, use_bias=use_bias, name="transform_key")
        self.transform_value = Linear(num_kv_heads * self.depth, use_bias=use_bias, name="transform_value")
        self.transform_out = Linear(d_model, use_bias=use_bias, name="transform_out")
        self.weights_dropout = dropout_layer(dropout)  # None at rate 0
        self.site = None  # ("encoder" | "decoder" | "cross", layer index), given by the block that holds it

    def build(self, query_shape, key_shape=None, value_shape=None):
        key_shape = query_shape if key_shape is None else key_shape
        value_shape = key_shape if value_shape is None else value_shape
        self.transform_query.build(query_shape)
        self.transform_key.build(key_shape)
        self.transform_value.build(value_shape)
        self.transform_out.build(tuple(query_shape[:-1]) + (self.d_model,))

    def split_heads(self, x, heads=None):
        """``(B, N, heads·d_k)`` -> ``(B, heads, N, d_k)`` (``heads``: H unless given)."""
        batch, length = batch_and_length(x)
        x = tf.reshape(x, (batch, length, heads or self.num_heads, self.depth))  # (B, N, H, d_k)
        return tf.transpose(x, (0, 2, 1, 3))  # (B, H, N, d_k)

    def share_kv_heads(self, x):
        """``(B, H_kv, N, d_k)`` -> ``(B, H, N, d_k)``: each key/value head repeated for its group of query heads."""
        groups = self.num_heads // self.num_kv_heads
        return x if groups == 1 else tf.repeat(x, groups, axis=1)  # (B, H, N, d_k)

    def position_bias(self, n_q, n_k, query_start=0):
        """ALiBi's ``(H, N_q, N_k)`` bias (queries from position ``query_start``), or None for other positions."""
        if self.positions != "alibi":
            return None
        return alibi_bias(self.num_heads, n_q, n_k, query_start)  # (H, N_q, N_k)

    def merge_heads(self, x):
        """``(B, H, N, d_k)`` -> ``(B, N, d_model)``."""
        x = tf.transpose(x, (0, 2, 1, 3))  # (B, N, H, d_k)
        batch, length = batch_and_length(x)
        return tf.reshape(x, (batch, length, self.d_model))  # (B, N, d_model)

    def project(self, query, key, value):
        """Linear projections split into heads, rotated (RoPE) and shared (grouped-query): three
        ``(B, H, N, d_k)`` tensors."""
        q, k, v = self.heads(self.transform_query(query), self.transform_key(key), self.transform_value(value))
        return q, self.share_kv_heads(k), self.share_kv_heads(v)

    def heads(self, query, key, value, start=0):
        """Projected ``(B, N_q, d_model)``, ``(B, N_k, H_kv·d_k)`` ×2 -> ``q (B, H, N_q, d_k)``, ``k``, ``v``
        ``(B, H_kv, N_k, d_k)``, rotated (RoPE) as positions ``start``, ``start + 1`` … (queries and keys alike)."""
        q = self.split_heads(query)  # (B, H, N_q, d_k)
        k = self.split_heads(key, self.num_kv_heads)  # (B, H_kv, N_k, d_k)
        v = self.split_heads(value, self.num_kv_heads)  # (B, H_kv, N_k, d_v)
        if self.positions == "rope":
            q = rotary(q, start + tf.range(batch_and_length(query)[1]), self.rope_base)  # (B, H, N_q, d_k)
            k = rotary(k, start + tf.range(batch_and_length(key)[1]), self.rope_base)  # (B, H_kv, N_k, d_k)
        return q, k, v

    def cached_heads(self, query, key, value, cache):
        """`heads` for a call that keeps its keys and values in ``cache`` (an `AttentionCache`): self-attention's
        new positions come after the cached ones and join them; cross-attention's memory is projected once.
        Returns ``(q (B, H, N_q, d_k), k, v (B, H_kv, t + N, d_k), start)``, ``start`` the first query's position."""
        if cache.static:
            q = self.split_heads(self.transform_query(query))  # (B, H, N_q, d_k): no positions in cross-attention
            if cache.keys is None:
                cache.keys = self.split_heads(self.transform_key(key), self.num_kv_heads)  # (B, H_kv, N_s, d_k)
                cache.values = self.split_heads(self.transform_value(value), self.num_kv_heads)
            return q, cache.keys, cache.values, 0
        start = cache.length
        q, k, v = self.heads(self.transform_query(query), self.transform_key(key), self.transform_value(value), start)
        if cache.keys is not None:
            k = tf.concat([cache.keys, k], axis=2)  # (B, H_kv, t + N, d_k)
            v = tf.concat([cache.values, v], axis=2)  # (B, H_kv, t + N, d_v)
        cache.keys, cache.values = k, v
        return q, k, v, start

    def call(self, query, key=None, value=None, mask=None, training=False, cache=None, hook=None):
        """``key`` defaults to ``query`` and ``value`` to ``key`` (self-attention). ``cache``: an `AttentionCache`
        (cached decoding; ``mask`` then covers the cached keys too, None: every key). ``hook``: an `AttentionHook`."""
        key = query if key is None else key
        value = key if value is None else value
        if hook is not None:
            hook.observe(self, query, key, value, mask)
        if cache is None:
            q, k, v = self.heads(self.transform_query(query), self.transform_key(key), self.transform_value(value))
            start = 0
        else:
            q, k, v, start = self.cached_heads(query, key, value, cache)
        k, v = self.share_kv_heads(k), self.share_kv_heads(v)  # (B, H, N_k, d_k) each
        bias = self.position_bias(tf.shape(q)[2], tf.shape(k)[2], start)  # (H, N_q, N_k) or None
        kernel = None if hook is None else hook.kernel(self)
        if kernel is not None:  # e.g. queries a block at a time, the weights coming back pooled (blockwise)
            context, weights = kernel.attend(q, k, v, mask, bias)  # (B, H, N_q, d_v), the kernel's weights
        else:
            stages = attention_stages(q, k, v, mask, self.weights_dropout, training, bias)
            context, weights = stages.output, stages.weights  # (B, H, N_q, d_v), (B, H, N_q, N_k)
        return self.transform_out(self.merge_heads(context)), weights  # (B, N_q, d_model), weights

    def intermediates(self, query, key, value, mask=None):
        """Run the layer (no dropout) and return every intermediate tensor by name.

        Keys, in order: inputs, projected (after the Linear layers), the key/value heads as stored
        ``(B, H_kv, N_k, d_k)``, split heads (rotated and shared), scores, weights, context, merged, output.
        Shapes follow the call docstring.
        """
        # (B, N_q, d_model), (B, N_k, d_model), (B, N_k, d_model)
        projected = [self.transform_query(query), self.transform_key(key), self.transform_value(value)]
        q, k, v = self.heads(*projected)  # (B, H, N_q, d_k), (B, H_kv, N_k, d_k) ×2
        k, v = self.share_kv_heads(k), self.share_kv_heads(v)  # (B, H, N_k, d_k) each
        stages = attention_stages(q, k, v, mask, bias=self.position_bias(tf.shape(q)[2], tf.shape(k)[2]))
        merged = self.merge_heads(stages.output)  # (B, N_q, d_model)
        return {
            "query": query, "key": key, "value": value,
            "query_projected": projected[0], "key_projected": projected[1],
            "value_projected": projected[2],
            "key_kv_heads": self.split_heads(projected[1], self.num_kv_heads),  # (B, H_kv, N_k, d_k): stored
            "value_kv_heads": self.split_heads(projected[2], self.num_kv_heads),  # (B, H_kv, N_k, d_v)
            "query_heads": q, "key_heads": k, "value_heads": v,
            "scores": stages.scores, "scaled": stages.scaled, "masked": stages.masked,
            "weights": stages.weights, "context": stages.output,
            "merged": merged, "output": self.transform_out(merged),
        }

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model, num_heads=self.num_heads, dropout=self.dropout,
                      num_kv_heads=self.num_kv_heads, positions=self.positions, use_bias=self.use_bias,
                      rope_base=self.rope_base)
        return config
