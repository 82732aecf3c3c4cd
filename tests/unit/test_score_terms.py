"""Why a head attends: its scores split by the parts of the residual stream (transformer.core.residual_parts),
checked against the model's own scores, a NumPy reference of the split, and the induction model's mechanism."""

import itertools

import numpy as np
import numpy_reference as ref
import pytest
import tensorflow as tf

from transformer import LiveConfig
from transformer.analysis.measures import preference_terms
from transformer.core.model import Transformer
from transformer.core.residual_parts import score_terms
from transformer.core.weight_init import seed_weights
from transformer.live.score_terms import score_terms as live_score_terms
from transformer.training.next_token import probe_lines


def _model(**options):
    model = Transformer(30, 30, dropout=0.0, max_len=16, **{"d_model": 16, "num_heads": 4, "d_ff": 32,
                                                            "num_encoder_layers": 2, "num_decoder_layers": 2,
                                                            **options})
    model.build((None, None), (None, None))
    seed_weights(model, 1)
    return model


def _inputs(n=7, seed=0):
    rng = np.random.default_rng(seed)
    src = tf.constant(rng.integers(1, 30, (1, n)), tf.int32)
    tgt = tf.constant(rng.integers(1, 30, (1, n)), tf.int32)
    src_mask = tf.constant(np.arange(n)[None, None, None, :] < n - 2)  # (1, 1, 1, N): two pads
    tgt_mask = tf.logical_and(src_mask, tf.linalg.band_part(tf.ones((n, n), tf.bool), -1, 0)[None, None])
    return src, tgt, src_mask, tgt_mask


VARIANTS = [dict(norm=norm, positions=positions, num_kv_heads=kv, d_ff=d_ff, architecture=architecture)
            for (norm, positions), kv, d_ff, architecture in zip(
                itertools.product(("post", "pre"), ("sinusoidal", "learned", "rope", "alibi")),
                itertools.cycle((None, 2)), itertools.cycle((32, 32, 0)),
                itertools.cycle(("encoder-decoder", "decoder-only", "encoder-only")))]


# `make test-fast` keeps two (RoPE alone, ALiBi with grouped keys); the full run all eight
FAST_VARIANTS = (2, 7)


@pytest.mark.parametrize("options", [pytest.param(options, marks=() if index in FAST_VARIANTS else pytest.mark.slow)
                                     for index, options in enumerate(VARIANTS)],
                         ids=lambda o: "-".join(str(v) for v in o.values()))
def test_the_terms_sum_to_the_models_own_scaled_scores_in_every_stack_and_layer(options):
    model = _model(**options)
    for stack, layer, head in itertools.product(model.stacks, (0, 1), (0, 3)):
        split = score_terms(model, stack, layer, head, *_inputs())
        allowed = ~np.isnan(split.scores)
        assert allowed.any() and np.isnan(split.terms[..., ~allowed]).all()  # masked cells: NaN, in every term
        np.testing.assert_allclose(split.terms.sum(axis=(0, 1))[allowed], split.scores[allowed], atol=2e-5)
        heads = {"H": f"L{layer - 1}H", "X": f"L{layer - 1}X"}
        assert ("token", "position", "bias") == split.query_parts[:2] + split.query_parts[-1:]
        assert (f"{heads['H']}0" in split.query_parts) == (layer == 1)  # earlier layers' heads, never its own


def test_a_llama_style_models_terms_sum_to_its_scores_and_its_bias_part_is_zero():
    """RMSNorm (no centring, no offset), SwiGLU, projections without bias, RoPE at a Llama's base (SmolLM2's
    layers): the split holds the RMSNorm's scale at the stream's, and with no bias anywhere the bias part is 0."""
    model = _model(norm="pre", positions="rope", architecture="decoder-only", num_kv_heads=2, norm_layer="rms",
                   ffn="swiglu", use_bias=False, rope_base=100000.0, scale_embeddings=False)
    for layer, head in itertools.product((0, 1), (0, 3)):
        split = score_terms(model, "decoder", layer, head, *_inputs())
        allowed = ~np.isnan(split.scores)
        np.testing.assert_allclose(split.terms.sum(axis=(0, 1))[allowed], split.scores[allowed], atol=2e-5)
        bias = split.query_parts.index("bias")
        assert np.nanmax(np.abs(split.terms[bias])) == 0 and np.nanmax(np.abs(split.terms[:, -1])) == 0


