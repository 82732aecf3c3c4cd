"""The three architectures, pre- and post-norm, attention-only blocks, and cached decoding for every option:
checked against a NumPy forward pass written from the papers and against the whole model."""

import itertools
from dataclasses import replace

import numpy as np
import pytest
import tensorflow as tf
from numpy_reference import subsequent_mask, transformer_forward
from small_models import SRC, TGT, cross_prefix, small_model, weight_table

from transformer.core.ablation import HeadAblation
from transformer.core.shape import ARCHITECTURES, POSITIONS
from transformer.decoding import next_token_distribution
from transformer.live.config import LiveConfig
from transformer.live.decode import cache_gap, decode


@pytest.mark.parametrize("architecture, norm, d_ff", [
    *itertools.product(ARCHITECTURES, ("post", "pre"), (16,)), ("decoder-only", "pre", 0), ("encoder-only", "post", 0)])
def test_every_architecture_matches_a_numpy_forward_pass(architecture, norm, d_ff):
    model = small_model(architecture, norm, d_ff)
    w = weight_table(model)
    options = dict(layers=2, heads=4, d_ff=d_ff, norm=norm)
    causal = subsequent_mask(TGT.shape[1])
    logits, attention = model(SRC, TGT, tgt_mask=tf.constant(causal[None, None]))
    memory = None
    if architecture != "decoder-only":
        memory, encoder_weights, _ = transformer_forward(w, SRC[0], stack="encoder", self_mask=None, **options)
        np.testing.assert_allclose(np.stack(attention["encoder"])[:, 0], np.stack(encoder_weights), atol=2e-5)
        hidden = memory
    if architecture != "encoder-only":
        hidden, decoder_weights, cross_weights = transformer_forward(
            w, TGT[0], stack="decoder", self_mask=causal, memory=memory, cross_prefix=cross_prefix(w), **options)
        np.testing.assert_allclose(np.stack(attention["decoder"])[:, 0], np.stack(decoder_weights), atol=2e-5)
        if memory is not None:
            np.testing.assert_allclose(np.stack(attention["cross"])[:, 0], np.stack(cross_weights), atol=2e-5)
    expected = hidden @ w["output_layer/kernel"] + w["output_layer/bias"]
    np.testing.assert_allclose(logits[0], expected, rtol=1e-4, atol=1e-4)
    assert set(attention) == set(model.stacks)


def test_attention_only_blocks_have_no_feed_forward_weights():
    paths = [weight.path for weight in small_model("decoder-only", "pre", d_ff=0).weights]
    assert not [path for path in paths if "feed_forward" in path]
    assert any("final_norm" in path for path in paths)
    assert not any("final_norm" in weight.path for weight in small_model("decoder-only", "post").weights)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_a_later_token_changes_no_earlier_position_in_a_decoder_only_model_and_every_one_in_an_encoder_only(norm):
    decoder_only, encoder_only = small_model("decoder-only", norm), small_model("encoder-only", norm)
    changed = TGT.copy()
    changed[0, -1] = 11
    causal = tf.constant(subsequent_mask(TGT.shape[1])[None, None])
    before, _ = decoder_only(None, TGT, tgt_mask=causal)
    after, _ = decoder_only(None, changed, tgt_mask=causal)
    np.testing.assert_array_equal(before[0, :-1], after[0, :-1])
    assert np.abs(before[0, -1] - after[0, -1]).max() > 1e-3
    before, _ = encoder_only(TGT, None)
    after, _ = encoder_only(changed, None)
    assert (np.abs(before[0, :-1] - after[0, :-1]).max(axis=-1) > 1e-4).all()


def test_the_models_say_which_stacks_they_have():
    assert small_model("encoder-decoder", "post").stacks == ("encoder", "decoder", "cross")
    assert small_model("decoder-only", "post").stacks == ("decoder",)
    encoder_only = small_model("encoder-only", "pre")
    assert encoder_only.stacks == ("encoder",)
    with pytest.raises(ValueError, match="stacks are \\('encoder',\\). Received: stack='cross'"):
        encoder_only.attention_layers("cross")
    with pytest.raises(ValueError, match="encoder-only model has no decoder"):
        encoder_only.new_cache()


def test_a_layers_inputs_are_what_it_attends_with():
    model = small_model("encoder-decoder", "pre")
    src_mask = tf.constant(np.array([[[[True, True, True, True, False]]]]))
    causal = tf.constant(subsequent_mask(TGT.shape[1])[None, None])
    _, attention = model(SRC, TGT, src_mask, causal)
    for stack in model.stacks:
        for layer in range(2):
            sublayer, (query, key, value, mask) = model.attention_inputs(stack, layer, SRC, TGT, src_mask, causal)
            assert sublayer is model.attention_layers(stack)[layer]
            _, weights = sublayer(query, key, value, mask=mask)
            np.testing.assert_allclose(weights, attention[stack][layer], atol=1e-6)
    with pytest.raises(ValueError, match="layer must be from 0 to 1. Received: layer=2"):
        model.attention_inputs("decoder", 2, SRC, TGT, src_mask, causal)


SWEEP = list(itertools.product(POSITIONS, ("post", "pre"), (4, 2, 1), ("encoder-decoder", "decoder-only")))


