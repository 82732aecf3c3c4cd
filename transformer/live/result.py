"""What `transformer.live.run.run_live` returns: `LiveResult`, plain NumPy arrays of one configuration's run (the
lab's own model, or a model from outside run by its source: `transformer.live.outside`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from transformer.live.config import LiveConfig
from transformer.tasks import SPECIALS


@dataclass(frozen=True)
class LiveResult:
    """Plain NumPy results of one configuration (B lines, N = seq_len, L layers, H heads).

    source_ids, target_ids: ``(B, N)`` int32; source_tokens, target_tokens: ``(B, N)`` text.
    source_padding_mask, target_padding_mask: ``(B, 1, 1, N)`` bool, True = may attend.
    subsequent_mask: ``(N, N)`` bool, lower triangular. target_mask: ``(B, 1, N, N)`` bool.
    positional_encoding: ``(N, d_model)`` float32.
    attention: ``{"encoder" | "decoder" | "cross": (L, B', H, N_q, N_k) float32}``, the stacks asked for,
      for the B' lines in ``lines`` (every line unless ``run_live`` was given some).
    lines: the 0-based lines (batch rows) ``attention`` holds, in its order. Every other field covers all B.
    Above 512 positions the run is block-wise: ``attention`` is max-pooled by ``attention_factor`` (to at most
    128 cells a side), ``window_weights`` holds the exact weights of each of ``windows`` and ``block_checks``
    the checks.
    layers, heads: the model's L and H (a trained model's own, whatever the config says).
    applied_masks: ``{stack: (B, N_q, N_k) bool}``, the mask each stack really used
      (all True where a toggle switched a mask off); a model from outside's per layer in ``layer_masks``
      (`mask_of`), padding's query rows and key columns both blocked (padding is never run).
    With trained weights the target is ``<s>`` + the model's own prediction, so
    the decoder side has N_t = (the task's longest target for N source tokens) + 1 positions.
    """

    config: LiveConfig
    source_tokens: tuple
    target_tokens: tuple
    source_ids: np.ndarray
    target_ids: np.ndarray
    source_truncated: tuple
    target_truncated: tuple
    pad_ids: tuple
    source_padding_mask: np.ndarray
    target_padding_mask: np.ndarray
    subsequent_mask: np.ndarray
    target_mask: np.ndarray
    positional_encoding: np.ndarray
    attention: dict
    applied_masks: dict
    layers: int
    heads: int
    device: str
    device_label: str
    tf_version: str
    compute_seconds: float
    traces: int
    builds: int
    attention_factor: int = 1  # > 1: a block-wise run; ``attention`` is max-pooled f × f (transformer.core.blockwise)
    windows: tuple = ()  # ((first query, first key, size), …) of ``window_weights``
    window_weights: dict = field(default_factory=dict)  # {stack: ((L, B', H, rows, cols), …)} exact, a window each
    block_checks: dict = field(default_factory=dict)  # {stack: blockwise.CheckTotals} of a block-wise run
    notices: tuple = field(default=())
    predictions: tuple = field(default=())  # trained weights: {source, prediction, expected, correct} per line
    lines: tuple = field(default=())
    layer_masks: dict = field(default_factory=dict)  # {stack: (L, B, N_q, N_k)}: a model whose layers differ

    def mask_of(self, stack: str, line: int, layer: int) -> np.ndarray:
        """``(N_q, N_k)`` bool: the mask ``stack``'s layer ``layer`` ran with on batch line ``line`` (a model from
        outside may have a causal layer beside bidirectional ones)."""
        if stack in self.layer_masks:
            return self.layer_masks[stack][layer, line]
        return self.applied_masks[stack][line]

    def masks_of(self, stack: str, line: int) -> np.ndarray:
        """Every layer's mask of ``stack`` on ``line``, broadcastable to ``(L, H, N_q, N_k)``: ``(L, 1, N_q, N_k)``
        where the layers differ, else ``(N_q, N_k)``."""
        if stack in self.layer_masks:
            return self.layer_masks[stack][:, line, None]
        return self.applied_masks[stack][line]

    def tokens_of(self, stack: str, line: int) -> tuple[tuple, tuple]:
        """``(query tokens, key tokens)`` of ``stack``'s attention for batch line ``line`` (N_q and N_k texts)."""
        queries, keys = stack_sides(stack, self.source_tokens, self.target_tokens)
        return tuple(queries[line]), tuple(keys[line])

    def real_queries(self, stack: str, line: int) -> np.ndarray:
        """``(N_q,)`` bool: True for the queries of ``stack`` on ``line`` that are not padding (a padding query still
        has keys: the padding mask masks keys)."""
        ids = stack_sides(stack, self.source_ids, self.target_ids)[0][line]  # (N_q,)
        return ~np.isin(ids, self.pad_ids)

    def padding_keys(self, stack: str, line: int) -> np.ndarray:
        """``(N_k,)`` bool: True for the keys of ``stack`` on ``line`` that are padding (a pad symbol's id)."""
        ids = stack_sides(stack, self.source_ids, self.target_ids)[1][line]  # (N_k,)
        return np.isin(ids, self.pad_ids)

    def special_keys(self, stack: str, line: int) -> np.ndarray:
        """``(N_k,)`` bool: True for the keys of ``stack`` on ``line`` that are padding, ``<s>`` or ``</s>``."""
        tokens = np.array(self.tokens_of(stack, line)[1], dtype=object)
        return self.padding_keys(stack, line) | np.isin(tokens, SPECIALS)


def stack_sides(stack: str, source, target) -> tuple:
    """``(the queries' side, the keys' side)`` of ``stack``'s attention, for any pair of per-side values (tokens,
    ids, lengths): the encoder attends from source to source, the decoder target to target, cross target to source."""
    return (source if stack == "encoder" else target), (target if stack == "decoder" else source)
