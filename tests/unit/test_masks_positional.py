"""Masks and positional encodings against NumPy and the seed's expected figures."""

import numpy as np
import numpy_reference as ref
import pytest
import tensorflow as tf

from transformer import (
    PositionalEncoding,
    ScaledEmbedding,
    padding_mask,
    positional_encoding,
    subsequent_mask,
    target_mask,
)

SEED_BATCH = [[1, 2, 3, 4, 5, 0, 0], [1, 2, 0, 0, 0, 0, 0], [1, 2, 3, 4, 5, 6, 7]]


def test_seed_batch_padding_mask():
    mask = padding_mask(SEED_BATCH, 0).numpy()
    assert mask.shape == (3, 1, 1, 7) and mask.dtype == bool
    expected = np.array([[1, 1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1]], bool)
    np.testing.assert_array_equal(mask[:, 0, 0], expected)


def test_seed_batch_target_mask():
    mask = target_mask(SEED_BATCH, 0).numpy()
    assert mask.shape == (3, 1, 7, 7)
    lower = np.tril(np.ones((7, 7), bool))
    keys = np.array([[1, 1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1]], bool)
    for b in range(3):
        np.testing.assert_array_equal(mask[b, 0], lower & keys[b][None, :])
    # Spelled out for the second sequence: rows 2..6 see only keys 0 and 1.
    np.testing.assert_array_equal(mask[1, 0, 4], [1, 1, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(mask[1, 0, 0], [1, 0, 0, 0, 0, 0, 0])


def test_subsequent_mask_is_lower_triangular_not_the_seed_prose():
    """Seed 004's prose says mask[i, j] = i <= j; the paper (and its code) need j <= i."""
    mask = subsequent_mask(7).numpy()
    np.testing.assert_array_equal(mask, ref.subsequent_mask(7))
    assert mask[6, 0] and not mask[0, 6]


@pytest.mark.parametrize("pads", [[0], [0, 9], (3, 4, 5)])
def test_padding_mask_matches_numpy_on_random_tokens(pads):
    tokens = np.random.default_rng(1).integers(0, 10, (5, 11))
    np.testing.assert_array_equal(padding_mask(tokens, pads), ref.padding_mask(tokens, pads))
    np.testing.assert_array_equal(
        target_mask(tokens, pads), ref.padding_mask(tokens, pads) & ref.subsequent_mask(11)
    )


def test_padding_mask_accepts_string_tokens():
    mask = padding_mask([["a", "<pad>", "0"]], ["<pad>", "0"]).numpy()
    np.testing.assert_array_equal(mask[0, 0, 0], [True, False, False])


def test_padding_mask_needs_a_pad():
    with pytest.raises(ValueError, match="pad"):
        padding_mask([[1, 2]], [])


@pytest.mark.parametrize("length, d_model", [(50, 16), (7, 1), (13, 9), (128, 128)])
def test_positional_encoding_matches_numpy(length, d_model):
    expected = ref.positional_encoding(length, d_model)
    np.testing.assert_allclose(positional_encoding(length, d_model), expected, atol=2e-5)


def test_positional_encoding_rejects_bad_sizes():
    with pytest.raises(ValueError, match="d_model=0"):
        positional_encoding(5, 0)


def test_positional_encoding_layer_adds_encoding_for_any_length():
    layer = PositionalEncoding(8)
    for length in (3, 10):
        out = layer(tf.zeros((2, length, 8)))
        np.testing.assert_allclose(out[1], ref.positional_encoding(length, 8), atol=2e-5)


def test_scaled_embedding_multiplies_by_sqrt_d_model():
    layer = ScaledEmbedding(10, 16)
    out = layer(np.array([[3, 4]]))
    np.testing.assert_allclose(out[0, 0], layer.embeddings.numpy()[3] * 4.0, rtol=1e-6)
    clone = ScaledEmbedding.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()


@pytest.mark.parametrize("base", [10000.0, 100000.0])
def test_position_views_rotate_by_the_models_own_rope_base(base):
    """The Positional encoding page's RoPE pictures at a model's own base (SmolLM2's is 100,000): m·base^(−2i/d_k)
    from NumPy, and rotated dot products that depend on m − n only."""
    from transformer.service import position_views

    length, d_k = 12, 8
    views = position_views(length, d_k, 4, rope_base=base)
    expected = np.arange(length)[:, None] * base ** (-np.arange(0, d_k, 2) / d_k)[None, :]  # (N, d_k/2)
    np.testing.assert_allclose(views.rope_angles, expected, rtol=1e-5)
    for offset in range(-length + 1, length):
        assert np.ptp(np.diagonal(views.rope_dots, offset)) < 1e-4
    with pytest.raises(ValueError, match="rope_base=1"):
        position_views(length, d_k, 4, rope_base=1)
