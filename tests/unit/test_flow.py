"""Attention flow (Abnar & Zuidema 2020): max-flow through the layers' graph, checked against a brute-force
minimum cut, against networkx's own default max-flow, and against rollout where they must agree. SciPy's solver works
in whole units of 2⁻²⁹ (flow.CAPACITY_UNITS): a deep graph's flows are compared within 1e-6."""

import itertools

import numpy as np
import pytest
from flow_reference import networkx_flows

from transformer.analysis.flow import attention_flow, flow_values
from transformer.analysis.measures import attention_rollout, mixed_layers


def _weights(layers, heads, n, seed=0, causal=False):
    weights = np.random.default_rng(seed).random((layers, heads, n, n))
    if causal:
        weights = weights * np.tril(np.ones((n, n)))
    return weights / weights.sum(-1, keepdims=True)


def _min_cut(mixed, query, key) -> float:
    """The smallest capacity of any cut between the output node of ``query`` and the input node of ``key``:
    every set of the other nodes on the source's side tried (max-flow = min-cut)."""
    layers, n = mixed.shape[0], mixed.shape[-1]
    nodes = [(layer, p) for layer in range(layers + 1) for p in range(n)]
    source, sink = (layers, query), (0, key)
    others = [node for node in nodes if node not in (source, sink)]
    best = np.inf
    for chosen in itertools.product((False, True), repeat=len(others)):
        side = {source} | {node for node, on in zip(others, chosen) if on}
        cut = sum(mixed[layer, i, j] for layer in range(layers) for i in range(n) for j in range(n)
                  if (layer + 1, i) in side and (layer, j) not in side)
        best = min(best, cut)
    return best


@pytest.mark.parametrize("layers, seed, causal", [(2, 0, False), (2, 1, True), (3, 2, False), (3, 3, True)])
def test_each_flow_equals_the_minimum_cut_found_by_trying_every_cut(layers, seed, causal):
    """Two layers: the closed form (exact); three: SciPy's solver. 9 or 12 nodes: 2^7 or 2^10 cuts a pair."""
    mixed = mixed_layers(_weights(layers, 2, 3, seed, causal))
    for query in range(3):
        found = flow_values(mixed, query)
        expected = [_min_cut(mixed, query, key) for key in range(3)]
        np.testing.assert_allclose(found, expected, atol=1e-9 if layers == 2 else 1e-6)


@pytest.mark.parametrize("layers, n, causal", [(3, 8, True), (4, 16, False), (6, 12, False)])
def test_flows_equal_networkx_default_max_flow_on_a_larger_graph(layers, n, causal):
    mixed = mixed_layers(_weights(layers, 4, n, seed=layers, causal=causal))
    for query in (0, n // 2, n - 1):
        np.testing.assert_allclose(flow_values(mixed, query), networkx_flows(mixed, query), atol=1e-6)
        np.testing.assert_allclose(flow_values(mixed, query, keys=[2, 0]), networkx_flows(mixed, query, keys=[2, 0]),
                                   atol=1e-6)


def test_one_layers_flow_is_its_mixed_row_and_equals_rollout_and_a_causal_flow_never_reaches_ahead():
    weights = _weights(1, 3, 6, seed=3)
    np.testing.assert_allclose(attention_flow(weights), attention_rollout(weights), atol=1e-9)
    causal = attention_flow(_weights(3, 2, 6, seed=4, causal=True))  # (N, N)
    assert np.all(np.triu(causal, 1) == 0)
    np.testing.assert_allclose(causal.sum(-1), 1.0)
    np.testing.assert_allclose(attention_flow(_weights(3, 2, 6, seed=4, causal=True), queries=[4]), causal[[4]])


def test_flow_refuses_what_it_cannot_solve_by_name():
    with pytest.raises(ValueError, match="up to N = 64. Received: N=65"):
        attention_flow(np.ones((1, 1, 65, 65)) / 65)
    with pytest.raises(ValueError, match="Queries run from 0 to 3"):
        attention_flow(_weights(1, 1, 4), queries=[4])


@pytest.mark.parametrize("causal", [False, True])
def test_a_two_layer_flow_is_solved_in_closed_form_and_equals_networkx(monkeypatch, causal):
    """With two layers every path from the output of q to the input of k is q → j → k, two edges no other path shares,
    so the flow is the sum over j of min(top[q, j], bottom[j, k]) (the Images page's ViT reads 17 of them a pixel)."""
    mixed = mixed_layers(_weights(2, 4, 17, seed=5, causal=causal))
    expected = {query: networkx_flows(mixed, query) for query in (0, 9)}

    def no_graph(_):
        raise AssertionError("a graph was built for a flow of two layers")

    monkeypatch.setattr("transformer.analysis.flow.flow_network", no_graph)
    for query, flows in expected.items():
        np.testing.assert_allclose(flow_values(mixed, query), flows, atol=1e-12)
        np.testing.assert_allclose(flow_values(mixed, query, keys=[3, 0]), [flows[3], flows[0]], atol=1e-12)
