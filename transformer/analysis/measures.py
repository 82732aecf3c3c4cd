"""Per-head statistics and live correctness checks on attention arrays (NumPy only).

Masks: bool, True = may attend.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ROW_SUM_TOLERANCE = 1e-4
KERAS_TOLERANCE = 1e-4


@dataclass(frozen=True)
class Check:
    """One verified property: its name, whether it holds, and the measured number."""

    name: str
    passed: bool
    value: float
    detail: str


def _allowed_rows(mask) -> np.ndarray:
    return np.asarray(mask, bool).any(axis=-1)  # (N_q,)


def head_statistics(weights, mask, key_is_padding) -> dict:
    """Per-head numbers for comparing heads.

    Args:
      weights: ``(H, N_q, N_k)``.  mask: ``(N_q, N_k)`` bool.
      key_is_padding: ``(N_k,)`` bool, True where the key token is a pad symbol.

    Returns:
      ``{"entropy", "max_weight", "mean_distance", "padding_share"}`` -> ``(H,)`` arrays,
      averaged over query rows that have at least one allowed key; entropy in bits.
    """
    weights = np.asarray(weights, dtype=np.float64)  # (H, N_q, N_k)
    rows = _allowed_rows(np.broadcast_to(mask, weights.shape[-2:]))  # (N_q,)
    used = weights[:, rows]  # (H, R, N_k)
    if used.shape[1] == 0:
        zeros = np.zeros(weights.shape[0])
        return {"entropy": zeros, "max_weight": zeros, "mean_distance": zeros, "padding_share": zeros}
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(used > 0, used * np.log2(used), 0.0)  # (H, R, N_k): bits
    distance = np.abs(np.flatnonzero(rows)[:, None] - np.arange(weights.shape[-1])[None, :])  # (R, N_k)
    padding = np.asarray(key_is_padding, bool)[None, None, :]  # (1, 1, N_k)
    return {
        "entropy": -plogp.sum(-1).mean(-1),
        "max_weight": weights.max(axis=(-2, -1)),
        "mean_distance": (used * distance[None]).sum(-1).mean(-1),
        "padding_share": (used * padding).sum(-1).mean(-1),
    }


def attention_checks(weights, mask, keras_difference=None) -> list[Check]:
    """The properties the paper and this engine promise, measured on real arrays.

    Args:
      weights: ``(..., N_q, N_k)``.  mask: broadcastable bool, True = may attend.
      keras_difference: optional ``{"output", "weights"}`` max gaps to Keras's layer.
    """
    weights = np.asarray(weights)  # float32 stays float32: at N = 512 a float64 copy alone is ~100 MB
    mask = np.asarray(mask, bool)
    sums = weights.sum(-1)  # (..., N_q); pairwise float32 sums of <= 512 terms in [0, 1]: error ~1e-7
    non_finite = 0 if np.isfinite(sums).all() else weights.size - np.count_nonzero(np.isfinite(weights))
    if non_finite:  # rare: NaN becomes inf, so every gap it touches is infinite
        weights = np.nan_to_num(weights.astype(np.float64), nan=np.inf)
        sums = weights.sum(-1)
    allowed = np.broadcast_to(mask.any(-1), sums.shape)  # (..., N_q), from the unbroadcast mask
    row_gap = float(np.abs(sums[allowed] - 1).max()) if allowed.any() else 0.0
    empty_gap = float(np.abs(sums[~allowed]).max()) if (~allowed).any() else 0.0
    blocked = np.broadcast_to(~mask, weights.shape)  # a view: the full-size mask is never materialised
    masked_max = max(float(np.max(weights, where=blocked, initial=0.0)),
                     -float(np.min(weights, where=blocked, initial=0.0)))  # max |w| on masked cells; 0 if none
    return measured_checks(non_finite, row_gap, masked_max, empty_gap, keras_difference)


def measured_checks(non_finite: int, row_gap: float, masked_max: float, empty_gap: float,
                    keras_difference=None) -> list[Check]:
    """The `attention_checks` of four measured numbers (a block-wise run gathers them block by block:
    `transformer.core.blockwise.CheckTotals`)."""
    checks = [
        Check("no NaN or inf", non_finite == 0, float(non_finite), "count of non-finite weights"),
        Check("rows sum to 1 where a key is allowed", row_gap <= ROW_SUM_TOLERANCE, row_gap,
              "max |row sum − 1|"),
        Check("masked weights are exactly 0", masked_max == 0.0, masked_max, "max |weight| on masked cells"),
        Check("rows with no allowed key are all 0", empty_gap == 0.0, empty_gap, "max row sum of empty rows"),
    ]
    if keras_difference:  # None or {}: not compared (no Keras layer has rotary or ALiBi positions)
        gap = max(keras_difference.values())
        checks.append(Check("agrees with keras.layers.MultiHeadAttention (GroupQueryAttention with fewer key/value "
                            "heads)",
                            gap <= KERAS_TOLERANCE, gap,
                            "max |this engine − Keras| on the layer and line on view (same weights; output "
                            "and weights)"))
    return checks


def scaling_experiment(d_ks=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512), keys: int = 16,
                       samples: int = 2000, seed: int = 0) -> dict:
    """Seed 001's argument, measured: for q, k ~ N(0, 1)^d_k, var(q·k) = d_k, and
    dividing by sqrt(d_k) brings it back to 1 and keeps the softmax from saturating.

    Returns arrays over ``d_k``: ``variance_raw``, ``variance_scaled``, ``entropy_raw``,
    ``entropy_scaled`` (mean softmax entropy over ``keys`` keys, in bits as every entropy in the lab), and
    ``max_entropy`` = log2(keys).
    """
    rng = np.random.default_rng(seed)
    result = {name: [] for name in ("variance_raw", "variance_scaled", "entropy_raw", "entropy_scaled")}
    for d_k in d_ks:
        q = rng.standard_normal((samples, 1, d_k))  # (S, 1, d_k)
        k = rng.standard_normal((samples, keys, d_k))  # (S, K, d_k)
        dots = (q * k).sum(-1)  # (S, K)
        for name, logits in (("raw", dots), ("scaled", dots / np.sqrt(d_k))):
            result[f"variance_{name}"].append(float(logits.var()))
            result[f"entropy_{name}"].append(float(_entropy(stable_softmax(logits)).mean()))
    return {"d_k": list(d_ks), **{k: np.array(v) for k, v in result.items()}, "max_entropy": float(np.log2(keys))}


def _entropy(probabilities) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(probabilities > 0, probabilities * np.log2(probabilities), 0.0).sum(-1)


def naive_softmax(logits) -> np.ndarray:
    """exp(x) / Σ exp(x): overflows to inf/inf = NaN for large logits."""
    with np.errstate(over="ignore", invalid="ignore"):
        exp = np.exp(np.asarray(logits, dtype=np.float32))
        return exp / exp.sum(-1, keepdims=True)


def stable_softmax(logits) -> np.ndarray:
    """exp(x - max x) / Σ exp(x - max x), the same function without overflow."""
    logits = np.asarray(logits, dtype=np.float64)
    shifted = logits - logits.max(-1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(-1, keepdims=True)


def logsumexp_softmax(logits) -> np.ndarray:
    """exp(x - logsumexp(x)), seed 002's tip."""
    logits = np.asarray(logits, dtype=np.float64)
    peak = logits.max(-1, keepdims=True)
    log_total = peak + np.log(np.exp(logits - peak).sum(-1, keepdims=True))
    return np.exp(logits - log_total)


