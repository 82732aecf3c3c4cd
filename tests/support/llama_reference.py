"""An independent NumPy forward pass of a Llama-style decoder, written from the papers (float64): RMSNorm (Zhang &
Sennrich 2019), rotary positions on adjacent pairs with a base (Su et al., RoFormer, eq. 34), grouped-query attention
(Ainslie et al. 2023), a SwiGLU feed-forward (Shazeer 2020), no biases, pre-norm with a final norm, unscaled token
embeddings and tied output weights (logits = hidden · Eᵀ). It shares no code with the engine."""

import numpy as np


def rms_norm(x, gain, epsilon):
    """x / sqrt(mean(x²) + ε) · g over the last axis."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + epsilon) * gain


def silu(z):
    return z / (1.0 + np.exp(-z))


def swiglu(x, gate, up, down):
    """(SiLU(x·W_gate) ⊙ x·W_up)·W_down."""
    return (silu(x @ gate) * (x @ up)) @ down


def rope(x, base):
    """``x (N, d)``: row m's pair (2i, 2i+1) rotated by m·base^(−2i/d)."""
    n, d = x.shape
    out = np.empty_like(x)
    for m in range(n):
        for i in range(d // 2):
            angle = m * base ** (-2 * i / d)
            a, b = x[m, 2 * i], x[m, 2 * i + 1]
            out[m, 2 * i] = a * np.cos(angle) - b * np.sin(angle)
            out[m, 2 * i + 1] = a * np.sin(angle) + b * np.cos(angle)
    return out


def causal_attention(q, k, v):
    """One head: softmax(q·kᵀ/sqrt(d))·v, query i seeing keys 0 … i: ``(output (N, d), weights (N, N))``."""
    n, d = q.shape
    scores = q @ k.T / np.sqrt(d)
    scores = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return weights @ v, weights


def llama_forward(w, ids, *, heads, kv_heads, base, epsilon):
    """``w``: {"embedding": (V, D), "layers": [{"attn_norm", "q", "k", "v", "o", "ffn_norm", "gate", "up", "down"}],
    "final_norm"}; kernels as ``x @ W``. Returns ``(logits (N, V), [weights (H, N, N)] a layer)``."""
    x = w["embedding"][np.asarray(ids)].astype(np.float64)  # (N, D)
    depth = x.shape[1] // heads
    group = heads // kv_heads
    every_layer = []
    for layer in w["layers"]:
        h = rms_norm(x, layer["attn_norm"], epsilon)
        q, k, v = h @ layer["q"], h @ layer["k"], h @ layer["v"]  # (N, H·d), (N, H_kv·d) ×2
        outputs, weights = [], []
        for head in range(heads):
            kv = head // group
            cols, kv_cols = slice(head * depth, (head + 1) * depth), slice(kv * depth, (kv + 1) * depth)
            out, att = causal_attention(rope(q[:, cols], base), rope(k[:, kv_cols], base), v[:, kv_cols])
            outputs.append(out)
            weights.append(att)
        x = x + np.concatenate(outputs, axis=1) @ layer["o"]
        x = x + swiglu(rms_norm(x, layer["ffn_norm"], epsilon), layer["gate"], layer["up"], layer["down"])
        every_layer.append(np.stack(weights))
    hidden = rms_norm(x, w["final_norm"], epsilon)
    return hidden @ w["embedding"].T, every_layer
