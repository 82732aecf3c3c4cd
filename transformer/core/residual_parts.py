"""The residual stream by parts, and one head's scores split into a term for each (query part, key part).

The stream at any point is a sum of parts: the token embedding, the positions added to it, every earlier head's
output, every earlier feed-forward's output, and "bias" (the projections' biases and the LayerNorms' offsets).
A LayerNorm is linear once its scale is held at its value for that position (as TransformerLens folds it):
``LN(Σ p) = Σ (p − mean p)·γ/σ + β``, σ the whole stream's. So a head's scaled score
``q_i·k_j/√d_k (+ ALiBi)`` is the sum over part pairs of ``q(p)_i·k(p')_j/√d_k``, RoPE rotating each part's q
and k (linear), ALiBi's bias (positions alone) counted as position × position. The model's own layers compute
every part (`MultiHeadAttention.heads`, its weights and values), so the terms sum to its scores to float error.
"""

from __future__ import annotations

from dataclasses import dataclass

import keras
import numpy as np
import tensorflow as tf

from transformer.core.model import memory_mask

TOKEN, POSITION, BIAS = "token", "position", "bias"


@dataclass(frozen=True)
class ScoreTerms:
    """One head's scaled scores on one line, split by parts.

    queries: the query positions the rows of ``terms`` and ``scores`` are (every one unless asked for fewer).
    query_parts, key_parts: the part names (``"token"``, ``"position"``, ``"L0H1"`` a self-attention head,
      ``"L0X1"`` a cross-attention head, ``"L0FF"``, ``"bias"``; the encoder's, on the key side of
      cross-attention, begin ``"enc "``).
    terms: ``(P_q, P_k, N_q, N_k)``; summed over the first two axes, the head's scaled scores; NaN where masked.
    scores: ``(N_q, N_k)`` the model's own scaled scores (NaN where masked); weights: ``(N_q, N_k)`` its weights
    (N_q: the rows of ``queries``).
    """

    queries: tuple
    query_parts: tuple
    key_parts: tuple
    terms: np.ndarray
    scores: np.ndarray
    weights: np.ndarray


def _layer_norm_parts(parts: dict, layer_norm) -> dict:
    """``parts`` {name: (B, N, D)} through ``layer_norm`` with its scale held at the whole stream's: their sum is
    ``layer_norm(Σ parts)``. A LayerNorm centres each part and adds its offset to the bias part; an RMSNorm
    (``x / sqrt(mean(x²) + ε) · g``, a Llama's) neither centres nor offsets."""
    whole = tf.add_n(list(parts.values()))  # (B, N, D)
    if isinstance(layer_norm, keras.layers.RMSNormalization):
        scale = layer_norm.scale * tf.math.rsqrt(tf.reduce_mean(tf.square(whole), -1, keepdims=True)
                                                 + layer_norm.epsilon)  # (B, N, D)
        return {name: part * scale for name, part in parts.items()}
    _, variance = tf.nn.moments(whole, axes=[-1], keepdims=True)  # (B, N, 1)
    scale = layer_norm.gamma / tf.sqrt(variance + layer_norm.epsilon)  # (B, N, D)
    normed = {name: (part - tf.reduce_mean(part, -1, keepdims=True)) * scale for name, part in parts.items()}
    normed[BIAS] = normed[BIAS] + layer_norm.beta
    return normed


def _head_outputs(attention, found: dict, prefix: str) -> tuple[dict, tf.Tensor]:
    """Each head's share of ``attention``'s output in a run whose intermediates are ``found``
    (`MultiHeadAttention.intermediates`), ``{prefix + h: (B, N_q, D)}``, and its output bias ``(D,)``: they sum to
    the layer's output."""
    context = found["weights"] @ found["value_heads"]  # (B, H, N_q, d_v)
    kernel = tf.reshape(attention.transform_out.kernel, (attention.num_heads, attention.depth, -1))  # (H, d_v, D)
    shares = tf.einsum("bhqv,hvd->hbqd", context, kernel)  # (H, B, N_q, D)
    bias = attention.transform_out.bias
    return {f"{prefix}{head}": shares[head] for head in range(attention.num_heads)}, 0.0 if bias is None else bias


def _with_sublayer(block, parts: dict, sublayer_parts: dict, extra_bias) -> dict:
    """The stream after a residual block: ``parts`` plus the sublayer's, normed after the sum when post-norm."""
    summed = {**parts, **sublayer_parts}
    summed[BIAS] = summed[BIAS] + extra_bias
    return _layer_norm_parts(summed, block.layer_norm) if block.norm == "post" else summed


def _inner(block, parts: dict) -> dict:
    """What a residual block hands its sublayer, by parts: normed first when pre-norm."""
    return _layer_norm_parts(parts, block.layer_norm) if block.norm == "pre" else parts


