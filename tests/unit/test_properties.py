"""Property-based checks of attention over random shapes, values and masks (hypothesis)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from transformer import scaled_dot_product_attention

SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def attention_inputs(draw):
    batch, n_q, n_k = draw(st.integers(1, 3)), draw(st.integers(1, 9)), draw(st.integers(1, 9))
    d_k, d_v = draw(st.integers(1, 16)), draw(st.integers(1, 8))
    values = st.floats(-50, 50, allow_nan=False, width=32)
    q = draw(arrays(np.float32, (batch, n_q, d_k), elements=values))
    k = draw(arrays(np.float32, (batch, n_k, d_k), elements=values))
    v = draw(arrays(np.float32, (batch, n_k, d_v), elements=values))
    mask = draw(arrays(np.bool_, (batch, n_q, n_k)))
    return q, k, v, mask


def _check_weights(weights, allowed):
    """Weights in [0, 1], exactly 0 where blocked, rows summing to 1 (any key allowed) or 0 (none)."""
    assert np.isfinite(weights).all() and ((weights >= 0) & (weights <= 1)).all()
    assert (weights[~allowed] == 0).all()
    sums = weights.sum(-1)
    has_key = allowed.any(-1)
    np.testing.assert_allclose(sums[has_key], 1.0, atol=1e-5)
    assert (sums[~has_key] == 0).all()


@SETTINGS
@given(attention_inputs())
def test_weights_are_probabilities_that_respect_the_mask(inputs):
    q, k, v, mask = inputs
    output, weights = (np.asarray(t) for t in scaled_dot_product_attention(q, k, v, mask))
    assert output.shape == (q.shape[0], q.shape[1], v.shape[2])
    assert weights.shape == mask.shape
    assert np.isfinite(output).all()
    _check_weights(weights, mask)
    assert (output[~mask.any(-1)] == 0).all()  # a query with no allowed key: output 0


@SETTINGS
@given(attention_inputs())
def test_without_a_mask_every_row_sums_to_one(inputs):
    q, k, v, _ = inputs
    _, weights = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(np.asarray(weights).sum(-1), 1.0, atol=1e-5)


@st.composite
def multi_head_inputs(draw):
    """Random sizes, inputs and tokens for one multi-head attention layer and the masks built from them."""
    heads, d_k = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch, n_q, n_k = draw(st.integers(1, 3)), draw(st.integers(1, 8)), draw(st.integers(1, 8))
    values = st.floats(-20, 20, allow_nan=False, width=32)
    query = draw(arrays(np.float32, (batch, n_q, heads * d_k), elements=values))
    memory = draw(arrays(np.float32, (batch, n_k, heads * d_k), elements=values))
    key_tokens = draw(arrays(np.int32, (batch, n_k), elements=st.integers(0, 3)))  # 0 = pad: whole lines may be pad
    query_tokens = draw(arrays(np.int32, (batch, n_q), elements=st.integers(0, 3)))
    return heads, query, memory, key_tokens, query_tokens


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(multi_head_inputs())
def test_multi_head_attention_with_padding_and_target_masks(inputs):
    """The engine's layer, as the model uses it: cross-attention under a padding mask, self-attention
    under a target mask; shapes as documented, nothing NaN or infinite anywhere."""
    from transformer import MultiHeadAttention, padding_mask, target_mask

    heads, query, memory, key_tokens, query_tokens = inputs
    batch, n_q, d_model = query.shape
    n_k = memory.shape[1]
    layer = MultiHeadAttention(d_model, heads)
    pad_mask = np.asarray(padding_mask(key_tokens, 0))  # (B, 1, 1, N_k)
    output, weights = (np.asarray(t) for t in layer(query, memory, memory, pad_mask))
    assert pad_mask.shape == (batch, 1, 1, n_k)
    assert output.shape == (batch, n_q, d_model) and weights.shape == (batch, heads, n_q, n_k)
    assert np.isfinite(output).all()
    _check_weights(weights, np.broadcast_to(pad_mask, weights.shape))
    own_mask = np.asarray(target_mask(query_tokens, 0))  # (B, 1, N_q, N_q)
    assert own_mask.shape == (batch, 1, n_q, n_q)
    assert not np.triu(own_mask, 1).any()  # never a later position
    output, weights = (np.asarray(t) for t in layer(query, query, query, own_mask))
    assert output.shape == (batch, n_q, d_model) and weights.shape == (batch, heads, n_q, n_q)
    assert np.isfinite(output).all()
    _check_weights(weights, np.broadcast_to(own_mask, weights.shape))
