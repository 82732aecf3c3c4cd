"""Feed-forward, residual blocks, encoder and decoder stacks (paper section 3.1).

Masks follow the package convention: boolean, True = may attend.
"""

from __future__ import annotations

import keras

from transformer.core.attention import MaskConsumer, MultiHeadAttention
from transformer.core.dropout import apply_dropout, dropout_layer
from transformer.core.linear import Linear
from transformer.core.shape import LAYER_STYLE, check_layer_style, check_norm, pop_layer_style


def _register(cls):
    return keras.saving.register_keras_serializable(package="attention_lab")(cls)


def make_norm(norm_layer: str, epsilon: float, name: str):
    """A LayerNorm (``"layer"``: ``(x − mean) / sqrt(var + ε) · γ + β``) or an RMSNorm (``"rms"``:
    ``x / sqrt(mean(x²) + ε) · γ``) over the last axis, as Keras has them."""
    if norm_layer == "rms":
        return keras.layers.RMSNormalization(epsilon=epsilon, name=name)
    return keras.layers.LayerNormalization(epsilon=epsilon, name=name)


@_register
class FeedForward(keras.layers.Layer):
    """Position-wise FFN(x) = max(0, x·W1 + b1)·W2 + b2: ``(B, N, d_model)`` -> same shape (no biases when
    ``use_bias`` is False)."""

    def __init__(self, d_model, d_ff, use_bias=True, **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.d_ff = d_ff
        self.use_bias = use_bias
        self.hidden = Linear(d_ff, activation="relu", use_bias=use_bias, name="hidden")
        self.project = Linear(d_model, use_bias=use_bias, name="project")

    def build(self, x_shape):
        self.hidden.build(x_shape)
        self.project.build(tuple(x_shape[:-1]) + (self.d_ff,))

    def call(self, x):
        return self.project(self.hidden(x))  # (B, N, d_ff) -> (B, N, d_model)

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model, d_ff=self.d_ff, use_bias=self.use_bias)
        return config


@_register
class GatedFeedForward(keras.layers.Layer):
    """SwiGLU (Shazeer 2020, "GLU Variants Improve Transformer"; a Llama's): ``(SiLU(x·W_gate) ⊙ x·W_up)·W_down``,
    SiLU(z) = z·σ(z): ``(B, N, d_model)`` -> same shape, ``d_ff`` the gate's and the up projection's width."""

    def __init__(self, d_model, d_ff, use_bias=False, **kwargs):
        super().__init__(**kwargs)
        self.d_model, self.d_ff, self.use_bias = d_model, d_ff, use_bias
        self.gate = Linear(d_ff, activation="silu", use_bias=use_bias, name="gate")
        self.up = Linear(d_ff, use_bias=use_bias, name="up")
        self.down = Linear(d_model, use_bias=use_bias, name="down")

    def build(self, x_shape):
        self.gate.build(x_shape)
        self.up.build(x_shape)
        self.down.build(tuple(x_shape[:-1]) + (self.d_ff,))

    def call(self, x):
        return self.down(self.gate(x) * self.up(x))  # (B, N, d_ff) ⊙ (B, N, d_ff) -> (B, N, d_model)

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model, d_ff=self.d_ff, use_bias=self.use_bias)
        return config


