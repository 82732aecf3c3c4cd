"""Dropout layers that exist only when they drop something.

A rate-0 ``keras.layers.Dropout`` is the identity, yet each one costs a Keras layer's construction
(~1 ms); the app's random-weight models run with rate 0 and have ~20 of them at two layers, about a
fifth of a new architecture's build. With a rate above 0 (the trained models) the layer is Keras's own.
"""

from __future__ import annotations

import keras


def dropout_layer(rate: float) -> keras.layers.Dropout | None:
    """``keras.layers.Dropout(rate)``, or None for rate 0 (a rate outside [0, 1] raises Keras's ValueError)."""
    return keras.layers.Dropout(rate) if rate else None


def apply_dropout(layer: keras.layers.Dropout | None, x, training=False):
    """``layer(x, training=training)``; ``x`` itself when there is no layer (rate 0). Same shape as ``x``."""
    return x if layer is None else layer(x, training=training)
