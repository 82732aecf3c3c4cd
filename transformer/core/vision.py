"""A Vision Transformer (Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words") at the lab's size: an 8×8 image
cut into 16 patches of 2×2 pixels, each linearly embedded; a learned CLS token in front; learned positions; the
lab's pre-norm encoder blocks; a linear classifier on CLS's final state. Token 0 is CLS, token ``1 + p`` patch p.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from transformer.core.layers import Encoder
from transformer.core.positional import LearnedPositions

IMAGE, PATCH = 8, 2
GRID = IMAGE // PATCH
TOKENS = 1 + GRID * GRID  # CLS and 16 patches


def patch_rows(images):
    """``(B, 8, 8)`` -> ``(B, 16, 4)``: each patch's pixels, patches row-major, a patch's pixels row-major."""
    blocks = tf.reshape(images, (-1, GRID, PATCH, GRID, PATCH))  # (B, 4, 2, 4, 2)
    return tf.reshape(tf.transpose(blocks, (0, 1, 3, 2, 4)), (-1, GRID * GRID, PATCH * PATCH))  # (B, 16, 4)


@keras.saving.register_keras_serializable(package="attention_lab")
class VisionTransformer(keras.Model):
    """Call: ``images (B, 8, 8)`` in [0, 1] -> ``(logits (B, classes), [weights (B, H, 17, 17)] a layer)``."""

    def __init__(self, num_classes: int, d_model: int = 64, num_heads: int = 4, num_layers: int = 2, d_ff: int = 0,
                 dropout: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.num_classes, self.d_model, self.num_heads = num_classes, d_model, num_heads
        self.num_layers, self.d_ff, self.dropout = num_layers, d_ff, dropout
        self.patch_embedding = keras.layers.Dense(d_model, name="patch_embedding")
        self.positions = LearnedPositions(TOKENS, d_model, dropout, name="positions")
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, dropout, norm="pre", name="encoder")
        self.classifier = keras.layers.Dense(num_classes, name="classifier")

    def build(self, images_shape=None):
        self.cls = self.add_weight(name="cls", shape=(1, 1, self.d_model), initializer="zeros")
        self.patch_embedding.build((None, GRID * GRID, PATCH * PATCH))
        self.positions.build((None, TOKENS, self.d_model))
        self.encoder.build((None, TOKENS, self.d_model))
        self.classifier.build((None, self.d_model))

    def embed(self, images, training=False):
        """``(B, 8, 8)`` -> ``(B, 17, d_model)``: CLS, then each patch's embedding, positions added."""
        patches = self.patch_embedding(patch_rows(tf.cast(images, self.compute_dtype)))  # (B, 16, D)
        cls = tf.tile(tf.cast(self.cls, patches.dtype), (tf.shape(patches)[0], 1, 1))  # (B, 1, D)
        return self.positions(tf.concat([cls, patches], axis=1), training=training)  # (B, 17, D)

    def attention_layers(self, stack: str = "encoder") -> list:
        """Each layer's `MultiHeadAttention`, first first."""
        return self.encoder.attention_layers("encoder")

    def call(self, images, training=False, hook=None):
        hidden, weights = self.encoder(self.embed(images, training), training=training, hook=hook)  # (B, 17, D)
        return self.classifier(hidden[:, 0]), weights  # (B, C), L × (B, H, 17, 17)

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes, "d_model": self.d_model,
                "num_heads": self.num_heads, "num_layers": self.num_layers, "d_ff": self.d_ff,
                "dropout": self.dropout}
