"""The Transformer: the paper's encoder-decoder (Figure 1), a decoder-only (GPT) or an encoder-only (BERT) model.

The one forward pass: embeddings -> positions -> blocks -> logits are wired here and in `transformer.core.layers`;
everything else runs a model through its public methods (``call``, `encode`, `decode` with a cache,
`attention_inputs`, `attention_layers`) and `AttentionHook`.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from transformer.core.attention import AttentionCache, AttentionHook
from transformer.core.layers import Decoder, Encoder
from transformer.core.masks import cached_causal_mask
from transformer.core.positional import ScaledEmbedding, in_attention, position_layer
from transformer.core.shape import (
    ARCHITECTURE_STACKS,
    LAYER_STYLE,
    PAPER,
    check_architecture,
    check_heads,
    check_layer_style,
    check_norm,
    pop_layer_style,
)


def memory_mask(src_mask):
    """The keys cross-attention may attend to: a source mask ``(B, 1, 1, N_s)`` as it is; an encoder
    self-attention pattern ``(B, 1, N_s, N_s)`` (a mask family ANDed with padding) reduced to the keys some
    query may see ``(B, 1, 1, N_s)``, which is padding alone: every family lets a query see itself."""
    if src_mask is None or src_mask.shape[2] == 1:
        return src_mask
    return tf.reduce_any(src_mask, axis=2, keepdims=True)  # (B, 1, 1, N_s)


class DecodingCache:
    """What cached decoding keeps between steps, per decoder layer ``{"self": AttentionCache, "cross":
    AttentionCache}`` (`Transformer.new_cache`); ``length``: the positions decoded so far."""

    def __init__(self, layers: int, cross_attention: bool):
        self.layers = [{"self": AttentionCache(), **({"cross": AttentionCache(static=True)} if cross_attention else {})}
                       for _ in range(layers)]

    def __getitem__(self, index):
        return self.layers[index]

    @property
    def length(self) -> int:
        return self.layers[0]["self"].length

    def arrays(self) -> list[dict]:
        """Per decoder layer: ``{"keys", "values"}`` ``(H_kv, t, d_k)`` and, with cross-attention,
        ``{"cross_keys", "cross_values"}`` ``(H_kv, N_s, d_k)`` as float32 NumPy (first line of the batch)."""
        found = []
        for layer in self.layers:
            entry = {"keys": layer["self"].keys[0].numpy(), "values": layer["self"].values[0].numpy()}
            if "cross" in layer:
                entry.update(cross_keys=layer["cross"].keys[0].numpy(), cross_values=layer["cross"].values[0].numpy())
            found.append(entry)
        return found

    def bytes(self) -> int:
        """Memory the cache holds, from its tensors' sizes (nothing is copied out)."""
        tensors = [tensor for layer in self.layers for cache in layer.values() for tensor in (cache.keys, cache.values)
                   if tensor is not None]
        return sum(tensor.dtype.size * int(np.prod(tensor.shape)) for tensor in tensors)


class _Stop(Exception):
    """Ends a run once `_Capture` has what it came for."""


class _Capture(AttentionHook):
    """Keeps the inputs of the attention layer at ``site`` and stops the run there; the layers before it run with
    ``inner``'s kernels (an ablation, say)."""

    def __init__(self, site, inner=None):
        self.site, self.found, self.inner = site, None, inner

    def kernel(self, layer):
        return None if self.inner is None else self.inner.kernel(layer)

    def observe(self, layer, query, key, value, mask):
        if layer.site == self.site:
            self.found = (layer, (query, key, value, mask))
            raise _Stop()


