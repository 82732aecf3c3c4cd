"""What every live computation starts from: the lines as padded id batches (each model source reads its own:
`transformer.live.sources`), their masks, the encodings.

Masks are boolean NumPy arrays, True = may attend, made by `transformer.core.masks` and cached
read-only per configuration: a page's forward pass and its Keras check share them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from transformer.core import tokens
from transformer.core.masks import family_mask, padding_mask, subsequent_mask
from transformer.core.positional import positional_encoding
from transformer.live.config import MAX_SEQ_LEN, LiveConfig


@dataclass(frozen=True)
class Batches:
    """Source and target as `tokens.EncodedBatch`es, the ids that count as padding, and notices to show."""

    source: tokens.EncodedBatch
    target: tokens.EncodedBatch
    pad_ids: tuple
    notices: tuple


@dataclass(frozen=True)
class Masks:
    """A configuration's masks (True = may attend), all read-only.

    source_padding ``(B, 1, 1, N_s)``, target_padding ``(B, 1, 1, N_t)``, future ``(N_t, N_t)`` (lower
    triangular), target ``(B, 1, N_t, N_t)`` (padding AND look-ahead); run_source and run_target are
    the masks the model runs with: the same, with a switched-off mask replaced by all True.
    """

    source_padding: np.ndarray
    target_padding: np.ndarray
    future: np.ndarray
    target: np.ndarray
    run_source: np.ndarray
    run_target: np.ndarray


@dataclass(frozen=True)
class Inputs:
    """The id batches, a trained model's predictions (``{source, prediction, expected, correct}`` per line),
    the `Masks` and, when heads are mean-ablated, their means ``(stacks, L, H, d_v)`` (`transformer.live.plan`)."""

    batches: Batches
    predictions: tuple
    masks: Masks
    means: np.ndarray | None = None


def notices(source, target, pads, length) -> tuple:
    notices = []
    for name, batch in (("source", source), ("target", target)):
        cut = [(line, count) for line, (count, was_cut) in enumerate(zip(batch.lengths, batch.truncated), start=1)
               if was_cut]
        if len(cut) == 1:
            notices.append(f"{name.capitalize()} line {cut[0][0]} has {cut[0][1]} tokens; it was cut to {length}.")
        elif cut:
            lines = ", ".join(str(line) for line, _ in cut)
            low, high = min(count for _, count in cut), max(count for _, count in cut)
            counts = f"{low}" if low == high else f"{low}–{high}"
            notices.append(f"{name.capitalize()} lines {lines} have {counts} tokens; each was cut to {length}.")
        for line in np.flatnonzero(np.isin(batch.ids, pads).all(axis=1)) + 1:
            notices.append(
                f"{name.capitalize()} line {line} is all padding: no key is allowed for it, "
                "so its attention weights are all zero."
            )
    if not np.isin(source.ids, pads).any() and not np.isin(target.ids, pads).any():
        notices.append("No pad symbol occurs in any sequence, so the padding masks block nothing.")
    return tuple(notices)


def make_masks(config: LiveConfig, batches: Batches) -> Masks:
    """The engine's masks of ``batches`` as read-only NumPy, and the ones each stack runs with.

    The masks are TensorFlow's (`padding_mask`, `subsequent_mask`, `family_mask`); only the switches are NumPy.
    A mask family other than the paper's replaces both self-attention patterns (the look-ahead switch then
    does nothing): run_source becomes ``(B, 1, N_s, N_s)`` and cross-attention keeps the padding alone.
    """
    pads = list(batches.pad_ids) or [-1]  # -1 matches no id: nothing is padding
    source_padding = padding_mask(batches.source.ids, pads).numpy()  # (B, 1, 1, N_s)
    target_padding = padding_mask(batches.target.ids, pads)  # (B, 1, 1, N_t)
    future = subsequent_mask(batches.target.ids.shape[1])  # (N_t, N_t)
    target = tf.logical_and(target_padding, future).numpy()  # (B, 1, N_t, N_t)
    target_padding, future = target_padding.numpy(), future.numpy()
    run_source = source_padding if config.padding_masks else np.ones_like(source_padding)  # (B, 1, 1, N_s)
    if config.mask_family != "paper":
        run_source = np.logical_and(run_source, _pattern(config, batches.source.ids.shape[1]))  # (B, 1, N_s, N_s)
        run_target = np.logical_and(target_padding if config.padding_masks else True,
                                    _pattern(config, batches.target.ids.shape[1]))
        run_target = np.broadcast_to(run_target, target.shape)  # (B, 1, N_t, N_t)
    elif config.padding_masks and config.look_ahead_mask:
        run_target = target  # (B, 1, N_t, N_t)
    else:
        run_target = np.logical_and(target_padding if config.padding_masks else True,
                                    future if config.look_ahead_mask else True)  # (B, 1, N_t, N_t)
        run_target = np.broadcast_to(run_target, target.shape)  # (B, 1, N_t, N_t), also with both off
    masks = Masks(source_padding, target_padding, future, target, run_source, run_target)
    for mask in vars(masks).values():  # cached and shared by every result of this configuration
        mask.flags.writeable = False
    return masks


def _pattern(config: LiveConfig, length: int) -> np.ndarray:
    """``config``'s mask family over ``length`` positions, ``(N, N)`` bool (a size longer than a trained
    model's own target is cut to it)."""
    return family_mask(config.mask_family, length, min(config.mask_size, length)).numpy()  # (N, N)


