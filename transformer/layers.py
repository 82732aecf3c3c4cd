"""Feed-forward, residual blocks, encoder and decoder stacks (paper section 3.1).

Masks follow the package convention: boolean, True = may attend.
"""

from __future__ import annotations

import keras

from transformer.attention import MaskConsumer, MultiHeadAttention
from transformer.dropout import apply_dropout, dropout_layer
from transformer.linear import Linear


def _register(cls):
    return keras.saving.register_keras_serializable(package="attention_lab")(cls)


@_register
class FeedForward(keras.layers.Layer):
    """Position-wise FFN(x) = max(0, x·W1 + b1)·W2 + b2: ``(B, N, d_model)`` -> same shape."""

    def __init__(self, d_model, d_ff, **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.d_ff = d_ff
        self.hidden = Linear(d_ff, activation="relu", name="hidden")
        self.project = Linear(d_model, name="project")

    def build(self, x_shape):
        self.hidden.build(x_shape)
        self.project.build(tuple(x_shape[:-1]) + (self.d_ff,))

    def call(self, x):
        return self.project(self.hidden(x))  # (B, N, d_ff) -> (B, N, d_model)

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model, d_ff=self.d_ff)
        return config


@_register
class ResidualBlock(MaskConsumer, keras.layers.Layer):
    """Post-norm residual: ``LayerNorm(x + Dropout(sublayer(x, *args)))``, as in the paper.

    The sublayer gets ``x`` first and any further call arguments after it. When the
    sublayer returns ``(output, extra)`` (attention returns its weights), the block
    returns ``(normed, extra)``; otherwise just ``normed`` ``(B, N, d_model)``.
    """

    def __init__(self, sublayer, dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.sublayer = sublayer
        self.dropout = dropout
        self.dropout_layer = dropout_layer(dropout)  # None at rate 0
        self.layer_norm = keras.layers.LayerNormalization(epsilon=1e-6, name="layer_norm")

    def build(self, x_shape):
        if not self.sublayer.built:  # a cross-attention sublayer is built by its parent
            if isinstance(self.sublayer, MultiHeadAttention):
                self.sublayer.build(x_shape, x_shape, x_shape)
            else:
                self.sublayer.build(x_shape)
        self.layer_norm.build(x_shape)

    def call(self, x, *sublayer_args, training=False, **sublayer_kwargs):
        # `training` reaches the sublayer through Keras's call context.
        result = self.sublayer(x, *sublayer_args, **sublayer_kwargs)
        output, extra = result if isinstance(result, tuple) else (result, None)
        normed = self.layer_norm(x + apply_dropout(self.dropout_layer, output, training))  # (B, N, d_model)
        return normed if extra is None else (normed, extra)

    def get_config(self):
        config = super().get_config()
        config.update(sublayer=keras.saving.serialize_keras_object(self.sublayer), dropout=self.dropout)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["sublayer"] = keras.saving.deserialize_keras_object(config["sublayer"])
        return cls(**config)


def _attention_block(d_model, num_heads, dropout, name, num_kv_heads=None, positions=None):
    attention = MultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads, positions=positions,
                                   name="attention")
    return ResidualBlock(attention, dropout, name=name)


def _feed_forward_block(d_model, d_ff, dropout):
    return ResidualBlock(FeedForward(d_model, d_ff, name="feed_forward"), dropout, name="feed_forward_block")


class _BlockConfig(keras.layers.Layer):
    """Stores the hyper-parameters every encoder/decoder layer shares. ``num_kv_heads``: key/value heads of
    every attention (None: H); ``positions``: ``"rope"`` or ``"alibi"`` in self-attention, else None."""

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, num_kv_heads=None, positions=None, **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_ff = d_ff
        self.dropout = dropout
        self.num_kv_heads = num_kv_heads
        self.positions = positions

    def attention_block(self, name, positions=None):
        return _attention_block(self.d_model, self.num_heads, self.dropout, name, self.num_kv_heads, positions)

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model, num_heads=self.num_heads, d_ff=self.d_ff, dropout=self.dropout,
                      num_kv_heads=self.num_kv_heads, positions=self.positions)
        return config


@_register
class EncoderBlock(MaskConsumer, _BlockConfig):
    """Self-attention then feed-forward, each in a `ResidualBlock`.

    Call arguments:
      x: ``(B, N, d_model)``.
      mask: optional boolean broadcastable to ``(B, H, N, N)`` (a padding mask
        ``(B, 1, 1, N)``); True = may attend.

    Returns:
      ``(output (B, N, d_model), weights (B, H, N, N))``.
    """

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, **kwargs):
        super().__init__(d_model, num_heads, d_ff, dropout, **kwargs)
        self.self_attention_block = self.attention_block("self_attention_block", self.positions)
        self.feed_forward_block = _feed_forward_block(d_model, d_ff, dropout)

    def build(self, x_shape):
        self.self_attention_block.build(x_shape)
        self.feed_forward_block.build(x_shape)

    def call(self, x, mask=None, training=False):
        x, weights = self.self_attention_block(x, x, x, mask=mask, training=training)  # (B, N, D), (B, H, N, N)
        return self.feed_forward_block(x, training=training), weights


