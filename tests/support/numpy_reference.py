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


def layer_norm(x, gamma, beta, epsilon=1e-6):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + epsilon) * gamma + beta


def _multi_head(w, prefix, query, memory, mask, heads, patch=None, site=None):
    """The paper's MultiHead(Q, K, V) with W^Q, W^K, W^V, W^O read from ``w`` at ``prefix``: ``(N_q, D)``.
    ``patch`` (`transformer_forward`'s) may give head h its own query/key/value input or its context."""
    def linear(name, x):
        return x @ w[f"{prefix}/{name}/kernel"] + w[f"{prefix}/{name}/bias"]

    patch = patch or {}
    depth = query.shape[-1] // heads
    outputs, all_weights = [], []
    for h in range(heads):
        part = slice(h * depth, (h + 1) * depth)
        given = patch.get("inputs", {}).get(site, {}).get(h, {})
        q = linear("transform_query", given.get("q", query))[:, part]
        k = linear("transform_key", given.get("k", memory))[:, part]
        v = linear("transform_value", given.get("v", memory))[:, part]
        output, weights = softmax_attention(q, k, v, mask)
        output = patch.get("contexts", {}).get(site, {}).get(h, output)
        outputs.append(output)
        all_weights.append(weights)
    if "record" in patch:
        patch["record"][("contexts", site)] = outputs
        patch["record"][("inputs", site)] = (query, memory)
    return linear("transform_out", np.concatenate(outputs, -1)), np.stack(all_weights)


def _sublayer(w, prefix, x, function, norm):
    """Post-norm LayerNorm(x + f(x)) or pre-norm x + f(LayerNorm(x)), LayerNorm's γ, β at ``prefix``."""
    gamma, beta = w[f"{prefix}/layer_norm/gamma"], w[f"{prefix}/layer_norm/beta"]
    if norm == "pre":
        output, extra = function(layer_norm(x, gamma, beta))
        return x + output, extra
    output, extra = function(x)
    return layer_norm(x + output, gamma, beta), extra


def _feed_forward(w, prefix):
    def run(x):
        hidden = np.maximum(0, x @ w[f"{prefix}/feed_forward/hidden/kernel"] + w[f"{prefix}/feed_forward/hidden/bias"])
        return hidden @ w[f"{prefix}/feed_forward/project/kernel"] + w[f"{prefix}/feed_forward/project/bias"], None
    return run


def _streamed(patch, layer, x):
    """The stream entering block ``layer`` with ``patch["streams"][layer]`` (position -> row) written in."""
    if patch is None:
        return x
    x = x.copy()
    for position, row in patch.get("streams", {}).get(layer, {}).items():
        x[position] = row
    if "record" in patch:
        patch["record"][("stream", layer)] = x
    return x


def transformer_forward(w, ids, *, stack, layers, heads, d_ff, norm, self_mask, memory=None, memory_mask=None,
                        cross_prefix=None, learned=False, patch=None):
    """One stack of the model on one line of ``ids`` with sinusoidal positions (``learned``: its table's rows):
    ``(output (N, D), self weights [(H, N, N)], cross weights [(H, N, N_s)])``. ``w``: weight path (after the
    model's name) -> array.

    ``patch`` (activation patching): ``{"streams": {layer: {position: (D,)}}`` the stream entering block ``layer``
    (``layers``: the output) at a position, ``"contexts": {(kind, layer): {head: (N_q, d)}}`` a head's context,
    ``"inputs": {(kind, layer): {head: {"q"|"k"|"v": (N, D)}}}`` the input head h's query, key or value is
    projected from (after a pre-norm LayerNorm), ``"record": {}`` filled with each ``("stream", layer)``,
    ``("contexts", (kind, layer))`` and ``("inputs", (kind, layer))``; kind "self" or "cross"}``."""
    side = "source" if stack == "encoder" else "target"
    embeddings = w[f"{side}_embedding/embed/embeddings"]
    d_model = embeddings.shape[1]
    positions = w[f"{side}_positions/table"][: len(ids)] if learned else positional_encoding(len(ids), d_model)
    x = embeddings[ids] * np.sqrt(d_model) + positions
    self_weights, cross_weights = [], []
    for layer in range(layers):
        x = _streamed(patch, layer, x)
        block = f"{stack}/block_{layer}"
        x, weights = _sublayer(w, f"{block}/self_attention_block", x,
                               lambda y, b=block, n=layer: _multi_head(w, f"{b}/self_attention_block/attention", y, y,
                                                                       self_mask, heads, patch, ("self", n)), norm)
        self_weights.append(weights)
        if memory is not None:
            x, weights = _sublayer(w, f"{block}/cross_attention_block", x,
                                   lambda y, b=block, n=layer: _multi_head(w, f"{b}/{cross_prefix}", y, memory,
                                                                           memory_mask, heads, patch, ("cross", n)),
                                   norm)
            cross_weights.append(weights)
        if d_ff:
            x, _ = _sublayer(w, f"{block}/feed_forward_block", x, _feed_forward(w, f"{block}/feed_forward_block"),
                             norm)
    if norm == "pre":
        x = layer_norm(x, w[f"{stack}/final_norm/gamma"], w[f"{stack}/final_norm/beta"])
    return _streamed(patch, layers, x), self_weights, cross_weights
