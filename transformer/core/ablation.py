"""Head ablation through the attention layers' override point: an `AttentionHook` whose kernel replaces some
heads' context before the heads are merged (zero- or mean-ablation).

An ablation names heads as ``(stack, layer, head)`` triples (``stack`` among `STACKS`). `active_heads` turns them
into a ``(stacks, L, H)`` array of 1 (active) and 0 (ablated), which `HeadAblation.of_active` reads as a tensor, so
that one traced function serves every set of ablated heads.

Mean-ablation's mean is defined once (`head_means`): each head's context averaged over the real (not padding) query
positions of a stated set of lines, in the model without ablation, ``(stacks, L, H, d_v)``. It is computed once and
handed to every run, so that no run's result depends on which other lines or how much padding ran beside it.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from transformer.core.attention import AttentionHook, attention_stages
from transformer.core.shape import STACKS

ABLATIONS = ("zero", "mean")


def check_ablation(ablate, kind: str, stacks: tuple, layers: int, heads: int) -> tuple:
    """``ablate`` as a sorted tuple of ``(stack, layer, head)`` triples; ValueError naming a head the model lacks,
    a kind other than `ABLATIONS`, or an ablation of every head of the model (nothing would attend)."""
    if kind not in ABLATIONS:
        raise ValueError(f"The ablation must be one of {ABLATIONS}. Received: ablation={kind!r}")
    triples = tuple(sorted({tuple(triple) for triple in ablate}))
    missing = [triple for triple in triples if len(triple) != 3 or triple[0] not in stacks
               or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in triple[1:])
               or not 0 <= triple[1] < layers or not 0 <= triple[2] < heads]
    if missing:
        raise ValueError(f"Ablated heads must be (stack, layer, head) of this model: stacks {stacks}, layers 0 to "
                         f"{layers - 1}, heads 0 to {heads - 1}. Received: {missing!r}")
    if len(triples) == len(stacks) * layers * heads:
        raise ValueError(f"That ablates every head of the model ({len(triples)}): nothing would attend. Keep one "
                         "head at least.")
    return tuple((stack, int(layer), int(head)) for stack, layer, head in triples)


def active_heads(ablate, layers: int, heads: int) -> np.ndarray:
    """``(len(STACKS), L, H)`` float32: 0 for each ``(stack, layer, head)`` in ``ablate``, 1 elsewhere."""
    active = np.ones((len(STACKS), layers, heads), np.float32)
    for stack, layer, head in ablate:
        active[STACKS.index(stack), layer, head] = 0.0
    return active


def head_label(triple) -> str:
    """``("cross", 1, 2)`` -> ``"cross L1 H2"``."""
    stack, layer, head = triple
    return f"{stack} L{layer} H{head}"


class HeadAblation(AttentionHook):
    """Ablates heads: ``heads`` maps a layer's ``site`` (``("encoder" | "decoder" | "cross", layer)``) to the heads
    whose context is replaced, by zeros (``"zero"``) or by the head's mean (``"mean"``: ``means``, `head_means`'
    ``(stacks, L, H, d_v)``), before the heads are merged and projected. Their own weights are still computed (and
    returned)."""

    def __init__(self, heads: dict, kind: str = "zero", means=None):
        if kind not in ABLATIONS:
            raise ValueError(f"kind must be one of {ABLATIONS}. Received: kind={kind!r}")
        if kind == "mean" and means is None:
            raise ValueError("Mean-ablation replaces a head by its mean over stated lines: give the means "
                             "(transformer.core.ablation.head_means). Received: means=None")
        self.heads, self.kind = {site: tuple(chosen) for site, chosen in heads.items() if chosen}, kind
        self.active = None  # (stacks, L, H) tensor of `of_active`
        self.means = None if kind == "zero" else _as_tensor(means)  # (stacks, L, H, d_v)

    @classmethod
    def of_active(cls, active, kind: str = "zero", means=None) -> HeadAblation:
        """The ablation of a ``(len(STACKS), L, H)`` active array or tensor (`active_heads`): every layer goes through
        the ablating kernel, so the same traced function serves any set of heads. A ``tf.Variable`` (``active`` or
        ``means``) is read at each call: set it, and the next call ablates the new heads."""
        hook = cls({}, kind, means)
        hook.active = _as_tensor(active)  # (S, L, H)
        return hook

    def kernel(self, layer):
        stack, index = layer.site
        means = None if self.means is None else self.means[STACKS.index(stack), index]  # (H, d_v)
        if self.active is not None:
            return _AblatedHeads(self.active[STACKS.index(stack), index], self.kind, means)  # (H,)
        ablated = self.heads.get(layer.site)
        if not ablated:
            return None
        return _AblatedHeads([0.0 if head in ablated else 1.0 for head in range(layer.num_heads)], self.kind, means)


def _as_tensor(values):
    return values if isinstance(values, tf.Variable) else tf.convert_to_tensor(values, tf.float32)


class _AblatedHeads:
    """Scaled dot-product attention with some heads' context replaced (`HeadAblation`)."""

    def __init__(self, active, kind: str, means=None):
        self.kind = kind
        self.active = tf.reshape(tf.convert_to_tensor(active, tf.float32), (1, -1, 1, 1))  # (1, H, 1, 1): 0 = ablated
        self.means = None if means is None else tf.expand_dims(tf.expand_dims(means, 0), 2)  # (1, H, 1, d_v)

    def attend(self, q, k, v, mask=None, bias=None):
        stages = attention_stages(q, k, v, mask, bias=bias)
        context = stages.output  # (B, H, N_q, d_v)
        active = tf.cast(self.active, context.dtype)  # (1, H, 1, 1)
        if self.kind == "zero":
            return context * active, stages.weights
        return context * active + tf.cast(self.means, context.dtype) * (1 - active), stages.weights


