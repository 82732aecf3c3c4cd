"""Which explanation is right: rollout and flow through an encoder-decoder's two stacks checked against every path of
the literal graph and networkx's max-flow on it; gradient × input against a finite difference; the faithfulness
study on the shipped copy model (its cross-attention is the known diagonal) and its bad input."""

import networkx as nx
import numpy as np
import pytest
import tensorflow as tf
from flow_reference import networkx_flows

from transformer.analysis.explanations import (
    head_sum_normalised,
    joint_levels,
    source_flow,
    source_rollout,
)
from transformer.core.masks import padding_mask, target_mask
from transformer.live import faithfulness as study
from transformer.tasks import PAD_ID, get_task, make_batch
from transformer.training.pretrained import load_pretrained


def _rows(rng, *shape, causal=False):
    values = rng.random(shape)
    if causal:
        values = values * np.tril(np.ones(shape[-2:]))
    return values / values.sum(-1, keepdims=True)


def _stacks(layers, n_t, n_s, seed=0):
    rng = np.random.default_rng(seed)
    return _rows(rng, layers, n_s, n_s), _rows(rng, layers, n_t, n_t, causal=True), _rows(rng, layers, n_t, n_s)


def _literal_graph(levels) -> nx.DiGraph:
    graph = nx.DiGraph()
    for level, edges in enumerate(levels):
        for i, j in zip(*np.nonzero(edges)):
            graph.add_edge((level + 1, int(i)), (level, int(j)), weight=float(edges[i, j]))
    return graph


@pytest.mark.parametrize("layers, n_t, n_s, residual", [(1, 2, 3, 0.5), (2, 3, 2, 0.5), (2, 2, 3, 0.3)])
def test_source_rollout_sums_the_products_along_every_path_of_the_graph(layers, n_t, n_s, residual):
    encoder, decoder, cross = _stacks(layers, n_t, n_s)
    levels = joint_levels(encoder, decoder, cross, residual)
    graph, top = _literal_graph(levels), len(levels)
    expected = np.zeros((n_t, n_s))
    for query in range(n_t):
        for key in range(n_s):
            for path in nx.all_simple_paths(graph, (top, query), (0, n_t + key)):
                expected[query, key] += np.prod([graph.edges[a, b]["weight"] for a, b in zip(path, path[1:])])
    np.testing.assert_allclose(source_rollout(encoder, decoder, cross, residual), expected, atol=1e-12)


def test_without_the_residual_a_target_reads_the_sources_only_through_cross_attention_then_the_encoder():
    encoder, decoder, cross = _stacks(1, 3, 4)
    np.testing.assert_allclose(source_rollout(encoder, decoder, cross, residual=0.0), cross[0] @ encoder[0])
    rollout = source_rollout(encoder, decoder, cross)  # half of every target's weight stays on the targets
    assert (rollout.sum(1) < 1).all() and (rollout >= 0).all()


@pytest.mark.parametrize("layers, n_t, n_s", [(1, 2, 3), (2, 3, 4), (3, 4, 3)])
def test_source_flow_equals_networkx_max_flow_on_the_whole_graph(layers, n_t, n_s):
    encoder, decoder, cross = _stacks(layers, n_t, n_s, seed=layers)
    levels = joint_levels(encoder, decoder, cross)
    expected = np.stack([networkx_flows(levels, query, keys=range(n_t, n_t + n_s)) for query in range(n_t)])
    np.testing.assert_allclose(source_flow(encoder, decoder, cross), expected, atol=1e-6)  # SciPy's 2⁻²⁹ units
    np.testing.assert_allclose(source_flow(encoder, decoder, cross, queries=[1]), expected[1:2], atol=1e-6)


def test_norms_summed_over_heads_become_rows_that_sum_to_one_and_empty_rows_stay_empty():
    norms = np.random.default_rng(0).random((2, 3, 4, 5))
    norms[1, :, 2] = 0.0
    edges = head_sum_normalised(norms)
    np.testing.assert_allclose(edges[0].sum(-1), 1.0)
    assert not edges[1, 2].any()


@pytest.mark.parametrize("arrays, message", [
    (lambda e, d, c: (e[0], d, c), "encoder must be"),
    (lambda e, d, c: (e, d, c[:, :, :-1]), "cross.shape"),
])
def test_bad_shapes_are_named(arrays, message):
    with pytest.raises(ValueError, match=message):
        source_rollout(*arrays(*_stacks(2, 3, 4)))