class _Walk:
    """Runs a stack block by block on parts, keeping what the asked-for attention layer saw."""

    def __init__(self, site: tuple, mask, memory_parts: dict | None = None, memory_mask=None):
        self.site, self.mask, self.memory_parts, self.memory_mask = site, mask, memory_parts, memory_mask
        self.seen = None  # (attention, query parts, key parts, mask, its intermediates) at ``site``
        self.stream = None  # (the stream's parts entering it, the LayerNorm before the projections, self-attention)

    def attend(self, block, attention, parts: dict, site: tuple, prefix: str, key_parts: dict | None,
               mask) -> dict:
        """``block``: the residual block around ``attention`` (its LayerNorm and norm placement)."""
        inner = _inner(block, parts)
        keys = inner if key_parts is None else key_parts
        whole_keys = tf.add_n(list(keys.values()))  # (B, N_k, D)
        found = attention.intermediates(tf.add_n(list(inner.values())), whole_keys, whole_keys, mask)
        if site == self.site:
            self.seen = (attention, inner, keys, mask, found)
            self.stream = (parts, block.layer_norm if block.norm == "pre" else None, key_parts is None)
        shares, bias = _head_outputs(attention, found, prefix)
        return _with_sublayer(block, parts, shares, bias)

    def feed_forward(self, layer_block, parts: dict, layer: int) -> dict:
        block = layer_block.feed_forward_block
        if block is None:
            return parts
        output = layer_block.feed_forward_alone(tf.add_n(list(_inner(block, parts).values())))  # (B, N, D)
        return _with_sublayer(block, parts, {f"L{layer}FF": output}, 0.0)


def _embedded(embedding, positions, ids) -> dict:
    """The stream entering a stack: the token embedding, the positions the position layer adds, a zero bias."""
    tokens = embedding(ids)  # (B, N, D)
    return {TOKEN: tokens, POSITION: positions(tokens) - tokens, BIAS: tf.zeros_like(tokens)}


def _encoder_parts(model, src, src_mask, walk: _Walk) -> dict:
    parts = _embedded(model.source_embedding, model.source_positions, src)
    for index, block in enumerate(model.encoder.blocks):
        parts = walk.attend(block.self_attention_block, block.attentions["encoder"], parts, ("encoder", index),
                            f"L{index}H", None, src_mask)
        parts = walk.feed_forward(block, parts, index)
    final = model.encoder.final_norm
    return parts if final is None else _layer_norm_parts(parts, final)


def _decoder_walk(model, tgt, tgt_mask, memory: dict | None, memory_mask, walk: _Walk) -> None:
    parts = _embedded(model.target_embedding, model.target_positions, tgt)
    for index, block in enumerate(model.decoder.blocks):
        parts = walk.attend(block.self_attention_block, block.attentions["decoder"], parts, ("decoder", index),
                            f"L{index}H", None, tgt_mask)
        if block.cross_attention_block is not None:
            parts = walk.attend(block.cross_attention_block, block.attentions["cross"], parts, ("cross", index),
                                f"L{index}X", memory, memory_mask)
        parts = walk.feed_forward(block, parts, index)


TERMS_BUDGET = 2**26  # floats of one split (P_q · P_k · queries · N_k): 256 MB


def score_terms(model, stack: str, layer: int, head: int, src, tgt, src_mask, tgt_mask,
                queries: tuple | None = None) -> ScoreTerms:
    """Head ``head`` of ``stack``'s layer ``layer`` on the first line of these inputs (as `Transformer.call` takes
    them; one line), its scaled scores split by (query part, key part), for the query positions ``queries``
    (None: all). ValueError when the split would exceed `TERMS_BUDGET` floats."""
    return _terms(*_walked(model, stack, layer, src, tgt, src_mask, tgt_mask), head=head, queries=queries)


def input_parts(model, stack: str, layer: int, src, tgt, src_mask, tgt_mask) -> tuple[dict, dict]:
    """What the attention layer ``(stack, layer)`` gets in a run on these inputs, by parts: ``(query parts, key
    parts)``, each ``{name: (B, N, d_model)}`` (normed first when pre-norm, the scale held at the whole stream's; the
    key parts are the value parts too). Each side's parts sum to the input the layer gets, to float error."""
    seen = _walked(model, stack, layer, src, tgt, src_mask, tgt_mask)
    return _bias_last(seen[1]), _bias_last(seen[2])


@dataclass(frozen=True)
class ReceiverStream:
    """The residual stream entering the block of an attention layer, by parts, before its own LayerNorm: ``parts``
    ``{name: (B, N_q, D)}``; ``layer_norm`` the LayerNorm its query input goes through (pre-norm), None where the
    stream reaches the projections as it is (post-norm); ``self_attention``: the key and value inputs come from the
    same stream (else from the encoder's output, which no LayerNorm of this block touches)."""

    parts: dict
    layer_norm: object
    self_attention: bool


def receiver_stream(model, stack: str, layer: int, src, tgt, src_mask, tgt_mask) -> ReceiverStream:
    """The stream entering ``(stack, layer)``'s block on these inputs, by parts (`ReceiverStream`): what a path
    patch changes before the receiver's LayerNorm is computed again on the patched sum."""
    walk = _walk(model, stack, layer, src, tgt, src_mask, tgt_mask)
    parts, layer_norm, self_attention = walk.stream
    return ReceiverStream(_bias_last(parts), layer_norm, self_attention)


