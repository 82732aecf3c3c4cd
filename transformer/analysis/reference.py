"""Independent references: ``keras.layers.MultiHeadAttention`` (``GroupQueryAttention`` for fewer key/value
heads) with this engine's weights. Keras has no rotary or ALiBi attention: those are checked against NumPy in
the tests, and `keras_gaps` gives no gaps for them."""

from __future__ import annotations

import warnings
import weakref

import keras
import numpy as np
import tensorflow as tf

from transformer.runtime.tf_patches import keras_dense_sublayers

_TWINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # our layer -> (its Keras twin, weights version)


def copy_to_keras(layer) -> keras.layers.Layer:
    """A built Keras MultiHeadAttention (GroupQueryAttention when ``layer`` has fewer key/value heads) holding
    ``layer``'s (our `MultiHeadAttention`) weights.

    Our Linear kernels ``(d_model, H·d_k)`` are Keras's ``(d_model, H, d_k)`` and
    ``(H, d_k, d_model)`` reshaped: heads are the consecutive d_k-wide column blocks.
    """
    heads, depth, width = layer.num_heads, layer.depth, layer.d_model
    if layer.num_kv_heads != heads:
        reference = keras.layers.GroupQueryAttention(head_dim=depth, num_query_heads=heads,
                                                     num_key_value_heads=layer.num_kv_heads)
    else:
        reference = keras.layers.MultiHeadAttention(num_heads=heads, key_dim=depth, value_dim=depth)
    probe = np.zeros((1, 1, width), np.float32)
    reference(probe, probe, probe)  # builds its weights
    return _copy_weights(layer, reference)


def keras_twin(layer, version=None) -> keras.layers.MultiHeadAttention:
    """Like `copy_to_keras`, but built once per layer.

    ``version``: a token that changes whenever ``layer``'s weights do (the live model's seed: its
    weights are re-seeded in place). The weights are copied again unless the twin already holds
    that same version; ``None`` (unknown) always copies.
    """
    known = _TWINS.get(layer)
    if known is None:
        twin = copy_to_keras(layer)
    else:
        twin, copied = known
        if version is None or version != copied:
            _copy_weights(layer, twin)
    _TWINS[layer] = (twin, version)
    return twin


def _copy_weights(layer, reference):
    heads, kv_heads, depth, width = layer.num_heads, layer.num_kv_heads, layer.depth, layer.d_model
    dense = keras_dense_sublayers(reference)
    pairs = [(dense[0], layer.transform_query, heads), (dense[1], layer.transform_key, kv_heads),
             (dense[2], layer.transform_value, kv_heads)]
    for theirs, ours, count in pairs:
        kernel, bias = _kernel_and_bias(ours)
        theirs.set_weights([kernel.reshape(width, count, depth), bias.reshape(count, depth)])
    kernel, bias = _kernel_and_bias(layer.transform_out)
    dense[3].set_weights([kernel.reshape(heads, depth, width), bias])
    return reference


def _kernel_and_bias(linear) -> tuple:
    """A projection's ``(kernel (D_in, D_out), bias (D_out,))``: a zero bias for one without (a Llama's)."""
    kernel, *bias = (w.numpy() for w in linear.weights)
    return kernel, bias[0] if bias else np.zeros(kernel.shape[-1], kernel.dtype)


def keras_gaps(layer, twin, query, key, value, mask) -> dict:
    """``{"output", "weights"}``: scalar tensors, max |layer - twin| over the query rows with an allowed key.

    TensorFlow ops only, so it runs eagerly or inside a traced graph. ``mask``: ``(B, N_q, N_k)`` bool.
    ``{}`` for a layer with rotary or ALiBi positions (no Keras layer has them).
    """
    if layer.positions is not None:
        return {}
    ours = layer(query, key, value, mask=mask[:, None])  # (B, N_q, D), (B, H, N_q, N_k)
    with warnings.catch_warnings():  # one key (N_k = 1): Keras warns that a softmax over one value is always 1
        warnings.filterwarnings("ignore", message="You are using a softmax over axis", category=UserWarning)
        theirs = twin(query, value, key, attention_mask=mask, return_attention_scores=True)  # the same shapes
    rows = tf.reduce_any(mask, axis=-1)  # (B, N_q) queries with at least one allowed key
    output_gap = tf.reduce_max(tf.abs(ours[0] - theirs[0]), axis=-1)  # (B, N_q)
    weight_gap = tf.reduce_max(tf.abs(ours[1] - theirs[1]), axis=[1, 3])  # (B, N_q)
    return {name: tf.reduce_max(tf.where(rows, gap, tf.zeros_like(gap)))  # 0 when no row has a key
            for name, gap in (("output", output_gap), ("weights", weight_gap))}
