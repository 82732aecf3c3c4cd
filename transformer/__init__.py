"""Attention Lab's engine: the Transformer of "Attention Is All You Need" in Keras 3.

Masks are boolean with True = may attend; attention is scaled by 1/sqrt(d_k).
No Streamlit and no Plotly here: `run_live` turns a `LiveConfig` into NumPy arrays.
"""

from transformer.core.attention import (
    AttentionStages,
    MultiHeadAttention,
    attention_stages,
    masked_softmax,
    scaled_dot_product_attention,
)
from transformer.core.layers import Decoder, DecoderBlock, Encoder, EncoderBlock, FeedForward, ResidualBlock
from transformer.core.masks import padding_mask, subsequent_mask, target_mask
from transformer.core.model import Transformer
from transformer.core.positional import PositionalEncoding, ScaledEmbedding, positional_encoding
from transformer.live.config import LiveConfig
from transformer.live.model_cache import ModelCache
from transformer.live.run import LiveResult, line_count, run_live, sequence_lengths, stack_sides
from transformer.live.walkthrough import Walkthrough, attention_walkthrough, keras_difference
from transformer.runtime.device import device_label, resolve_device, visible_gpus
from transformer.training.pretrained import Pretrained, load_pretrained

__all__ = [
    "AttentionStages", "Decoder", "DecoderBlock", "Encoder", "EncoderBlock", "FeedForward", "LiveConfig",
    "LiveResult", "ModelCache", "MultiHeadAttention", "PositionalEncoding", "Pretrained", "ResidualBlock",
    "ScaledEmbedding", "Transformer", "Walkthrough", "attention_stages", "attention_walkthrough", "device_label",
    "keras_difference", "line_count", "load_pretrained", "masked_softmax", "padding_mask", "positional_encoding",
    "resolve_device", "run_live", "scaled_dot_product_attention", "sequence_lengths", "stack_sides", "subsequent_mask",
    "target_mask", "visible_gpus",
]

visible_gpus()  # before any TensorFlow op, whatever the first request: memory growth on, TensorFloat-32 off
