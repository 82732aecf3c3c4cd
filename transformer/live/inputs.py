"""What every live computation starts from: the text as padded id batches, their masks, the encodings.

Masks are boolean NumPy arrays, True = may attend, made by `transformer.core.masks` and cached
read-only per configuration: a page's forward pass and its Keras check share them.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from transformer.core import tokens
from transformer.core.ablation import check_ablation, head_means
from transformer.core.masks import family_mask, padding_mask, subsequent_mask
from transformer.core.positional import positional_encoding
from transformer.external.registry import EXTERNAL
from transformer.live.config import MAX_SEQ_LEN, VOCAB_SIZE, LiveConfig
from transformer.live.model_cache import MODELS
from transformer.runtime.device import resolve_device
from transformer.tasks import PAD, PAD_ID, START
from transformer.tasks.induction import NO_RULE
from transformer.training import answers
from transformer.training.pretrained import check_config, load_pretrained


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
    the `Masks` and, when heads are mean-ablated, their means ``(stacks, L, H, d_v)`` (`ablation_means`)."""

    batches: Batches
    predictions: tuple
    masks: Masks
    means: np.ndarray | None = None


def _lines_text(count: int) -> str:
    return f"{count} line" if count == 1 else f"{count} lines"


def encode_batches(config: LiveConfig) -> Batches:
    """Source and target text -> padded id batches sharing one vocabulary. Line counts that differ are matched to
    the side the model reads first (the target for a decoder-only model, else the source), said in a notice."""
    pad_symbols = tokens.check_pad_symbols(config.pad_symbols)
    source_lines = tokens.split_lines(config.source_text, "source")
    target_lines = tokens.split_lines(config.target_text, "target")
    source_lines, target_lines, matched = _matched_lines(source_lines, target_lines, config.architecture)
    vocabulary = tokens.build_vocabulary(source_lines + target_lines, pad_symbols, VOCAB_SIZE)
    source = tokens.encode_lines(source_lines, vocabulary, pad_symbols[0], config.seq_len)
    target = tokens.encode_lines(target_lines, vocabulary, pad_symbols[0], config.seq_len)
    pads = tokens.pad_ids(vocabulary, pad_symbols)
    return Batches(source, target, pads, matched + _notices(source, target, pads, config.seq_len))


def _matched_lines(source: list, target: list, architecture: str) -> tuple[list, list, tuple]:
    """``(source, target, notices)`` with as many lines on each side as the leading side has (the target for a
    decoder-only model, else the source): the other side's extra lines left out, its missing ones the leading
    side's lines. A view never goes blank because a side it does not read has another count."""
    if len(source) == len(target):
        return source, target, ()
    lead, other = ("target", "source") if architecture == "decoder-only" else ("source", "target")
    lines = {"source": source, "target": target}
    leading, following = lines[lead], lines[other]
    count, given = len(leading), len(following)
    extra = given > count
    first, last = (count + 1, given) if extra else (given + 1, count)
    which, verb = (f"line {first}", "is") if first == last else (f"lines {first}–{last}", "are")
    said = f"the {other}'s {which} {verb} left out" if extra else f"{other} {which} {verb} their {lead} lines"
    notice = (f"The {lead} has {_lines_text(count)} and the {other} {given}: {said} (give one {other} line per "
              f"{lead} line to choose them).")
    lines[other] = following[:count] + leading[given:]
    return lines["source"], lines["target"], (notice,)


def encode_trained(config: LiveConfig, means=None) -> tuple[Batches, tuple]:
    """Source text in the trained model's own tokens (words, symbols or characters); the target is ``<s>`` +
    its greedy prediction (with ``config``'s heads ablated; ``means``: mean-ablation's). ValueError naming tokens
    outside the model's vocabulary or heads it lacks."""
    check_config(config)  # its name and the options it was trained with, before anything loads
    model = load_pretrained(config.weights, resolve_device(config.device))
    ablate = check_ablation(config.ablate, config.ablation, config.stacks, model.model.num_layers,
                            model.model.num_heads)
    texts = tokens.text_lines(config.source_text, "source")
    lines = [model.source_tokens(text)[: config.seq_len] for text in texts]
    if model.decoder_only:
        return _encode_lines(model, config, texts, lines, ablate, means)
    predicted = [model.vocab.decode(ids) for ids in answers.predictions(model, lines, 1, ablate, config.ablation,
                                                                        means)]
    source = tokens.encode_lines(lines, model.vocab, PAD, config.seq_len)
    target = tokens.encode_lines([[START] + p for p in predicted], model.vocab, PAD,
                                 model.rules.target_length(config.seq_len) + 1)
    predictions = tuple(_prediction(model, text, p) for text, p in zip(texts, predicted))
    notices = _notices(source, target, (PAD_ID,), config.seq_len)
    return Batches(source, target, (PAD_ID,), notices), predictions


