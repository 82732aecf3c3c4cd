"""Mean-ablation's mean is defined once: each head's output (its context before the heads are merged) averaged over
the real (not padding) query positions of the configuration's lines, in the model without ablation. It is computed
once and used for every line, every page and every decoding step, so no number depends on which lines ran."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from transformer import LiveConfig, ModelCache, run_live
from transformer.core.shape import STACKS
from transformer.live.decode import decode
from transformer.live.plan import ablation_means
from transformer.live.walkthrough import attention_walkthrough

LINES = "a b c d e f\nj i h\nb b c c a"
REVERSE = LiveConfig(weights="reverse", source_text=LINES, target_text=LINES, seq_len=6,
                     ablate=(("encoder", 0, 1),), ablation="mean")


@pytest.mark.slow
def test_one_lines_maps_are_the_same_whichever_lines_run():
    whole = run_live(REVERSE, ModelCache())
    for line in range(3):
        alone = run_live(REVERSE, ModelCache(), lines=(line,))
        for stack in alone.attention:
            np.testing.assert_allclose(alone.attention[stack][:, 0], whole.attention[stack][:, line], atol=1e-5)


def test_padding_alone_changes_nothing():
    short, long = run_live(REVERSE, ModelCache()), run_live(replace(REVERSE, seq_len=12), ModelCache())
    assert [p["prediction"] for p in short.predictions] == [p["prediction"] for p in long.predictions]
    n_s, n_t = short.source_ids.shape[1], short.target_ids.shape[1]
    np.testing.assert_allclose(long.attention["encoder"][..., :n_s, :n_s], short.attention["encoder"], atol=1e-5)
    np.testing.assert_allclose(long.attention["cross"][..., :n_t, :n_s], short.attention["cross"], atol=1e-5)


def test_the_mean_is_each_heads_output_over_the_real_positions_of_the_unablated_model():
    config = LiveConfig(d_model=32, num_heads=4, d_ff=64, num_layers=2, seq_len=8,
                        source_text="a b c d a b c d\nx y z 0 0 0 0 0", target_text="a b 0 0 0 0 0 0\nx y z x y z 0 0",
                        ablate=(("cross", 1, 2),), ablation="mean")
    means = ablation_means(config)  # (S, L, H, d_v)
    assert means.shape == (len(STACKS), 2, 4, 8)
    clean = replace(config, ablate=(), ablation="zero")
    result = run_live(clean)
    for stack in STACKS:
        queries = result.source_ids if stack == "encoder" else result.target_ids  # (B, N_q)
        real = ~np.isin(queries, result.pad_ids)  # (B, N_q)
        for layer in range(2):
            context = attention_walkthrough(clean, stack, layer).tensors["context"]  # (B, H, N_q, d_v)
            expected = context.transpose(1, 0, 2, 3)[:, real].mean(1)  # (H, d_v): over the real queries
            np.testing.assert_allclose(means[STACKS.index(stack), layer], expected, atol=1e-5)


@pytest.mark.slow
def test_decoding_with_mean_ablation_gives_the_pages_prediction():
    config = replace(REVERSE, source_text="a b c d\nj i h", target_text="a b c d\nj i h", seq_len=5,
                     ablate=(("cross", 0, 1),))
    predicted = run_live(config, ModelCache()).predictions[0]["prediction"]
    assert decode(config, "a b c d").prediction == predicted
