"""What a head does: role scores over its attention (TransformerLens's head detector, as NumPy), its mean distance
and entropy. No TensorFlow: weights ``(L, H, N_q, N_k)`` in, ``(L, H)`` scores out.

Roles (`detection_pattern`): ``previous_token`` (query i attends i − 1), ``duplicate_token`` (keys j < i with
token i's token), ``induction`` (keys 1 ≤ j ≤ i whose *previous* token is token i's), ``first_token`` (key 0) and
``self`` (the diagonal). A head's score for a role is the share of its attention on the pattern, averaged over the
query rows whose pattern has a cell and which attend somewhere (fully masked rows are left out).
"""

from __future__ import annotations

import warnings

import numpy as np

ROLES = ("previous_token", "duplicate_token", "induction", "first_token", "self")


def detection_pattern(role: str, token_ids) -> np.ndarray:
    """The ``(N, N)`` bool pattern of ``role`` on a line of ``token_ids`` ``(N,)``; ValueError for another role."""
    ids = np.asarray(token_ids)
    n = len(ids)
    query, key = np.arange(n)[:, None], np.arange(n)[None, :]  # (N, 1), (1, N)
    same = ids[:, None] == ids[None, :]  # (N, N): token i == token j
    if role == "previous_token":
        return key == query - 1
    if role == "duplicate_token":
        return same & (key < query)
    if role == "induction":
        after_same = np.zeros((n, n), bool)  # [i, j]: token j − 1 == token i (j ≥ 1)
        after_same[:, 1:] = same[:, :-1]
        return after_same & (key <= query)
    if role == "first_token":
        return np.broadcast_to(key == 0, (n, n)).copy()
    if role == "self":
        return key == query
    raise ValueError(f"role must be one of {ROLES}. Received: role={role!r}")


def _attending_rows(weights, valid=None) -> np.ndarray:
    """``(L, H, N_q)`` bool: the rows that attend somewhere (a fully masked row's weights are all 0) and are
    ``valid`` ``(N_q,)`` (None: every row; a page leaves padding's rows out)."""
    rows = weights.sum(-1) > 0.5
    return rows if valid is None else rows & np.asarray(valid, bool)


def pattern_score(weights, pattern, valid=None) -> np.ndarray:
    """``(L, H)``: each head's share of attention on ``pattern`` ``(N_q, N_k)`` bool, averaged over the query rows
    whose pattern has a cell, that attend somewhere and are ``valid`` (NaN where no row qualifies)."""
    weights = np.asarray(weights, np.float64)  # (L, H, N_q, N_k)
    pattern = np.asarray(pattern, bool)  # (N_q, N_k)
    on_pattern = (weights * pattern).sum(-1)  # (L, H, N_q)
    return _row_mean(on_pattern, _attending_rows(weights, valid) & pattern.any(-1))


def role_scores(weights, token_ids, valid=None) -> dict:
    """``{role: (L, H)}``: each head's share of attention on ``role``'s pattern, averaged over the query rows whose
    pattern has a cell, that attend somewhere and are ``valid`` ``(N,)`` (NaN where no row qualifies).
    ``weights``: ``(L, H, N, N)`` self-attention of one line of ``token_ids`` ``(N,)``."""
    return {role: pattern_score(weights, detection_pattern(role, token_ids), valid) for role in ROLES}


def mean_distance(weights, valid=None) -> np.ndarray:
    """``(L, H)``: Σ_j w_ij·|i − j| averaged over the rows that attend somewhere (and are ``valid``)."""
    weights = np.asarray(weights, np.float64)  # (L, H, N_q, N_k)
    n_q, n_k = weights.shape[-2:]
    distance = np.abs(np.arange(n_q)[:, None] - np.arange(n_k)[None, :])  # (N_q, N_k)
    return _row_mean((weights * distance).sum(-1), _attending_rows(weights, valid))


def entropy_bits(weights, valid=None) -> np.ndarray:
    """``(L, H)``: −Σ_j w_ij·log2 w_ij averaged over the rows that attend somewhere (and are ``valid``)."""
    weights = np.asarray(weights, np.float64)  # (L, H, N_q, N_k)
    logs = np.log2(np.where(weights > 0, weights, 1.0))  # 0·log 0 = 0
    return _row_mean(-(weights * logs).sum(-1), _attending_rows(weights, valid))


def _row_mean(values, rows) -> np.ndarray:
    """``values`` ``(L, H, N)`` averaged over ``rows`` ``(L, H, N)``; NaN where there is none."""
    counted = rows.sum(-1)  # (L, H)
    with np.errstate(invalid="ignore"):
        return np.where(counted > 0, (values * rows).sum(-1) / np.maximum(counted, 1), np.nan)


