"""A model from outside (a keras-hub preset or an uploaded file), as its source (`transformer.live.sources.External`)
reads and runs it: its lines in its tokenizer's pieces (`encode_outside`), its attention weights line by line
(`run_outside`) and its continuation of a prompt (`decode_outside`). Nothing inside it is opened or changed: the
lab's own model is not built for it."""

from __future__ import annotations

import time

import numpy as np
import tensorflow as tf

from transformer.core import tokens
from transformer.core.shape import ARCHITECTURE_STACKS
from transformer.decoding.search import Decoding, Step, check_settings, chooser
from transformer.external.registry import EXTERNAL
from transformer.live.config import LiveConfig
from transformer.live.inputs import Batches, Inputs, Masks, notices
from transformer.live.result import LiveResult
from transformer.runtime.device import device_label

OUTSIDE_STEPS = 8  # tokens a model from outside adds to its prompt, unless asked for another count

EXTERNAL_PAD = "<pad>"  # a model from outside runs each line at its own length: its padding is only drawn
EXTERNAL_PAD_ID = -1  # never one of its ids


def encode_outside(config: LiveConfig) -> Inputs:
    """A model from outside: each source line in its tokenizer's pieces (cut to ``seq_len``), the same lines on
    the target side (a causal model's one stack reads them there); padding is drawn, never run. Its masks are its
    own: padding, and the look-ahead mask for a causal model (the lab's switches and families do not apply)."""
    model = EXTERNAL.get(config.weights)
    if model.fixed_length is not None and config.seq_len < model.fixed_length:
        raise ValueError(f"{model.name} reads lines of exactly {model.fixed_length} tokens: the sequence length must "
                         f"be at least {model.fixed_length}. Received: seq_len={config.seq_len}")
    texts = tokens.text_lines(config.source_text, "source")
    ids = [model.token_ids(text) for text in texts]
    pieces = [model.pieces(line) for line in ids]
    n = config.seq_len
    padded = np.full((len(texts), n), EXTERNAL_PAD_ID, np.int32)  # (B, N)
    for row, line in enumerate(ids):
        padded[row, : min(len(line), n)] = line[:n]
    labels = tuple(tuple(line[:n]) + (EXTERNAL_PAD,) * max(0, n - len(line)) for line in pieces)
    batch = tokens.EncodedBatch(padded, labels, tuple(len(line) for line in ids), tuple(len(line) > n for line in ids))
    said = notices(batch, batch, (EXTERNAL_PAD_ID,), n)
    batches = Batches(batch, batch, (EXTERNAL_PAD_ID,), said)
    padding = padded != EXTERNAL_PAD_ID  # (B, N)
    source_padding = padding[:, None, None, :]  # (B, 1, 1, N)
    future = np.tril(np.ones((n, n), bool))  # (N, N)
    target = source_padding & future  # (B, 1, N, N)
    run_target = target if model.causal else np.broadcast_to(source_padding, target.shape)
    masks = Masks(source_padding, source_padding, future, target, source_padding, run_target)
    for mask in vars(masks).values():
        mask.flags.writeable = False
    return Inputs(batches, (), masks)


def outside_stack(config: LiveConfig, model) -> str:
    """A model from outside has one stack: "decoder" (causal) or "encoder"; ValueError when ``config``'s
    architecture says otherwise."""
    architecture = "decoder-only" if model.causal else "encoder-only"
    if config.architecture != architecture:
        raise ValueError(f"{model.name} is {'a causal language model' if model.causal else 'a bidirectional encoder'}:"
                         f" architecture={architecture!r}. Received: architecture={config.architecture!r}")
    return ARCHITECTURE_STACKS[architecture][0]


