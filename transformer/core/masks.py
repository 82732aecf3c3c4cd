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


def cached_causal_mask(start, length):
    """The look-ahead mask of ``length`` new queries at positions ``start …`` over every key so far:
    ``(1, 1, length, start + length)`` bool, ``[i, j] = j <= start + i`` (cached decoding)."""
    queries = start + tf.range(length)[:, None]  # (N, 1)
    keys = tf.range(start + length)[None, :]  # (1, start + N)
    return (keys <= queries)[None, None]  # (1, 1, N, start + N)


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


# ----------------------------------------------------------------- mask families of later models

MASK_FAMILIES = ("paper", "causal", "bidirectional", "prefix", "window", "strided", "block")
SIZED_FAMILIES = {"prefix": "prefix length", "window": "window", "strided": "stride", "block": "block size"}


def _positions(n):
    """``(i (N, 1), j (1, N))``: query and key positions."""
    position = tf.range(n)  # (N,)
    return position[:, None], position[None, :]


def size_range(family, n) -> tuple[int, int]:
    """``(smallest, largest)`` size of a sized family at length ``n``: a prefix may be empty, a window, stride
    or block holds at least one position; none is longer than the sequence."""
    return (0 if family == "prefix" else 1), n


def _check_size(name, value, n, family):
    low, high = size_range(family, n)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to n={n}. Received: {name}={value!r}")


def sliding_window_mask(n, window):
    """Each query sees its last ``window`` keys, itself included: ``j <= i < j + window``. ``(n, n)`` bool."""
    _check_size("window", window, n, "window")
    i, j = _positions(n)
    return tf.logical_and(j <= i, i - j < window)  # (N, N)


def prefix_mask(n, prefix):
    """Prefix LM: keys of the first ``prefix`` positions are seen by every query (bidirectional inside the
    prefix), later keys causally: ``j < prefix or j <= i``. ``(n, n)`` bool; ``prefix = 0`` is causal."""
    _check_size("prefix", prefix, n, "prefix")
    i, j = _positions(n)
    return tf.logical_or(j < prefix, j <= i)  # (N, N)


def strided_mask(n, stride):
    """The Sparse Transformer's strided pattern (Child et al. 2019): the last ``stride`` keys and every key a
    multiple of ``stride`` back, causally: ``j <= i and (i - j < stride or (i - j) % stride == 0)``."""
    _check_size("stride", stride, n, "strided")
    i, j = _positions(n)
    back = i - j  # (N, N) how far back the key is
    return tf.logical_and(back >= 0, tf.logical_or(back < stride, back % stride == 0))  # (N, N)


def block_mask(n, block):
    """Block-local attention: queries see the keys of their own block of ``block`` positions,
    ``i // block == j // block`` (both ways). ``(n, n)`` bool."""
    _check_size("block", block, n, "block")
    i, j = _positions(n)
    return tf.equal(i // block, j // block)  # (N, N)


def family_mask(family, n, size=1):
    """The ``(n, n)`` self-attention pattern of ``family`` (`MASK_FAMILIES`; ``"paper"`` gives None: the
    encoder sees everything and the decoder has the look-ahead mask). ``size``: the prefix length, window,
    stride or block size of a sized family."""
    if family not in MASK_FAMILIES:
        raise ValueError(f"mask family must be one of {MASK_FAMILIES}. Received: family={family!r}")
    if family == "paper":
        return None
    if family == "causal":
        return subsequent_mask(n)
    if family == "bidirectional":
        return tf.ones((n, n), tf.bool)
    return {"prefix": prefix_mask, "window": sliding_window_mask, "strided": strided_mask,
            "block": block_mask}[family](n, size)
