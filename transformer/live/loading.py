"""Loading a model whose loading is long (a real language model's file: `ModelSource.load_seconds`) into this
process's model cache, as its own priced call: the pages load it after a press that says what it costs, so that no
page's move waits for it unannounced."""

from __future__ import annotations

from transformer.live.model_cache import MODELS
from transformer.live.sources import source_of
from transformer.runtime.device import resolve_device
from transformer.runtime.freed_memory import give_back_freed_memory


def needs_loading(weights: str, device: str = "auto") -> bool:
    """Whether ``weights``' model must be loaded (`load_model`) before it runs on ``device`` here."""
    return not source_of(weights).loaded(resolve_device(device))


def load_model(weights: str, device: str = "auto") -> bool:
    """``weights``' model read and built into this process's model cache on ``device`` (nothing for one that loads
    as it runs), and the attention functions its pages run traced (`ModelSource.traced_on_load`: the trace is
    part of the priced load, not an unpriced wait on the idle engine); True once it is held."""
    source, resolved = source_of(weights), resolve_device(device)
    loader = source.loader(resolved)
    if loader is not None and source.load_seconds:
        entry = MODELS.entry(source.model_key(None, resolved), load=loader, load_bytes=source.load_bytes)
        for stacks in source.traced_on_load:
            entry.attention_function(stacks).trace()
        give_back_freed_memory()  # what tracing let go (~53 MB for SmolLM2)
    return True