def run_outside(config: LiveConfig, inputs: Inputs, device: str, stacks: tuple, rows: tuple) -> LiveResult:
    """`run_live` for a model from outside (``inputs``: `encode_outside`'s): each line run at its own length, its
    weights placed in the padded ``(L, B', H, N, N)`` (zeros where padding is)."""
    model = EXTERNAL.get(config.weights)
    stack = outside_stack(config, model)
    batches, masks = inputs.batches, inputs.masks
    n = config.seq_len
    attention, started = {}, time.perf_counter()
    if stack in stacks:
        weights = np.zeros((model.num_layers, len(rows), model.num_heads, n, n), np.float32)  # (L, B', H, N, N)
        with tf.device(device):
            for index, row in enumerate(rows):
                kept = int((batches.source.ids[row] != EXTERNAL_PAD_ID).sum())
                weights[:, index, :, :kept, :kept] = model.weights_of_ids(batches.source.ids[row, :kept])
        attention[stack] = weights
    seconds = time.perf_counter() - started
    real = batches.source.ids != EXTERNAL_PAD_ID  # (B, N): padding is drawn, never run
    layer_masks = model.layer_masks(n)[:, None] & real[None, :, :, None] & real[None, :, None, :]  # (L, B, N, N)
    applied = {stack: layer_masks[0]}  # (B, N, N): the first layer's; `LiveResult.mask_of` gives each layer's
    hidden = model.hidden_size
    return LiveResult(
        config=config, source_tokens=batches.source.tokens, target_tokens=batches.target.tokens,
        source_ids=batches.source.ids, target_ids=batches.target.ids,
        source_truncated=batches.source.truncated, target_truncated=batches.target.truncated,
        pad_ids=batches.pad_ids, source_padding_mask=masks.source_padding, target_padding_mask=masks.target_padding,
        subsequent_mask=masks.future, target_mask=masks.target,
        positional_encoding=np.zeros((0, hidden), np.float32), attention=attention, applied_masks=applied,
        device=device, device_label=device_label(device), tf_version=tf.__version__,
        layers=model.num_layers, heads=model.num_heads, compute_seconds=seconds, traces=0, builds=0,
        notices=batches.notices, predictions=(), lines=rows, layer_masks={stack: layer_masks})


class _TokenizerVocabulary:
    """A model from outside's pieces as the Decode page reads a vocabulary (``decode(ids) -> tokens``)."""

    def __init__(self, model):
        self.decode = model.pieces


def decode_outside(config: LiveConfig, text: str, sample: bool, temperature: float, top_k: int, top_p: float,
                    seed: int, max_steps: int, device: str = "/CPU:0") -> Decoding:
    """A causal model from outside continues ``text`` for ``max_steps`` tokens, the whole model run on the prefix at
    each step (no key/value cache: ``cache`` is empty and ``cache_gap`` NaN)."""
    model = EXTERNAL.get(config.weights)
    if not model.causal:
        raise ValueError(f"{model.name} is a bidirectional encoder: it does not write text. Received: "
                         f"weights={config.weights!r}")
    check_settings(temperature, top_k, top_p, max_steps)
    prompt = [int(i) for i in model.token_ids(text)]
    choose, prefix, steps = chooser(sample, temperature, top_k, top_p, seed), list(prompt), []
    vocabulary = _TokenizerVocabulary(model)
    with tf.device(device):
        for _ in range(max_steps):
            logits, weights = model.logits_and_weights(prefix)  # (t, V), (L, H, t, t)
            probabilities, chosen = choose(logits[-1])
            steps.append(Step(tuple(vocabulary.decode(prefix)), weights[:, :, -1], None, probabilities,
                              vocabulary.decode([chosen])[0]))
            prefix.append(chosen)
    continuation = vocabulary.decode(prefix[len(prompt):])
    return Decoding(config.weights, (), tuple(steps), " ".join(continuation), None, (), 0, float("nan"), vocabulary,
                    model.num_layers, model.num_heads, device_label(device),
                    prompt=tuple(vocabulary.decode(prompt)), kv_heads=model.num_heads)
