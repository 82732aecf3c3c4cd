"""What a Llama needs of the lab's Transformer (issue 89, step 1), each part against NumPy written from its paper
(tests/support/llama_reference.py): RMSNorm, a SwiGLU feed-forward, projections without bias, RoPE with its own base,
unscaled and tied embeddings; then a whole Llama-style decoder against the NumPy forward pass, and its config
round-tripped. The paper's model is unchanged: every option's default is the paper's (`LAYER_STYLE`)."""

import keras
import numpy as np
import pytest
from llama_reference import llama_forward, rms_norm, rope, swiglu

from transformer.core.layers import GatedFeedForward, ResidualBlock, make_norm
from transformer.core.linear import Linear
from transformer.core.masks import target_mask
from transformer.core.model import Transformer
from transformer.core.relative_positions import ROPE_BASE, rotary
from transformer.core.shape import LAYER_STYLE

RNG = np.random.default_rng(0)


def test_rms_norm_is_x_over_its_root_mean_square_times_a_gain():
    x = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    norm = make_norm("rms", 1e-5, "norm")
    norm.build(x.shape)
    gain = RNG.normal(size=8).astype(np.float32)
    norm.set_weights([gain])
    np.testing.assert_allclose(np.asarray(norm(x)), rms_norm(x.astype(np.float64), gain, 1e-5), atol=1e-5)


def test_swiglu_is_the_silu_gate_times_the_up_projection_projected_down_with_no_bias():
    x = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    layer = GatedFeedForward(8, 12)
    layer.build(x.shape)
    gate, up, down = (RNG.normal(size=shape).astype(np.float32) * 0.3 for shape in ((8, 12), (8, 12), (12, 8)))
    layer.set_weights([gate, up, down])  # three kernels: no bias weights
    np.testing.assert_allclose(np.asarray(layer(x)), swiglu(x.astype(np.float64), gate, up, down), atol=1e-5)
    again = GatedFeedForward.from_config(layer.get_config())
    assert (again.d_ff, again.use_bias) == (12, False)


def test_a_linear_map_without_bias_has_one_weight_and_its_config_says_so():
    layer = Linear(3, use_bias=False)
    layer.build((None, 4))
    assert [w.shape for w in layer.weights] == [(4, 3)]
    assert Linear.from_config(layer.get_config()).use_bias is False
    assert len(Linear(3).get_config()) and Linear.from_config(Linear(3).get_config()).use_bias is True


@pytest.mark.parametrize("base", [ROPE_BASE, 100_000.0])
def test_rope_rotates_adjacent_pairs_by_the_position_times_base_to_the_minus_2i_over_d(base):
    x = RNG.normal(size=(6, 8))
    np.testing.assert_allclose(np.asarray(rotary(x.astype(np.float32), np.arange(6), base)), rope(x, base),
                               atol=1e-5)
    assert LAYER_STYLE["rope_base"] == ROPE_BASE  # the spec's default is RoFormer's, as the layer's


def test_a_residual_block_with_rms_norm_pre_norms_its_sublayer():
    x = RNG.normal(size=(1, 4, 8)).astype(np.float32)
    block = ResidualBlock(Linear(8, use_bias=False), norm="pre", norm_layer="rms", norm_epsilon=1e-5)
    block.build(x.shape)
    kernel = RNG.normal(size=(8, 8)).astype(np.float32)
    gain = RNG.normal(size=8).astype(np.float32)
    block.sublayer.set_weights([kernel])
    block.layer_norm.set_weights([gain])
    expected = x + rms_norm(x.astype(np.float64), gain, 1e-5) @ kernel
    np.testing.assert_allclose(np.asarray(block(x)), expected, atol=1e-5)
    assert ResidualBlock.from_config(block.get_config()).norm_layer == "rms"


LLAMA = dict(d_model=16, num_heads=4, num_kv_heads=2, d_ff=24, num_decoder_layers=2, num_encoder_layers=2,
             positions="rope", norm="pre", architecture="decoder-only", share_output_weights=True, dropout=0.0,
             scale_embeddings=False, norm_layer="rms", norm_epsilon=1e-5, ffn="swiglu", use_bias=False,
             rope_base=100_000.0)