def test_the_split_of_a_pre_norm_first_layer_equals_a_numpy_reference():
    """Layer 0 of a pre-norm encoder: parts token (embedding · √d), position (sinusoidal), bias; LayerNorm with
    the stream's scale held: each part centred and scaled by γ/σ, β in the bias part; q_p = p·W_q (+ b_q for the
    bias part), the same for keys; term (p, p') = q_p · k_p'ᵀ / √d_k for the head's columns."""
    model = _model(norm="pre", architecture="encoder-only", num_encoder_layers=1)
    src, _, src_mask, _ = _inputs()
    split = score_terms(model, "encoder", 0, 2, src, None, src_mask, None)
    embedding = model.source_embedding.embeddings.numpy()[src.numpy()[0]] * np.sqrt(16)  # (N, D)
    parts = {"token": embedding, "position": ref.positional_encoding(7, 16), "bias": np.zeros((7, 16))}
    whole = sum(parts.values())
    block = model.encoder.blocks[0].self_attention_block
    gamma, beta = block.layer_norm.gamma.numpy(), block.layer_norm.beta.numpy()
    scale = gamma / np.sqrt(whole.var(-1, keepdims=True) + 1e-6)
    normed = {name: (part - part.mean(-1, keepdims=True)) * scale for name, part in parts.items()}
    normed["bias"] = normed["bias"] + beta
    np.testing.assert_allclose(sum(normed.values()), ref.layer_norm(whole, gamma, beta), atol=1e-5)
    attention = block.sublayer
    w_q, b_q = attention.transform_query.kernel.numpy(), attention.transform_query.bias.numpy()
    w_k, b_k = attention.transform_key.kernel.numpy(), attention.transform_key.bias.numpy()
    columns = slice(2 * 4, 3 * 4)  # head 2 of 4, d_k = 4
    q = {name: (part @ w_q + (b_q if name == "bias" else 0))[:, columns] for name, part in normed.items()}
    k = {name: (part @ w_k + (b_k if name == "bias" else 0))[:, columns] for name, part in normed.items()}
    allowed = np.arange(7) < 5
    for a, query_part in enumerate(split.query_parts):
        for b, key_part in enumerate(split.key_parts):
            expected = q[query_part] @ k[key_part].T / 2.0  # √d_k = 2
            np.testing.assert_allclose(split.terms[a, b][:, allowed], expected[:, allowed], atol=1e-4)


def test_preferences_sum_to_the_score_above_the_querys_mean_and_a_masked_key_is_refused():
    split = score_terms(_model(), "decoder", 1, 1, *_inputs())
    preference = preference_terms(split.terms, 4, 2)  # (P_q, P_k)
    allowed = ~np.isnan(split.scores[4])
    np.testing.assert_allclose(preference.sum(), split.scores[4, 2] - split.scores[4, allowed].mean(), atol=2e-5)
    with pytest.raises(ValueError, match="Query 2 may not attend to key 5"):
        preference_terms(split.terms, 2, 5)  # the look-ahead mask


def _induction(line):
    return LiveConfig(weights="induction", architecture="decoder-only", norm="pre", positions="learned", d_ff=0,
                      seq_len=len(line.tokens), source_text=line.text, target_text=line.text)


@pytest.mark.slow
def test_the_induction_model_attends_by_k_composition_as_its_terms_show():
    """The shipped induction model (Elhage et al. 2021's K-composition): over 8 lines with a repeated segment, the
    layer-1 induction heads' preference for the token after the earlier occurrence comes ≥ 80 % from the outputs
    of the layer-0 previous-token heads H0, H1, H3, and hardly from the key's own token; those heads' preference
    for the previous token comes ≥ 80 % from position · position."""
    previous, induction = np.zeros((4, 2)), np.zeros((4, 3))  # (head, (pos·pos, all)); (head, (prev, all, token))
    for line in probe_lines(8, 3):
        config = _induction(line)
        for head in range(4):
            split = live_score_terms(config, "decoder", 0, head)
            position = split.query_parts.index("position")
            for query in range(line.first + 1, line.first + line.size):
                found = preference_terms(split.terms, query, query - 1)
                previous[head] += found[position, position], found.sum()
            split = live_score_terms(config, "decoder", 1, head)
            from_heads = [split.key_parts.index(f"L0H{h}") for h in (0, 1, 3)]
            for query in line.predicted_positions()[1:]:
                found = preference_terms(split.terms, query, line.first + (query - line.second) + 1).sum(axis=0)
                induction[head] += found[from_heads].sum(), found.sum(), found[split.key_parts.index("token")]
    for head in (0, 1, 3):
        assert previous[head, 0] >= 0.8 * previous[head, 1] > 0, previous
    assert abs(previous[2, 1]) < 0.1 * previous[:, 1].max()  # H2 prefers the previous token through nothing
    for head in range(4):
        assert induction[head, 0] >= 0.8 * induction[head, 1] > 0, induction
        assert abs(induction[head, 2]) < 0.05 * induction[head, 1], induction