@_register
class ResidualBlock(MaskConsumer, keras.layers.Layer):
    """A sublayer with its residual connection and LayerNorm (an RMSNorm with ``norm_layer="rms"``: `make_norm`).

    ``norm="post"`` (the paper): ``LayerNorm(x + Dropout(sublayer(x, *args)))``; ``norm="pre"`` (GPT-2 and
    most models since): ``x + Dropout(sublayer(LayerNorm(x), *args))``. The sublayer gets ``x`` (normed first
    when pre) and any further call arguments after it. When it returns ``(output, extra)`` (attention returns
    its weights), the block returns ``(y, extra)``; otherwise just ``y`` ``(B, N, d_model)``.
    """

    def __init__(self, sublayer, dropout=0.0, norm="post", norm_layer="layer", norm_epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        check_norm(norm)
        self.sublayer = sublayer
        self.dropout = dropout
        self.norm = norm
        self.norm_layer, self.norm_epsilon = norm_layer, norm_epsilon  # `make_norm`'s
        self.dropout_layer = dropout_layer(dropout)  # None at rate 0
        self.layer_norm = make_norm(norm_layer, norm_epsilon, "layer_norm")

    def build(self, x_shape):
        if not self.sublayer.built:  # a cross-attention sublayer is built by its parent
            if isinstance(self.sublayer, MultiHeadAttention):
                self.sublayer.build(x_shape, x_shape, x_shape)
            else:
                self.sublayer.build(x_shape)
        self.layer_norm.build(x_shape)

    def call(self, x, *sublayer_args, mask=None, cache=None, hook=None, training=False):
        # `training` reaches the sublayer through Keras's call context; mask, cache and hook go to attention.
        inner = self.layer_norm(x) if self.norm == "pre" else x  # (B, N, d_model)
        given = {name: value for name, value in (("mask", mask), ("cache", cache), ("hook", hook)) if value is not None}
        result = self.sublayer(inner, *sublayer_args, **given)
        output, extra = result if isinstance(result, tuple) else (result, None)
        summed = x + apply_dropout(self.dropout_layer, output, training)  # (B, N, d_model)
        y = summed if self.norm == "pre" else self.layer_norm(summed)  # (B, N, d_model)
        return y if extra is None else (y, extra)

    def get_config(self):
        config = super().get_config()
        config.update(sublayer=keras.saving.serialize_keras_object(self.sublayer), dropout=self.dropout,
                      norm=self.norm, norm_layer=self.norm_layer, norm_epsilon=self.norm_epsilon)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["sublayer"] = keras.saving.deserialize_keras_object(config["sublayer"])
        return cls(**config)


_SIZES = ("d_model", "num_heads", "d_ff", "dropout", "num_kv_heads", "positions", "norm", *LAYER_STYLE)


def _keep_sizes(layer, d_model, num_heads, d_ff, dropout, num_kv_heads, positions, norm, style: dict) -> None:
    """Check and keep on ``layer`` the hyper-parameters every block and stack shares (`_SIZES`; ``style``: the
    `LAYER_STYLE` keys given, the rest the paper's)."""
    if isinstance(d_ff, bool) or not isinstance(d_ff, int) or d_ff < 0:
        raise ValueError(f"d_ff must be 0 (no feed-forward) or a positive integer. Received: d_ff={d_ff!r}")
    check_norm(norm)
    style = {**LAYER_STYLE, **style}
    check_layer_style(**style)
    for name, value in zip(_SIZES, (d_model, num_heads, d_ff, dropout, num_kv_heads, positions, norm,
                                    *style.values())):
        setattr(layer, name, value)


def _sizes_config(layer) -> dict:
    return {name: getattr(layer, name) for name in _SIZES}


def _style_of(layer) -> dict:
    """The `LAYER_STYLE` keys of a block or stack, as it keeps them."""
    return {name: getattr(layer, name) for name in LAYER_STYLE}


class _BlockConfig(keras.layers.Layer):
    """Stores the hyper-parameters every encoder/decoder layer shares. ``num_kv_heads``: key/value heads of
    every attention (None: H); ``positions``: ``"rope"`` or ``"alibi"`` in self-attention, else None;
    ``norm``: `NORMS`; ``d_ff = 0``: no feed-forward sublayer (an attention-only block)."""

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, num_kv_heads=None, positions=None, norm="post",
                 **kwargs):
        style = pop_layer_style(kwargs)
        super().__init__(**kwargs)
        _keep_sizes(self, d_model, num_heads, d_ff, dropout, num_kv_heads, positions, norm, style)

    def residual(self, sublayer, name):
        """``sublayer`` in its residual block, with this block's norm (post or pre; LayerNorm or RMSNorm)."""
        return ResidualBlock(sublayer, self.dropout, self.norm, self.norm_layer, self.norm_epsilon, name=name)

    def attention_block(self, name, positions=None):
        attention = MultiHeadAttention(self.d_model, self.num_heads, num_kv_heads=self.num_kv_heads,
                                       positions=positions, use_bias=self.use_bias, rope_base=self.rope_base,
                                       name="attention")
        return self.residual(attention, name)

    def make_feed_forward_block(self):
        """The feed-forward sublayer (ReLU or SwiGLU: ``ffn``) in its residual block, or None when
        ``d_ff`` is 0."""
        if not self.d_ff:
            return None
        kind = GatedFeedForward if self.ffn == "swiglu" else FeedForward
        return self.residual(kind(self.d_model, self.d_ff, use_bias=self.use_bias, name="feed_forward"),
                             "feed_forward_block")

    def feed_forward(self, x, training):
        """``(B, N, d_model)`` through the feed-forward block, or as it is without one."""
        return x if self.feed_forward_block is None else self.feed_forward_block(x, training=training)

    def feed_forward_alone(self, inner):
        """The feed-forward sublayer on ``inner`` ``(B, N, d_model)`` as its block hands it over (normed first when
        pre-norm): no residual sum, no LayerNorm after (`transformer.core.residual_parts` adds them by parts)."""
        return self.feed_forward_block.sublayer(inner)

    def get_config(self):
        return {**super().get_config(), **_sizes_config(self)}


