"""Scaled dot-product and multi-head attention against NumPy, Keras and the paper."""

import keras
import numpy as np
import numpy_reference as ref
import pytest
import tensorflow as tf
from keras_reference import compare_with_keras

from transformer import MultiHeadAttention, attention_stages, masked_softmax, scaled_dot_product_attention
from transformer.analysis.reference import copy_to_keras, keras_twin
from transformer.core.attention import batch_and_length

RNG = np.random.default_rng(0)


def random(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("d_k", [1, 4, 64])
def test_matches_numpy_without_mask(d_k):
    q, k, v = random(2, 3, 5, d_k), random(2, 3, 6, d_k), random(2, 3, 6, 7)
    output, weights = scaled_dot_product_attention(q, k, v)
    expected_output, expected_weights = ref.softmax_attention(q, k, v)
    np.testing.assert_allclose(weights, expected_weights, atol=1e-5)
    np.testing.assert_allclose(output, expected_output, atol=1e-5)


def test_matches_numpy_with_random_mask():
    q, k, v = random(4, 2, 5, 8), random(4, 2, 6, 8), random(4, 2, 6, 3)
    mask = RNG.random((4, 1, 5, 6)) > 0.4
    output, weights = scaled_dot_product_attention(q, k, v, mask)
    expected_output, expected_weights = ref.softmax_attention(q, k, v, mask)
    np.testing.assert_allclose(weights, expected_weights, atol=1e-5)
    np.testing.assert_allclose(output, expected_output, atol=1e-5)


def test_scale_is_one_over_sqrt_dk_not_one_over_dk():
    """Seed 000 divides by d_k; the paper divides by sqrt(d_k)."""
    q = np.ones((1, 1, 16), np.float32)
    k = np.stack([np.ones(16), np.zeros(16)])[None].astype(np.float32)  # scores 16 and 0
    _, weights = scaled_dot_product_attention(q, k, k)
    paper = np.exp(16 / 4) / (np.exp(16 / 4) + 1)  # 16 / sqrt(16)
    seed_000 = np.exp(16 / 16) / (np.exp(16 / 16) + 1)
    assert float(weights[0, 0, 0]) == pytest.approx(paper, rel=1e-5)
    assert abs(float(weights[0, 0, 0]) - seed_000) > 0.1


def test_true_means_may_attend_and_masked_weights_are_exactly_zero():
    q, k, v = random(1, 3, 4), random(1, 3, 4), random(1, 3, 2)
    mask = np.array([[[True, False, True]]])
    _, weights = scaled_dot_product_attention(q, k, v, mask)
    assert np.all(weights.numpy()[..., 1] == 0.0)
    np.testing.assert_allclose(weights.numpy().sum(-1), 1.0, atol=1e-6)


def test_fully_masked_rows_get_zero_weight_and_zero_output_never_nan():
    q, k, v = random(2, 4, 8) * 1e3, random(2, 5, 8) * 1e3, random(2, 5, 3)
    mask = np.ones((2, 4, 5), bool)
    mask[0, 1] = False
    mask[1] = False
    output, weights = scaled_dot_product_attention(q, k, v, mask)
    assert np.isfinite(output.numpy()).all() and np.isfinite(weights.numpy()).all()
    assert np.all(weights.numpy()[0, 1] == 0) and np.all(output.numpy()[0, 1] == 0)
    assert np.all(weights.numpy()[1] == 0)
    np.testing.assert_allclose(weights.numpy()[0, [0, 2, 3]].sum(-1), 1.0, atol=1e-6)


def test_stages_are_consistent():
    q, k, v = random(2, 5, 8), random(2, 6, 8), random(2, 6, 3)
    mask = RNG.random((2, 5, 6)) > 0.3
    stages = attention_stages(q, k, v, mask)
    np.testing.assert_allclose(stages.scores, q @ k.transpose(0, 2, 1), atol=1e-5)
    np.testing.assert_allclose(stages.scaled, stages.scores.numpy() / np.sqrt(8), atol=1e-6)
    assert np.all(np.isneginf(stages.masked.numpy()[~mask]))
    output, weights = scaled_dot_product_attention(q, k, v, mask)
    np.testing.assert_allclose(stages.weights, weights, atol=1e-7)
    np.testing.assert_allclose(stages.output, output, atol=1e-6)


def build_pair(d_model=16, heads=4):
    ours = MultiHeadAttention(d_model, heads)
    x = random(2, 5, d_model)
    ours(x, x, x)
    return ours, copy_to_keras(ours)


@pytest.mark.parametrize("masked", [False, True])
def test_multi_head_self_attention_matches_keras(masked):
    ours, theirs = build_pair()
    x = random(2, 5, 16)
    mask = np.tril(np.ones((5, 5), bool))[None].repeat(2, 0) if masked else np.ones((2, 5, 5), bool)
    out, weights = ours(x, x, x, mask=mask[:, None])
    ref_out, ref_weights = theirs(x, x, x, attention_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(out, ref_out, atol=1e-5)
    np.testing.assert_allclose(weights, ref_weights, atol=1e-6)


@pytest.mark.parametrize("masked", [False, True])
def test_multi_head_cross_attention_matches_keras(masked):
    ours, theirs = build_pair(d_model=24, heads=3)
    query, memory = random(2, 4, 24), random(2, 7, 24)
    mask = np.ones((2, 4, 7), bool)
    if masked:
        mask[0, :, 5:] = False  # source padding
    out, weights = ours(query, memory, memory, mask=mask[:, None])
    ref_out, ref_weights = theirs(query, memory, memory, attention_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(out, ref_out, atol=1e-5)
    np.testing.assert_allclose(weights, ref_weights, atol=1e-6)
    gaps = compare_with_keras(ours, query, memory, memory, mask)
    assert gaps["output"] < 1e-5 and gaps["weights"] < 1e-6


def test_the_keras_twin_follows_weights_that_change_in_place():
    ours, _ = build_pair(d_model=16, heads=2)
    x = random(1, 5, 16)
    mask = np.ones((1, 5, 5), bool)
    assert compare_with_keras(ours, x, x, x, mask)["output"] < 1e-5
    for variable in ours.weights:  # what re-seeding a cached live model does
        variable.assign(variable.numpy() * -1.5 + 0.1)
    gaps = compare_with_keras(ours, x, x, x, mask)
    assert gaps["output"] < 1e-5 and gaps["weights"] < 1e-6


def test_the_keras_twin_copies_weights_again_only_for_a_new_version():
    ours, _ = build_pair(d_model=16, heads=2)
    twin = keras_twin(ours, version=("random", 1))
    kernel = twin.query_dense.kernel.numpy()
    for variable in ours.weights:
        variable.assign(variable.numpy() * -1.5 + 0.1)
    assert keras_twin(ours, version=("random", 1)) is twin
    np.testing.assert_array_equal(twin.query_dense.kernel.numpy(), kernel)  # same version: not copied again
    keras_twin(ours, version=("random", 2))
    np.testing.assert_allclose(twin.query_dense.kernel.numpy(), kernel * -1.5 + 0.1, rtol=1e-6)


def test_multi_head_attention_matches_numpy_per_head():
    layer = MultiHeadAttention(12, 3)
    x = random(1, 4, 12)
    out, weights = layer(x, x, x)
    wq, bq, wk, bk, wv, bv, wo, bo = (w.numpy() for w in layer.weights)
    q, k, v = x @ wq + bq, x @ wk + bk, x @ wv + bv
    heads = [ref.softmax_attention(q[..., h * 4:(h + 1) * 4], k[..., h * 4:(h + 1) * 4], v[..., h * 4:(h + 1) * 4])
             for h in range(3)]
    np.testing.assert_allclose(weights[0], np.stack([w for _, w in heads])[:, 0], atol=1e-5)
    np.testing.assert_allclose(out, np.concatenate([o for o, _ in heads], -1) @ wo + bo, atol=1e-5)


def test_split_and_merge_heads_are_inverse():
    layer = MultiHeadAttention(8, 2)
    x = random(3, 5, 8)
    split = layer.split_heads(x)
    assert split.shape == (3, 2, 5, 4)
    np.testing.assert_array_equal(layer.merge_heads(split), x)


def test_heads_split_and_merge_with_batch_and_length_left_free():
    """An eager run reads B and N off the static shape (Python ints, no ops); a graph traced with B and N free
    reads them at run time, and the same trace serves every batch and length."""
    layer = MultiHeadAttention(8, 2)
    assert batch_and_length(tf.zeros((3, 5, 8))) == (3, 5)
    free = tf.TensorSpec((None, None, 8), tf.float32)
    round_trip = tf.function(lambda x: layer.merge_heads(layer.split_heads(x)), input_signature=[free],
                             autograph=False)  # no control flow to convert (autograph once misread this lambda)
    for shape in ((3, 5, 8), (1, 2, 8), (2, 9, 8)):
        x = random(*shape)
        np.testing.assert_array_equal(round_trip(x), x)
        np.testing.assert_array_equal(layer.split_heads(x), np.transpose(x.reshape(*shape[:2], 2, 4), (0, 2, 1, 3)))
    assert round_trip.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("d_model, heads", [(10, 3), (8, 0), (8, 16)])
def test_heads_must_divide_d_model(d_model, heads):
    with pytest.raises(ValueError, match=f"d_model={d_model}, num_heads={heads}"):
        MultiHeadAttention(d_model, heads)


def test_config_round_trip_gives_same_outputs():
    layer = MultiHeadAttention(16, 4, dropout=0.1, name="mha")
    x = random(1, 3, 16)
    expected, _ = layer(x, x, x)
    clone = MultiHeadAttention.from_config(layer.get_config())
    clone(x, x, x)
    clone.set_weights(layer.get_weights())
    assert clone.get_config() == layer.get_config()
    np.testing.assert_allclose(clone(x, x, x)[0], expected, atol=1e-6)


def test_weights_are_created_in_build():
    layer = MultiHeadAttention(8, 2)
    layer.build((None, None, 8), (None, None, 8), (None, None, 8))
    assert len(layer.weights) == 8 and layer.built


def test_dropout_on_weights_only_in_training():
    layer = MultiHeadAttention(8, 2, dropout=0.5)
    x = random(1, 6, 8)
    a, _ = layer(x, x, x, training=False)
    b, _ = layer(x, x, x, training=False)
    np.testing.assert_array_equal(a, b)
    c, _ = layer(x, x, x, training=True)
    assert not np.allclose(a, c)
    assert isinstance(layer, keras.layers.Layer) and tf.is_tensor(c)


def test_masked_softmax_accepts_numpy_and_empties_blocked_rows():
    logits = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]], np.float32)
    weights = masked_softmax(logits, np.array([[True, False, True], [False, False, False]])).numpy()
    assert weights[0, 1] == 0 and weights[0].sum() == pytest.approx(1.0)
    assert np.all(weights[1] == 0)