def mask_fills(scores, mask) -> dict:
    """One row of scores under three mask fills (NumPy, float32 as on the device).

    ``select`` keeps allowed scores only (boolean select); ``add -1e9`` adds a large
    negative number to blocked scores; ``-inf`` sets them to −∞. With no allowed key,
    ``-inf`` gives NaN and ``add -1e9`` a uniform spread over blocked keys.
    """
    scores = np.asarray(scores, dtype=np.float32)
    mask = np.asarray(mask, bool)
    with np.errstate(invalid="ignore"):
        selected = np.zeros_like(scores)
        if mask.any():
            selected[mask] = stable_softmax(scores[mask])
        return {
            "select": selected,
            "add -1e9": stable_softmax((scores + np.where(mask, 0.0, -1e9)).astype(np.float32)).astype(np.float32),
            "-inf": naive_softmax(np.where(mask, scores - scores[mask].max() if mask.any() else scores, -np.inf)),
        }


def attention_rollout(weights, residual: float = 0.5) -> np.ndarray:
    """Attention rollout across layers (Abnar & Zuidema 2020).

    Per layer the mean over heads is mixed with the identity for the residual path,
    ``residual·I + (1 − residual)·A``, its rows renormalised to sum to 1, and the layers
    multiplied from the first up: ``R = Â_{L−1} ⋯ Â_1 Â_0``. A row of ``R`` says how much each
    input position flows into that position's output of the last layer.

    Args:
      weights: ``(L, H, N, N)`` self-attention weights (a query with no allowed key: a zero row).
      residual: the identity's share, in [0, 1] (0.5 in the paper).
    Returns:
      ``(N, N)`` float64, rows summing to 1.
    """
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 4 or weights.shape[-1] != weights.shape[-2] or 0 in weights.shape[:2]:
        raise ValueError(f"weights must be (L, H, N, N) self-attention with L, H >= 1. Received: "
                         f"weights.shape={weights.shape}")
    if not 0.0 <= residual <= 1.0:
        raise ValueError(f"residual must be from 0 to 1. Received: residual={residual!r}")
    rollout = np.eye(weights.shape[-1])  # (N, N)
    for mixed in mixed_layers(weights, residual):  # (N, N), first layer first
        rollout = mixed @ rollout  # (N, N)
    return rollout


