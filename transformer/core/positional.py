"""Scaled embeddings and positions: the paper's sinusoids (sections 3.4, 3.5), learned positions, rotary
positions (RoFormer) and ALiBi's linear biases."""

from __future__ import annotations

import math

import keras
import tensorflow as tf

from transformer.core.attention import batch_and_length
from transformer.core.dropout import apply_dropout, dropout_layer
from transformer.core.relative_positions import alibi_bias, alibi_slopes, rotary, rotary_frequencies
from transformer.core.shape import POSITIONS

__all__ = ["LearnedPositions", "NoPositions", "PositionalEncoding", "ScaledEmbedding", "alibi_bias",
           "alibi_slopes", "in_attention", "position_layer", "positional_encoding", "rotary", "rotary_frequencies"]


def positional_encoding(length, d_model):
    """Sinusoidal encoding, ``(length, d_model)`` float32.

    ``PE[pos, 2i] = sin(pos / 10000^(2i/d_model))`` and
    ``PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model))``; an odd ``d_model`` ends
    on a sine column.
    """
    if (isinstance(length, int) and length < 0) or int(d_model) < 1:
        raise ValueError(
            f"positional_encoding needs length >= 0 and d_model >= 1. "
            f"Received: length={length}, d_model={d_model}"
        )
    dims = tf.range(d_model)  # (D,)
    pair_index = tf.cast(dims // 2 * 2, tf.float32)  # (D,) the "2i" of each column
    rates = tf.pow(10000.0, -pair_index / float(d_model))  # (D,)
    positions = tf.cast(tf.range(length), tf.float32)[:, None]  # (N, 1)
    angles = positions * rates[None, :]  # (N, D)
    is_even = tf.equal(dims % 2, 0)[None, :]  # (1, D)
    return tf.where(is_even, tf.sin(angles), tf.cos(angles))  # (N, D)


@keras.saving.register_keras_serializable(package="attention_lab")
class PositionalEncoding(keras.layers.Layer):
    """Adds the sinusoidal encoding to ``(B, N, d_model)`` inputs, then dropout.

    The encoding is computed for the input's own length at call time, so any
    sequence length works without rebuilding.
    """

    def __init__(self, d_model, dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.dropout = dropout
        self.dropout_layer = dropout_layer(dropout)  # None at rate 0

    def call(self, x, training=False, start=0):
        """``start``: the position of ``x``'s first row (cached decoding feeds later positions alone)."""
        encoding = positional_encoding(start + batch_and_length(x)[1], self.d_model)[start:]  # (N, D)
        return apply_dropout(self.dropout_layer, x + tf.cast(encoding, x.dtype)[None], training)  # (B, N, D)

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model, dropout=self.dropout)
        return config


@keras.saving.register_keras_serializable(package="attention_lab")
class ScaledEmbedding(keras.layers.Layer):
    """Token embedding multiplied by sqrt(d_model) (unless ``scale`` is False): ``(B, N)`` ids -> ``(B, N, d_model)``.

    ``embeddings`` is the ``(vocab_size, d_model)`` matrix, shareable with the
    pre-softmax projection.
    """

    def __init__(self, vocab_size, d_model, scale=True, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.scale = scale  # False: the rows as they are (a Llama's embeddings are not multiplied)
        self.embed = keras.layers.Embedding(vocab_size, d_model, name="embed")

    def build(self, tokens_shape=None):
        self.embed.build(tokens_shape)

    @property
    def embeddings(self):
        return self.embed.embeddings  # (V, D)

    def call(self, tokens):
        embedded = self.embed(tokens)  # (B, N, D)
        return embedded * math.sqrt(self.d_model) if self.scale else embedded

    def get_config(self):
        config = super().get_config()
        config.update(vocab_size=self.vocab_size, d_model=self.d_model, scale=self.scale)
        return config




@keras.saving.register_keras_serializable(package="attention_lab")
class LearnedPositions(keras.layers.Layer):
    """Adds a learned ``(max_len, d_model)`` table's first N rows to ``(B, N, d_model)`` inputs, then dropout
    (GPT, BERT)."""

    def __init__(self, max_len, d_model, dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.max_len, self.d_model, self.dropout = max_len, d_model, dropout
        self.dropout_layer = dropout_layer(dropout)

    def build(self, x_shape=None):
        self.table = self.add_weight(name="table", shape=(self.max_len, self.d_model), initializer="glorot_uniform")

    def call(self, x, training=False, start=0):
        """``start``: the position of ``x``'s first row."""
        rows = self.table[start:start + batch_and_length(x)[1]]  # (N, D)
        return apply_dropout(self.dropout_layer, x + tf.cast(rows, x.dtype)[None], training)

    def get_config(self):
        config = super().get_config()
        config.update(max_len=self.max_len, d_model=self.d_model, dropout=self.dropout)
        return config


@keras.saving.register_keras_serializable(package="attention_lab")
class NoPositions(keras.layers.Layer):
    """Embeddings as they are, then dropout: RoPE and ALiBi put positions inside attention; ``none`` nowhere."""

    def __init__(self, dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.dropout = dropout
        self.dropout_layer = dropout_layer(dropout)

    def call(self, x, training=False, start=0):
        return apply_dropout(self.dropout_layer, x, training)

    def get_config(self):
        config = super().get_config()
        config.update(dropout=self.dropout)
        return config


def position_layer(positions, d_model, dropout, max_len, name):
    """The layer that adds ``positions`` (`POSITIONS`) to the embeddings."""
    if positions not in POSITIONS:
        raise ValueError(f"positions must be one of {POSITIONS}. Received: positions={positions!r}")
    if positions == "sinusoidal":
        return PositionalEncoding(d_model, dropout, name=name)
    if positions == "learned":
        return LearnedPositions(max_len, d_model, dropout, name=name)
    return NoPositions(dropout, name=name)


def in_attention(positions):
    """What self-attention layers do with ``positions``: ``"rope"``, ``"alibi"`` or None."""
    return positions if positions in ("rope", "alibi") else None
