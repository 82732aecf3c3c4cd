"""Attention over training: every K steps, the loss, the task's accuracy on a fixed probe batch, every self-attention
head's role scores on it and the probe's first line's attention patterns.

The probe is the same lines at every snapshot, so a change in a score is the model's, not the data's: a
sequence-to-sequence task's examples (teacher-forced), the induction task's probe lines (segments of 8–20).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer.analysis.heads import ROLES, batch_role_scores
from transformer.core.masks import padding_mask, target_mask
from transformer.tasks import PAD_ID, START, get_task, make_batch
from transformer.tasks.induction import LINE_LENGTHS, line_ids
from transformer.training import next_token

PROBE_LINES = 32


@dataclass(frozen=True)
class Probe:
    """Fixed lines: ``ids`` of each side (``src (B, N_s)`` or None, ``tgt (B, N_t)``), the tokens of line 0 per
    self-attention stack, and the induction task's `RepeatedLine`s (empty for other tasks)."""

    src: np.ndarray | None
    tgt: np.ndarray
    labels: np.ndarray | None  # teacher forcing's next tokens (B, N_t); None for the induction task
    tokens: dict
    lines: tuple = ()


@dataclass(frozen=True)
class Snapshot:
    """The model at ``step``: ``scores`` ``{stack: {role: (L, H)}}``, ``patterns`` ``{stack: (L, H, N, N)}`` of the
    probe's line 0, ``loss`` the training batch's, ``accuracy`` the task's measure on the probe."""

    step: int
    loss: float
    accuracy: float
    scores: dict
    patterns: dict


def make_probe(task_name: str, vocab, seed: int = 4242) -> Probe:
    """`PROBE_LINES` fixed lines of ``task_name`` (its examples; the induction task's probe lines)."""
    task = get_task(task_name)
    if task.decoder_only:
        lines = next_token.probe_lines(PROBE_LINES, seed)
        ids = line_ids(vocab, [line.tokens for line in lines], LINE_LENGTHS[1])  # (B, N)
        return Probe(None, ids, None, {"decoder": lines[0].tokens}, tuple(lines))
    sources = [task.source_tokens(source) for source, _, _ in task.examples(PROBE_LINES, seed)]
    src, tgt, labels = make_batch(task, vocab, sources, max(map(len, sources)))  # teacher forcing's batch
    tokens = {"encoder": tuple(sources[0]), "decoder": (START, *task.solve(sources[0]))}
    return Probe(src, tgt, labels, tokens)


def _attention(model, probe: Probe) -> tuple[np.ndarray, dict]:
    """``(argmax ids (B, N_t), {stack: (L, B, H, N, N)})`` of the probe's self-attention stacks."""
    if probe.src is None:
        logits, attention = next_token.read_ids(model, probe.tgt)
        return logits.argmax(-1), {"decoder": attention}
    logits, weights = model(probe.src, probe.tgt, padding_mask(probe.src, PAD_ID), target_mask(probe.tgt, PAD_ID))
    attention = {stack: np.stack([layer.numpy() for layer in weights[stack]]) for stack in ("encoder", "decoder")}
    return np.asarray(logits).argmax(-1), attention


def snapshot(model, probe: Probe, vocab, step: int, loss: float) -> Snapshot:
    """Role scores, patterns and accuracy of ``model`` on ``probe`` at ``step``."""
    predicted, attention = _attention(model, probe)
    if probe.lines:
        accuracy = next_token.occurrence_accuracy(predicted, probe.lines, vocab)["second"]
    else:
        real = probe.labels != PAD_ID  # (B, N_t)
        accuracy = float((predicted == probe.labels)[real].mean())
    scores, patterns = {}, {}
    for stack, weights in attention.items():  # (L, B, H, N, N)
        ids = probe.src if stack == "encoder" else probe.tgt
        measured = batch_role_scores(weights, ids, ids != PAD_ID)
        scores[stack] = {role: measured[role] for role in ROLES}
        kept = len(probe.tokens[stack])
        patterns[stack] = weights[:, 0, :, :kept, :kept].astype(np.float32)  # (L, H, N, N), line 0's own length
    return Snapshot(step, float(loss), accuracy, scores, patterns)