@keras.saving.register_keras_serializable(package="attention_lab")
class Transformer(keras.Model):
    """Embeddings + positions, the stacks of ``architecture``, and the pre-softmax projection.

    Args:
      src_vocab_size, tgt_vocab_size: vocabulary sizes.
      d_model, num_heads, d_ff: widths (num_heads must divide d_model; ``d_ff = 0``: no feed-forward sublayers,
        an attention-only model).
      num_encoder_layers, num_decoder_layers: stack depths.
      dropout: rate on sublayer outputs and on embeddings + encodings.
      share_embeddings: one embedding matrix for source and target (needs equal vocabularies).
      share_output_weights: logits = output · (output-side embedding matrix)ᵀ, as in the paper, instead of a
        separate Dense layer.
      positions: ``"sinusoidal"`` (the paper), ``"learned"`` (a table of ``max_len`` rows), ``"rope"`` or
        ``"alibi"`` (inside self-attention) or ``"none"``.
      num_kv_heads: key/value heads of every attention layer (None: num_heads).
      norm: ``"post"`` (the paper: ``LayerNorm(x + Sublayer(x))``) or ``"pre"`` (``x + Sublayer(LayerNorm(x))``
        and a final LayerNorm on each stack's output, as GPT-2).
      architecture: ``"encoder-decoder"`` (the paper); ``"decoder-only"`` (GPT: one causal stack over the
        target side ``tgt``, no cross-attention, next-token logits); ``"encoder-only"`` (BERT: one bidirectional
        stack over ``src``, logits at every source position).
      scale_embeddings: token embeddings multiplied by sqrt(d_model) (the paper); False: as they are (a Llama).
      norm_layer, norm_epsilon, ffn, use_bias, rope_base: how each block is built (`LAYER_STYLE`: the
        paper's LayerNorm, ReLU feed-forward and biases; a Llama's: ``"rms"``, ``"swiglu"``, no biases, its own
        RoPE base).

    Call arguments:
      src: ``(B, N_s)`` int token ids (None in a decoder-only model).  tgt: ``(B, N_t)`` int token ids (None in
        an encoder-only model).
      src_mask: boolean broadcastable to ``(B, H, N_s, N_s)``; the source padding mask
        ``(B, 1, 1, N_s)``, used in encoder self-attention AND in cross-attention (a ``(B, 1, N_s, N_s)``
        pattern is reduced to its keys for cross-attention: `memory_mask`).
      tgt_mask: boolean broadcastable to ``(B, H, N_t, N_t)``; the target mask
        ``(B, 1, N_t, N_t)``. True = may attend in both.
      hook: an `AttentionHook` handed to every attention layer.

    Returns:
      ``(logits (B, N, vocab), attention)``: N = N_t (N_s encoder-only); ``attention`` maps each of `stacks`
      (``"encoder"`` -> ``[(B, H, N_s, N_s)]``, ``"decoder"`` -> ``[(B, H, N_t, N_t)]``, ``"cross"`` ->
      ``[(B, H, N_t, N_s)]``) to one entry per layer.
    """

    @classmethod
    def from_shape(cls, shape, src_vocab_size, tgt_vocab_size, **options) -> Transformer:
        """A model of ``shape`` (a `transformer.core.shape.ModelShape`: a `LiveConfig` or a `TrainSpec` is one);
        ``options``: the arguments a shape does not fix (dropout, max_len, the weight sharing)."""
        return cls(src_vocab_size, tgt_vocab_size, **shape.model_options(), **options)

    def __init__(
        self,
        src_vocab_size,
        tgt_vocab_size,
        d_model=PAPER.d_model,
        num_heads=PAPER.num_heads,
        d_ff=PAPER.d_ff,
        num_encoder_layers=PAPER.num_layers,
        num_decoder_layers=PAPER.num_layers,
        dropout=0.1,
        share_embeddings=False,
        share_output_weights=False,
        positions=PAPER.positions,
        num_kv_heads=PAPER.num_kv_heads,
        max_len=512,
        norm=PAPER.norm,
        architecture=PAPER.architecture,
        scale_embeddings=True,
        **kwargs,
    ):
        style = {**LAYER_STYLE, **pop_layer_style(kwargs)}  # checked here, before any block is made
        super().__init__(**kwargs)
        check_layer_style(**style)
        check_heads(d_model, num_heads)
        check_norm(norm)
        check_architecture(architecture)
        if share_embeddings and (src_vocab_size != tgt_vocab_size or architecture != "encoder-decoder"):
            raise ValueError(
                "share_embeddings needs an encoder-decoder with equal source and target vocabularies. "
                f"Received: src_vocab_size={src_vocab_size}, tgt_vocab_size={tgt_vocab_size}, "
                f"architecture={architecture!r}"
            )
        self.src_vocab_size = src_vocab_size
        self.tgt_vocab_size = tgt_vocab_size
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_ff = d_ff
        self.num_encoder_layers = num_encoder_layers
        self.num_decoder_layers = num_decoder_layers
        self.dropout = dropout
        self.share_embeddings = share_embeddings
        self.share_output_weights = share_output_weights
        self.positions, self.num_kv_heads, self.max_len = positions, num_kv_heads, max_len
        self.norm, self.architecture = norm, architecture
        self.scale_embeddings, self.style = scale_embeddings, style

        inside = dict(num_kv_heads=num_kv_heads, positions=in_attention(positions), norm=norm, **style)
        self.source_embedding = self.source_positions = self.encoder = None
        self.target_embedding = self.target_positions = self.decoder = None
        if self.has_encoder:
            self.source_embedding = ScaledEmbedding(src_vocab_size, d_model, scale_embeddings, name="source_embedding")
            self.source_positions = position_layer(positions, d_model, dropout, max_len, "source_positions")
            self.encoder = Encoder(num_encoder_layers, d_model, num_heads, d_ff, dropout, name="encoder", **inside)
        if self.has_decoder:
            self.target_embedding = (
                self.source_embedding if share_embeddings
                else ScaledEmbedding(tgt_vocab_size, d_model, scale_embeddings, name="target_embedding")
            )
            self.target_positions = position_layer(positions, d_model, dropout, max_len, "target_positions")
            self.decoder = Decoder(num_decoder_layers, d_model, num_heads, d_ff, dropout, name="decoder",
                                   cross_attention=self.has_encoder, **inside)
        self.output_layer = None if share_output_weights else keras.layers.Dense(self.output_vocab_size,
                                                                                 name="output_layer")

    @property
    def has_encoder(self) -> bool:
        return self.architecture != "decoder-only"

    @property
    def has_decoder(self) -> bool:
        return self.architecture != "encoder-only"

    @property
    def stacks(self) -> tuple:
        """The attention stacks this model has, in ``("encoder", "decoder", "cross")`` order."""
        return ARCHITECTURE_STACKS[self.architecture]

    @property
    def num_layers(self) -> int:
        """Layers of the model's stacks (the decoder's when it has one)."""
        return self.num_decoder_layers if self.has_decoder else self.num_encoder_layers

    @property
    def output_vocab_size(self) -> int:
        return self.tgt_vocab_size if self.has_decoder else self.src_vocab_size

    def build(self, src_shape, tgt_shape):
        src_shape = None if src_shape is None else tuple(src_shape)
        tgt_shape = None if tgt_shape is None else tuple(tgt_shape)
        side = tgt_shape if self.has_decoder else src_shape
        if self.has_encoder:
            self.source_embedding.build(src_shape)
            if not self.source_positions.built:
                self.source_positions.build(src_shape + (self.d_model,))
            self.encoder.build(src_shape + (self.d_model,))
        if self.has_decoder:
            self.target_embedding.build(tgt_shape)
            if not self.target_positions.built:
                self.target_positions.build(tgt_shape + (self.d_model,))
            memory_shape = src_shape + (self.d_model,) if self.has_encoder else None
            self.decoder.build(tgt_shape + (self.d_model,), memory_shape)
        if self.output_layer is not None:
            self.output_layer.build(side + (self.d_model,))

    def encode(self, src, src_mask=None, training=False, hook=None, embedded=None):
        """``(B, N_s)`` ids -> ``(memory (B, N_s, d_model), [encoder weights])``. ``embedded``: the source's token
        embeddings ``(B, N_s, d_model)`` to use instead of looking ``src`` up (a gradient with respect to them)."""
        embedded = self.source_embedding(src) if embedded is None else embedded  # (B, N_s, D)
        x = self.source_positions(embedded, training=training)  # (B, N_s, D)
        return self.encoder(x, mask=src_mask, training=training, hook=hook)

    def logits_from_embedded(self, embedded, tgt, src_mask=None, tgt_mask=None):
        """An encoder-decoder's logits ``(B, N_t, V)`` from the source's token embeddings ``(B, N_s, d_model)``
        (``source_embedding(src)``, or a change of them) and the target ids ``(B, N_t)``."""
        memory, _ = self.encode(None, src_mask, embedded=embedded)  # (B, N_s, D)
        hidden, _, _ = self.decode(tgt, memory, src_mask, tgt_mask)  # (B, N_t, D)
        return self.project_logits(hidden)  # (B, N_t, V)

    def decode(self, tgt, memory=None, src_mask=None, tgt_mask=None, training=False, cache=None, hook=None):
        """Returns ``(hidden (B, N_t, d_model), [decoder weights], [cross weights])`` (no cross weights
        decoder-only). With ``cache`` (`new_cache`), ``tgt`` holds the positions after the cached ones only; a
        None ``tgt_mask`` is then the look-ahead mask over the cached and new positions."""
        start = 0 if cache is None else cache.length
        if cache is not None and tgt_mask is None:
            tgt_mask = cached_causal_mask(start, tf.shape(tgt)[1])  # (1, 1, N_new, start + N_new)
        y = self.target_positions(self.target_embedding(tgt), training=training, start=start)  # (B, N_t, D)
        return self.decoder(y, memory, self_mask=tgt_mask, memory_mask=memory_mask(src_mask), training=training,
                            cache=cache, hook=hook)

    def new_cache(self) -> DecodingCache:
        """An empty cache for `decode` (ValueError for an encoder-only model: it does not decode)."""
        if not self.has_decoder:
            raise ValueError("An encoder-only model has no decoder: nothing to decode or cache. "
                             f"Received: architecture={self.architecture!r}")
        return DecodingCache(self.num_decoder_layers, self.has_encoder)

    def attention_layers(self, stack: str) -> list:
        """The `MultiHeadAttention` of every layer of ``stack`` ("encoder", "decoder" self-attention or "cross"),
        first layer first; ValueError for a stack the architecture does not have."""
        self._check_stack(stack)
        return (self.encoder if stack == "encoder" else self.decoder).attention_layers(stack)

    def attention_inputs(self, stack, layer, src, tgt, src_mask=None, tgt_mask=None, hook=None):
        """The attention layer ``(stack, layer)`` and its inputs in a run on these ids: ``(attention, (query
        (B, N_q, d_model), key, value (B, N_k, d_model), mask))``. The run stops there; the layers before it use
        ``hook``'s kernels (an `AttentionHook`)."""
        self._check_stack(stack)
        capture = _Capture((stack, layer), hook)
        try:
            self.call(src, tgt, src_mask, tgt_mask, hook=capture)
        except _Stop:
            pass
        if capture.found is None:
            raise ValueError(f"layer must be from 0 to {self.num_layers - 1}. Received: layer={layer!r}")
        return capture.found

    def _check_stack(self, stack):
        if stack not in self.stacks:
            raise ValueError(f"A {self.architecture} model's stacks are {self.stacks}. Received: stack={stack!r}")

    def project_logits(self, hidden):
        """``(B, N, d_model)`` -> ``(B, N, vocab)``."""
        if self.share_output_weights:
            embedding = self.target_embedding if self.has_decoder else self.source_embedding
            return tf.matmul(hidden, embedding.embeddings, transpose_b=True)  # (B, N, V)
        return self.output_layer(hidden)  # (B, N, V)

    def hidden_and_attention(self, src, tgt, src_mask=None, tgt_mask=None, training=False, hook=None):
        """Everything but the logits: ``(hidden (B, N, d_model), attention dict)`` (keys: `stacks`)."""
        if not self.has_decoder:
            memory, encoder_weights = self.encode(src, src_mask, training=training, hook=hook)
            return memory, {"encoder": encoder_weights}
        if not self.has_encoder:
            hidden, decoder_weights, _ = self.decode(tgt, tgt_mask=tgt_mask, training=training, hook=hook)
            return hidden, {"decoder": decoder_weights}
        memory, encoder_weights = self.encode(src, src_mask, training=training, hook=hook)  # (B, N_s, D)
        hidden, decoder_weights, cross_weights = self.decode(tgt, memory, src_mask, tgt_mask, training=training,
                                                             hook=hook)
        return hidden, {"encoder": encoder_weights, "decoder": decoder_weights, "cross": cross_weights}

    def attention_maps(self, stacks, src, tgt, src_mask=None, tgt_mask=None, hook=None) -> dict:
        """``{stack: [weights (B, H, N_q, N_k)] a layer}`` for ``stacks`` (among `stacks`); no logits, and the
        decoder does not run when only the encoder's are asked for."""
        for stack in stacks:
            self._check_stack(stack)
        if tuple(stacks) == ("encoder",):
            return {"encoder": self.encode(src, src_mask, hook=hook)[1]}  # L × (B, H, N_s, N_s)
        return self.hidden_and_attention(src, tgt, src_mask, tgt_mask, hook=hook)[1]

    def call(self, src, tgt, src_mask=None, tgt_mask=None, training=False, hook=None):
        hidden, attention = self.hidden_and_attention(src, tgt, src_mask, tgt_mask, training=training, hook=hook)
        return self.project_logits(hidden), attention

    def build_from_config(self, config):
        """Create every weight when deserialised (lengths are free, so one token suffices)."""
        ids = tf.zeros((1, 1), tf.int32)  # (B=1, N=1)
        self(ids, ids)

    def get_config(self):
        config = super().get_config()
        config.update(
            src_vocab_size=self.src_vocab_size, tgt_vocab_size=self.tgt_vocab_size,
            d_model=self.d_model, num_heads=self.num_heads, d_ff=self.d_ff,
            num_encoder_layers=self.num_encoder_layers, num_decoder_layers=self.num_decoder_layers,
            dropout=self.dropout, share_embeddings=self.share_embeddings,
            share_output_weights=self.share_output_weights, positions=self.positions,
            num_kv_heads=self.num_kv_heads, max_len=self.max_len, norm=self.norm, architecture=self.architecture,
            scale_embeddings=self.scale_embeddings, **self.style,
        )
        return config
