"""Decoding, the one place it is written: greedy and sampled (temperature, top-k, top-p), whole-model and cached,
on a model given (`search`). A trained model's answers are `transformer.training.answers`'; a `LiveConfig`'s model
decoded for the Decode page is `transformer.live.decode`'s."""

from transformer.decoding.search import (
    MAX_TOP_K,
    Decoding,
    Step,
    check_settings,
    chooser,
    greedy_decode,
    next_token_distribution,
    run_steps,
    strip,
)

__all__ = ["MAX_TOP_K", "Decoding", "Step", "check_settings", "chooser", "greedy_decode", "next_token_distribution",
           "run_steps", "strip"]
