"""Which source tokens an encoder-decoder's output token comes from, by its attention across the whole model:
rollout and flow (Abnar & Zuidema 2020) on one graph of both stacks.

The graph has a level for every sub-layer boundary and, at each level, a node for every target position and every
source position (``N_t + N_s``, targets first). Going down from the output: each decoder layer is a cross-attention
step (half of a target node's edge weight stays on it — the residual — half goes to the encoder's output through
that layer's cross-attention) below a self-attention step (``residual·I + (1 − residual)·A`` on the targets); the
source nodes pass straight through the decoder's steps. Below the decoder, every encoder layer mixes the sources as
rollout does, the targets passing through. Rollout sums the products of the edges along every path from a target's
output node to a source token's input node; flow is the maximum flow between them. Paths that end on target tokens
(the decoder's own inputs) carry what no source token explains, so a row sums to at most 1.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_array

from transformer.analysis.flow import FLOW_MAX_POSITIONS, capacity_matrix, max_flows


def head_mean(weights) -> np.ndarray:
    """``(L, H, N_q, N_k)`` -> ``(L, N_q, N_k)``: the heads' mean weight (rows of real queries sum to 1)."""
    return np.asarray(weights, np.float64).mean(1)


def head_sum_normalised(norms) -> np.ndarray:
    """``(L, H, N_q, N_k)`` value-weighted norms -> ``(L, N_q, N_k)``: summed over heads, each row scaled to sum to
    1 (a row with nothing: zeros), the edges of a norm rollout."""
    summed = np.asarray(norms, np.float64).sum(1)  # (L, N_q, N_k)
    totals = summed.sum(-1, keepdims=True)
    return np.divide(summed, totals, out=np.zeros_like(summed), where=totals > 0)


def _check(encoder, decoder, cross, residual) -> tuple[int, int]:
    encoder, decoder, cross = (np.asarray(edges) for edges in (encoder, decoder, cross))
    n_s, n_t = encoder.shape[-1], decoder.shape[-1]
    if (encoder.ndim != 3 or decoder.ndim != 3 or encoder.shape[1:] != (n_s, n_s) or decoder.shape[1:] != (n_t, n_t)
            or cross.shape != (decoder.shape[0], n_t, n_s) or 0 in (len(encoder), len(decoder))):
        raise ValueError(f"encoder must be (L_e, N_s, N_s), decoder (L_d, N_t, N_t) and cross (L_d, N_t, N_s) with "
                         f"L_e, L_d >= 1. Received: encoder.shape={encoder.shape}, decoder.shape={decoder.shape}, "
                         f"cross.shape={cross.shape}")
    if not 0.0 <= residual <= 1.0:
        raise ValueError(f"residual must be from 0 to 1. Received: residual={residual!r}")
    return n_t, n_s


def joint_levels(encoder, decoder, cross, residual: float = 0.5) -> np.ndarray:
    """The graph's edges, lowest level first: ``(L_e + 2·L_d, N_t + N_s, N_t + N_s)``, row i of level l the edges
    from node i above it down to the nodes of level l (targets first, then sources).

    Args:
      encoder: ``(L_e, N_s, N_s)``, decoder: ``(L_d, N_t, N_t)``, cross: ``(L_d, N_t, N_s)`` — each layer's edges
        over heads (`head_mean` or `head_sum_normalised`); residual: the identity's share of a sub-layer, in [0, 1].
    """
    n_t, n_s = _check(encoder, decoder, cross, residual)
    targets, sources = slice(0, n_t), slice(n_t, n_t + n_s)
    levels = []
    for edges in np.asarray(encoder, np.float64):  # the sources mixed, the targets passed through
        level = np.eye(n_t + n_s)
        level[sources, sources] = residual * np.eye(n_s) + (1.0 - residual) * edges
        levels.append(level)
    for self_edges, cross_edges in zip(np.asarray(decoder, np.float64), np.asarray(cross, np.float64)):
        level = np.eye(n_t + n_s)
        level[targets, targets] = residual * np.eye(n_t) + (1.0 - residual) * self_edges
        levels.append(level)
        level = np.eye(n_t + n_s)
        level[targets, targets] = residual * np.eye(n_t)
        level[targets, sources] = (1.0 - residual) * cross_edges
        levels.append(level)
    return np.stack(levels)  # (levels, N_t + N_s, N_t + N_s)


