"""A position-wise linear map, the building block of the projections and the feed-forward network."""

from __future__ import annotations

import contextlib
import threading

import keras
import tensorflow as tf

_ZEROED = threading.local()  # .on: this thread builds `Linear` kernels as zeros (see zero_kernels)


@contextlib.contextmanager
def zero_kernels():
    """On this thread, within the block, new `Linear` kernels start as zeros, not Glorot-uniform draws.

    For a caller that assigns every weight itself right after building (`transformer.live.model_cache`
    draws a random model's weights from its seed): the ~35 eager random draws were half the time of building
    a default model. Other threads (a training run building its model) are not affected.
    """
    before = getattr(_ZEROED, "on", False)
    _ZEROED.on = True
    try:
        yield
    finally:
        _ZEROED.on = before


@keras.saving.register_keras_serializable(package="attention_lab")
class Linear(keras.layers.Layer):
    """``activation(x · kernel + bias)`` on the last axis: ``(..., d_in)`` -> ``(..., units)``.

    What ``keras.layers.Dense`` computes, written as one broadcasting matmul: Dense
    runs rank-3 inputs through tensordot (about 20 extra graph ops per layer), which
    made tracing a new architecture about 40% slower. The weights are ``kernel``
    ``(d_in, units)`` then ``bias`` ``(units,)``, in Dense's order, so weight files match.
    """

    def __init__(self, units: int, activation=None, use_bias: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.activation = keras.activations.get(activation)
        self.use_bias = use_bias  # False: ``activation(x · kernel)``, no bias weight (a Llama's projections)

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], self.units),
                                      initializer="zeros" if getattr(_ZEROED, "on", False) else "glorot_uniform")
        self.bias = self.add_weight(name="bias", shape=(self.units,), initializer="zeros") if self.use_bias else None

    def call(self, x):
        y = tf.matmul(x, self.kernel)  # (..., units)
        return self.activation(y if self.bias is None else y + self.bias)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units, activation=keras.activations.serialize(self.activation),
                      use_bias=self.use_bias)
        return config
