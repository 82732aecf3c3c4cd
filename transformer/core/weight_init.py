"""Random weights drawn from a seed, each from the seed and its place in the model.

The Keras defaults, made deterministic whatever Keras's global RNG did: kernels Glorot
uniform, embeddings U(-0.05, 0.05), biases and LayerNorm beta 0, LayerNorm gamma 1.
"""

from __future__ import annotations

import hashlib

import numpy as np


def seed_weights(model, seed: int) -> None:
    """Assign every weight of ``model`` its value for ``seed``.

    Each weight has a generator of its own (`weight_generator`), so its values depend on the seed,
    its place in the model and its shape, not on the other weights: changing the heads keeps every
    weight (the same projections, split into other heads); adding a layer keeps the layers there
    were; changing d_ff redraws the feed-forward weights only.
    """
    for variable in model.weights:
        shape, name = tuple(variable.shape), variable.path
        if name.endswith("gamma"):
            value = np.ones(shape, np.float32)
        elif name.endswith(("beta", "bias")):
            value = np.zeros(shape, np.float32)
        elif name.endswith("embeddings"):
            value = uniform(weight_generator(seed, name), 0.05, shape)
        else:
            value = uniform(weight_generator(seed, name), np.sqrt(6.0 / (shape[0] + shape[-1])), shape)
        variable.assign(value)


def uniform(generator: np.random.Generator, limit: float, shape) -> np.ndarray:
    """U(-limit, limit) float32 of ``shape``, drawn in float32 and scaled in place (half the time and
    memory of a float64 draw cast down)."""
    values = generator.random(shape, dtype=np.float32)  # [0, 1)
    values *= np.float32(2 * limit)
    values -= np.float32(limit)
    return values  # [-limit, limit)


def weight_generator(seed: int, path: str) -> np.random.Generator:
    """The generator of the weight at ``path`` (``transformer/encoder/block_0/…/kernel``) for ``seed``: keyed on
    the seed and the path within the model (without the model's own name, which Keras numbers), not on the
    order in which the weights are drawn."""
    place = path.split("/", 1)[-1].encode()
    return np.random.default_rng([seed, int.from_bytes(hashlib.blake2b(place, digest_size=8).digest(), "little")])