def head_means(model, src, tgt, src_mask, tgt_mask, pad_ids) -> np.ndarray:
    """Mean-ablation's means: every head's context averaged over the real query positions, in ``model`` run without
    ablation on these lines, ``(len(STACKS), L, H, d_v)`` float32 (0 for a stack the model lacks).

    Args:
      src, tgt: ``(B, N_s)``, ``(B, N_t)`` ids (``src`` None for a decoder-only model); src_mask, tgt_mask: the masks
        the model runs with; pad_ids: the ids that are padding. The encoder's queries are the source's positions, the
        decoder's and cross-attention's the target's; a padding position is not real and is left out.
    """
    real = [None if ids is None else ~np.isin(np.asarray(ids), list(pad_ids) or [-1]) for ids in (src, tgt)]
    recorder = _MeanRecorder({"encoder": real[0], "decoder": real[1], "cross": real[1]})
    model.attention_maps(model.stacks, src, tgt, src_mask, tgt_mask, hook=recorder)
    means = np.zeros((len(STACKS), model.num_layers, model.num_heads, model.d_model // model.num_heads), np.float32)
    for (stack, layer), mean in recorder.means.items():
        means[STACKS.index(stack), layer] = mean  # (H, d_v)
    return means


class _MeanRecorder(AttentionHook):
    """Runs every layer as it is and keeps each head's context averaged over the real queries (`head_means`)."""

    def __init__(self, real: dict):
        self.real = {stack: None if rows is None else tf.cast(tf.convert_to_tensor(rows), tf.float32)
                     for stack, rows in real.items()}  # (B, N_q) each
        self.means = {}

    def kernel(self, layer):
        return _Recording(self, layer.site)


class _Recording:
    def __init__(self, recorder: _MeanRecorder, site: tuple):
        self.recorder, self.site = recorder, site

    def attend(self, q, k, v, mask=None, bias=None):
        stages = attention_stages(q, k, v, mask, bias=bias)
        real = self.recorder.real[self.site[0]][:, None, :, None]  # (B, 1, N_q, 1)
        total = tf.reduce_sum(stages.output * real, axis=[0, 2])  # (H, d_v)
        self.recorder.means[self.site] = (total / tf.maximum(tf.reduce_sum(real), 1.0)).numpy()  # (H, d_v)
        return stages.output, stages.weights


def decoder_ablation(model, ablate, kind: str = "zero", means=None) -> HeadAblation | None:
    """``ablate`` (``(layer, head)`` pairs of a decoder-only model's decoder) as an ablation hook of ``kind``
    ("zero" or "mean", with the heads' ``means`` ``(stacks, L, H, d_v)``), or None."""
    if not ablate:
        return None
    return HeadAblation.of_active(active_heads([("decoder", layer, head) for layer, head in ablate], model.num_layers,
                                           model.num_heads), kind, means)
