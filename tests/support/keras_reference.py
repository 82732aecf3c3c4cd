"""The Keras check as the tests call it: one of our layers against Keras's with the same weights."""

import numpy as np
import tensorflow as tf

from transformer.analysis.reference import keras_gaps, keras_twin


def compare_with_keras(layer, query, key, value, mask) -> dict:
    """Max absolute differences between ``layer`` and Keras's layer with the same weights.

    Args:
      layer: our `MultiHeadAttention`.
      query, key, value: ``(B, N_q, d_model)``, ``(B, N_k, d_model)``, ``(B, N_k, d_model)``.
      mask: ``(B, N_q, N_k)`` bool, True = may attend. Rows with no allowed key are
        left out: Keras spreads them uniformly, this engine gives them zero weight.

    Returns:
      ``{"output": float, "weights": float}``.
    """
    mask = tf.convert_to_tensor(np.asarray(mask, bool))  # (B, N_q, N_k)
    gaps = keras_gaps(layer, keras_twin(layer), query, key, value, mask)
    return {name: float(gap) for name, gap in gaps.items()}
