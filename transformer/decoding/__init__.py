"""Decoding, the one place it is written: greedy and sampled (temperature, top-k, top-p), whole-model and cached.

`search`: the algorithms on a model (training's evaluation, a trained model's predictions, the step-by-step run);
`live`: a `LiveConfig`'s model decoded for the Decode page (`decode`), and `cache_gap`, the cache's check for any
option. The names below load their module on first use: the live inputs import `search` (a trained model's
predictions), and `live` runs on the live engine, above them; this package imports neither itself.
"""

import importlib

_HOMES = {
    "search": ("MAX_TOP_K", "Decoding", "Step", "greedy_decode", "next_token_distribution", "predictions", "strip",
               "translate"),
    "live": ("PROMPT_STEPS", "cache_gap", "decode"),
}


def __getattr__(name):
    for module, names in _HOMES.items():
        if name in names:
            return getattr(importlib.import_module(f"transformer.decoding.{module}"), name)
    raise AttributeError(f"module 'transformer.decoding' has no attribute {name!r}")


__all__ = [name for names in _HOMES.values() for name in names]
