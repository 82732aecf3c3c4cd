"""Validate once, into a plan: a configuration resolved to where its model comes from (`transformer.live.sources`),
the device it runs on and its lines as token ids with their masks (`Inputs`). What runs downstream (`run_live`, the
walkthrough, score terms, value norms, decoding) takes the plan and checks none of this again.

A plan is cached per configuration (a page's forward pass and its Keras check share one); a configuration that
cannot run raises ValueError naming the values, every time (nothing is cached then).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from transformer.core.ablation import head_means
from transformer.live.config import LiveConfig, validate
from transformer.live.inputs import Inputs, batch_rows, checked_lines
from transformer.live.model_cache import MODELS, CachedModel, ModelCache
from transformer.live.sources import ModelSource, source_of
from transformer.runtime.device import resolve_device


@dataclass(frozen=True)
class Resolved:
    """A configuration checked: its model's source, the device (``"/CPU:0"`` or ``"/GPU:0"``) and the ablated heads,
    ``((stack, layer, head), …)`` checked against the model (`transformer.core.ablation.check_ablation`)."""

    config: LiveConfig
    source: ModelSource
    device: str
    ablate: tuple

    @property
    def model_key(self) -> tuple:
        """The model cache's key of this configuration's model."""
        return self.source.model_key(self.config, self.device)

    def model(self, cache: ModelCache = MODELS) -> CachedModel:
        """The built model (random weights of the configuration's shape and seed, or the loaded one), from
        ``cache``. Call on the engine thread."""
        return cache.entry(self.model_key, self.config.seed, self.source.loader(self.device),
                           self.source.load_bytes)

    def require_inside(self, what: str) -> None:
        """ValueError unless the model runs as the lab's own (``what`` cannot be read from outside it)."""
        if not self.source.supports.inside:
            raise ValueError(f"{what} inside the lab's own models; a model from outside is read through its "
                             f"attention weights. Received: weights={self.config.weights!r}")


@dataclass(frozen=True)
class Plan(Resolved):
    """A `Resolved` configuration with its lines read: ``inputs`` (`Inputs`: the id batches, a trained model's
    predictions, the masks, mean-ablation's means)."""

    inputs: Inputs = None

    @property
    def batch(self) -> int:
        """B, the number of lines."""
        return self.inputs.batches.source.ids.shape[0]

    def rows(self, lines) -> tuple:
        """``lines`` as batch rows (None: all); ValueError naming a line that does not exist."""
        return checked_lines(lines, self.batch)

    def model_inputs(self, rows: tuple) -> list:
        """``(source ids, target ids, source mask, target mask)`` of ``rows`` as tensors, as the model runs them."""
        batches, masks = self.inputs.batches, self.inputs.masks
        return batch_rows(rows, batches.source.ids, batches.target.ids, masks.run_source, masks.run_target)


@functools.lru_cache(maxsize=8)
def resolved(config: LiveConfig) -> Resolved:
    """``config`` checked once: what every model shares (`validate`), then what its source asks (nothing loads)."""
    validate(config)
    source = source_of(config.weights)
    ablate = source.check(config)
    return Resolved(config, source, resolve_device(config.device), ablate)


@functools.lru_cache(maxsize=4)
def plan_of(config: LiveConfig, means_of: LiveConfig | None = None) -> Plan:
    """``config`` resolved and its lines read, cached. With heads mean-ablated, their means over the lines of
    ``means_of`` (None: ``config``'s own; `ablation_means`). ValueError naming what cannot run (not cached)."""
    checked = resolved(config)
    mean_ablated = config.ablate and config.ablation == "mean" and checked.source.supports.ablation
    means = ablation_means(means_of or config) if mean_ablated else None
    inputs = checked.source.encode(config, checked.device, checked.ablate, means)
    return Plan(config, checked.source, checked.device, checked.ablate, inputs)


def ablation_means(config: LiveConfig) -> np.ndarray:
    """Mean-ablation's means for ``config``'s model: each head's context averaged over the real (not padding) query
    positions of ``config``'s lines, in the model without ablation (a trained model's target: ``<s>`` + its own
    prediction), ``(stacks, L, H, d_v)`` float32 (`transformer.core.ablation.head_means`). Computed once per
    model and lines: which lines a page runs, or how much padding, changes nothing."""
    return _clean_means(dataclasses.replace(config, ablate=(), ablation="zero"))


@functools.lru_cache(maxsize=8)
def _clean_means(clean: LiveConfig) -> np.ndarray:
    plan = plan_of(clean)
    batches, masks = plan.inputs.batches, plan.inputs.masks
    entry = plan.model()
    with tf.device(entry.device):
        means = head_means(entry.model, batches.source.ids, batches.target.ids, masks.run_source, masks.run_target,
                           batches.pad_ids)
    means.flags.writeable = False
    return means