@pytest.mark.parametrize("change, message", [
    (dict(weights="hub:bert_tiny_en_uncased"), "a model from outside"),
    (dict(ablate=(("encoder", 0, 1),)), "clear the ablated heads"),
])
def test_what_cannot_be_split_is_refused_by_name(change, message):
    with pytest.raises(ValueError, match=message):
        live_score_terms(LiveConfig(**change), "encoder", 0, 0)


@pytest.mark.parametrize("stack, layer, head, message", [
    ("cross", 0, 0, "stacks are"), ("decoder", 2, 0, "Layers run from 0 to 1"), ("decoder", 0, 4, "heads from 0"),
])
def test_a_stack_layer_or_head_the_model_lacks_is_refused(stack, layer, head, message):
    with pytest.raises(ValueError, match=message):
        live_score_terms(LiveConfig(architecture="decoder-only", norm="pre"), stack, layer, head)


def test_asking_for_some_queries_gives_their_rows_and_a_split_too_large_is_refused(monkeypatch):
    from transformer.core import residual_parts

    model, inputs = _model(), _inputs()
    whole = score_terms(model, "decoder", 1, 2, *inputs)
    some = score_terms(model, "decoder", 1, 2, *inputs, queries=(4, 1))
    assert some.queries == (4, 1) and some.terms.shape == (*whole.terms.shape[:2], 2, 7)
    np.testing.assert_array_equal(some.terms, whole.terms[:, :, [4, 1]])
    np.testing.assert_array_equal(some.weights, whole.weights[[4, 1]])
    with pytest.raises(ValueError, match="Queries run from 0 to 6"):
        score_terms(model, "decoder", 1, 2, *inputs, queries=(7,))
    monkeypatch.setattr(residual_parts, "TERMS_BUDGET", 100)
    with pytest.raises(ValueError, match="exceed 100 floats"):
        score_terms(model, "decoder", 1, 2, *inputs)


def test_a_shipped_decoder_only_model_splits_its_scores_as_the_live_configuration_does():
    from transformer import load_pretrained

    line = probe_lines(1, 3)[0]
    parts, terms = load_pretrained("induction").score_terms(line.text, 1, 1)
    split = live_score_terms(_induction(line), "decoder", 1, 1)
    assert parts == split.query_parts == ("token", "position", "L0H0", "L0H1", "L0H2", "L0H3", "bias")
    np.testing.assert_allclose(terms, split.terms, atol=1e-5)
    with pytest.raises(ValueError, match="Received: stack='cross'"):
        load_pretrained("induction").score_terms(line.text, 0, 0, stack="cross")


@pytest.mark.parametrize("stack", ["encoder", "decoder", "cross"])
def test_a_trained_encoder_decoders_scores_split_on_its_own_answer_and_sum_to_its_weights(stack):
    from transformer.training.answers import translate
    from transformer.training.pretrained import load_pretrained

    reverse = load_pretrained("reverse")
    parts, terms = reverse.score_terms("a b c d", 1, 2, stack)
    _, attention = translate(reverse, "a b c d")  # on <s> + its own answer, as the split
    scores = terms.sum((0, 1))  # (N_q, N_k), NaN where masked
    weights = np.exp(scores - np.nanmax(scores, -1, keepdims=True))
    weights = np.nan_to_num(weights) / np.nansum(weights, -1, keepdims=True)
    np.testing.assert_allclose(weights, attention[stack][1][0, 2], atol=2e-5)
    query_parts, key_parts = parts if stack == "cross" else (parts, parts)
    assert terms.shape[:2] == (len(query_parts), len(key_parts))
    assert key_parts[0] == ("enc token" if stack == "cross" else "token")
    with pytest.raises(ValueError, match="stack='nope'"):
        reverse.score_terms("a b c d", 1, 2, "nope")
    with pytest.raises(ValueError, match="Tokens outside this model's vocabulary: Z"):
        reverse.score_terms("a b Z", 1, 2, stack)
