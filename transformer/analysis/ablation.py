"""Head ablation through the attention layers' override point: an `AttentionHook` whose kernel replaces some
heads' context before the heads are merged (zero- or mean-ablation)."""

from __future__ import annotations

import tensorflow as tf

from transformer.core.attention import AttentionHook, attention_stages

ABLATIONS = ("zero", "mean")


class HeadAblation(AttentionHook):
    """Ablates heads: ``heads`` maps a layer's ``site`` (``("encoder" | "decoder" | "cross", layer)``) to the heads
    whose context is replaced, by zeros (``"zero"``) or by its mean over the batch's query positions (``"mean"``),
    before the heads are merged and projected. Their own weights are still computed (and returned)."""

    def __init__(self, heads: dict, kind: str = "zero"):
        if kind not in ABLATIONS:
            raise ValueError(f"kind must be one of {ABLATIONS}. Received: kind={kind!r}")
        self.heads, self.kind = {site: tuple(chosen) for site, chosen in heads.items() if chosen}, kind

    def kernel(self, layer):
        ablated = self.heads.get(layer.site)
        return None if not ablated else _AblatedHeads(ablated, layer.num_heads, self.kind)


class _AblatedHeads:
    """Scaled dot-product attention with some heads' context replaced (`HeadAblation`)."""

    def __init__(self, heads: tuple, num_heads: int, kind: str):
        self.kind = kind
        kept = [0.0 if head in heads else 1.0 for head in range(num_heads)]
        self.kept = tf.constant(kept, tf.float32)[None, :, None, None]  # (1, H, 1, 1): 0 for an ablated head

    def attend(self, q, k, v, mask=None, bias=None):
        stages = attention_stages(q, k, v, mask, bias=bias)
        context = stages.output  # (B, H, N_q, d_v)
        kept = tf.cast(self.kept, context.dtype)  # (1, H, 1, 1)
        if self.kind == "zero":
            return context * kept, stages.weights
        mean = tf.reduce_mean(context, axis=[0, 2], keepdims=True)  # (1, H, 1, d_v): over the batch's positions
        return context * kept + mean * (1 - kept), stages.weights
