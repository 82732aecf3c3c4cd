"""The neuron view is the softmax the head computes, for every kind of position: its terms (q·k/√d_k plus any
bias a variant adds, ALiBi's) give the head's own weights."""

from __future__ import annotations

import numpy as np
import pytest

from transformer.analysis.measures import neuron_terms, score_bias
from transformer.core.shape import POSITIONS
from transformer.live.config import LiveConfig
from transformer.live.walkthrough import attention_walkthrough
from viz.neuron import neuron_view

LINES = "the cat sat on the mat today\nthe dog ran after the cat\na b c d e f g h"


@pytest.mark.parametrize("positions", POSITIONS)
def test_the_neuron_views_weights_are_the_heads_own_for_every_position_kind(positions):
    config = LiveConfig(positions=positions, seq_len=9, source_text=LINES, target_text=LINES)
    walk = attention_walkthrough(config, "encoder", 0)
    line = 0
    q, k = walk.tensors["query_heads"][line], walk.tensors["key_heads"][line]  # (H, N_q, d_k), (H, N_k, d_k)
    bias = score_bias(walk.tensors["scores"][line], walk.tensors["scaled"][line], q.shape[-1])  # (H, N_q, N_k)
    for head in range(q.shape[0]):
        for query in (0, 4):
            terms = neuron_terms(q, k, walk.mask[line], head, query, 1, bias=bias)
            np.testing.assert_allclose(terms.weights, walk.tensors["weights"][line, head, query], atol=1e-5)
    if positions == "alibi":
        assert np.abs(bias).max() > 0.1
        figure = neuron_view(neuron_terms(q, k, walk.mask[line], 0, 4, 1, bias=bias), ["t"] * 9, ["t"] * 9, 0, 4, 1)
        assert "ALiBi" in figure.layout.title.text
    else:
        np.testing.assert_allclose(bias, 0.0, atol=1e-5)
