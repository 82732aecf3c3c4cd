"""Attention flow's reference for the tests: networkx's own maximum flow (preflow-push, on the float capacities) on
the layers' graph as Abnar & Zuidema describe it, built here edge by edge."""

import networkx as nx
import numpy as np


def layers_graph(mixed) -> nx.DiGraph:
    """``mixed (L, N, N)``: node ``(l, p)`` is position p entering layer l (l = L: the output), an edge from
    ``(l + 1, i)`` down to ``(l, j)`` of capacity ``mixed[l, i, j]`` where it is above 0."""
    graph = nx.DiGraph()
    for layer, edges in enumerate(np.asarray(mixed, np.float64)):
        for i, j in zip(*np.nonzero(edges > 0)):
            graph.add_edge((layer + 1, int(i)), (layer, int(j)), capacity=float(edges[i, j]))
    return graph


def networkx_flows(mixed, query: int, keys=None) -> np.ndarray:
    """``(K,)`` the maximum flow from the output node of ``query`` to the input node of each of ``keys`` (None:
    every position); 0 where either node has no edge."""
    graph, layers, n = layers_graph(mixed), len(mixed), np.shape(mixed)[-1]
    source = (layers, query)
    return np.array([nx.maximum_flow_value(graph, source, (0, key)) if source in graph and (0, key) in graph
                     else 0.0 for key in (range(n) if keys is None else keys)])
