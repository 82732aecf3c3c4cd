"""The model the session's fields describe: the engine configuration the pages run (`live_config`), and what
the chosen model fixes (a trained model's architecture, norm, positions and masks; a model from outside's one
stack)."""

from __future__ import annotations

import dataclasses

from transformer.service import LiveConfig, ModelShape, ModelSource, Supports, source_of
from ui import link_values, state


def source(weights: str | None = None) -> ModelSource:
    """Where the model ``weights`` names (the sidebar's when None) comes from (`transformer.service.source_of`): ask it
    what the model supports."""
    return source_of(state.current_values()["weights"] if weights is None else weights)


def supports(weights: str | None = None) -> Supports:
    """What the model ``weights`` names (the sidebar's when None) can do here: the UI asks this, never the
    source's type (`transformer.service.Supports`: its shape the sidebar's, its own masks, its own tokens, …)."""
    return source(weights).supports


def architecture() -> str:
    """The architecture the pages draw: the sidebar's, a trained model's own, or a model from outside's (its one
    stack: the sidebar reads it when the model is chosen)."""
    values = state.current_values()
    if supports(values["weights"]).outside:
        return state.get(state.EXTERNAL_ARCHITECTURES, {}).get(values["weights"], values["arch"])
    return state.trained_options(values["weights"]).get("arch", values["arch"])


def own_shape_options(weights: str) -> dict:
    """`ModelShape`'s keyword arguments of a model whose sizes are its own (a trained model's spec, a real model's
    file): the configuration carries the sizes it runs with, whatever the sidebar's fields hold; {} else. Its
    architecture, norm and positions stay the fields' (a link asking for others is told the model's)."""
    own = source(weights).own_shape()
    if own is None:
        return {}
    return {**state.shape_options(state.current_values()),
            **{name: getattr(own, name) for name in OWN_SIZES}}


OWN_SIZES = tuple(field.name for field in dataclasses.fields(ModelShape)
                  if field.name not in ("architecture", "norm", "positions"))


TRAINED_MASKS = dict(mask_family="paper", padding_masks=True, look_ahead_mask=True)  # a trained model's own masks


def live_config(**overrides) -> LiveConfig:
    """The engine configuration the sidebar describes (pages may override mask toggles). A trained model runs with
    the masks it was trained with, whatever the Masks page or a page's switches say (they show it locked)."""
    values = state.current_values()
    shape = own_shape_options(values["weights"]) or state.shape_options(values)
    config = LiveConfig(
        **{**shape, "architecture": architecture() if supports(values["weights"]).outside
           else shape["architecture"]},
        seq_len=values["seq_len"], pad_symbols=state.pad_symbols(values["pads"]), source_text=values["src"],
        target_text=values["tgt"], seed=values["seed"], device=values["device"], weights=values["weights"],
        mask_family=values["mask_family"], mask_size=values["mask_size"],
        ablate=tuple(link_values.head_triple(code) for code in values["ablate"]), ablation=values["ablation"],
    )
    own_masks = TRAINED_MASKS if supports(values["weights"]).own_masks else {}  # locked as it runs
    return LiveConfig(**{**config.__dict__, **overrides, **own_masks})