def mixed_layers(weights, residual: float = 0.5) -> np.ndarray:
    """Each layer's ``residual·I + (1 − residual)·mean over heads``, rows renormalised: ``(L, N, N)`` float64, the
    edges rollout multiplies and attention flow pushes through. ``weights``: ``(L, H, N, N)``."""
    weights = np.asarray(weights, dtype=np.float64)
    mixed = residual * np.eye(weights.shape[-1]) + (1.0 - residual) * weights.mean(1)  # (L, N, N)
    totals = mixed.sum(-1, keepdims=True)  # (L, N, 1); 0 only with residual 0 and a zero row
    return np.divide(mixed, totals, out=np.zeros_like(mixed), where=totals > 0)


def without_keys(weights, hidden) -> np.ndarray:
    """``weights`` with the ``hidden`` key columns taken out and every row renormalised over the rest.

    Args:
      weights: ``(..., N_q, N_k)``.  hidden: ``(N_k,)`` bool, True for a key to take out.
    Returns:
      ``(..., N_q, N_k')`` float32 with N_k' = the keys kept; a row with no weight left stays 0.
    """
    weights = np.asarray(weights, dtype=np.float32)
    hidden = np.asarray(hidden, bool)
    if hidden.shape != weights.shape[-1:]:
        raise ValueError(f"hidden must have one entry per key ({weights.shape[-1]}). Received: "
                         f"hidden.shape={hidden.shape}")
    kept = weights[..., ~hidden]  # (..., N_q, N_k')
    totals = kept.sum(-1, keepdims=True)  # (..., N_q, 1)
    return np.divide(kept, totals, out=np.zeros_like(kept), where=totals > 0)