def batch_role_scores(weights, token_ids, valid=None, pattern=None) -> dict:
    """Role scores, distance and entropy averaged over lines, so that a role is the head's, not one sentence's:
    ``weights`` ``(L, B, H, N, N)`` and ``token_ids`` ``(B, N)`` -> ``{role | "distance" | "entropy": (L, H)}``
    (a role's mean leaves out the lines where no row qualified). ``valid`` ``(B, N)``: the query rows that count
    (None: all); ``pattern`` ``(N, N)``: a custom detection pattern, scored as ``"pattern"``."""
    weights = np.asarray(weights)
    valid = np.ones(np.shape(token_ids), bool) if valid is None else np.asarray(valid, bool)  # (B, N)
    lines = [role_scores(weights[:, b], token_ids[b], valid[b])
             | {"distance": mean_distance(weights[:, b], valid[b]), "entropy": entropy_bits(weights[:, b], valid[b])}
             | ({} if pattern is None else {"pattern": pattern_score(weights[:, b], pattern, valid[b])})
             for b in range(weights.shape[1])]
    return _mean_over_lines(lines)


def chance_scores(masks, token_ids, valid=None) -> dict:
    """``{role: float}``: the score of a head that spreads its attention evenly over the keys it may attend to, on
    these lines (what a random head scores by no design); NaN for a role no row qualifies for. ``masks`` ``(B, N,
    N)`` bool, True = may attend; ``token_ids`` and ``valid`` ``(B, N)``."""
    masks = np.asarray(masks, np.float64)  # (B, N, N)
    allowed = masks.sum(-1, keepdims=True)  # (B, N, 1)
    uniform = np.divide(masks, allowed, out=np.zeros_like(masks), where=allowed > 0)  # (B, N, N)
    scores = batch_role_scores(uniform[None, :, None], np.asarray(token_ids), valid)  # (1, B, 1, N, N) in
    return {role: float(scores[role][0, 0]) for role in ROLES}


def _mean_over_lines(lines: list[dict]) -> dict:
    """Each measure ``(L, H)`` averaged over the lines, a line's NaN (nothing qualified) left out."""
    with warnings.catch_warnings():  # a role no line shows: NumPy warns on the mean of NaNs, and NaN is the answer
        warnings.simplefilter("ignore", RuntimeWarning)
        return {name: np.nanmean(np.stack([line[name] for line in lines]), axis=0) for name in lines[0]}


def alignment_score(weights, aligned) -> np.ndarray:
    """Cross-attention's role: each head's weight on the source token each target token comes from, averaged over
    the target tokens that have one. ``weights`` ``(L, B, H, N_t, N_s)``; ``aligned`` ``(B, N_t)`` int, the source
    index of target position j's token, -1 for none (padding, a hyphen). ``(L, H)``; NaN when no token has one."""
    weights, aligned = np.asarray(weights, np.float64), np.asarray(aligned)
    lines, rows = np.nonzero(aligned >= 0)  # (K,) each
    if not len(lines):
        return np.full((weights.shape[0], weights.shape[2]), np.nan)
    picked = weights[:, lines, :, rows, aligned[lines, rows]]  # (K, L, H): advanced indices first
    return picked.mean(0)


def has_position_axis(stack: str) -> bool:
    """Whether ``stack``'s queries and keys share one position axis (self-attention): only then is a distance
    |query − key| defined. Cross-attention's queries are decoder positions, its keys the encoder's."""
    return stack != "cross"


def cross_measures(weights, valid=None) -> dict:
    """Cross-attention has no token roles and no distance (queries and keys are different lines): ``{"entropy":
    (L, H)}`` averaged over lines, ``weights`` ``(L, B, H, N_q, N_k)``, ``valid`` ``(B, N_q)``."""
    weights = np.asarray(weights)
    valid = np.ones(weights.shape[1:2] + weights.shape[3:4], bool) if valid is None else np.asarray(valid, bool)
    return _mean_over_lines([{"entropy": entropy_bits(weights[:, b], valid[b])} for b in range(weights.shape[1])])


def best_roles(scores: dict) -> tuple[np.ndarray, np.ndarray]:
    """Each head's highest-scoring role of `ROLES` and its score: ``(names (L, H) str, scores (L, H))`` ("" and NaN
    where it has no score)."""
    stacked = np.stack([scores[role] for role in ROLES])  # (roles, L, H)
    filled = np.where(np.isnan(stacked), -1.0, stacked)  # scores are shares in [0, 1]
    best = filled.max(0)  # (L, H)
    names = np.array(ROLES, dtype=object)[filled.argmax(0)]  # (L, H)
    return np.where(best < 0, "", names), np.where(best < 0, np.nan, best)


def line_top_roles(weights, token_ids, valid=None) -> tuple[np.ndarray, np.ndarray]:
    """`best_roles` on one line: ``weights`` ``(L, H, N, N)`` self-attention of ``token_ids`` ``(N,)``."""
    return best_roles(role_scores(weights, token_ids, valid))


def role_text(name: str, score: float) -> str:
    """``"previous token 0.84"``; "—" without a role."""
    return "—" if not name else f"{name.replace('_', ' ')} {score:.2f}"


def repeated_random_tokens(rng: np.random.Generator, count: int, length: int, vocabulary: int) -> np.ndarray:
    """``(count, 2·length)`` ids: a random segment of ``length`` tokens written twice (the inputs on which
    induction heads show, as TransformerLens draws them)."""
    segment = rng.integers(0, vocabulary, size=(count, length))
    return np.concatenate([segment, segment], axis=1)
