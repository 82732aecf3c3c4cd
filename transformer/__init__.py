"""Attention Lab's engine: the Transformer of "Attention Is All You Need" in Keras 3.

Masks are boolean with True = may attend; attention is scaled by 1/sqrt(d_k).
No Streamlit and no Plotly here: `run_live` turns a `LiveConfig` into NumPy arrays.
"""

import os

# TensorFlow's CPU allocator: its BFC pool, not malloc, unless the user chose (read at TensorFlow's first
# allocation, so it holds for everything that imports the engine). On a host whose page faults are slow, malloc
# gave each of a block-wise run's large tensors fresh pages: N = 4096 with 64 heads 45 s, 14 s with the pool, which
# keeps the run's peak for the next (docs/performance.md).
os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")

from transformer.runtime import tf_patches  # noqa: F401  (first: Keras imported without scikit-learn, see its table)

# isort: split

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
from transformer.live.result import LiveResult, stack_sides
from transformer.live.walkthrough import Walkthrough
from transformer.runtime.device import device_label, resolve_device, visible_gpus

# What computes is the service's (transformer/service.py), on the one engine thread: the face re-exports it.
from transformer.service import (
    attention_walkthrough,
    keras_difference,
    line_count,
    read_lines,
    run_live,
    score_terms,
    sequence_lengths,
    value_norms,
)
from transformer.training.pretrained import Pretrained, load_pretrained

__all__ = [
    "AttentionStages", "Decoder", "DecoderBlock", "Encoder", "EncoderBlock", "FeedForward", "LiveConfig",
    "LiveResult", "ModelCache", "MultiHeadAttention", "PositionalEncoding", "Pretrained", "ResidualBlock",
    "ScaledEmbedding", "Transformer", "Walkthrough", "attention_stages", "attention_walkthrough", "device_label",
    "keras_difference", "line_count", "load_pretrained", "read_lines", "masked_softmax", "padding_mask",
    "positional_encoding",
    "resolve_device", "run_live", "score_terms", "scaled_dot_product_attention", "sequence_lengths", "stack_sides",
    "subsequent_mask", "value_norms",
    "target_mask", "visible_gpus",
]

visible_gpus()  # before any TensorFlow op, whatever the first request: memory growth on, TensorFloat-32 off
