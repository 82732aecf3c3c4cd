"""Decoding step by step: the same answer as the engine's greedy decoder, the distribution as NumPy computes it,
each step's attention as the whole model gives it, and a key/value cache that changes nothing."""

import numpy as np
import pytest

from transformer.decoding import next_token_distribution
from transformer.live.config import LiveConfig
from transformer.live.decode import decode as decode_config
from transformer.training.answers import predictions
from transformer.training.pretrained import load_pretrained


def decode(name, text, device, **settings):
    return decode_config(LiveConfig(weights=name, device=device), text, **settings)


def numpy_distribution(logits, temperature, top_k):
    """softmax(logits / T) over the top-k logits (all when 0), written out independently."""
    logits = np.asarray(logits, np.float64) / temperature
    keep = np.argsort(logits)[::-1][: top_k or len(logits)]
    weights = np.zeros_like(logits)
    weights[keep] = np.exp(logits[keep] - logits[keep].max())
    return weights / weights.sum()


@pytest.mark.parametrize("temperature, top_k", [(1.0, 0), (0.5, 3), (2.0, 1), (3.0, 20)])
def test_the_next_token_distribution_is_the_tempered_softmax_over_the_top_k(temperature, top_k):
    logits = np.random.default_rng(7).normal(0, 3, 40)
    np.testing.assert_allclose(next_token_distribution(logits, temperature, top_k),
                               numpy_distribution(logits, temperature, top_k), atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("name, source", [("reverse", "a b c d e"), ("sort", "j c a"), ("copy", "b e g")])
def test_greedy_steps_give_the_engines_greedy_answer_and_the_cache_changes_nothing(name, source):
    model = load_pretrained(name, "/CPU:0")
    run = decode(name, source, "cpu")
    expected = model.rules.target_text(model.vocab.decode(predictions(model, [source.split()])[0]))
    assert run.prediction == expected
    assert run.steps[-1].chosen == "</s>" and len(run.steps) == len(expected.split()) + 1
    assert run.cache_gap < 1e-4
    heads, depth = model.spec.num_heads, model.spec.d_model // model.spec.num_heads
    for layer in run.cache:
        assert layer["keys"].shape == layer["values"].shape == (heads, len(run.steps), depth)
        assert layer["cross_keys"].shape == (heads, len(source.split()), depth)
    assert run.cache_bytes == sum(array.nbytes for layer in run.cache for array in layer.values())


def test_each_step_shows_the_newest_positions_row_of_the_whole_models_attention():
    from transformer.core.masks import padding_mask, target_mask

    model = load_pretrained("reverse", "/CPU:0")
    run = decode("reverse", "a b c d", "cpu")
    src = np.array([model.vocab.encode("a b c d".split())], np.int32)
    decoder_input = np.array([[model.vocab.index[token] for token in run.steps[-1].prefix]], np.int32)  # <s> + …
    _, attention = model.model(src, decoder_input, padding_mask(src, 0), target_mask(decoder_input, 0))
    for t, step in enumerate(run.steps):
        for layer in range(model.spec.num_layers):  # a later token changes no earlier row: the look-ahead mask
            np.testing.assert_allclose(step.self_attention[layer], attention["decoder"][layer][0, :, t, : t + 1],
                                       atol=1e-5)
            np.testing.assert_allclose(step.cross_attention[layer], attention["cross"][layer][0, :, t], atol=1e-5)
        np.testing.assert_allclose(step.self_attention.sum(-1), 1, atol=1e-5)


@pytest.mark.slow
def test_sampling_is_reproducible_by_seed_and_top_1_is_greedy():
    greedy = decode("reverse", "a b c d e f", "cpu")
    first = decode("reverse", "a b c d e f", "cpu", sample=True, temperature=3.0, seed=1)
    again = decode("reverse", "a b c d e f", "cpu", sample=True, temperature=3.0, seed=1)
    assert [step.chosen for step in first.steps] == [step.chosen for step in again.steps]
    others = {decode("reverse", "a b c d e f", "cpu", sample=True, temperature=3.0, seed=s).prediction
              for s in range(2, 8)}
    assert len(others | {first.prediction}) > 1  # hot sampling wanders
    assert decode("reverse", "a b c d e f", "cpu", sample=True, top_k=1, seed=5).prediction == greedy.prediction


@pytest.mark.parametrize("settings, message", [
    (dict(temperature=0.0), "temperature=0.0"),
    (dict(top_k=99), "top_k=99"),
    (dict(max_steps=0), "max_steps=0"),
])
def test_bad_settings_name_their_values(settings, message):
    with pytest.raises(ValueError, match=message):
        decode("reverse", "a b", "cpu", **settings)


def test_tokens_outside_the_vocabulary_are_named():
    with pytest.raises(ValueError, match="outside this model's vocabulary: z"):
        decode("reverse", "a z", "cpu")


@pytest.mark.parametrize("top_k", [13, 20, 50])
def test_top_k_at_or_above_the_vocabulary_keeps_every_token(top_k):
    logits = np.random.default_rng(3).normal(0, 2, 13)
    np.testing.assert_allclose(next_token_distribution(logits, 1.0, top_k), next_token_distribution(logits, 1.0, 0),
                               atol=1e-7)


def test_sampling_with_top_k_above_the_vocabulary_decodes():
    run = decode("reverse", "a b c d", "cpu", sample=True, top_k=20)
    assert run.steps[-1].chosen == "</s>" or len(run.steps) > 1
