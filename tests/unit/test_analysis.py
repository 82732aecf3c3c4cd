"""Token-level analysis against the papers: attention rollout, hidden keys, one head's terms."""

from dataclasses import replace

import numpy as np
import numpy_reference as ref
import pytest

from transformer import LiveConfig, ModelCache, attention_walkthrough, run_live
from transformer.analysis.measures import attention_rollout, neuron_terms, without_keys

RNG = np.random.default_rng(7)


def _random_weights(layers, heads, n, causal=False):
    logits = RNG.standard_normal((layers, heads, n, n))
    mask = np.tril(np.ones((n, n), bool)) if causal else np.ones((n, n), bool)
    return _softmax(np.where(mask, logits, -np.inf))  # (L, H, N, N)


def _softmax(logits):
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return exp / exp.sum(-1, keepdims=True)


@pytest.mark.parametrize("residual", [0.0, 0.5, 0.9])
def test_rollout_matches_the_papers_recursion(residual):
    weights = _random_weights(3, 4, 6)
    np.testing.assert_allclose(attention_rollout(weights, residual), ref.attention_rollout(weights, residual),
                               atol=1e-12)


def test_rollout_rows_sum_to_one_and_causal_attention_rolls_out_lower_triangular():
    weights = _random_weights(4, 2, 9, causal=True)
    rollout = attention_rollout(weights)
    np.testing.assert_allclose(rollout.sum(-1), 1.0, atol=1e-12)
    assert np.all(np.triu(rollout, 1) == 0)


def test_rollout_of_one_layer_is_half_the_head_mean_plus_half_the_identity():
    weights = _random_weights(1, 3, 5)
    np.testing.assert_allclose(attention_rollout(weights), 0.5 * weights[0].mean(0) + 0.5 * np.eye(5), atol=1e-12)
    np.testing.assert_allclose(attention_rollout(weights, residual=1.0), np.eye(5))


def test_rollout_keeps_a_masked_query_row_on_its_own_position():
    weights = _random_weights(2, 2, 4)
    weights[:, :, 3] = 0.0  # a query with no allowed key: its row is all zero
    rollout = attention_rollout(weights)
    assert np.all(np.isfinite(rollout))
    np.testing.assert_allclose(rollout[3], [0, 0, 0, 1])


@pytest.mark.parametrize("bad, message", [(np.zeros((2, 5, 5)), "weights must be"),
                                          (np.zeros((1, 1, 4, 5)), r"weights.shape=\(1, 1, 4, 5\)")])
def test_rollout_names_bad_shapes(bad, message):
    with pytest.raises(ValueError, match=message):
        attention_rollout(bad)


def test_rollout_names_a_bad_residual():
    with pytest.raises(ValueError, match=r"residual=1.5"):
        attention_rollout(np.ones((1, 1, 2, 2)) / 2, residual=1.5)


def test_without_keys_drops_the_columns_and_renormalises_the_rest():
    weights = np.array([[0.5, 0.25, 0.25], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], np.float32)
    kept = without_keys(weights, [True, False, False])
    np.testing.assert_allclose(kept, [[0.5, 0.5], [0.0, 0.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match=r"hidden.shape=\(2,\)"):
        without_keys(weights, [True, False])


def test_neuron_terms_rebuild_the_live_weights_of_every_stack():
    """q∘k summed, ÷√d_k, softmax over the allowed keys = the engine's own weights for that query."""
    config = LiveConfig(d_model=16, num_heads=2, d_ff=32, num_layers=2, seq_len=6)
    cache = ModelCache(size=1)
    for stack in ("encoder", "decoder", "cross"):
        walk = attention_walkthrough(config, stack, 1, cache)
        q, k, weights = walk.tensors["query_heads"][0], walk.tensors["key_heads"][0], walk.tensors["weights"][0]
        for head, query, key in ((0, 0, 0), (1, 5, 2), (1, 3, 4)):
            terms = neuron_terms(q, k, walk.mask[0], head, query, key)
            np.testing.assert_allclose(terms.products, q[head, query] * k[head, key], rtol=1e-6)
            assert terms.scaled == pytest.approx(float(q[head, query] @ k[head, key]) / np.sqrt(8), rel=1e-5)
            np.testing.assert_allclose(terms.weights, weights[head, query], atol=1e-6)
            np.testing.assert_array_equal(np.isnan(terms.logits), ~walk.mask[0][query])
        live = run_live(replace(config), cache, stacks=(stack,), lines=(0,)).attention[stack][1, 0]
        np.testing.assert_allclose(live, weights, atol=1e-5)


def test_neuron_terms_name_a_pair_out_of_range():
    with pytest.raises(ValueError, match=r"query=4"):
        neuron_terms(np.zeros((1, 4, 2)), np.zeros((1, 4, 2)), np.ones((4, 4), bool), 0, 4, 0)


def test_an_exponent_the_timings_cannot_support_is_not_one():
    """A busy host printed N^-0.50 and still concluded 'a difference beyond this machine's noise' (issue 87, item 16):
    runs that disagree by more than the growth they would measure support no exponent, and are compared with none."""
    from transformer.analysis.cost import MAX_EXPONENT_SPREAD, Series, supported

    def series(exponent, low, high):
        return Series("x", (256, 512, 1024), (1, 2, 4), (1, 1, 1), exponent, (1, 1, 1),
                      exponents=(low, (low + high) / 2, high))

    assert supported(series(1.98, 1.9, 2.05))
    assert not supported(series(-0.50, -1.2, 0.3))  # the runs disagree by 1.5
    assert not supported(series(-0.3, -0.4, -0.2))  # time shrinking as N grows: noise, not growth
    assert supported(series(0.05, 0.0, MAX_EXPONENT_SPREAD))  # a window's flat time is a measure too
