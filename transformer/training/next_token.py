"""Decoder-only training and reading: next-token loss on lines, and the induction task's measure.

A line of ids ``(B, N)`` is read by the decoder alone under the look-ahead mask (padding keys hidden too); the
logits at position i predict token i + 1.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from transformer.core.ablation import decoder_ablation, head_means
from transformer.core.masks import target_mask
from transformer.tasks.base import PAD_ID
from transformer.tasks.induction import LINE_LENGTHS, PROBE_SEGMENTS, line_ids, repeated_line


def line_batch(task, vocab, rng: np.random.Generator, count: int, lengths) -> np.ndarray:
    """``count`` random lines of ``task`` as ``(B, lengths[1])`` ids padded with 0."""
    return line_ids(vocab, [task.sample(rng, lengths) for _ in range(count)], lengths[1])


def forward(model):
    """``forward(ids (B, N))`` for a training step: the logits at every position but the last and the next tokens,
    ``((B, N - 1, V), (B, N - 1))`` (position i predicts token i + 1)."""
    def run(ids):
        inputs = ids[:, :-1]  # (B, N - 1)
        logits, _ = model(None, inputs, None, target_mask(inputs, PAD_ID), training=True)  # (B, N - 1, V)
        return logits, ids[:, 1:]
    return run


def read_ids(model, ids, ablate=(), kind: str = "zero", means=None) -> tuple[np.ndarray, np.ndarray]:
    """``ids (B, N)`` read by a decoder-only model, ``ablate``'s decoder heads ablated (``kind``): ``(logits (B, N,
    V), attention (L, B, H, N, N))`` as NumPy. Mean-ablation uses ``means`` (`head_means`); None: the heads' means
    over the real positions of these lines, in the model without ablation."""
    ids = tf.convert_to_tensor(ids, tf.int32)
    if ablate and kind == "mean" and means is None:
        means = head_means(model, None, ids, None, target_mask(ids, PAD_ID), (PAD_ID,))  # (S, L, H, d_v)
    hook = decoder_ablation(model, ablate, kind, means)
    logits, attention = model(None, ids, None, target_mask(ids, PAD_ID), hook=hook)  # (B, N, V), L × (B, H, N, N)
    return logits.numpy(), np.stack([weights.numpy() for weights in attention["decoder"]])


def probe_lines(count: int, seed: int, segments=PROBE_SEGMENTS) -> list:
    """``count`` `RepeatedLine`s of the measured distribution (lines of 48–64, segments of 8–20)."""
    rng = np.random.default_rng(seed)
    return [repeated_line(rng, LINE_LENGTHS, segments) for _ in range(count)]


def occurrence_accuracy(predicted: np.ndarray, lines, vocab) -> dict:
    """Share of the next tokens predicted right on each occurrence's 2nd token on: ``{"second", "first"}``.
    ``predicted (B, N)``: the argmax id at each position."""
    found = {}
    for occurrence in ("second", "first"):
        hits = [predicted[row, position] == vocab.encode([line.tokens[position + 1]])[0]
                for row, line in enumerate(lines) for position in line.predicted_positions(occurrence)]
        found[occurrence] = float(np.mean(hits))
    return found


def induction_accuracy(model, vocab, count: int = 200, seed: int = 12345, ablate=()) -> dict:
    """`occurrence_accuracy` of ``model`` on ``count`` fresh probe lines, ``ablate``'s decoder heads zeroed."""
    lines = probe_lines(count, seed)
    ids = line_ids(vocab, [line.tokens for line in lines], LINE_LENGTHS[1])
    logits, _ = read_ids(model, ids, ablate)
    return occurrence_accuracy(logits.argmax(-1), lines, vocab)
