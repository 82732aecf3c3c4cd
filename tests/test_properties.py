"""Property-based checks of attention over random shapes, values and masks (hypothesis)."""

import numpy as np
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


@SETTINGS
@given(attention_inputs())
def test_weights_are_probabilities_that_respect_the_mask(inputs):
    q, k, v, mask = inputs
    output, weights = (np.asarray(t) for t in scaled_dot_product_attention(q, k, v, mask))
    assert output.shape == (q.shape[0], q.shape[1], v.shape[2])
    assert weights.shape == mask.shape
    assert np.isfinite(output).all() and np.isfinite(weights).all()
    assert ((weights >= 0) & (weights <= 1)).all()
    assert (weights[~mask] == 0).all()
    sums = weights.sum(-1)
    allowed = mask.any(-1)
    np.testing.assert_allclose(sums[allowed], 1.0, atol=1e-5)
    assert (sums[~allowed] == 0).all() and (output[~allowed] == 0).all()


@SETTINGS
@given(attention_inputs())
def test_without_a_mask_every_row_sums_to_one(inputs):
    q, k, v, _ = inputs
    _, weights = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(np.asarray(weights).sum(-1), 1.0, atol=1e-5)
