"""The encoder-decoder Transformer (paper Figure 1)."""

from __future__ import annotations

import keras
import tensorflow as tf

from transformer.attention import check_heads
from transformer.layers import Decoder, Encoder
from transformer.positional import ScaledEmbedding, in_attention, position_layer


def memory_mask(src_mask):
    """The keys cross-attention may attend to: a source mask ``(B, 1, 1, N_s)`` as it is; an encoder
    self-attention pattern ``(B, 1, N_s, N_s)`` (a mask family ANDed with padding) reduced to the keys some
    query may see ``(B, 1, 1, N_s)``, which is padding alone: every family lets a query see itself."""
    if src_mask is None or src_mask.shape[2] == 1:
        return src_mask
    return tf.reduce_any(src_mask, axis=2, keepdims=True)  # (B, 1, 1, N_s)


@keras.saving.register_keras_serializable(package="attention_lab")
class Transformer(keras.Model):
    """Embeddings + positional encodings, encoder, decoder and pre-softmax projection.

    Args:
      src_vocab_size, tgt_vocab_size: vocabulary sizes.
      d_model, num_heads, d_ff: widths (num_heads must divide d_model).
      num_encoder_layers, num_decoder_layers: stack depths.
      dropout: rate on sublayer outputs and on embeddings + encodings.
      share_embeddings: one embedding matrix for source and target (needs equal vocabularies).
      share_output_weights: logits = decoder output · (target embedding matrix)ᵀ,
        as in the paper, instead of a separate Dense layer.
      positions: ``"sinusoidal"`` (the paper), ``"learned"`` (a table of ``max_len`` rows), ``"rope"`` or
        ``"alibi"`` (inside self-attention) or ``"none"``.
      num_kv_heads: key/value heads of every attention layer (None: num_heads).

    Call arguments:
      src: ``(B, N_s)`` int token ids.  tgt: ``(B, N_t)`` int token ids.
      src_mask: boolean broadcastable to ``(B, H, N_s, N_s)``; the source padding mask
        ``(B, 1, 1, N_s)``, used in encoder self-attention AND in cross-attention (a ``(B, 1, N_s, N_s)``
        pattern is reduced to its keys for cross-attention: `memory_mask`).
      tgt_mask: boolean broadcastable to ``(B, H, N_t, N_t)``; the target mask
        ``(B, 1, N_t, N_t)``. True = may attend in both.

    Returns:
      ``(logits (B, N_t, tgt_vocab_size), attention)`` where ``attention`` maps
      ``"encoder"`` to ``[(B, H, N_s, N_s)] * num_encoder_layers``, ``"decoder"`` to
      ``[(B, H, N_t, N_t)] * num_decoder_layers`` and ``"cross"`` to
      ``[(B, H, N_t, N_s)] * num_decoder_layers``.
    """

    def __init__(
        self,
        src_vocab_size,
        tgt_vocab_size,
        d_model=512,
        num_heads=8,
        d_ff=2048,
        num_encoder_layers=6,
        num_decoder_layers=6,
        dropout=0.1,
        share_embeddings=False,
        share_output_weights=False,
        positions="sinusoidal",
        num_kv_heads=None,
        max_len=512,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_heads(d_model, num_heads)
        if share_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError(
                "share_embeddings needs equal source and target vocabularies. "
                f"Received: src_vocab_size={src_vocab_size}, tgt_vocab_size={tgt_vocab_size}"
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

        self.source_embedding = ScaledEmbedding(src_vocab_size, d_model, name="source_embedding")
        self.target_embedding = (
            self.source_embedding if share_embeddings
            else ScaledEmbedding(tgt_vocab_size, d_model, name="target_embedding")
        )
        self.source_positions = position_layer(positions, d_model, dropout, max_len, "source_positions")
        self.target_positions = position_layer(positions, d_model, dropout, max_len, "target_positions")
        inside = dict(num_kv_heads=num_kv_heads, positions=in_attention(positions))
        self.encoder = Encoder(num_encoder_layers, d_model, num_heads, d_ff, dropout, name="encoder", **inside)
        self.decoder = Decoder(num_decoder_layers, d_model, num_heads, d_ff, dropout, name="decoder", **inside)
        self.output_layer = None if share_output_weights else keras.layers.Dense(tgt_vocab_size, name="output_layer")

    def build(self, src_shape, tgt_shape):
        src_shape, tgt_shape = tuple(src_shape), tuple(tgt_shape)
        self.source_embedding.build(src_shape)
        self.target_embedding.build(tgt_shape)
        for positions in (self.source_positions, self.target_positions):
            if not positions.built:
                positions.build(src_shape + (self.d_model,))
        self.encoder.build(src_shape + (self.d_model,))
        self.decoder.build(tgt_shape + (self.d_model,), src_shape + (self.d_model,))
        if self.output_layer is not None:
            self.output_layer.build(tgt_shape + (self.d_model,))

    def encode(self, src, src_mask=None, training=False):
        """``(B, N_s)`` ids -> ``(memory (B, N_s, d_model), [encoder weights])``."""
        x = self.source_positions(self.source_embedding(src), training=training)  # (B, N_s, D)
        return self.encoder(x, mask=src_mask, training=training)

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None, training=False):
        """Returns ``(hidden (B, N_t, d_model), [decoder weights], [cross weights])``."""
        y = self.target_positions(self.target_embedding(tgt), training=training)  # (B, N_t, D)
        return self.decoder(y, memory, self_mask=tgt_mask, memory_mask=memory_mask(src_mask), training=training)

    def attention_layers(self, stack: str) -> list:
        """The `MultiHeadAttention` of every layer of ``stack`` ("encoder", "decoder" self-attention or "cross"),
        first layer first: what the walkthrough, block-wise runs and the key/value cache call."""
        if stack == "encoder":
            return [block.self_attention_block.sublayer for block in self.encoder.blocks]
        kind = "self_attention_block" if stack == "decoder" else "cross_attention_block"
        return [getattr(block, kind).sublayer for block in self.decoder.blocks]

    def project_logits(self, hidden):
        """``(B, N_t, d_model)`` -> ``(B, N_t, tgt_vocab_size)``."""
        if self.share_output_weights:
            return tf.matmul(hidden, self.target_embedding.embeddings, transpose_b=True)  # (B, N_t, V)
        return self.output_layer(hidden)  # (B, N_t, V)

    def hidden_and_attention(self, src, tgt, src_mask=None, tgt_mask=None, training=False):
        """Everything but the logits: ``(hidden (B, N_t, d_model), attention dict)``."""
        memory, encoder_weights = self.encode(src, src_mask, training=training)  # (B, N_s, D), L × (B, H, N_s, N_s)
        hidden, decoder_weights, cross_weights = self.decode(tgt, memory, src_mask, tgt_mask, training=training)
        attention = {"encoder": encoder_weights, "decoder": decoder_weights, "cross": cross_weights}
        return hidden, attention

    def call(self, src, tgt, src_mask=None, tgt_mask=None, training=False):
        hidden, attention = self.hidden_and_attention(src, tgt, src_mask, tgt_mask, training=training)
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
            num_kv_heads=self.num_kv_heads, max_len=self.max_len,
        )
        return config