@pytest.mark.slow
@pytest.mark.parametrize("positions, norm, kv_heads, architecture", SWEEP)
def test_the_cache_gives_the_whole_models_logits_for_every_option(positions, norm, kv_heads, architecture):
    config = LiveConfig(d_model=16, num_heads=4, d_ff=32, num_layers=2, positions=positions, norm=norm,
                        num_kv_heads=kv_heads, architecture=architecture, device="cpu", seed=5)
    assert cache_gap(config, steps=6) < 1e-4


@pytest.mark.parametrize("positions, norm, kv_heads, architecture", [
    ("rope", "pre", 2, "decoder-only"), ("alibi", "post", 1, "encoder-decoder"), ("learned", "pre", 4,
                                                                                "encoder-decoder")])
def test_the_cache_gives_the_whole_models_logits_fast_tier(positions, norm, kv_heads, architecture):
    config = LiveConfig(d_model=16, num_heads=4, d_ff=0, num_layers=2, positions=positions, norm=norm,
                        num_kv_heads=kv_heads, architecture=architecture, device="cpu")
    assert cache_gap(config, steps=5) < 1e-4


def test_the_cache_gap_of_trained_weights_and_of_an_encoder_only_model():
    assert cache_gap(LiveConfig(weights="reverse", device="cpu"), steps=4) < 1e-4
    with pytest.raises(ValueError, match="encoder-only model does not decode"):
        cache_gap(LiveConfig(architecture="encoder-only"))


def test_a_decoder_only_model_continues_its_prompt_step_by_step():
    config = LiveConfig(d_model=16, num_heads=4, d_ff=32, architecture="decoder-only", norm="pre", device="cpu",
                        target_text="a b c d\nb c d a\nc d a b")
    run = decode(config, "a b c")
    assert run.prompt == ("a", "b", "c") and run.source_tokens == () and len(run.steps) == 8
    assert run.cache_gap < 1e-4
    for t, step in enumerate(run.steps):
        assert step.cross_attention is None and step.prefix[:3] == ("a", "b", "c")
        assert step.self_attention.shape == (2, 4, 3 + t)
        assert step.chosen in {"0", "<pad>", "a", "b", "c", "d"}  # the live text's tokens
    assert all("cross_keys" not in layer for layer in run.cache)
    with pytest.raises(ValueError, match="Decoding needs a trained model or a decoder-only model"):
        decode(replace(config, architecture="encoder-decoder"), "a b")
    with pytest.raises(ValueError, match="prompt is empty"):
        decode(config, "  ")


def numpy_top_p(logits, temperature, top_p):
    probabilities = np.exp(logits / temperature - (logits / temperature).max())
    probabilities /= probabilities.sum()
    order = np.argsort(-probabilities)
    kept, mass = [], 0.0
    for index in order:  # the most probable tokens until their mass reaches top_p
        kept.append(index)
        mass += probabilities[index]
        if mass >= top_p:
            break
    out = np.zeros_like(probabilities)
    out[kept] = probabilities[kept]
    return out / out.sum()


@pytest.mark.parametrize("temperature, top_p", [(1.0, 0.5), (0.7, 0.9), (2.0, 0.2), (1.0, 1.0), (1.0, 1e-3)])
def test_top_p_keeps_the_fewest_most_probable_tokens_that_reach_p(temperature, top_p):
    logits = np.random.default_rng(11).normal(0, 2, 30)
    np.testing.assert_allclose(next_token_distribution(logits, temperature, 0, top_p),
                               numpy_top_p(logits, temperature, top_p), atol=1e-6)


@pytest.mark.parametrize("kind", ["zero", "mean"])
def test_ablating_a_head_replaces_exactly_that_heads_context(kind):
    model = small_model("encoder-decoder", "pre")
    causal = tf.constant(subsequent_mask(TGT.shape[1])[None, None])
    sublayer, (query, key, value, mask) = model.attention_inputs("decoder", 1, SRC, TGT, tgt_mask=causal)
    parts = sublayer.intermediates(query, key, value, mask)
    context = parts["context"].numpy()  # (B, H, N_q, d_v)
    means = np.random.default_rng(5).normal(size=(3, model.num_layers, model.num_heads, context.shape[-1]))
    context[:, 2] = 0.0 if kind == "zero" else means[1, 1, 2]  # the decoder's layer 1 head 2: its given mean
    merged = np.transpose(context, (0, 2, 1, 3)).reshape(query.shape)  # (B, N_q, d_model)
    expected = sublayer.transform_out(merged)
    means = means if kind == "mean" else None
    output, weights = sublayer(query, key, value, mask=mask, hook=HeadAblation({("decoder", 1): (2,)}, kind, means))
    np.testing.assert_allclose(output, expected, atol=1e-5)
    np.testing.assert_allclose(weights, parts["weights"], atol=1e-6)  # its pattern is still drawn
    untouched, _ = sublayer(query, key, value, mask=mask, hook=HeadAblation({("decoder", 0): (2,)}, kind, means))
    np.testing.assert_allclose(untouched, parts["output"], atol=1e-6)  # another layer's ablation: not this one
    logits, _ = model(SRC, TGT, tgt_mask=causal)
    ablated, attention = model(SRC, TGT, tgt_mask=causal, hook=HeadAblation({("decoder", 1): (2,)}, kind, means))
    assert np.abs(np.asarray(logits) - np.asarray(ablated)).max() > 1e-4
    with pytest.raises(ValueError, match="kind='half'"):
        HeadAblation({}, "half")
    with pytest.raises(ValueError, match="means=None"):
        HeadAblation({}, "mean")
