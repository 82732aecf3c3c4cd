"""A head's query–key space, as AttentionViz (Yeh et al., VIS 2023) draws it: queries and keys of many lines in one
2-D plane where nearness means attention. NumPy only.

Queries are scaled by c and keys by 1/c (q·k unchanged) with c² = mean‖k‖ / mean‖q‖, so that both clouds have the
same mean norm; then the keys are translated so that their centroid meets the queries' (softmax over keys is
unchanged: it adds q·t to every key of a query). In that order, as AttentionViz does, the two centroids stay one
(translating first and scaling after would pull them apart again). PCA of the two clouds together gives the plane.
A short distance then means a large dot product for one query: what distance tracks is each query's ranking of its
keys (`query_correlation`), not dot products pooled over queries, which differ by a constant from query to query.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class JointProjection:
    """``queries (n_q, 2)``, ``keys (n_k, 2)`` in the plane; ``scaled_queries (n_q, d)``, ``scaled_keys (n_k, d)``
    before it; ``scale`` c; ``explained (2,)``: each axis's share of the variance."""

    queries: np.ndarray
    keys: np.ndarray
    scaled_queries: np.ndarray
    scaled_keys: np.ndarray
    scale: float
    explained: np.ndarray


def joint_projection(queries, keys) -> JointProjection:
    """Queries ``(n_q, d)`` and keys ``(n_k, d)`` translated, scaled and projected together by PCA (module doc)."""
    q, k = np.asarray(queries, np.float64), np.asarray(keys, np.float64)
    q_norm, k_norm = np.linalg.norm(q, axis=1).mean(), np.linalg.norm(k, axis=1).mean()
    scale = float(np.sqrt(k_norm / q_norm)) if q_norm > 0 and k_norm > 0 else 1.0
    q, k = q * scale, k / scale  # (n_q, d), (n_k, d): equal mean norms, dot products unchanged
    k = k - k.mean(0) + q.mean(0)  # (n_k, d): then the keys' centroid on the queries'
    both = np.concatenate([q, k])  # (n_q + n_k, d)
    centred = both - both.mean(0)
    _, singular, axes = np.linalg.svd(centred, full_matrices=False)  # axes: (min(n, d), d)
    plane = axes[:2].T  # (d, 2)
    if plane.shape[1] < 2:
        plane = np.pad(plane, ((0, 0), (0, 2 - plane.shape[1])))
    points = centred @ plane  # (n_q + n_k, 2)
    variance = singular ** 2
    explained = np.pad(variance[:2] / max(variance.sum(), 1e-30), (0, max(0, 2 - len(variance))))
    return JointProjection(points[: len(q)], points[len(q):], q, k, scale, explained)


def distance_correlation(query_points, key_points, dots, allowed) -> float:
    """Pearson correlation of −distance (between ``query_points (n_q, m)`` and ``key_points (n_k, m)``) and the dot
    products ``dots (n_q, n_k)`` over the ``allowed (n_q, n_k)`` pairs: 1 when nearness ranks attention perfectly.
    NaN with fewer than two pairs or no spread."""
    distance = np.linalg.norm(query_points[:, None, :] - key_points[None, :, :], axis=-1)  # (n_q, n_k)
    return pearson(-distance[allowed], np.asarray(dots)[allowed])


def query_correlation(near, dots, allowed) -> float:
    """The mean over queries of each query's Pearson correlation of ``near`` (−distance) and ``dots`` over the keys
    it may attend to, all ``(n_q, n_k)`` (or a row a query, rows of any lengths: queries of several lines): 1 when
    nearness ranks every query's keys as its dot products do. Queries with fewer than two allowed keys or no spread
    are left out; NaN when none is left."""
    values = [pearson(np.asarray(a)[np.asarray(ok, bool)], np.asarray(b)[np.asarray(ok, bool)])
              for a, b, ok in zip(near, dots, allowed)]
    values = [value for value in values if np.isfinite(value)]
    return float(np.mean(values)) if values else float("nan")


def pearson(a, b) -> float:
    """Pearson correlation of two equal-length samples; NaN with fewer than two values or no spread."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.size < 2 or a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])