def source_rollout(encoder, decoder, cross, residual: float = 0.5) -> np.ndarray:
    """``(N_t, N_s)``: for each target position's output, the weight of every path down to each source token (the
    arguments as `joint_levels`)."""
    levels = joint_levels(encoder, decoder, cross, residual)
    n_t = np.asarray(decoder).shape[-1]
    through = np.eye(levels.shape[-1])
    for level in levels:  # lowest first
        through = level @ through  # (N_t + N_s, N_t + N_s)
    return through[:n_t, n_t:]


def flow_network(encoder, decoder, cross, residual: float = 0.5) -> tuple[csr_array, dict]:
    """The `joint_levels` graph with its pass-through chains contracted: a source node that only passes through the
    decoder's steps joins the encoder's output, and the targets' nodes below the decoder (dead ends: no source token
    there) go. Every flow is at most 1 (a node's edges sum to 1), so a chain of capacity-1 edges never binds: the
    maximum flows are those of the whole graph. Returns its `capacity_matrix` and each node's index, nodes named
    ``("t", level, i)`` (level 0: the decoder's input, 2·L_d its output) and ``("s", level, k)`` (level 0: the source
    tokens, L_e the encoder's output)."""
    n_t, n_s = _check(encoder, decoder, cross, residual)
    encoder, decoder, cross = (np.asarray(edges, np.float64) for edges in (encoder, decoder, cross))
    top = len(encoder)
    index, upper, lower, capacities = {}, [], [], []

    def add(edges, upper_level, lower_level) -> None:
        rows, cols = np.nonzero(edges > 0)
        upper.extend(index.setdefault((*upper_level, int(i)), len(index)) for i in rows)
        lower.extend(index.setdefault((*lower_level, int(j)), len(index)) for j in cols)
        capacities.extend(edges[rows, cols])

    for layer, edges in enumerate(encoder):
        add(residual * np.eye(n_s) + (1.0 - residual) * edges, ("s", layer + 1), ("s", layer))
    for layer, (self_edges, cross_edges) in enumerate(zip(decoder, cross)):
        add(residual * np.eye(n_t) + (1.0 - residual) * self_edges, ("t", 2 * layer + 1), ("t", 2 * layer))
        add(residual * np.eye(n_t), ("t", 2 * layer + 2), ("t", 2 * layer + 1))
        add((1.0 - residual) * cross_edges, ("t", 2 * layer + 2), ("s", top))
    return capacity_matrix(upper, lower, capacities, len(index)), index


def source_flow(encoder, decoder, cross, residual: float = 0.5, queries=None) -> np.ndarray:
    """``(Q, N_s)``: the maximum flow from each of ``queries``' (None: every target position) output nodes to each
    source token's input node on the `joint_levels` graph (solved on its `flow_network` by `flow.max_flows`).
    ValueError above `FLOW_MAX_POSITIONS` target and source positions together."""
    n_t, n_s = _check(encoder, decoder, cross, residual)
    if n_t + n_s > FLOW_MAX_POSITIONS:
        raise ValueError(f"Attention flow solves a maximum flow a source token and output: up to "
                         f"{FLOW_MAX_POSITIONS} target and source positions together. Received: N_t + N_s={n_t + n_s}")
    network, index = flow_network(encoder, decoder, cross, residual)
    output = 2 * np.asarray(decoder).shape[0]
    reached = [key for key in range(n_s) if ("s", 0, key) in index]  # a source token no edge reaches gets 0
    sinks = [index[("s", 0, key)] for key in reached]

    def flows(query: int) -> np.ndarray:  # (N_s,)
        found, source = np.zeros(n_s), index.get(("t", output, query))
        if source is not None and reached:
            found[reached] = max_flows(network, source, sinks)
        return found

    queries = range(n_t) if queries is None else queries
    return np.array([flows(query) for query in queries]).reshape(-1, n_s)
