"""How much a head moves (Kobayashi et al. 2020): ‖α_ij · f_h(x_j)‖, f_h(x) = (x W_V + b_V)_h W_O^h, checked
against a NumPy reference and against the layer's own output."""

import numpy as np
import numpy_reference as ref
import pytest
import tensorflow as tf

from transformer import LiveConfig, run_live
from transformer.core.model import Transformer
from transformer.core.value_norms import value_weighted_norms
from transformer.core.weight_init import seed_weights
from transformer.live.value_norms import value_norms


def _encoder(**options):
    model = Transformer(30, 30, d_model=16, num_heads=4, d_ff=32, num_encoder_layers=1, num_decoder_layers=1,
                        dropout=0.0, architecture="encoder-only", max_len=16, **options)
    model.build((None, None), (None, None))
    seed_weights(model, 2)
    return model


@pytest.mark.parametrize("kv_heads", [None, 2])
def test_value_weighted_norms_equal_a_numpy_reference_and_rebuild_the_layers_output(kv_heads):
    model = _encoder(num_kv_heads=kv_heads)
    src = tf.constant([[3, 7, 1, 9, 4, 2]], tf.int32)
    mask = tf.constant(np.arange(6)[None, None, None, :] < 5)  # (1, 1, 1, N): one pad
    norms, weights = value_weighted_norms(model, ("encoder",), src, None, mask, None)
    x = model.source_embedding.embeddings.numpy()[src.numpy()[0]] * 4.0 + ref.positional_encoding(6, 16)  # (N, D)
    attention = model.encoder.blocks[0].self_attention_block.sublayer
    w_v, b_v = attention.transform_value.kernel.numpy(), attention.transform_value.bias.numpy()
    w_o, b_o = attention.transform_out.kernel.numpy(), attention.transform_out.bias.numpy()
    values = x @ w_v + b_v  # (N, H_kv · d)
    group = 4 // (kv_heads or 4)
    output = np.zeros((6, 16)) + b_o
    for head in range(4):
        kv = head // group
        moved = values[:, kv * 4:(kv + 1) * 4] @ w_o[head * 4:(head + 1) * 4]  # (N, D): f_h(x_j)
        alpha = weights["encoder"][0, 0, head]  # (N, N)
        expected = alpha[:, :, None] * moved[None]  # (N_q, N_k, D)
        np.testing.assert_allclose(norms["encoder"][0, 0, head], np.linalg.norm(expected, axis=-1), atol=1e-4)
        output += expected.sum(axis=1)
    layer_output = attention(tf.constant(x[None], tf.float32), mask=mask)[0].numpy()[0]  # (N, D)
    np.testing.assert_allclose(output, layer_output, atol=1e-4)  # the heads' moves sum to what the layer adds


def test_the_live_norms_follow_run_lives_weights_and_refuse_what_they_cannot_measure():
    config = LiveConfig(d_model=16, num_heads=2, d_ff=32)
    norms = value_norms(config, lines=(1,))
    weights = run_live(config, lines=(1,)).attention
    assert set(norms) == {"encoder", "decoder", "cross"}
    for stack, maps in norms.items():
        assert maps.shape == weights[stack].shape
        assert np.all((maps > 0) == (weights[stack] > 0))  # a norm is zero exactly where the weight is
    for change, message in [(dict(ablate=(("encoder", 0, 1),)), "clear the ablated heads"),
                            (dict(seq_len=600), "up to N = 512")]:
        with pytest.raises(ValueError, match=message):
            value_norms(LiveConfig(d_model=16, num_heads=2, d_ff=32, **change))
