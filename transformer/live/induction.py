"""The induction model's result on fresh lines: next-token accuracy on each occurrence of the repeated segment with
groups of heads zero-ablated, the heads' role scores, and one line's next-token loss at every position."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from transformer.analysis.heads import batch_role_scores
from transformer.runtime.device import resolve_device
from transformer.tasks import PAD_ID
from transformer.tasks.induction import LINE_LENGTHS, RepeatedLine, line_ids
from transformer.training.next_token import occurrence_accuracy, probe_lines, read_ids
from transformer.training.pretrained import load_pretrained

GROUPS = ("none", "induction", "previous_token", "others")  # the heads an ablation removes (`InductionStudy.groups`)
GROUP_LABELS = {"none": "none", "induction": "the induction heads", "previous_token": "the previous-token heads",
                "others": "the other heads"}
THRESHOLD = 0.5  # a head with this role score or more belongs to the role's group
MAX_COUNT = 1000


@dataclass(frozen=True)
class InductionStudy:
    """``scores``: ``{"previous_token", "induction": (L, H)}`` over the lines; ``groups``: ``{group: ((layer, head),
    …)}`` (``"others"``: the heads in neither role's group); ``accuracy``: ``{group: {"second", "first"}}`` with that
    group ablated; ``line``/``loss`` ``(N - 1,)``: one line's next-token cross-entropy (nats) at each position, with
    ``ablated``'s heads removed."""

    scores: dict
    groups: dict
    accuracy: dict
    lines: int
    line: RepeatedLine
    loss: np.ndarray
    ablated: str
    vocabulary: int  # V: the loss of a uniform guess is log V


def _check(seed, count, ablated) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise ValueError(f"seed must be an integer from 0 to 2**31 - 1. Received: seed={seed!r}")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise ValueError(f"count must be an integer from 1 to {MAX_COUNT}. Received: count={count!r}")
    if ablated not in GROUPS:
        raise ValueError(f"ablated must be one of {GROUPS}. Received: ablated={ablated!r}")


def _groups(scores: dict) -> dict:
    chosen = {role: tuple(map(tuple, np.argwhere(scores[role] >= THRESHOLD).tolist()))
              for role in ("induction", "previous_token")}
    layers, heads = scores["induction"].shape
    taken = set(chosen["induction"]) | set(chosen["previous_token"])
    others = tuple((layer, head) for layer in range(layers) for head in range(heads) if (layer, head) not in taken)
    return {"none": (), **chosen, "others": others}


def induction_study(seed: int = 0, count: int = 200, ablated: str = "none", weights: str = "induction",
                    device: str = "auto") -> InductionStudy:
    """The study of ``weights`` (a decoder-only model of the induction task) on ``count`` fresh lines drawn from
    ``seed``; line 0 is the one whose loss is given. ValueError naming bad arguments."""
    _check(seed, count, ablated)
    device = resolve_device(device)
    model = load_pretrained(weights, device)
    if model.task != "induction":
        raise ValueError(f"The induction study reads a model of the induction task. Received: weights={weights!r}")
    lines = probe_lines(count, seed)
    ids = line_ids(model.vocab, [line.tokens for line in lines], LINE_LENGTHS[1])  # (B, N)
    with tf.device(device):
        logits, attention = read_ids(model.model, ids)  # (B, N, V), (L, B, H, N, N)
    measured = batch_role_scores(attention, ids, ids != PAD_ID)
    scores = {role: measured[role] for role in ("previous_token", "induction")}
    groups = _groups(scores)
    accuracy = {}
    for group, heads in groups.items():
        with tf.device(device):
            group_logits = logits if not heads else read_ids(model.model, ids, heads)[0]  # (B, N, V)
        accuracy[group] = occurrence_accuracy(group_logits.argmax(-1), lines, model.vocab)
        if group == ablated:
            chosen_logits = group_logits
    return InductionStudy(scores, groups, accuracy, count, lines[0], _line_loss(chosen_logits[0], ids[0]), ablated,
                          len(model.vocab))


def _line_loss(logits: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``(N - 1,)`` cross-entropy of each real next token: ``logits (N, V)`` at position i against ``ids[i + 1]``."""
    real = int((ids != PAD_ID).sum())
    shifted = logits[: real - 1] - logits[: real - 1].max(-1, keepdims=True)  # (N - 1, V)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -log_probabilities[np.arange(real - 1), ids[1:real]]