def _llama(vocab: int = 11) -> Transformer:
    model = Transformer(vocab, vocab, **LLAMA)
    model.build((None, None), (None, None))
    model.set_weights([RNG.normal(size=w.shape).astype(np.float32) * 0.4 for w in model.get_weights()])
    return model


def _weights_of(model: Transformer) -> dict:
    """The model's weights by what they are, for the NumPy forward pass."""
    layers = []
    for block in model.decoder.blocks:
        attention = block.self_attention_block.sublayer
        ffn = block.feed_forward_block.sublayer
        layers.append({"attn_norm": block.self_attention_block.layer_norm.scale.numpy(),
                       "q": attention.transform_query.kernel.numpy(), "k": attention.transform_key.kernel.numpy(),
                       "v": attention.transform_value.kernel.numpy(), "o": attention.transform_out.kernel.numpy(),
                       "ffn_norm": block.feed_forward_block.layer_norm.scale.numpy(),
                       "gate": ffn.gate.kernel.numpy(), "up": ffn.up.kernel.numpy(), "down": ffn.down.kernel.numpy()})
    return {"embedding": model.target_embedding.embeddings.numpy(), "layers": layers,
            "final_norm": model.decoder.final_norm.scale.numpy()}


def test_a_llama_style_decoder_matches_an_independent_numpy_forward_pass():
    """Logits and every head's attention of a decoder with RMSNorm, SwiGLU, no biases, GQA, RoPE base 100,000,
    unscaled tied embeddings, against llama_reference (float64): within 1e-4."""
    model = _llama()
    ids = np.array([[3, 1, 4, 1, 5, 9, 2]])
    logits, attention = model(None, ids, tgt_mask=target_mask(ids, -1))
    expected_logits, expected_weights = llama_forward(_weights_of(model), ids[0], heads=4, kv_heads=2,
                                                      base=100_000.0, epsilon=1e-5)
    np.testing.assert_allclose(np.asarray(logits)[0], expected_logits, atol=1e-4, rtol=1e-4)
    for layer, weights in enumerate(attention["decoder"]):
        np.testing.assert_allclose(np.asarray(weights)[0], expected_weights[layer], atol=1e-5)
    assert not any("bias" in w.path for w in model.weights)  # no bias anywhere
    assert model.output_layer is None  # the logits read the embedding matrix


def test_a_llama_style_models_config_round_trips_and_the_paper_is_the_default():
    model = _llama()
    again = Transformer.from_config(model.get_config())
    again.build((None, None), (None, None))
    again.set_weights(model.get_weights())
    ids = np.array([[2, 7, 1, 8]])
    mask = target_mask(ids, -1)
    np.testing.assert_allclose(np.asarray(again(None, ids, tgt_mask=mask)[0]),
                               np.asarray(model(None, ids, tgt_mask=mask)[0]), atol=1e-6)
    paper = Transformer(11, 11, d_model=16, num_heads=4, d_ff=24, num_encoder_layers=1, num_decoder_layers=1)
    assert {name: paper.get_config()[name] for name in LAYER_STYLE} == LAYER_STYLE
    assert paper.scale_embeddings is True


@pytest.mark.parametrize("bad, message", [({"norm_layer": "batch"}, "norm_layer must be one of"),
                                          ({"ffn": "gelu"}, "ffn .the feed-forward. must be one of"),
                                          ({"rope_base": 0}, "rope_base must be a positive number"),
                                          ({"use_bias": "no"}, "use_bias must be True or False")])
def test_a_layer_style_it_cannot_build_is_named(bad, message):
    with pytest.raises(ValueError, match=message):
        Transformer(11, 11, d_model=16, num_heads=4, d_ff=24, num_encoder_layers=1, num_decoder_layers=1, **bad)


def test_keras_serialises_a_llama_style_model_whole(tmp_path):
    model = _llama()
    model.save(tmp_path / "llama.keras")
    loaded = keras.saving.load_model(tmp_path / "llama.keras")
    ids = np.array([[1, 2, 3]])
    mask = target_mask(ids, -1)
    np.testing.assert_allclose(np.asarray(loaded(None, ids, tgt_mask=mask)[0]),
                               np.asarray(model(None, ids, tgt_mask=mask)[0]), atol=1e-6)