def _walked(model, stack: str, layer: int, src, tgt, src_mask, tgt_mask) -> tuple:
    """The walk's ``seen`` at ``(stack, layer)``: ``(attention, query parts, key parts, mask, intermediates)``."""
    return _walk(model, stack, layer, src, tgt, src_mask, tgt_mask).seen


def _walk(model, stack: str, layer: int, src, tgt, src_mask, tgt_mask) -> _Walk:
    walk = _Walk((stack, layer), None)
    memory = _encoder_parts(model, src, src_mask, walk) if model.has_encoder else None
    if stack != "encoder":
        keyed = {f"enc {name}": part for name, part in memory.items()} if memory is not None else None
        _decoder_walk(model, tgt, tgt_mask, keyed, memory_mask(src_mask), walk)
    if walk.seen is None:
        raise ValueError(f"This model's {stack} layers run from 0 to {model.num_layers - 1}. Received: layer={layer!r}")
    return walk


def _projected(linear, parts: dict) -> dict:
    """Each part times the kernel; the bias part also gets the layer's bias."""
    projected = {name: part @ linear.kernel for name, part in parts.items()}  # (B, N, units)
    bias = _named(parts, BIAS)
    if linear.bias is not None:  # a Llama's projections have none
        projected[bias] = projected[bias] + linear.bias
    return projected


def _bias_last(parts: dict) -> dict:
    """``parts`` in the stream's order (token, position, each layer's heads and feed-forward), the bias last."""
    return {name: part for name, part in sorted(parts.items(), key=lambda item: item[0].endswith(BIAS))}


def _checked_queries(queries, n_q: int, parts: int) -> list:
    rows = list(range(n_q)) if queries is None else list(queries)
    if not rows or any(not isinstance(row, (int, np.integer)) or not 0 <= row < n_q for row in rows):
        raise ValueError(f"Queries run from 0 to {n_q - 1}. Received: queries={queries!r}")
    if parts * len(rows) > TERMS_BUDGET:
        raise ValueError(f"{parts:,} (query part, key part, key) terms for each of {len(rows)} queries exceed "
                         f"{TERMS_BUDGET:,} floats: ask for fewer queries, or a model with fewer layers or heads")
    return rows


def _terms(attention, query_parts: dict, key_parts: dict, mask, found: dict, head: int,
           queries=None) -> ScoreTerms:
    """``found``: the layer's intermediates in the walk's own run (its scores and weights, not computed again)."""
    query_parts, key_parts = _bias_last(query_parts), _bias_last(key_parts)
    n_q, n_k = int(next(iter(query_parts.values())).shape[1]), int(next(iter(key_parts.values())).shape[1])
    rows = _checked_queries(queries, n_q, len(query_parts) * len(key_parts) * n_k)
    queries = _projected(attention.transform_query, query_parts)
    keys = _projected(attention.transform_key, key_parts)
    group = attention.num_heads // attention.num_kv_heads
    rotated_q, rotated_k = {}, {}
    key_bias = keys[_named(keys, BIAS)]  # (B, N_k, H_kv·d_k): any key of the right width, for `heads`
    for name, query in queries.items():  # split into heads and rotated (RoPE) as the layer does its queries
        rotated_q[name] = attention.heads(query, key_bias, key_bias)[0]  # (B, H, N_q, d_k)
    for name, key in keys.items():
        rotated_k[name] = attention.heads(queries[BIAS], key, key)[1]  # (B, H_kv, N_k, d_k)
    q = tf.stack([tf.gather(rotated_q[name][0, head], rows) for name in queries])  # (P_q, N_q', d_k)
    k = tf.stack([rotated_k[name][0, head // group] for name in keys])  # (P_k, N_k, d_k)
    terms = tf.einsum("aqd,bkd->abqk", q, k) / tf.sqrt(float(attention.depth))  # (P_q, P_k, N_q', N_k)
    terms = terms.numpy()
    bias = attention.position_bias(n_q, n_k)
    if bias is not None:  # ALiBi: a function of the positions alone
        terms[list(queries).index(POSITION), list(keys).index(_named(keys, POSITION))] += bias.numpy()[head][rows]
    allowed = np.broadcast_to(np.ones((n_q, n_k), bool) if mask is None else np.asarray(mask)[0, 0],
                              (n_q, n_k))[rows]  # (N_q', N_k)
    scores = np.where(allowed, found["scaled"].numpy()[0, head][rows], np.nan)  # (N_q', N_k)
    terms = np.where(allowed, terms, np.nan)
    return ScoreTerms(tuple(rows), tuple(queries), tuple(keys), terms.astype(np.float32), scores.astype(np.float32),
                      found["weights"].numpy()[0, head][rows])


def _named(parts: dict, base: str) -> str:
    """``base``'s name among ``parts``: itself, or the encoder's on cross-attention's key side."""
    return base if base in parts else f"enc {base}"
