"""Where the engine runs: GPU:0 when there is one (unless the caller forces the CPU), else CPU:0."""

from __future__ import annotations

import threading

import tensorflow as tf

DEVICE_CHOICES = ("auto", "cpu")

_setup_lock = threading.Lock()
_gpus: list | None = None


def visible_gpus() -> list:
    """Physical GPUs, with memory growth turned on once, before their first use.

    With no GPU (or ``CUDA_VISIBLE_DEVICES=-1``) this is an empty list.
    """
    global _gpus
    with _setup_lock:
        if _gpus is None:
            _gpus = tf.config.list_physical_devices("GPU")
            for gpu in _gpus:
                try:
                    tf.config.experimental.set_memory_growth(gpu, True)
                except RuntimeError:
                    pass  # the GPU was already initialised by an earlier computation
        return _gpus


def resolve_device(preference: str = "auto") -> str:
    """``"/GPU:0"`` for ``"auto"`` when a GPU is visible, otherwise ``"/CPU:0"``.

    Raises ValueError for a preference other than ``"auto"`` or ``"cpu"``.
    """
    if preference not in DEVICE_CHOICES:
        raise ValueError(f"device must be one of {DEVICE_CHOICES}. Received: device={preference!r}")
    return "/GPU:0" if preference == "auto" and visible_gpus() else "/CPU:0"


def device_label(device: str) -> str:
    """Human-readable name, e.g. ``"GPU:0 — NVIDIA H100"`` or ``"CPU"``."""
    if "GPU" not in device:
        return "CPU"
    gpus = visible_gpus()
    details = tf.config.experimental.get_device_details(gpus[0]) if gpus else {}
    name = details.get("device_name")
    return f"GPU:0 — {name}" if name else "GPU:0"
