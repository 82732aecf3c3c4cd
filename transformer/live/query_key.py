"""One head's query–key space over a configuration's lines (`transformer.analysis.query_key`): every real query and
key of every line, projected together, with how well nearness in the plane tracks the dot product."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer.analysis.query_key import joint_projection, query_correlation
from transformer.live.config import LiveConfig
from transformer.live.plan import plan_of, resolved
from transformer.live.result import stack_sides
from transformer.live.walkthrough import attention_walkthrough


@dataclass(frozen=True)
class QueryKeySpace:
    """``points (n, 2)``: the queries first, then the keys; per point ``is_query``, ``lines``, ``positions`` ``(n,)``
    and ``tokens``; ``correlation``: the mean over queries of each query's Pearson correlation of −distance in the
    plane and q·k/√d_k over the keys it may attend to (same line, mask allowing), ``full_correlation`` the same in
    d_k dimensions; ``explained (2,)``; ``scale`` c; ``distinct``: how many points do not coincide."""

    stack: str
    layer: int
    head: int
    points: np.ndarray
    is_query: np.ndarray
    lines: np.ndarray
    positions: np.ndarray
    tokens: tuple
    correlation: float
    full_correlation: float
    explained: np.ndarray
    scale: float

    @property
    def distinct(self) -> int:
        """How many different places the points take (equal tokens at equal positions of equal lines coincide)."""
        return len(np.unique(np.round(self.points, 6), axis=0))


def _real(ids, pad_ids) -> np.ndarray:
    return ~np.isin(ids, pad_ids)  # (B, N)


def query_key_space(config: LiveConfig, stack: str, layer: int, head: int) -> QueryKeySpace:
    """Head ``head`` of ``stack``'s layer ``layer`` over ``config``'s lines; ValueError naming bad input (as
    `attention_walkthrough`, and a head the model lacks). Padding's queries and keys are left out."""
    resolved(config).require_inside("The query–key space reads queries and keys")  # before anything of it loads
    walk = attention_walkthrough(config, stack, layer)
    heads = walk.tensors["query_heads"].shape[1]
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < heads:
        raise ValueError(f"head must be from 0 to {heads - 1}. Received: head={head!r}")
    plan = plan_of(config)
    batches = plan.inputs.batches
    query_ids, key_ids = stack_sides(stack, batches.source.ids, batches.target.ids)  # (B, N_q), (B, N_k)
    query_tokens, key_tokens = stack_sides(stack, batches.source.tokens, batches.target.tokens)
    real_q, real_k = _real(query_ids, batches.pad_ids), _real(key_ids, batches.pad_ids)
    q = walk.tensors["query_heads"][:, head]  # (B, N_q, d_k)
    k = walk.tensors["key_heads"][:, head]  # (B, N_k, d_k)
    projection = joint_projection(q[real_q], k[real_k])
    n_q = int(real_q.sum())
    scaled = walk.tensors["scores"][:, head] / np.sqrt(q.shape[-1])  # (B, N_q, N_k): q·k/√d_k, no position bias
    correlation, full = _correlations(projection, scaled, walk.mask, real_q, real_k)
    lines_q, positions_q = np.nonzero(real_q)
    lines_k, positions_k = np.nonzero(real_k)
    tokens = tuple(query_tokens[b][i] for b, i in zip(lines_q, positions_q)) + tuple(
        key_tokens[b][j] for b, j in zip(lines_k, positions_k))
    return QueryKeySpace(stack, layer, head, np.concatenate([projection.queries, projection.keys]),
                         np.arange(n_q + len(lines_k)) < n_q, np.concatenate([lines_q, lines_k]),
                         np.concatenate([positions_q, positions_k]), tokens, correlation, full,
                         projection.explained, projection.scale)


def _correlations(projection, scaled, mask, real_q, real_k) -> tuple[float, float]:
    """The mean per-query correlation (`query_correlation`) of −distance (in the plane and in d_k dimensions) and
    ``scaled`` ``(B, N_q, N_k)`` over each query's allowed keys of its own line."""
    found = {"plane": ([], [], []), "full": ([], [], [])}  # per query: −distance, scaled dot products, allowed
    q_start, k_start = np.cumsum([0, *real_q.sum(1)]), np.cumsum([0, *real_k.sum(1)])
    for line in range(scaled.shape[0]):
        qs, ks = slice(q_start[line], q_start[line + 1]), slice(k_start[line], k_start[line + 1])
        real = np.ix_(real_q[line], real_k[line])
        allowed, line_dots = mask[line][real], scaled[line][real]  # (n_q', n_k') each
        for name, queries, keys in (("plane", projection.queries[qs], projection.keys[ks]),
                                    ("full", projection.scaled_queries[qs], projection.scaled_keys[ks])):
            near = -np.linalg.norm(queries[:, None] - keys[None], axis=-1)  # (n_q', n_k')
            for rows, part in zip(found[name], (near, line_dots, allowed)):
                rows.extend(part)  # a row a query: lines differ in their keys
    return tuple(query_correlation(*rows) for rows in found.values())
