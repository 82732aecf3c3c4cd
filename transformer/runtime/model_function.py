"""A model's function of its four inputs, run eagerly until traced, then one graph for every size."""

from __future__ import annotations

import tensorflow as tf

from transformer.runtime.tf_patches import quiet_retracing_warning

# The four model inputs every traced function of a model takes: free batch and lengths.
MODEL_INPUTS = (
    tf.TensorSpec((None, None), tf.int32),  # src (B, N_s)
    tf.TensorSpec((None, None), tf.int32),  # tgt (B, N_t)
    tf.TensorSpec((None, 1, None, None), tf.bool),  # src_mask (B, 1, 1, N_s)
    tf.TensorSpec((None, 1, None, None), tf.bool),  # tgt_mask (B, 1, N_t, N_t)
)


class ModelFunction:
    """``function(src, tgt, src_mask, tgt_mask)`` run eagerly until `trace` is called, then one graph.

    Tracing takes ~0.6 s on 2 cores and an eager run tens of milliseconds, so a new function runs
    eagerly and the engine traces it once it is idle (`transformer.runtime.engine_thread`). The graph's
    signature leaves batch and lengths free: ``traces`` stays 1 for every size.
    """

    def __init__(self, function, device: str):
        self.function = function
        self.device = device
        self.traces = 0
        self.traced = False
        self._graph = tf.function(self._counted, autograph=False, input_signature=MODEL_INPUTS)
        quiet_retracing_warning(self._graph)  # each ModelFunction counts its own traces

    def __call__(self, src, tgt, src_mask, tgt_mask):
        if self.traced:
            return self._graph(src, tgt, src_mask, tgt_mask)
        return self.function(src, tgt, src_mask, tgt_mask)

    def trace(self) -> None:
        """Trace (and run once) with a tiny input; later calls of any size reuse the graph."""
        if self.traced:
            return
        ids, ones = tf.ones((1, 2), tf.int32), tf.ones((1, 1, 2, 2), tf.bool)  # (B=1, N=2)
        with tf.device(self.device):
            self._graph(ids, ids, ones[:, :, :1], ones)
        self.traced = True

    def _counted(self, *inputs):
        self.traces += 1  # runs only while tracing
        return self.function(*inputs)
