"""Head ablation through the attention layers' override point: an `AttentionHook` whose kernel replaces some
heads' context before the heads are merged (zero- or mean-ablation).

An ablation names heads as ``(stack, layer, head)`` triples (``stack`` among `STACKS`). `kept_array` turns them
into a ``(stacks, L, H)`` array of 1 (kept) and 0 (ablated), which `HeadAblation.of_kept` reads as a tensor, so
that one traced function serves every set of ablated heads.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from transformer.core.attention import AttentionHook, attention_stages
from transformer.core.model import STACKS

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


def kept_array(ablate, layers: int, heads: int) -> np.ndarray:
    """``(len(STACKS), L, H)`` float32: 0 for each ``(stack, layer, head)`` in ``ablate``, 1 elsewhere."""
    kept = np.ones((len(STACKS), layers, heads), np.float32)
    for stack, layer, head in ablate:
        kept[STACKS.index(stack), layer, head] = 0.0
    return kept


def head_label(triple) -> str:
    """``("cross", 1, 2)`` -> ``"cross L1 H2"``."""
    stack, layer, head = triple
    return f"{stack} L{layer} H{head}"


class HeadAblation(AttentionHook):
    """Ablates heads: ``heads`` maps a layer's ``site`` (``("encoder" | "decoder" | "cross", layer)``) to the heads
    whose context is replaced, by zeros (``"zero"``) or by its mean over the batch's query positions (``"mean"``),
    before the heads are merged and projected. Their own weights are still computed (and returned)."""

    def __init__(self, heads: dict, kind: str = "zero"):
        if kind not in ABLATIONS:
            raise ValueError(f"kind must be one of {ABLATIONS}. Received: kind={kind!r}")
        self.heads, self.kind = {site: tuple(chosen) for site, chosen in heads.items() if chosen}, kind
        self.kept = None  # (stacks, L, H) tensor of `of_kept`

    @classmethod
    def of_kept(cls, kept, kind: str = "zero") -> HeadAblation:
        """The ablation of a ``(len(STACKS), L, H)`` kept array or tensor (`kept_array`): every layer goes through
        the ablating kernel, so the same traced function serves any set of heads. A ``tf.Variable`` is read at each
        call: set it, and the next call ablates the new heads."""
        hook = cls({}, kind)
        hook.kept = kept if isinstance(kept, tf.Variable) else tf.convert_to_tensor(kept, tf.float32)  # (S, L, H)
        return hook

    def kernel(self, layer):
        stack, index = layer.site
        if self.kept is not None:
            return _AblatedHeads(self.kept[STACKS.index(stack), index], self.kind)  # (H,)
        ablated = self.heads.get(layer.site)
        if not ablated:
            return None
        return _AblatedHeads([0.0 if head in ablated else 1.0 for head in range(layer.num_heads)], self.kind)


class _AblatedHeads:
    """Scaled dot-product attention with some heads' context replaced (`HeadAblation`)."""

    def __init__(self, kept, kind: str):
        self.kind = kind
        self.kept = tf.reshape(tf.convert_to_tensor(kept, tf.float32), (1, -1, 1, 1))  # (1, H, 1, 1): 0 = ablated

    def attend(self, q, k, v, mask=None, bias=None):
        stages = attention_stages(q, k, v, mask, bias=bias)
        context = stages.output  # (B, H, N_q, d_v)
        kept = tf.cast(self.kept, context.dtype)  # (1, H, 1, 1)
        if self.kind == "zero":
            return context * kept, stages.weights
        mean = tf.reduce_mean(context, axis=[0, 2], keepdims=True)  # (1, H, 1, d_v): over the batch's positions
        return context * kept + mean * (1 - kept), stages.weights