def test_keras_gaps_see_a_twin_that_differs_and_leave_out_rows_with_no_key():
    from transformer.analysis.reference import keras_gaps

    ours, theirs = build_pair(d_model=16, heads=2)
    x = random(2, 5, 16)
    mask = np.ones((2, 5, 5), bool)
    mask[1, 3] = False  # a query with no allowed key: Keras spreads it uniformly, we give it zero weight
    same = keras_gaps(ours, theirs, x, x, x, tf.constant(mask))
    assert float(same["output"]) < 1e-5 and float(same["weights"]) < 1e-6
    kernel, bias = theirs.output_dense.get_weights()
    theirs.output_dense.set_weights([kernel * 2.0, bias])
    differs = keras_gaps(ours, theirs, x, x, x, tf.constant(mask))
    assert float(differs["output"]) > 1e-3 and float(differs["weights"]) < 1e-6


def test_the_head_counts_offered_are_exactly_those_the_checks_accept():
    from transformer.core.shape import head_counts, kv_head_counts

    assert head_counts(12) == [1, 2, 3, 4, 6, 12] and head_counts(512, 64) == [1, 2, 4, 8, 16, 32, 64]
    assert kv_head_counts(8) == [1, 2, 4, 8] and kv_head_counts(6) == [1, 2, 3, 6]
