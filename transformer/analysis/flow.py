"""Attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers"): the layers as a graph, each
position a node in every layer, an edge from position i of layer l + 1 down to position j of layer l with the
capacity of `mixed_layers`' (i, j) (the heads' mean mixed with the residual, rows summing to 1, as rollout); the
flow from a query's output to an input token is the maximum flow between those two nodes. Rollout multiplies the
edges along every path; flow is limited by the narrowest cut. One source and sink at a time (as the paper's code):
N flows for one query, N² for a whole map; a graph of one or two layers, whose paths share no edge, in closed form,
a deeper one by SciPy's maximum flow (Dinic's algorithm) on capacities in whole units of 2⁻²⁹.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

from transformer.analysis.measures import mixed_layers

FLOW_MAX_POSITIONS = 64  # N flows a query, each on a graph of (L + 1)·N nodes and up to L·N² edges
# SciPy's maximum flow takes int32 capacities: a capacity (at most 1) in units of 2⁻²⁹, so that a flow (at most 1: a
# node's edges sum to 1) stays far from 2³¹; a flow is then within E·2⁻³⁰ of the exact one, E the edges of its cut
CAPACITY_UNITS = 2**29


def capacity_matrix(upper, lower, capacities, nodes: int) -> csr_array:
    """The ``(nodes, nodes)`` capacity matrix of the edges ``upper[e] → lower[e]`` (node indices) of ``capacities``
    in [0, 1], in `CAPACITY_UNITS` (an edge that rounds to nothing left out)."""
    units = np.rint(np.asarray(capacities, np.float64) * CAPACITY_UNITS).astype(np.int32)  # (E,)
    kept = units > 0
    return csr_array((units[kept], (np.asarray(upper)[kept], np.asarray(lower)[kept])), shape=(nodes, nodes))


def max_flows(capacities: csr_array, source: int, sinks) -> np.ndarray:
    """``(K,)`` the maximum flow from node ``source`` to each of ``sinks`` through `capacity_matrix` ``capacities``."""
    return np.array([maximum_flow(capacities, source, sink).flow_value / CAPACITY_UNITS for sink in sinks],
                    dtype=np.float64)


def flow_network(mixed: np.ndarray) -> csr_array:
    """``mixed (L, N, N)`` as the flow graph's capacities: node ``l·N + p`` is position p entering layer l (l = L: the
    output), an edge from ``(l + 1)·N + i`` down to ``l·N + j`` of capacity ``mixed[l, i, j]``."""
    layers, n = mixed.shape[0], mixed.shape[-1]
    layer, rows, cols = np.nonzero(mixed > 0)  # (E,) each
    return capacity_matrix((layer + 1) * n + rows, layer * n + cols, mixed[layer, rows, cols], (layers + 1) * n)


def flow_values(mixed: np.ndarray, query: int, keys=None) -> np.ndarray:
    """``(K,)`` the maximum flow from the output node of position ``query`` to the input node of each of ``keys``
    (None: every position): `shallow_flows` for one or two layers, `max_flows` on `flow_network` deeper."""
    layers, n = mixed.shape[0], mixed.shape[-1]
    keys = list(range(n) if keys is None else keys)
    if layers <= 2:
        return shallow_flows(mixed, query)[keys]
    return max_flows(flow_network(mixed), layers * n + query, keys)  # an input node's index is its position


def shallow_flows(mixed: np.ndarray, query: int) -> np.ndarray:
    """``(N,)`` the maximum flows from the output of ``query`` to every input of a graph of one or two layers
    (``mixed (L, N, N)``, L ≤ 2). One layer: the edge itself. Two: each path q → j → k is two edges that no other
    path shares, so the flow to k is the sum over j of min(top[q, j], bottom[j, k])."""
    if mixed.shape[0] == 1:
        return mixed[0, query].astype(np.float64)
    return np.minimum(mixed[1, query][:, None], mixed[0]).sum(0)  # (N_j, 1) with (N_j, N_k) -> (N_k,)


def attention_flow(weights, residual: float = 0.5, queries=None) -> np.ndarray:
    """``(Q, N)``: for each of ``queries`` (None: every position), its flow to every input token, the row
    normalised to sum to 1 (as the paper's code does); a query with no flow: a zero row.

    Args:
      weights: ``(L, H, N, N)`` self-attention weights; residual: the identity's share, as `attention_rollout`.
    ValueError above `FLOW_MAX_POSITIONS` positions or for queries that do not exist.
    """
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 4 or weights.shape[-1] != weights.shape[-2] or 0 in weights.shape[:2]:
        raise ValueError(f"weights must be (L, H, N, N) self-attention with L, H >= 1. Received: "
                         f"weights.shape={weights.shape}")
    n = weights.shape[-1]
    if n > FLOW_MAX_POSITIONS:
        raise ValueError(f"Attention flow solves N maximum flows a query on a graph of L·N² edges: up to N = "
                         f"{FLOW_MAX_POSITIONS}. Received: N={n}")
    queries = list(range(n)) if queries is None else list(queries)
    if any(not isinstance(q, (int, np.integer)) or not 0 <= q < n for q in queries):
        raise ValueError(f"Queries run from 0 to {n - 1}. Received: queries={queries!r}")
    mixed = mixed_layers(weights, residual)  # (L, N, N)
    flows = np.stack([flow_values(mixed, query) for query in queries])  # (Q, N)
    totals = flows.sum(-1, keepdims=True)
    return np.divide(flows, totals, out=np.zeros_like(flows), where=totals > 0)
