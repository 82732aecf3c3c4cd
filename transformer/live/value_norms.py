"""How much each head moves, on the inputs and masks `run_live` draws: the value-weighted norms
(`transformer.core.value_norms`) of a configuration's lines."""

from __future__ import annotations

import tensorflow as tf

from transformer.core.blockwise import FULL_ATTENTION_MAX
from transformer.core.model import STACKS
from transformer.core.value_norms import value_weighted_norms
from transformer.live.config import LiveConfig, validate
from transformer.live.inputs import batch_rows, checked_lines, prepared_inputs
from transformer.live.model_cache import MODELS, ModelCache


def value_norms(config: LiveConfig, cache: ModelCache = MODELS, *, stacks=STACKS, lines=None) -> dict:
    """``{stack: (L, B', H, N_q, N_k)}`` of ``‖α_ij · f_h(x_j)‖`` for the ``stacks`` (of those the architecture has)
    and ``lines`` (None: all) of ``config``; ValueError naming what cannot be measured (a model from outside,
    ablated heads, a block-wise length)."""
    validate(config)
    if config.external:
        raise ValueError("Value norms are read inside the lab's own models; a model from outside is read through its "
                         f"attention weights. Received: weights={config.weights!r}")
    if config.ablate:
        raise ValueError(f"Value norms are measured in the whole model: clear the ablated heads first. Received: "
                         f"{len(config.ablate)} heads ablated")
    if config.seq_len > FULL_ATTENTION_MAX:
        raise ValueError(f"Value norms need whole maps: up to N = {FULL_ATTENTION_MAX}. Received: "
                         f"seq_len={config.seq_len}")
    stacks = tuple(stack for stack in config.stacks if stack in stacks)
    inputs = prepared_inputs(config)
    rows = checked_lines(lines, inputs.batches.source.ids.shape[0])
    entry = cache.for_config(config)
    masks = inputs.masks
    with tf.device(entry.device):
        model_inputs = batch_rows(rows, inputs.batches.source.ids, inputs.batches.target.ids, masks.run_source,
                                  masks.run_target)
        return value_weighted_norms(entry.model, stacks, *model_inputs)[0]
