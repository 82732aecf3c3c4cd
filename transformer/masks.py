"""Padding, subsequent (look-ahead) and target masks as booleans, True = may attend.

The seeds disagree with themselves here: seed 004's prose says the subsequent
mask is ``mask[i, j] = i <= j`` (upper triangular), its code builds the lower
triangle. The paper wins: query ``i`` may attend to keys ``j <= i``.
"""

from __future__ import annotations

from collections.abc import Iterable

import tensorflow as tf


def _pad_values(pad) -> list:
    if isinstance(pad, (str, bytes)) or not isinstance(pad, Iterable):
        return [pad]
    values = list(pad)
    if not values:
        raise ValueError("padding_mask needs at least one pad symbol. Received: pad=[]")
    return values


def padding_mask(tokens, pad):
    """True where a token is not padding.

    Args:
      tokens: ``(B, N)`` integer (or string) tokens.
      pad: one pad symbol or a collection of them.

    Returns:
      Boolean ``(B, 1, 1, N)``: broadcasts over heads and queries to
      ``(B, H, N_q, N_k)``, so padded keys are blocked for every query.
    """
    tokens = tf.convert_to_tensor(tokens)  # (B, N)
    pads = tf.constant(_pad_values(pad), dtype=tokens.dtype)  # (P,)
    is_pad = tf.reduce_any(tf.equal(tokens[..., None], pads), axis=-1)  # (B, N)
    return tf.logical_not(is_pad)[:, None, None, :]  # (B, 1, 1, N)


def subsequent_mask(length):
    """Look-ahead mask: ``mask[i, j] = j <= i`` (lower triangular), shape ``(N, N)``.

    Query position ``i`` may attend to itself and earlier key positions only.
    """
    ones = tf.ones((length, length), dtype=tf.int8)  # (N, N)
    return tf.cast(tf.linalg.band_part(ones, -1, 0), tf.bool)  # (N, N)


def target_mask(tokens, pad):
    """Decoder self-attention mask: padding AND subsequent.

    Args:
      tokens: ``(B, N)`` target tokens.
      pad: one pad symbol or a collection of them.

    Returns:
      Boolean ``(B, 1, N, N)``; ``[b, 0, i, j]`` is True when ``j <= i`` and key
      ``j`` of sequence ``b`` is not padding.
    """
    tokens = tf.convert_to_tensor(tokens)  # (B, N)
    future = subsequent_mask(tf.shape(tokens)[-1])  # (N, N)
    return tf.logical_and(padding_mask(tokens, pad), future)  # (B, 1, 1, N) & (N, N) -> (B, 1, N, N)
