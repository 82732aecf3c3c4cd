"""How much each head moves, on the inputs and masks `run_live` draws: the value-weighted norms
(`transformer.core.value_norms`) of a configuration's lines."""

from __future__ import annotations

import tensorflow as tf

from transformer.core.blockwise import FULL_ATTENTION_MAX
from transformer.core.shape import STACKS
from transformer.core.value_norms import value_weighted_norms
from transformer.live.config import LiveConfig
from transformer.live.model_cache import MODELS, ModelCache
from transformer.live.plan import plan_of, resolved


def value_norms(config: LiveConfig, cache: ModelCache = MODELS, *, stacks=STACKS, lines=None) -> dict:
    """``{stack: (L, B', H, N_q, N_k)}`` of ``‖α_ij · f_h(x_j)‖`` for the ``stacks`` (of those the architecture has)
    and ``lines`` (None: all) of ``config``; ValueError naming what cannot be measured (a model from outside,
    ablated heads, a block-wise length)."""
    resolved(config).require_inside("Value norms are read")  # before its lines are read: nothing of it loads
    if config.ablate:
        raise ValueError(f"Value norms are measured in the whole model: clear the ablated heads first. Received: "
                         f"{len(config.ablate)} heads ablated")
    if config.seq_len > FULL_ATTENTION_MAX:
        raise ValueError(f"Value norms need whole maps: up to N = {FULL_ATTENTION_MAX}. Received: "
                         f"seq_len={config.seq_len}")
    stacks = tuple(stack for stack in config.stacks if stack in stacks)
    plan = plan_of(config)
    rows = plan.rows(lines)
    entry = plan.model(cache)
    with tf.device(entry.device):
        return value_weighted_norms(entry.model, stacks, *plan.model_inputs(rows))[0]
