"""Attention over training: every K steps, the loss, the task's accuracy on a fixed probe batch, every head's role
scores on it and the probe's first line's attention patterns.

The probe is the same lines at every snapshot, so a change in a score is the model's, not the data's: a
sequence-to-sequence task's sources drawn at the run's own lengths (teacher-forced; its accuracy counts tokens), the
induction task's probe lines (segments of 8–20; next-token accuracy on the repeats). Self-attention heads get the
token roles; cross-attention heads their alignment score (the weight on the source token each target token comes
from, `transformer.analysis.heads.alignment_score`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from transformer.analysis.heads import ROLES, alignment_score, batch_role_scores
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
    aligned: np.ndarray | None = None  # (B, N_t): the source index of each label, -1 for none (`alignment_score`)

    @property
    def measure(self) -> str:
        """What `Snapshot.accuracy` counts on this probe."""
        return "next-token accuracy on the repeats" if self.lines else "token accuracy (teacher forced)"


@dataclass(frozen=True)
class Snapshot:
    """The model at ``step``: ``scores`` ``{stack: {role: (L, H)}}``, ``patterns`` ``{stack: (L, H, N, N)}`` of the
    probe's line 0, ``loss`` the training batch's, ``accuracy`` the task's measure on the probe."""

    step: int
    loss: float
    accuracy: float
    scores: dict
    patterns: dict
    measure: str = "token accuracy (teacher forced)"  # what ``accuracy`` counts (`Probe.measure`)


def make_probe(task_name: str, vocab, seed: int = 4242, lengths: tuple | None = None) -> Probe:
    """`PROBE_LINES` fixed lines of ``task_name``: sources drawn as the run draws them (``lengths``: its ``(min_len,
    max_len)``; None: the task's own), or the induction task's probe lines."""
    task = get_task(task_name)
    if task.decoder_only:
        lines = next_token.probe_lines(PROBE_LINES, seed)
        ids = line_ids(vocab, [line.tokens for line in lines], LINE_LENGTHS[1])  # (B, N)
        return Probe(None, ids, None, {"decoder": lines[0].tokens}, tuple(lines))
    rng = np.random.default_rng(seed)
    sources = [task.sample(rng, lengths or task.lengths) for _ in range(PROBE_LINES)]
    src, tgt, labels = make_batch(task, vocab, sources, max(map(len, sources)))  # teacher forcing's batch
    aligned = np.full(labels.shape, -1)  # (B, N_t)
    for row, source in enumerate(sources):
        indices = [-1 if index is None else index for index in task.align(source)]
        aligned[row, : len(indices)] = indices
    tokens = {"encoder": tuple(sources[0]), "decoder": (START, *task.solve(sources[0]))}
    return Probe(src, tgt, labels, tokens, aligned=aligned)


def _attention(model, probe: Probe) -> tuple[np.ndarray, dict]:
    """``(argmax ids (B, N_t), {stack: (L, B, H, N, N)})`` of the probe's self-attention stacks."""
    if probe.src is None:
        logits, attention = next_token.read_ids(model, probe.tgt)
        return logits.argmax(-1), {"decoder": attention}
    logits, weights = model(probe.src, probe.tgt, padding_mask(probe.src, PAD_ID), target_mask(probe.tgt, PAD_ID))
    attention = {stack: np.stack([layer.numpy() for layer in weights[stack]]) for stack in weights}
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
    for stack, weights in attention.items():  # (L, B, H, N_q, N_k)
        if stack == "cross":
            scores[stack] = {"alignment": alignment_score(weights, probe.aligned)}
            queries, keys = len(probe.tokens["decoder"]), len(probe.tokens["encoder"])
            patterns[stack] = weights[:, 0, :, :queries, :keys].astype(np.float32)  # (L, H, N_t, N_s)
            continue
        ids = probe.src if stack == "encoder" else probe.tgt
        measured = batch_role_scores(weights, ids, ids != PAD_ID)
        scores[stack] = {role: measured[role] for role in ROLES}
        kept = len(probe.tokens[stack])
        patterns[stack] = weights[:, 0, :, :kept, :kept].astype(np.float32)  # (L, H, N, N), line 0's own length
    return Snapshot(step, float(loss), accuracy, scores, patterns, probe.measure)


TIMELINE_ARRAYS, TIMELINE_FILE = "timeline.npz", "timeline.json"


def save_timeline(shots: list, folder) -> None:
    """``shots`` (`Snapshot`s) into ``folder``: their numbers and names as JSON, their arrays in one ``.npz`` (no
    pickle). Nothing is written for an empty timeline."""
    if not shots:
        return
    arrays, described = {}, []
    for index, shot in enumerate(shots):
        for stack, roles in shot.scores.items():
            for role, scores in roles.items():
                arrays[f"{index}.scores.{stack}.{role}"] = np.asarray(scores)  # (L, H)
        for stack, patterns in shot.patterns.items():
            arrays[f"{index}.patterns.{stack}"] = np.asarray(patterns)  # (L, H, N_q, N_k)
        described.append(dict(step=int(shot.step), loss=float(shot.loss), accuracy=float(shot.accuracy),
                              measure=shot.measure, roles={stack: list(roles) for stack, roles in shot.scores.items()},
                              stacks=list(shot.patterns)))
    np.savez_compressed(folder / TIMELINE_ARRAYS, **arrays)
    (folder / TIMELINE_FILE).write_text(json.dumps(described))


def load_timeline(folder) -> list:
    """The `Snapshot`s `save_timeline` wrote in ``folder``; [] when it wrote none."""
    if not (folder / TIMELINE_FILE).exists():
        return []
    described = json.loads((folder / TIMELINE_FILE).read_text())
    with np.load(folder / TIMELINE_ARRAYS, allow_pickle=False) as arrays:
        return [Snapshot(shot["step"], shot["loss"], shot["accuracy"],
                         {stack: {role: arrays[f"{index}.scores.{stack}.{role}"] for role in roles}
                          for stack, roles in shot["roles"].items()},
                         {stack: arrays[f"{index}.patterns.{stack}"] for stack in shot["stacks"]}, shot["measure"])
                for index, shot in enumerate(described)]