def _encoding(length: int, d_model: int, device: str) -> np.ndarray:
    """``positional_encoding(length, d_model)``, computed on ``device``, as a read-only ``(N, D)`` array."""
    with tf.device(device):
        encoding = positional_encoding(length, d_model).numpy()  # (N, D)
    encoding.flags.writeable = False
    return encoding


@functools.lru_cache(maxsize=8)
def _longest_encoding(d_model: int, device: str) -> np.ndarray:
    return _encoding(MAX_SEQ_LEN, d_model, device)  # (N_max, D), one per width and device


def encoding_array(length: int, d_model: int, device: str = "/CPU:0") -> np.ndarray:
    """``positional_encoding(length, d_model)`` as a read-only ``(N, D)`` array.

    Row ``pos`` does not depend on the length, so every length up to `MAX_SEQ_LEN` is a view of
    one encoding per width: a new sequence length costs no TensorFlow call.
    """
    if length > MAX_SEQ_LEN:
        return _encoding(length, d_model, device)  # (N, D)
    return _longest_encoding(d_model, device)[:length]  # (N, D)


def checked_lines(lines, batch: int) -> tuple:
    """``lines`` as a tuple of row indices into a batch of ``batch`` lines (None: all); ValueError naming
    any line that does not exist."""
    if lines is None:
        return tuple(range(batch))
    lines = tuple(lines)
    missing = [line for line in lines if not isinstance(line, (int, np.integer)) or not 0 <= line < batch]
    if missing or not lines:
        raise ValueError(f"lines must name lines 0 to {batch - 1} (there are {batch}). Received: lines={lines!r}")
    return tuple(int(line) for line in lines)


def batch_rows(rows: tuple, *batched) -> list:
    """Each of ``batched`` (NumPy, batch first: ids (B, N), masks (B, 1, N_q, N_k)) cut to ``rows``, as
    tensors. Used by `run_live` and by the walkthrough's Keras check. NumPy indexing, not ``tf.gather``:
    four eager gathers cost ~1 ms a call (the default forward pass itself takes ~7 ms)."""
    if rows == tuple(range(batched[0].shape[0])):
        return [tf.convert_to_tensor(values) for values in batched]
    return [tf.convert_to_tensor(values[list(rows)]) for values in batched]  # (B', ...)