def test_bad_residual_and_too_many_positions_for_flow_are_refused():
    with pytest.raises(ValueError, match="residual"):
        source_rollout(*_stacks(1, 2, 3), residual=1.5)
    with pytest.raises(ValueError, match="N_t \\+ N_s=70"):
        source_flow(*_stacks(1, 30, 40))


@pytest.mark.slow
def test_gradient_times_input_is_the_first_order_change_of_the_log_probability():
    model = load_pretrained("reverse").model
    task = get_task("reverse")
    src, decoder_input, labels = make_batch(task, load_pretrained("reverse").vocab, [list("abcd".replace("", " ")
                                                                                          .split())], 4)
    found = study._gradient_times_input(model, src, decoder_input, labels, [(0, 1)])  # (1, N_s)
    embedded = model.source_embedding(tf.constant(src)).numpy()  # (1, N_s, D)
    masks = padding_mask(src, PAD_ID), target_mask(decoder_input, PAD_ID)

    def log_p(scale_of_key: float, key: int) -> float:
        changed = embedded.copy()
        changed[0, key] *= scale_of_key
        logits = model.logits_from_embedded(tf.constant(changed), decoder_input, *masks).numpy()[0, 1]
        return float(logits[labels[0, 1]] - np.log(np.exp(logits - logits.max()).sum()) - logits.max())

    step = 1e-2  # d/dε log p(e_k (1 + ε)) at 0 is ∇_{e_k} log p · e_k
    for key in range(4):
        difference = (log_p(1 + step, key) - log_p(1 - step, key)) / (2 * step)
        assert found[0, key] == pytest.approx(difference, rel=2e-2, abs=2e-3)


@pytest.fixture(scope="module")
def copy_scores():
    return study.faithfulness("copy", count=6)


@pytest.mark.slow
def test_on_copy_the_cross_attention_points_at_the_copied_token_and_deleting_it_costs_more_than_chance(copy_scores):
    methods = list(study.METHODS)
    assert copy_scores.top1.shape == (6,) and copy_scores.drops.shape == (6, 3)
    assert copy_scores.top1[methods.index("last-layer cross-attention")] >= 0.95
    assert ((copy_scores.top1 >= 0) & (copy_scores.top1 <= 1)).all()
    assert (copy_scores.top1_same >= copy_scores.top1 - 1e-12).all()  # the aligned position holds its own symbol
    assert copy_scores.aopc[methods.index("rollout")] > copy_scores.random_aopc + 0.2
    assert 0 < copy_scores.base <= 1 and copy_scores.outputs > 6
    assert study.is_measured("copy", 6) and not study.is_measured("copy", 7)
    again = study.faithfulness("copy", count=6)
    np.testing.assert_array_equal(again.drops, copy_scores.drops)


@pytest.mark.slow
def test_one_lines_maps_have_a_row_an_output_token_and_its_alignment(copy_scores):
    example = study.example_maps("copy", "c a b a", count=6)
    assert example.source_tokens == ["c", "a", "b", "a"] and example.target_tokens == ["c", "a", "b", "a"]
    assert example.aligned == [0, 1, 2, 3] and example.head == copy_scores.head
    assert set(example.maps) == set(study.METHODS)
    assert all(grid.shape == (4, 4) for grid in example.maps.values())
    assert (example.maps["last-layer cross-attention"].argmax(1) == [0, 1, 2, 3]).all()


def test_a_tie_shares_the_credit_and_a_repeated_symbols_other_copy_counts_by_symbol():
    values = np.array([0.1, 0.4, 0.4, 0.1])
    assert study._top1_credit(values, 1) == 0.5 and study._top1_credit(values, 0) == 0.0
    assert study._top1_credit(np.array([0.5, 0.2, 0.3]), 2, list("aba")) == 1.0  # top: position 0, an "a" too
    assert study._top1_credit(np.array([0.5, 0.2, 0.3]), 1, list("aba")) == 0.0


@pytest.mark.parametrize("name, count, message", [
    ("induction", 5, "Received: 'induction'"), ("random", 5, "task None"), ("copy", 0, "count=0"),
    ("copy", 501, "count=501"),
])
def test_a_model_without_an_alignment_or_a_bad_count_is_refused(name, count, message):
    with pytest.raises(ValueError, match=message):
        study.faithfulness(name, count)


def test_a_line_not_of_the_tasks_form_is_refused():
    with pytest.raises(ValueError, match="right answer: .hello. is not a date"):
        study.example_maps("dates", "hello", count=6)
