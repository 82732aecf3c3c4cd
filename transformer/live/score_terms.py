"""Why a head attends: its scores on one line of a configuration, split by the parts of the residual stream
(`transformer.core.residual_parts`), on the same inputs and masks `run_live` draws."""

from __future__ import annotations

import tensorflow as tf

from transformer.core.residual_parts import ScoreTerms
from transformer.core.residual_parts import score_terms as model_score_terms
from transformer.live.config import LiveConfig
from transformer.live.model_cache import MODELS, ModelCache
from transformer.live.plan import plan_of, resolved


def score_terms(config: LiveConfig, stack: str, layer: int, head: int, line: int = 0, queries: tuple | None = None,
                cache: ModelCache = MODELS) -> ScoreTerms:
    """Head ``head`` of ``stack``'s layer ``layer`` on batch line ``line`` of ``config``: its scaled scores
    ``(N_q, N_k)`` and their terms ``(P_q, P_k, N_q, N_k)`` (`ScoreTerms`), for the query positions ``queries``
    (None: all); ValueError naming what does not exist or cannot be split (a model from outside, ablated heads)."""
    resolved(config).require_inside("The score is split")  # before its lines are read: nothing of it loads
    if config.ablate:
        raise ValueError("The score is split in the whole model: clear the ablated heads first. Received: "
                         f"{len(config.ablate)} heads ablated")
    if stack not in config.stacks:
        raise ValueError(f"A {config.architecture} model's stacks are {config.stacks}. Received: stack={stack!r}")
    plan = plan_of(config)
    rows = plan.rows((line,))
    entry = plan.model(cache)
    model = entry.model
    if not (isinstance(layer, int) and 0 <= layer < model.num_layers and isinstance(head, int)
            and 0 <= head < model.num_heads):
        raise ValueError(f"Layers run from 0 to {model.num_layers - 1} and heads from 0 to {model.num_heads - 1}. "
                         f"Received: layer={layer!r}, head={head!r}")
    with tf.device(entry.device):
        return model_score_terms(model, stack, layer, head, *plan.model_inputs(rows), queries=queries)
