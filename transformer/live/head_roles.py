"""What each head of a configuration's model does over its lines: role scores (`transformer.analysis.heads`),
a mask family used as a detection pattern, mean distance and entropy, padding's query rows left out.

The lines are the configuration's: a page that wants the task's examples or repeated random tokens puts them in
its source (and target) text first (`repeated_lines`, `example_lines`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from transformer.analysis.heads import (
    ROLES,
    batch_role_scores,
    best_roles,
    chance_scores,
    cross_measures,
    repeated_random_tokens,
)
from transformer.core import tokens
from transformer.core.masks import MASK_FAMILIES, SIZED_FAMILIES, family_mask, size_range
from transformer.live.config import ROLES_MAX_LINES, LiveConfig
from transformer.live.result import stack_sides
from transformer.live.run import run_live
from transformer.live.sources import source_of
from transformer.tasks import get_task

PATTERN_FAMILIES = tuple(family for family in MASK_FAMILIES if family != "paper")  # the paper's has no one pattern
LINE_SOURCES = ("lines", "repeated", "examples")  # the sidebar's lines, a random segment written twice, the task's
MAX_LINES = ROLES_MAX_LINES


@dataclass(frozen=True)
class HeadRoles:
    """``scores``: ``{role: (L, H)}`` of `ROLES` (self-attention only) and ``"pattern"`` when a family was asked
    for; ``distance`` ``(L, H)`` positions (None for cross-attention: `has_position_axis`) and ``entropy`` ``(L, H)``
    bits; over ``lines`` lines of ``length`` query positions and ``key_length`` keys."""

    stack: str
    scores: dict
    distance: np.ndarray | None
    entropy: np.ndarray
    lines: int
    length: int
    pattern: str = ""  # the mask family scored as "pattern" ("": none)
    key_length: int = 0  # N_k (0: as ``length``, self-attention)
    chance: dict = field(default_factory=dict)  # {role: score of a head attending evenly} (`chance_scores`)

    @property
    def keys(self) -> int:
        return self.key_length or self.length

    @property
    def top_roles(self) -> np.ndarray:
        """``(L, H)``: each head's highest-scoring role ("" for cross-attention)."""
        if not self.scores:
            return np.full(self.entropy.shape, "", dtype=object)
        return best_roles(self.scores)[0]

    def strongest(self, role: str, limit: int = 3) -> list[tuple[int, int, float]]:
        """The ``limit`` heads scoring highest on ``role``: ``(layer, head, score)``, best first."""
        scores = self.scores[role]
        order = np.argsort(np.where(np.isnan(scores), -1.0, scores), axis=None)[::-1][:limit]
        return [(int(i // scores.shape[1]), int(i % scores.shape[1]), float(scores.flat[i])) for i in order
                if not np.isnan(scores.flat[i])]


def _check_pattern(family: str | None, size: int, length: int) -> None:
    if family is None:
        return
    if family not in PATTERN_FAMILIES:
        raise ValueError(f"The pattern must be a mask family, one of {PATTERN_FAMILIES}. Received: pattern={family!r}")
    if family in SIZED_FAMILIES:
        low, high = size_range(family, length)
        if not low <= size <= high:
            raise ValueError(f"The {SIZED_FAMILIES[family]} must be from {low} to {high}. Received: {size!r}")


def head_roles(config: LiveConfig, stack: str, pattern: str | None = None, pattern_size: int = 4) -> HeadRoles:
    """Every head of ``stack`` scored over ``config``'s lines; ``pattern``: a mask family (`MASK_FAMILIES`)
    scored as a detection pattern too (self-attention). ValueError on bad input, as `run_live`."""
    weights, query_ids, valid, masks = _every_line(config, stack)  # (L, B, H, N_q, N_k), (B, N_q) ×2, (B, N_q, N_k)
    n_q = weights.shape[-2]
    if stack == "cross":
        measures = cross_measures(weights, valid)
        return HeadRoles(stack, {}, None, measures["entropy"], weights.shape[1], n_q, key_length=weights.shape[-1])
    _check_pattern(pattern, pattern_size, n_q)
    cells = None if pattern is None else family_mask(pattern, n_q, min(pattern_size, n_q)).numpy()  # (N, N)
    scores = batch_role_scores(weights, query_ids, valid, cells)
    distance, entropy = scores.pop("distance"), scores.pop("entropy")
    return HeadRoles(stack, scores, distance, entropy, weights.shape[1], n_q, pattern or "",
                     chance=chance_scores(masks, query_ids, valid))


def _chunks(text: str) -> list[str]:
    lines, size = text.splitlines(), tokens.MAX_LINES
    return ["\n".join(lines[start:start + size]) for start in range(0, max(len(lines), 1), size)]


def _every_line(config: LiveConfig, stack: str) -> tuple:
    """``stack``'s weights ``(L, B, H, N_q, N_k)``, the queries' ids and which are not padding ``(B, N_q)``, and the
    masks it ran with ``(B, N_q, N_k)`` for every line of ``config``, run `tokens.MAX_LINES` lines at a time (up to
    `MAX_LINES` lines in all)."""
    if len(config.source_text.splitlines()) > MAX_LINES:
        raise ValueError(f"Head roles are scored over at most {MAX_LINES} lines. Received: "
                         f"{len(config.source_text.splitlines())} lines")
    parts = []
    own_target = source_of(config.weights).supports.predictions  # its target is its own answer: the text is unread
    for source, target in zip(_chunks(config.source_text), _chunks(config.source_text if own_target
                                                                    else config.target_text)):
        result = run_live(replace(config, source_text=source, target_text=target), stacks=(stack,),
                          means_of=config)  # a mean-ablated head's mean: over every line scored, not a part's
        query_ids, _ = stack_sides(stack, result.source_ids, result.target_ids)  # (B, N_q)
        parts.append((result.attention[stack], query_ids, ~np.isin(query_ids, result.pad_ids),
                      result.applied_masks[stack]))
    return (np.concatenate([part[0] for part in parts], axis=1),
            *(np.concatenate([part[index] for part in parts]) for index in (1, 2, 3)))


def repeated_lines(count: int, segment: int, seed: int = 0, weights: str = "random") -> str:
    """``count`` lines, each a random segment of ``segment`` tokens written twice (induction heads show on them):
    tokens ``t0`` … ``t499``, or the words ``weights``' model reads as one piece each (a real model's)."""
    vocabulary = source_of(weights).line_words() or [f"t{i}" for i in range(500)]
    ids = repeated_random_tokens(np.random.default_rng(seed), count, segment, len(vocabulary))  # (count, 2·segment)
    return "\n".join(" ".join(vocabulary[i] for i in row) for row in ids)


def example_lines(task: str, count: int, seed: int = 0) -> str:
    """``count`` fresh source lines of ``task`` (its examples), one a line."""
    return "\n".join(source for source, _, _ in get_task(task).examples(count, seed))


__all__ = ["LINE_SOURCES", "MAX_LINES", "PATTERN_FAMILIES", "ROLES", "HeadRoles", "example_lines", "head_roles",
           "repeated_lines"]
