"""Activation patching through the model's own override point (`AttentionHook`): a `PatchHook` runs one line as a
batch of B rows, each row with its own patch, and replaces, before the model uses them,

* some heads' context with another run's (a head's output: ``heads``),
* the residual stream at some positions with another run's (``positions``),
* one head's query, key or value input with the layer's input plus a change (a path: ``inputs``).

A `Recorder` keeps what a run's heads and streams were (the values a patch copies). Sites are named as the layers
name them: an attention layer ``(stack, layer)`` with stack "encoder", "decoder" or "cross"; a stream ``(stack,
layer)`` with stack "encoder" or "decoder", ``layer`` from 0 (entering the first block) to L (the stack's output).
"""

from __future__ import annotations

import tensorflow as tf

from transformer.core.attention import AttentionHook, attention_stages

SIDES = ("q", "k", "v")


class Recorder(AttentionHook):
    """Runs every layer as it is and keeps, for one run, each attention layer's context ``contexts[(stack, layer)]``
    ``(B, H, N_q, d_v)`` and each stream ``streams[(stack, layer)]`` ``(B, N, d_model)``."""

    def __init__(self):
        self.contexts, self.streams = {}, {}

    def kernel(self, layer):
        return _Recording(self.contexts, layer.site)

    def stream(self, site, x):
        self.streams[site] = x
        return x


class _Recording:
    def __init__(self, contexts: dict, site: tuple):
        self.contexts, self.site = contexts, site

    def attend(self, q, k, v, mask=None, bias=None):
        stages = attention_stages(q, k, v, mask, bias=bias)
        self.contexts[self.site] = stages.output  # (B, H, N_q, d_v)
        return stages.output, stages.weights


class PatchHook(AttentionHook):
    """A batch's patches, row by row (every tensor's first axis is the row, B).

    Args:
      heads: ``{(stack, layer): (B, H, N_q)}`` 1 where the row takes head h's context at query position n from
        ``contexts`` (every position: the head's whole output; one: its output there, TransformerLens's "by pos").
      contexts: ``{(stack, layer): (1, H, N_q, d_v)}`` the source run's contexts (a `Recorder`'s).
      positions: ``{(stack, layer): (B, N)}`` 1 where the row takes the stream at position n from ``streams``.
      streams: ``{(stack, layer): (1, N, d_model)}`` the source run's streams.
      inputs: ``{(stack, layer): (change_q (B, N_q, d_model), change_kv (B, N_k, d_model), sides (3, B, H))}``: the
        row's change to the layer's query input and to its key and value inputs, and (``sides`` in `SIDES` order)
        1 where head h's query, key or value is projected from the changed input, 0 where from the layer's own.
    """

    def __init__(self, heads=None, contexts=None, positions=None, streams=None, inputs=None):
        self.heads, self.contexts = heads or {}, contexts or {}
        self.positions, self.streams = positions or {}, streams or {}
        self.inputs = inputs or {}
        self.seen = {}  # (stack, layer) -> the layer's (query, key, value) inputs in this run, for `inputs`

    def observe(self, layer, query, key, value, mask):
        if layer.site in self.inputs:
            self.seen[layer.site] = (query, key, value)

    def kernel(self, layer):
        if layer.site in self.heads or layer.site in self.inputs:
            return _PatchedHeads(self, layer)
        return None

    def stream(self, site, x):
        chosen = self.positions.get(site)
        if chosen is None:
            return x
        chosen = tf.cast(chosen, x.dtype)[:, :, None]  # (B, N, 1)
        return x * (1 - chosen) + tf.cast(self.streams[site], x.dtype) * chosen  # (B, N, D)


def _choose(chosen, patched, own):
    """``patched`` where ``chosen`` ``(B, H)`` is 1, ``own`` elsewhere: ``(B, H, N, d)``."""
    chosen = tf.cast(chosen, own.dtype)[:, :, None, None]  # (B, H, 1, 1)
    return own * (1 - chosen) + patched * chosen


class _PatchedHeads:
    """One layer's attention with the rows' patches (`PatchHook`)."""

    def __init__(self, hook: PatchHook, layer):
        self.hook, self.layer = hook, layer

    def attend(self, q, k, v, mask=None, bias=None):
        site = self.layer.site
        if site in self.hook.inputs:
            change_q, change_kv, sides = self.hook.inputs[site]
            query, key, value = self.hook.seen[site]  # (B, N_q, D), (B, N_k, D) ×2
            patched = self.layer.project(query + change_q, key + change_kv, value + change_kv)  # 3 × (B, H, N, d_k)
            q, k, v = (_choose(sides[index], patched[index], own) for index, own in enumerate((q, k, v)))
        stages = attention_stages(q, k, v, mask, bias=bias)
        context = stages.output  # (B, H, N_q, d_v)
        if site in self.hook.heads:
            chosen = tf.cast(self.hook.heads[site], context.dtype)[:, :, :, None]  # (B, H, N_q, 1)
            context = context * (1 - chosen) + tf.cast(self.hook.contexts[site], context.dtype) * chosen
        return context, stages.weights
