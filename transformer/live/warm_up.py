"""A GPU's kernels launched once at start, so that the first user does not wait for them.

On an H200 with TensorFlow 2.21's wheel a fresh process's first run of the default model took 4.0–4.7 s against
0.2 s on the CPU: the first launch of each elementwise kernel costs 0.1–1.2 s (docs/gpu.md). `ui.preload` calls
`warm_up_device` in the background once the engine is imported.
"""

from __future__ import annotations

import threading

from transformer.live.config import LiveConfig
from transformer.live.model_cache import MODELS, ModelCache
from transformer.live.run import run_live
from transformer.runtime.device import resolve_device

_warmed = threading.Event()


def warm_up_device(cache: ModelCache = MODELS) -> str | None:
    """Run the default model once on the GPU, if "auto" picks one and it has not been warmed: its device, else
    None (the CPU's first run costs ~0.2 s: nothing to warm)."""
    device = resolve_device("auto")
    if "GPU" not in device or _warmed.is_set():
        return None
    _warmed.set()
    run_live(LiveConfig(device="auto"), cache)  # on the engine thread; the shared cache keeps the model
    return device