@_register
class EncoderBlock(MaskConsumer, _BlockConfig):
    """Self-attention then feed-forward, each in a `ResidualBlock`.

    Call arguments:
      x: ``(B, N, d_model)``.
      mask: optional boolean broadcastable to ``(B, H, N, N)`` (a padding mask
        ``(B, 1, 1, N)``); True = may attend.
      hook: an `AttentionHook` handed to the attention layer.

    Returns:
      ``(output (B, N, d_model), weights (B, H, N, N))``.
    """

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, **kwargs):
        super().__init__(d_model, num_heads, d_ff, dropout, **kwargs)
        self.self_attention_block = self.attention_block("self_attention_block", self.positions)
        self.feed_forward_block = self.make_feed_forward_block()

    @property
    def attentions(self) -> dict:
        """``{"encoder": its MultiHeadAttention}``."""
        return {"encoder": self.self_attention_block.sublayer}

    def build(self, x_shape):
        self.self_attention_block.build(x_shape)
        if self.feed_forward_block is not None:
            self.feed_forward_block.build(x_shape)

    def call(self, x, mask=None, training=False, hook=None):
        x, weights = self.self_attention_block(x, mask=mask, hook=hook, training=training)  # (B, N, D), (B, H, N, N)
        return self.feed_forward(x, training), weights


@_register
class DecoderBlock(_BlockConfig):
    """Masked self-attention, cross-attention over the encoder output (unless ``cross_attention`` is False: a
    decoder-only model), feed-forward.

    Call arguments:
      x: ``(B, N_t, d_model)`` target representations.
      memory: ``(B, N_s, d_model)`` encoder output (None without cross-attention).
      self_mask: boolean broadcastable to ``(B, H, N_t, N_t)``, usually the
        target mask ``(B, 1, N_t, N_t)``; True = may attend.
      memory_mask: boolean broadcastable to ``(B, H, N_t, N_s)``, usually the
        source padding mask ``(B, 1, 1, N_s)``.
      cache: ``{"self": AttentionCache, "cross": AttentionCache}`` for cached decoding (`Transformer.new_cache`).
      hook: an `AttentionHook` handed to both attention layers.

    Returns:
      ``(output (B, N_t, d_model), self_weights (B, H, N_t, N_t), cross_weights (B, H, N_t, N_s) or None)``.
    """

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, cross_attention=True, **kwargs):
        super().__init__(d_model, num_heads, d_ff, dropout, **kwargs)
        self.cross_attention = cross_attention
        self.self_attention_block = self.attention_block("self_attention_block", self.positions)
        # positions: self-attention only
        self.cross_attention_block = self.attention_block("cross_attention_block") if cross_attention else None
        self.feed_forward_block = self.make_feed_forward_block()

    @property
    def attentions(self) -> dict:
        """``{"decoder": self-attention, "cross": cross-attention}`` (no "cross" in a decoder-only block)."""
        found = {"decoder": self.self_attention_block.sublayer}
        if self.cross_attention_block is not None:
            found["cross"] = self.cross_attention_block.sublayer
        return found

    def build(self, x_shape, memory_shape=None):
        self.self_attention_block.build(x_shape)
        if self.cross_attention_block is not None:
            self.cross_attention_block.sublayer.build(x_shape, memory_shape, memory_shape)
            self.cross_attention_block.build(x_shape)
        if self.feed_forward_block is not None:
            self.feed_forward_block.build(x_shape)

    def call(self, x, memory=None, self_mask=None, memory_mask=None, training=False, cache=None, hook=None):
        # x: (B, N_t, d_model); self_weights: (B, H, N_t, N_t); cross_weights: (B, H, N_t, N_s)
        cache = cache or {}
        x, self_weights = self.self_attention_block(x, mask=self_mask, cache=cache.get("self"), hook=hook,
                                                    training=training)
        cross_weights = None
        if self.cross_attention_block is not None:
            x, cross_weights = self.cross_attention_block(x, memory, memory, mask=memory_mask,
                                                          cache=cache.get("cross"), hook=hook, training=training)
        return self.feed_forward(x, training), self_weights, cross_weights

    def get_config(self):
        config = super().get_config()
        config.update(cross_attention=self.cross_attention)
        return config