@_register
class DecoderBlock(_BlockConfig):
    """Masked self-attention, cross-attention over the encoder output, feed-forward.

    Call arguments:
      x: ``(B, N_t, d_model)`` target representations.
      memory: ``(B, N_s, d_model)`` encoder output.
      self_mask: boolean broadcastable to ``(B, H, N_t, N_t)``, usually the target
        mask ``(B, 1, N_t, N_t)``; True = may attend.
      memory_mask: boolean broadcastable to ``(B, H, N_t, N_s)``, usually the
        source padding mask ``(B, 1, 1, N_s)``.

    Returns:
      ``(output (B, N_t, d_model), self_weights (B, H, N_t, N_t), cross_weights (B, H, N_t, N_s))``.
    """

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, **kwargs):
        super().__init__(d_model, num_heads, d_ff, dropout, **kwargs)
        self.self_attention_block = self.attention_block("self_attention_block", self.positions)
        self.cross_attention_block = self.attention_block("cross_attention_block")  # positions: self-attention only
        self.feed_forward_block = _feed_forward_block(d_model, d_ff, dropout)

    def build(self, x_shape, memory_shape):
        self.self_attention_block.build(x_shape)
        self.cross_attention_block.sublayer.build(x_shape, memory_shape, memory_shape)
        self.cross_attention_block.build(x_shape)
        self.feed_forward_block.build(x_shape)

    def call(self, x, memory, self_mask=None, memory_mask=None, training=False):
        # x: (B, N_t, d_model); self_weights: (B, H, N_t, N_t); cross_weights: (B, H, N_t, N_s)
        x, self_weights = self.self_attention_block(x, x, x, mask=self_mask, training=training)
        x, cross_weights = self.cross_attention_block(x, memory, memory, mask=memory_mask, training=training)
        return self.feed_forward_block(x, training=training), self_weights, cross_weights


class _Stack(keras.layers.Layer):
    """A stack of ``num_layers`` identical blocks."""

    block_class = None

    def __init__(self, num_layers, d_model, num_heads, d_ff, dropout=0.0, num_kv_heads=None, positions=None,
                 **kwargs):
        super().__init__(**kwargs)
        if not isinstance(num_layers, int) or num_layers < 1:
            raise ValueError(f"num_layers must be a positive integer. Received: num_layers={num_layers!r}")
        self.num_layers = num_layers
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_ff = d_ff
        self.dropout = dropout
        self.num_kv_heads = num_kv_heads
        self.positions = positions
        self.blocks = [
            self.block_class(d_model, num_heads, d_ff, dropout, num_kv_heads=num_kv_heads, positions=positions,
                             name=f"block_{index}")
            for index in range(num_layers)
        ]

    def get_config(self):
        config = super().get_config()
        config.update(
            num_layers=self.num_layers, d_model=self.d_model, num_heads=self.num_heads,
            d_ff=self.d_ff, dropout=self.dropout, num_kv_heads=self.num_kv_heads, positions=self.positions,
        )
        return config


@_register
class Encoder(MaskConsumer, _Stack):
    """``num_layers`` encoder blocks.

    Call arguments:
      x: ``(B, N, d_model)`` embedded source with positions added.
      mask: optional boolean broadcastable to ``(B, H, N, N)``; True = may attend.

    Returns:
      ``(output (B, N, d_model), [weights (B, H, N, N)] * num_layers)``.
    """

    block_class = EncoderBlock

    def build(self, x_shape):
        for block in self.blocks:
            block.build(x_shape)

    def call(self, x, mask=None, training=False):
        all_weights = []
        for block in self.blocks:
            x, weights = block(x, mask=mask, training=training)  # (B, N, D), (B, H, N, N)
            all_weights.append(weights)
        return x, all_weights


@_register
class Decoder(_Stack):
    """``num_layers`` decoder blocks (the seed's Decoder appended to an undefined list; this runs).

    Call arguments: as `DecoderBlock`.

    Returns:
      ``(output (B, N_t, d_model), [self_weights (B, H, N_t, N_t)], [cross_weights (B, H, N_t, N_s)])``,
      one entry per layer in each list.
    """

    block_class = DecoderBlock

    def build(self, x_shape, memory_shape):
        for block in self.blocks:
            block.build(x_shape, memory_shape)

    def call(self, x, memory, self_mask=None, memory_mask=None, training=False):
        self_weights, cross_weights = [], []
        for block in self.blocks:
            x, block_self, block_cross = block(
                x, memory, self_mask=self_mask, memory_mask=memory_mask, training=training
            )
            self_weights.append(block_self)  # (B, H, N_t, N_t)
            cross_weights.append(block_cross)  # (B, H, N_t, N_s)
        return x, self_weights, cross_weights