def _encode_lines(model, config: LiveConfig, texts, lines, ablate, means=None) -> tuple[Batches, tuple]:
    """A decoder-only trained model reads each line on its one (target) side; its prediction is the most probable
    next token after each position, checked against the task's rule where the rule has an answer."""
    batch = tokens.encode_lines(lines, model.vocab, PAD, config.seq_len)
    guesses = model.next_tokens(lines, ablate, config.ablation, means)
    predictions = []
    for text, line, guess in zip(texts, lines, guesses):
        rule = model.rules.solve(line)
        counted = [r == g for r, g in zip(rule, guess) if r != NO_RULE]  # where the rule has an answer
        predictions.append(dict(source=text, prediction=" ".join(guess), expected=" ".join(rule),
                                correct=all(counted), next_token=True, tokens_right=sum(counted),
                                tokens_counted=len(counted)))
    notices = _notices(batch, batch, (PAD_ID,), config.seq_len)
    return Batches(batch, batch, (PAD_ID,), notices), tuple(predictions)


def _prediction(model, text: str, predicted: list[str]) -> dict:
    """``{source, prediction, expected, correct}`` of one line, written as a person writes them."""
    prediction, expected = model.rules.target_text(predicted), model.expected(text)
    return dict(source=text, prediction=prediction, expected=expected if expected is not None else "—",
                correct=prediction == expected)


def _notices(source, target, pads, length) -> tuple:
    notices = []
    for name, batch in (("source", source), ("target", target)):
        for line, (count, cut) in enumerate(zip(batch.lengths, batch.truncated), start=1):
            if cut:
                notices.append(f"{name.capitalize()} line {line} has {count} tokens; it was cut to {length}.")
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


EXTERNAL_PAD = "<pad>"  # a model from outside runs each line at its own length: its padding is only drawn
EXTERNAL_PAD_ID = -1  # never one of its ids


def encode_external(config: LiveConfig) -> Inputs:
    """A model from outside: each source line in its tokenizer's pieces (cut to ``seq_len``), the same lines on
    the target side (a causal model's one stack reads them there); padding is drawn, never run. Its masks are its
    own: padding, and the look-ahead mask for a causal model (the lab's switches and families do not apply)."""
    model = EXTERNAL.get(config.weights)
    texts = tokens.text_lines(config.source_text, "source")
    ids = [model.token_ids(text) for text in texts]
    pieces = [model.pieces(line) for line in ids]
    n = config.seq_len
    padded = np.full((len(texts), n), EXTERNAL_PAD_ID, np.int32)  # (B, N)
    for row, line in enumerate(ids):
        padded[row, : min(len(line), n)] = line[:n]
    labels = tuple(tuple(line[:n]) + (EXTERNAL_PAD,) * max(0, n - len(line)) for line in pieces)
    batch = tokens.EncodedBatch(padded, labels, tuple(len(line) for line in ids), tuple(len(line) > n for line in ids))
    notices = _notices(batch, batch, (EXTERNAL_PAD_ID,), n)
    batches = Batches(batch, batch, (EXTERNAL_PAD_ID,), notices)
    padding = padded != EXTERNAL_PAD_ID  # (B, N)
    source_padding = padding[:, None, None, :]  # (B, 1, 1, N)
    future = np.tril(np.ones((n, n), bool))  # (N, N)
    target = source_padding & future  # (B, 1, N, N)
    run_target = target if model.causal else np.broadcast_to(source_padding, target.shape)
    masks = Masks(source_padding, source_padding, future, target, source_padding, run_target)
    for mask in vars(masks).values():
        mask.flags.writeable = False
    return Inputs(batches, (), masks)


@functools.lru_cache(maxsize=4)
def prepared_inputs(config: LiveConfig, means_of: LiveConfig | None = None) -> Inputs:
    """Batches and masks of ``config``, cached: a page's forward pass and its Keras check (one rerun)
    share them. With heads mean-ablated, their means over the lines of ``means_of`` (None: ``config``'s own;
    `ablation_means`). ValueError on bad text or pads (not cached)."""
    if config.external:
        return encode_external(config)
    means = ablation_means(means_of or config) if config.ablate and config.ablation == "mean" else None
    batches, predictions = encode_trained(config, means) if config.trained else (encode_batches(config), ())
    with tf.device(resolve_device(config.device)):  # "cpu" means every op, the masks' too
        return Inputs(batches, predictions, make_masks(config, batches), means)


def ablation_means(config: LiveConfig) -> np.ndarray:
    """Mean-ablation's means for ``config``'s model: each head's context averaged over the real (not padding) query
    positions of ``config``'s lines, in the model without ablation (a trained model's target: ``<s>`` + its own
    prediction), ``(stacks, L, H, d_v)`` float32 (`transformer.core.ablation.head_means`). Computed once per
    model and lines: which lines a page runs, or how much padding, changes nothing."""
    return _clean_means(dataclasses.replace(config, ablate=(), ablation="zero"))


@functools.lru_cache(maxsize=8)
def _clean_means(clean: LiveConfig) -> np.ndarray:
    inputs = prepared_inputs(clean)
    batches, masks = inputs.batches, inputs.masks
    entry = MODELS.for_config(clean)
    with tf.device(entry.device):
        means = head_means(entry.model, batches.source.ids, batches.target.ids, masks.run_source, masks.run_target,
                           batches.pad_ids)
    means.flags.writeable = False
    return means


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
