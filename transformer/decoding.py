"""A trained model's decoding, step by step: what it reads, where it looks and what it may choose at each step.

Greedy (the most probable token) or sampled (at a temperature, among the top k, from a seed). Every
step is computed twice: by the whole model on the prefix (what the pictures show) and by the
key/value cache (`transformer.kv_cache`); ``cache_gap`` is the largest difference of their logits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from transformer.device import device_label, resolve_device
from transformer.engine_thread import on_engine_thread
from transformer.kv_cache import KVCache
from transformer.masks import padding_mask, target_mask
from transformer.pretrained import load_pretrained
from transformer.tasks import END, PAD_ID, START_ID

MAX_TOP_K = 50


@dataclass(frozen=True)
class Step:
    """Decoding step ``t``: the decoder has read ``prefix`` (``<s>`` and the t tokens chosen so far) and chooses.

    self_attention: ``(L, H, t + 1)`` the newest position's masked self-attention over the prefix;
    cross_attention: ``(L, H, N_s)`` its cross-attention over the source; probabilities: ``(V,)`` the
    next-token distribution at the temperature (top-k applied when sampling); chosen: the token chosen.
    """

    prefix: tuple
    self_attention: np.ndarray
    cross_attention: np.ndarray
    probabilities: np.ndarray
    chosen: str

    def top(self, vocabulary, k: int = 8) -> list[tuple[str, float]]:
        """The ``k`` most probable next tokens and their probabilities, most probable first."""
        order = np.argsort(-self.probabilities, kind="stable")[:k]
        return [(vocabulary.tokens[i], float(self.probabilities[i])) for i in order]


@dataclass(frozen=True)
class Decoding:
    """Every step of one source line's decoding, and the cache's state and check at the end.

    cache: per decoder layer ``{"keys", "values"}`` ``(H, T, d_k)`` (the decoded positions) and
    ``{"cross_keys", "cross_values"}`` ``(H, N_s, d_k)``; cache_bytes: their memory; cache_gap: max
    |logits with the cache − logits of the whole model on the prefix| over every step.
    """

    model: str
    source_tokens: tuple
    steps: tuple
    prediction: str
    expected: str | None
    cache: tuple
    cache_bytes: int
    cache_gap: float
    vocabulary: object
    layers: int
    heads: int
    device_label: str


def next_token_distribution(logits: np.ndarray, temperature: float, top_k: int = 0) -> np.ndarray:
    """softmax(logits / temperature), kept to the ``top_k`` most probable tokens (0: all) and renormalised."""
    scaled = np.asarray(logits, np.float64) / temperature
    if top_k:
        threshold = np.sort(scaled)[-top_k]
        scaled = np.where(scaled >= threshold, scaled, -np.inf)
    scaled -= scaled.max()
    weights = np.exp(scaled)
    return (weights / weights.sum()).astype(np.float32)


def _check_settings(temperature, top_k, max_steps) -> None:
    if not isinstance(temperature, (int, float)) or not 0.05 <= temperature <= 5:
        raise ValueError(f"temperature must be from 0.05 to 5. Received: temperature={temperature!r}")
    if not isinstance(top_k, int) or not 0 <= top_k <= MAX_TOP_K:
        raise ValueError(f"top_k must be from 0 (all) to {MAX_TOP_K}. Received: top_k={top_k!r}")
    if not isinstance(max_steps, int) or not 1 <= max_steps <= 64:
        raise ValueError(f"max_steps must be from 1 to 64. Received: max_steps={max_steps!r}")


@on_engine_thread
def decode(name: str, source_text: str, device: str = "auto", *, sample: bool = False, temperature: float = 1.0,
           top_k: int = 0, seed: int = 0, max_steps: int | None = None) -> Decoding:
    """Decode ``source_text`` with the trained model ``name`` on ``device`` ("auto" or "cpu"), step by step.
    ValueError naming bad settings or tokens outside the model's vocabulary."""
    place = resolve_device(device)
    pretrained = load_pretrained(name, place)
    tokens = pretrained.source_tokens(source_text.strip())
    max_steps = pretrained.rules.target_length(len(tokens)) + 1 if max_steps is None else max_steps
    _check_settings(temperature, top_k, max_steps)
    with tf.device(place):
        steps, cache, gap = _steps(pretrained, tokens, sample, temperature, top_k, seed, max_steps)
    chosen = [step.chosen for step in steps if step.chosen != END]
    return Decoding(name, tuple(tokens), tuple(steps), pretrained.rules.target_text(chosen),
                    pretrained.expected(source_text), tuple(cache.arrays()), cache.bytes(), gap, pretrained.vocab,
                    pretrained.spec.num_layers, pretrained.spec.num_heads, device_label(place))


def _steps(pretrained, tokens, sample, temperature, top_k, seed, max_steps):
    model, vocabulary, rng = pretrained.model, pretrained.vocab, np.random.default_rng(seed)
    src = np.array([vocabulary.encode(tokens)], np.int32)  # (1, N_s)
    src_mask = padding_mask(src, PAD_ID)  # (1, 1, 1, N_s)
    memory, _ = model.encode(src, src_mask)  # (1, N_s, D)
    cache, prefix, steps, gap = KVCache(model, memory, src_mask), [START_ID], [], 0.0
    for _ in range(max_steps):
        decoder_input = np.array([prefix], np.int32)  # (1, t + 1)
        logits, attention = model(src, decoder_input, src_mask, target_mask(decoder_input, PAD_ID))
        last = logits[0, -1].numpy()  # (V,): the whole model on the prefix
        gap = max(gap, float(np.abs(cache.step(prefix[-1]) - last).max()))  # the cache's answer for the same step
        probabilities = next_token_distribution(last, temperature, top_k if sample else 0)
        chosen = int(rng.choice(len(probabilities), p=probabilities / probabilities.sum())) if sample \
            else int(np.argmax(last))
        steps.append(Step(tuple(vocabulary.decode(prefix)),
                          np.stack([w[0, :, -1].numpy() for w in attention["decoder"]]),  # (L, H, t + 1)
                          np.stack([w[0, :, -1].numpy() for w in attention["cross"]]),  # (L, H, N_s)
                          probabilities, vocabulary.tokens[chosen]))
        prefix.append(chosen)
        if vocabulary.tokens[chosen] == END:
            break
    return steps, cache, gap


__all__ = ["Decoding", "Step", "decode", "next_token_distribution"]
