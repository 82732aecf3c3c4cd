"""Attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers"): the layers as a graph, each
position a node in every layer, an edge from position i of layer l + 1 down to position j of layer l with the
capacity of `mixed_layers`' (i, j) (the heads' mean mixed with the residual, rows summing to 1, as rollout); the
flow from a query's output to an input token is the maximum flow between those two nodes. Rollout multiplies the
edges along every path; flow is limited by the narrowest cut. Solved with networkx's max-flow, one source and sink
at a time (as the paper's code): N flows for one query, N² for a whole map; a graph of one or two layers, whose paths
share no edge, in closed form.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
from networkx.algorithms.flow import build_residual_network, edmonds_karp

from transformer.analysis.measures import mixed_layers

FLOW_MAX_POSITIONS = 64  # N flows a query, each on a graph of (L + 1)·N nodes and up to L·N² edges


def flow_graph(mixed: np.ndarray) -> nx.DiGraph:
    """``mixed (L, N, N)`` as the flow graph: node ``(l, p)`` is position p entering layer l (l = L: the output)."""
    graph = nx.DiGraph()
    for layer, edges in enumerate(mixed):
        rows, cols = np.nonzero(edges > 0)
        graph.add_edges_from(((layer + 1, int(i)), (layer, int(j)), {"capacity": float(edges[i, j])})
                             for i, j in zip(rows, cols))
    return graph


def flow_values(mixed: np.ndarray, query: int, keys=None) -> np.ndarray:
    """``(K,)`` the maximum flow from the output node of position ``query`` to the input node of each of ``keys``
    (None: every position): `shallow_flows` for one or two layers; deeper, Edmonds–Karp on one residual network,
    reset by each solve (building it for every solve was ~8× slower: docs/performance.md)."""
    layers, n = mixed.shape[0], mixed.shape[-1]
    keys = range(n) if keys is None else keys
    if layers <= 2:
        return shallow_flows(mixed, query)[list(keys)]
    graph, source = flow_graph(mixed), (layers, query)
    if source not in graph:
        return np.zeros(len(keys))
    residual = build_residual_network(graph, "capacity")
    return np.array([edmonds_karp(graph, source, (0, key), residual=residual).graph["flow_value"]
                     if (0, key) in graph else 0.0 for key in keys])


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