@dataclass(frozen=True)
class NeuronTerms:
    """How one head turns a query and a key into a weight, term by term (Vaswani et al. 2017, eq. 1).

    query, key, products: ``(d_k,)`` — q, k and q∘k; logit = Σ q∘k; scaled = logit / √d_k;
    bias: what the variant adds to this pair's scaled logit (ALiBi's −m·|i − j|; 0 for the others);
    logits: ``(N_k,)`` every key's scaled logit + bias for this query (NaN where masked);
    weights: ``(N_k,)`` the softmax over the allowed keys (0 where masked; all 0 with none allowed).
    """

    query: np.ndarray
    key: np.ndarray
    products: np.ndarray
    logit: float
    scaled: float
    logits: np.ndarray
    weights: np.ndarray
    bias: float = 0.0
    has_bias: bool = False  # the head adds a bias to its scores (ALiBi)


def score_bias(scores, scaled, d_k: int) -> np.ndarray:
    """What a variant adds to the scaled scores (ALiBi's bias; 0 for the others): ``scaled − scores / √d_k``,
    from one layer's own ``scores`` and ``scaled`` ``(..., N_q, N_k)``."""
    return np.asarray(scaled, np.float64) - np.asarray(scores, np.float64) / np.sqrt(d_k)


def neuron_terms(query_heads, key_heads, mask, head: int, query: int, key: int, bias=None) -> NeuronTerms:
    """The terms of one query–key pair of one head, from the live projected heads of one line.

    Args:
      query_heads: ``(H, N_q, d_k)``; key_heads: ``(H, N_k, d_k)``; mask: ``(N_q, N_k)`` bool, True = may attend.
      bias: ``(H, N_q, N_k)`` added to the scaled logits (`score_bias`: ALiBi's), or None.
    """
    query_heads, key_heads = np.asarray(query_heads, np.float64), np.asarray(key_heads, np.float64)
    heads, n_q, d_k = query_heads.shape
    n_k = key_heads.shape[1]
    if not (0 <= head < heads and 0 <= query < n_q and 0 <= key < n_k):
        raise ValueError(f"head, query and key must be within {heads}, {n_q} and {n_k}. Received: head={head}, "
                         f"query={query}, key={key}")
    q, keys = query_heads[head, query], key_heads[head]  # (d_k,), (N_k, d_k)
    allowed = np.broadcast_to(np.asarray(mask, bool), (n_q, n_k))[query]  # (N_k,)
    added = np.zeros(n_k) if bias is None else np.asarray(bias, np.float64)[head, query]  # (N_k,)
    logits = np.where(allowed, keys @ q / np.sqrt(d_k) + added, np.nan)  # (N_k,)
    weights = np.zeros(n_k)
    if allowed.any():
        weights[allowed] = stable_softmax(logits[allowed])
    products = q * keys[key]  # (d_k,)
    has_bias = bias is not None and bool(np.abs(added).max(initial=0.0) > 1e-6)
    return NeuronTerms(q, keys[key], products, float(products.sum()), float(products.sum() / np.sqrt(d_k)),
                       logits, weights, float(added[key]), has_bias)


def preference_terms(terms: np.ndarray, query: int, key: int) -> np.ndarray:
    """Why query ``query`` prefers key ``key`` to the other keys it may see: ``(P_q, P_k)``, each (query part, key
    part) term at that key minus its mean over the query's allowed keys. ``terms``: ``(P_q, P_k, N_q, N_k)``, NaN
    where masked (`transformer.core.residual_parts.ScoreTerms`). They sum to the key's scaled score minus the mean
    of the query's allowed scores; summed over the query-side parts, what in the key made it win."""
    row = terms[:, :, query]  # (P_q, P_k, N_k)
    allowed = ~np.isnan(row[0, 0])  # (N_k,)
    if not allowed[key]:
        raise ValueError(f"Query {query} may not attend to key {key}: it has no score. Received: key={key}")
    return row[:, :, key] - row[:, :, allowed].mean(axis=-1)
