"""Ablation through `LiveConfig` (every page's model), a trained model's predictions and decoding, the importance
map, and the Heads page's scores over many lines, each against an independent computation."""

from dataclasses import replace

import numpy as np
import pytest
import tensorflow as tf

from transformer import LiveConfig, ModelCache, run_live
from transformer.analysis.heads import detection_pattern, line_top_roles, pattern_score
from transformer.core.ablation import HeadAblation, active_heads, check_ablation
from transformer.core.masks import padding_mask, target_mask
from transformer.core.shape import STACKS
from transformer.live.decode import decode
from transformer.live.head_roles import head_roles, repeated_lines
from transformer.live.importance import head_importance, measure_ablation
from transformer.live.plan import resolved
from transformer.tasks import PAD_ID, make_batch
from transformer.training.pretrained import load_pretrained

BASE = LiveConfig(d_model=32, num_heads=4, d_ff=64, num_layers=2, seq_len=8,
                  source_text="a b c d a b c d\nx y z x y z 0 0", target_text="a b c d a b c d\nx y z x y z 0 0")


def test_a_config_ablates_exactly_that_head_as_the_hook_does():
    """run_live with ``ablate`` == the model run by hand with a `HeadAblation` of the same head (the hook is itself
    checked against the layer's output recomputed with that head's context zeroed: test_architectures)."""
    cache = ModelCache()
    plain = run_live(BASE, cache)
    ablated = run_live(replace(BASE, ablate=(("encoder", 0, 1),)), cache)
    np.testing.assert_array_equal(ablated.attention["encoder"][0], plain.attention["encoder"][0])  # before it
    assert np.abs(ablated.attention["encoder"][1] - plain.attention["encoder"][1]).max() > 1e-3  # after it
    model = resolved(BASE).model(cache).model
    src, tgt = tf.constant(plain.source_ids), tf.constant(plain.target_ids)
    src_mask, tgt_mask = tf.constant(plain.source_padding_mask), tf.constant(plain.target_mask)
    by_hand = model.attention_maps(STACKS, src, tgt, src_mask, tgt_mask,
                                   hook=HeadAblation({("encoder", 0): (1,)}, "zero"))
    for stack in STACKS:
        np.testing.assert_allclose(ablated.attention[stack], tf.stack(by_hand[stack]), atol=1e-6)
    again = run_live(BASE, cache)  # the unablated function is untouched by the ablated one
    np.testing.assert_array_equal(again.attention["cross"], plain.attention["cross"])


@pytest.mark.slow
def test_one_traced_function_serves_every_set_of_ablated_heads():
    cache = ModelCache()
    first = run_live(replace(BASE, ablate=(("encoder", 0, 1),)), cache)
    second = run_live(replace(BASE, ablate=(("encoder", 0, 2),)), cache)
    cache.trace_pending()
    assert np.abs(first.attention["encoder"][1] - second.attention["encoder"][1]).max() > 1e-3
    for config, eager in ((replace(BASE, ablate=(("encoder", 0, 1),)), first),
                          (replace(BASE, ablate=(("encoder", 0, 2),)), second)):
        traced = run_live(config, cache)
        np.testing.assert_allclose(traced.attention["encoder"], eager.attention["encoder"], atol=1e-6)
    entry = resolved(BASE).model(cache)
    assert sum(1 for key in entry.functions if len(key) == 3) == 1  # ("attention", stacks, "zero")


@pytest.mark.parametrize("ablate, kind, message", [
    ((("encoder", 2, 0),), "zero", r"layers 0 to 1.*\('encoder', 2, 0\)"),
    ((("encoder", 0, 4),), "zero", r"heads 0 to 3"),
    ((("side", 0, 0),), "zero", r"stacks"),
    ((("encoder", 0, 0),), "half", r"ablation='half'"),
])
def test_bad_ablations_are_refused_with_the_values(ablate, kind, message):
    with pytest.raises(ValueError, match=message):
        run_live(replace(BASE, ablate=ablate, ablation=kind), ModelCache())


def test_ablating_every_head_is_refused():
    every = tuple((stack, layer, head) for stack in STACKS for layer in range(2) for head in range(4))
    with pytest.raises(ValueError, match="every head"):
        run_live(replace(BASE, ablate=every), ModelCache())
    assert len(check_ablation(every[:-1], "zero", STACKS, 2, 4)) == len(every) - 1
    with pytest.raises(ValueError, match="block-wise"):
        run_live(replace(BASE, ablate=every[:1], seq_len=600), ModelCache())


def test_active_heads_marks_the_ablated_heads():
    active = active_heads((("cross", 1, 2), ("encoder", 0, 0)), 2, 3)
    assert active.shape == (3, 2, 3) and active.sum() == 16
    assert active[2, 1, 2] == 0 and active[0, 0, 0] == 0


@pytest.mark.slow
def test_a_trained_models_predictions_are_the_ablated_models():
    config = LiveConfig(weights="reverse", source_text="a b c d", seq_len=8)
    plain = run_live(config, ModelCache()).predictions[0]
    ablated = run_live(replace(config, ablate=(("cross", 0, 0), ("cross", 0, 1))), ModelCache()).predictions[0]
    assert plain["correct"] and plain["prediction"] != ablated["prediction"]
    with pytest.raises(ValueError, match="heads 0 to 3"):
        run_live(replace(config, ablate=(("cross", 0, 9),)), ModelCache())


