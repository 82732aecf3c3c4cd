"""Independent NumPy references written straight from the paper, for the tests."""

import numpy as np


def softmax_attention(query, key, value, mask=None):
    """softmax(Q·Kᵀ/sqrt(d_k))·V with True = may attend; rows with no allowed key -> 0."""
    scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])
    if mask is None:
        mask = np.ones(scores.shape, bool)
    mask = np.broadcast_to(mask, scores.shape)
    weights = np.zeros(scores.shape, np.float64)
    for index in np.ndindex(scores.shape[:-1]):
        allowed = mask[index]
        if allowed.any():
            row = scores[index][allowed]
            exp = np.exp(row - row.max())
            weights[index][allowed] = exp / exp.sum()
    return weights @ value, weights


def padding_mask(tokens, pads):
    tokens = np.asarray(tokens)
    return ~np.isin(tokens, list(pads))[:, None, None, :]


def subsequent_mask(n):
    return np.array([[j <= i for j in range(n)] for i in range(n)])


def positional_encoding(length, d_model):
    encoding = np.zeros((length, d_model))
    for pos in range(length):
        for dim in range(d_model):
            angle = pos / 10000 ** ((dim - dim % 2) / d_model)
            encoding[pos, dim] = np.sin(angle) if dim % 2 == 0 else np.cos(angle)
    return encoding


def attention_rollout(weights, residual=0.5):
    """Abnar & Zuidema (2020), eq. for Ã: Ã(l_i) = Â(l_i)·Ã(l_{i−1}), Ã(l_0) = Â(l_0), with
    Â = residual·I + (1 − residual)·(mean over heads of A), rows renormalised; element by element."""
    layers, heads, n, _ = np.shape(weights)
    rollout = None
    for layer in range(layers):
        mixed = [[residual * (i == j) + (1 - residual) * sum(weights[layer][h][i][j] for h in range(heads)) / heads
                  for j in range(n)] for i in range(n)]
        mixed = [[value / sum(line) for value in line] for line in mixed]
        if rollout is None:
            rollout = mixed
        else:
            rollout = [[sum(mixed[i][m] * rollout[m][j] for m in range(n)) for j in range(n)] for i in range(n)]
    return np.array(rollout)


def sliding_window_mask(n, window):
    """Each query i sees keys i - window + 1 … i (Longformer/Mistral-style causal window)."""
    return np.array([[i - window < j <= i for j in range(n)] for i in range(n)])


def prefix_mask(n, prefix):
    """Prefix LM (Raffel et al. 2020, fig. 3): full visibility over the prefix, causal after it."""
    return np.array([[j < prefix or j <= i for j in range(n)] for i in range(n)])


def strided_mask(n, stride):
    """Child et al. 2019, eq. for strided attention: A(1) = {t : i - t < l}, A(2) = {t : (i - t) mod l = 0},
    both causal."""
    return np.array([[j <= i and ((i - j) < stride or (i - j) % stride == 0) for j in range(n)] for i in range(n)])


def block_mask(n, block):
    return np.array([[i // block == j // block for j in range(n)] for i in range(n)])