class _Stack(keras.layers.Layer):
    """A stack of ``num_layers`` identical blocks; with ``norm="pre"`` a final LayerNorm on its output (GPT-2)."""

    block_class = None
    stack_name = ""  # the stream's name for a hook: "encoder" or "decoder"

    def __init__(self, num_layers, d_model, num_heads, d_ff, dropout=0.0, num_kv_heads=None, positions=None,
                 norm="post", **kwargs):
        style = pop_layer_style(kwargs)
        super().__init__(**kwargs)
        if not isinstance(num_layers, int) or num_layers < 1:
            raise ValueError(f"num_layers must be a positive integer. Received: num_layers={num_layers!r}")
        self.num_layers = num_layers
        _keep_sizes(self, d_model, num_heads, d_ff, dropout, num_kv_heads, positions, norm, style)
        self.blocks = [
            self.block_class(d_model, num_heads, d_ff, dropout, num_kv_heads=num_kv_heads, positions=positions,
                             norm=norm, name=f"block_{index}", **_style_of(self), **self.block_options())
            for index in range(num_layers)
        ]
        for index, block in enumerate(self.blocks):
            for stack, attention in block.attentions.items():
                attention.site = (stack, index)
        self.final_norm = make_norm(self.norm_layer, self.norm_epsilon, "final_norm") if norm == "pre" else None

    def block_options(self) -> dict:
        return {}

    def attention_layers(self, stack: str) -> list:
        """The `MultiHeadAttention` of ``stack`` in every block, first block first."""
        return [block.attentions[stack] for block in self.blocks]

    def build_final_norm(self, x_shape):
        if self.final_norm is not None:
            self.final_norm.build(x_shape)

    def finish(self, x):
        """The stack's output: ``x`` through the final LayerNorm of a pre-norm stack."""
        return x if self.final_norm is None else self.final_norm(x)  # (B, N, d_model)

    def stream(self, hook, layer: int, x):
        """``x (B, N, d_model)`` as ``hook`` (an `AttentionHook`, or None) carries it on at ``(stack, layer)``."""
        return x if hook is None else hook.stream((self.stack_name, layer), x)

    def get_config(self):
        return {**super().get_config(), "num_layers": self.num_layers, **_sizes_config(self)}


@_register
class Encoder(MaskConsumer, _Stack):
    """``num_layers`` encoder blocks.

    Call arguments:
      x: ``(B, N, d_model)`` embedded source with positions added.
      mask: optional boolean broadcastable to ``(B, H, N, N)``; True = may attend.
      hook: an `AttentionHook` handed to every attention layer.

    Returns:
      ``(output (B, N, d_model), [weights (B, H, N, N)] * num_layers)``.
    """

    block_class = EncoderBlock
    stack_name = "encoder"

    def build(self, x_shape):
        for block in self.blocks:
            block.build(x_shape)
        self.build_final_norm(x_shape)

    def call(self, x, mask=None, training=False, hook=None):
        all_weights = []
        for index, block in enumerate(self.blocks):
            x = self.stream(hook, index, x)
            x, weights = block(x, mask=mask, training=training, hook=hook)  # (B, N, D), (B, H, N, N)
            all_weights.append(weights)
        return self.stream(hook, self.num_layers, self.finish(x)), all_weights


@_register
class Decoder(_Stack):
    """``num_layers`` decoder blocks, with cross-attention over an encoder's output unless ``cross_attention``
    is False (a decoder-only model).

    Call arguments: as `DecoderBlock`; ``cache``: one `DecoderBlock` cache per block.

    Returns:
      ``(output (B, N_t, d_model), [self_weights (B, H, N_t, N_t)], [cross_weights (B, H, N_t, N_s)])``,
      one entry per layer in each list (no cross weights without cross-attention).
    """

    block_class = DecoderBlock
    stack_name = "decoder"

    def __init__(self, *args, cross_attention=True, **kwargs):
        self.cross_attention = cross_attention
        super().__init__(*args, **kwargs)

    def block_options(self) -> dict:
        return {"cross_attention": self.cross_attention}

    def build(self, x_shape, memory_shape=None):
        for block in self.blocks:
            block.build(x_shape, memory_shape)
        self.build_final_norm(x_shape)

    def call(self, x, memory=None, self_mask=None, memory_mask=None, training=False, cache=None, hook=None):
        self_weights, cross_weights = [], []
        for index, block in enumerate(self.blocks):
            x = self.stream(hook, index, x)
            x, block_self, block_cross = block(
                x, memory, self_mask=self_mask, memory_mask=memory_mask, training=training,
                cache=None if cache is None else cache[index], hook=hook,
            )
            self_weights.append(block_self)  # (B, H, N_t, N_t)
            if block_cross is not None:
                cross_weights.append(block_cross)  # (B, H, N_t, N_s)
        return self.stream(hook, self.num_layers, self.finish(x)), self_weights, cross_weights

    def get_config(self):
        config = super().get_config()
        config.update(cross_attention=self.cross_attention)
        return config