@pytest.mark.slow
def test_decoding_runs_the_ablated_model_and_its_cache_agrees():
    config = LiveConfig(weights="dates")
    plain = decode(config, "24/11/2026")
    ablated = decode(replace(config, ablate=(("decoder", 0, 1), ("decoder", 0, 2))), "24/11/2026")
    assert plain.prediction == "2026-11-24" and ablated.prediction != plain.prediction
    assert ablated.cache_gap < 1e-4  # the cached steps ablate as the whole model does
    averaged = decode(replace(config, ablate=(("decoder", 0, 1),), ablation="mean"), "24/11/2026")
    assert averaged.cache_gap < 1e-4  # mean-ablation too: the means are fixed, whatever the prefix


def _reference_loss(model, src, decoder_input, labels, hook=None):
    """Mean cross-entropy over non-padding labels, in NumPy from the model's logits."""
    logits, _ = model(tf.constant(src), tf.constant(decoder_input), padding_mask(src, PAD_ID),
                      target_mask(decoder_input, PAD_ID), hook=hook)
    logits = np.asarray(logits, np.float64)  # (B, N, V)
    log_p = logits - logits.max(-1, keepdims=True)
    log_p = log_p - np.log(np.exp(log_p).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_p, labels[..., None], -1)[..., 0]  # (B, N)
    real = labels != PAD_ID
    return float(-(picked * real).sum() / real.sum())


@pytest.mark.slow
def test_the_importance_measure_is_the_models_loss_with_and_without_a_head():
    pretrained = load_pretrained("reverse")
    rng = np.random.default_rng(0)  # measure's examples: the task's sources drawn from seed 0
    sources = [pretrained.rules.sample(rng, pretrained.lengths) for _ in range(40)]
    batch = make_batch(pretrained.rules, pretrained.vocab, sources, pretrained.lengths[1])
    loss, accuracy = measure_ablation("reverse", (), 40)
    assert loss == pytest.approx(_reference_loss(pretrained.model, *batch), abs=1e-4) and accuracy > 0.9
    ablated_loss, _ = measure_ablation("reverse", (("cross", 0, 1),), 40)
    hook = HeadAblation({("cross", 0): (1,)}, "zero")
    assert ablated_loss == pytest.approx(_reference_loss(pretrained.model, *batch, hook=hook), abs=1e-4)
    assert ablated_loss > loss


@pytest.mark.slow
def test_the_importance_map_names_the_heads_reverse_needs():
    """docs/heads.md's figures: on reverse, ablating cross-attention's L0 H1 costs the most accuracy."""
    importance = head_importance("reverse", 200)
    (first, change, _), *_ = importance.ranked(3)
    assert first == ("cross", 0, 1) and change < -0.1
    assert importance.accuracy_change.shape == (3, 2, 4) and not np.isnan(importance.accuracy_change).any()


def test_head_roles_leave_padding_rows_out_and_score_a_custom_pattern():
    config = replace(BASE, seq_len=10)
    roles = head_roles(config, "encoder", pattern="window", pattern_size=2)
    result = run_live(config, ModelCache())
    weights = result.attention["encoder"]  # (L, B, H, N, N)
    valid = ~np.isin(result.source_ids, result.pad_ids)  # (B, N)
    window = np.tril(np.ones((10, 10), bool)) & ~np.tril(np.ones((10, 10), bool), -2)  # keys i−1 and i
    expected = np.nanmean([pattern_score(weights[:, b], window, valid[b]) for b in range(2)], axis=0)
    np.testing.assert_allclose(roles.scores["pattern"], expected, atol=1e-6)
    expected_previous = np.nanmean([pattern_score(weights[:, b], detection_pattern("previous_token",
                                    result.source_ids[b]), valid[b]) for b in range(2)], axis=0)
    np.testing.assert_allclose(roles.scores["previous_token"], expected_previous, atol=1e-6)
    assert roles.lines == 2 and roles.top_roles.shape == (2, 4)
    cross = head_roles(config, "cross")
    assert cross.scores == {} and cross.distance is None and cross.entropy.shape == (2, 4)
    with pytest.raises(ValueError, match="pattern='paper'"):
        head_roles(config, "encoder", pattern="paper")


def test_repeated_lines_write_a_segment_twice():
    lines = repeated_lines(3, 5, seed=1).splitlines()
    assert len(lines) == 3 and all(line.split()[:5] == line.split()[5:] for line in lines)


def test_a_lines_top_role_is_the_role_it_scores_highest_on():
    ids = np.array([3, 1, 4, 1, 5])
    weights = np.zeros((1, 2, 5, 5))
    weights[0, 0, np.arange(1, 5), np.arange(0, 4)] = 1.0  # previous token
    weights[0, 0, 0, 0] = 1.0
    weights[0, 1, :, 0] = 1.0  # first token
    names, scores = line_top_roles(weights, ids)
    assert list(names[0]) == ["previous_token", "first_token"] and scores[0].tolist() == [1.0, 1.0]
