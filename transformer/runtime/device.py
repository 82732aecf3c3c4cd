"""Where the engine runs: GPU:0 when there is one (unless the caller forces the CPU), else CPU:0.

`visible_gpus` runs when the engine is imported, before any TensorFlow op, whatever the first
request: memory growth on every GPU (else TensorFlow takes nearly all of its memory) and
TensorFloat-32 off (Ampere and newer would otherwise round matmul inputs to 10 bits, and the
live parity check with Keras, at 1e-4, would fail). Every computation a session starts runs
under ``tf.device(resolve_device(its choice))``.
"""

from __future__ import annotations

import functools
import logging
import shutil
import subprocess
import threading

import tensorflow as tf

DEVICE_CHOICES = ("auto", "cpu")
GPU_FIX = "start the app with `make run GPU=1`, which installs TensorFlow's CUDA libraries"

_LOGGER = logging.getLogger(__name__)
_setup_lock = threading.Lock()
_gpus: list | None = None


def visible_gpus() -> list:
    """Physical GPUs, prepared once (memory growth on, TensorFloat-32 off); [] with none."""
    global _gpus
    with _setup_lock:
        if _gpus is None:
            gpus = tf.config.list_physical_devices("GPU")
            for gpu in gpus:
                try:
                    tf.config.experimental.set_memory_growth(gpu, True)
                except RuntimeError as error:  # the runtime started before the engine was imported
                    _LOGGER.warning("Memory growth could not be set on %s: %s", gpu.name, error)
            if gpus:
                tf.config.experimental.enable_tensor_float_32_execution(False)
            _gpus = gpus
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


def memory_in_use(device: str) -> tuple[int, int | None] | None:
    """``(bytes in use by TensorFlow, bytes on the device or None)`` for a GPU; None for the CPU."""
    if "GPU" not in device or not visible_gpus():
        return None
    used = tf.config.experimental.get_memory_info("GPU:0")["current"]
    return used, _gpu_memory_total()


@functools.cache
def _gpu_memory_total() -> int | None:
    """GPU 0's memory in bytes, as the driver reports it (TensorFlow reports only what it uses)."""
    answer = _nvidia_smi("--query-gpu=memory.total", "--format=csv,noheader,nounits", "-i", "0")
    return int(answer.split()[0]) * 2**20 if answer.split() and answer.split()[0].isdigit() else None


def _nvidia_smi(*arguments: str) -> str:
    """What ``nvidia-smi arguments`` prints; "" without a driver."""
    if shutil.which("nvidia-smi") is None:
        return ""
    try:
        return subprocess.run(["nvidia-smi", *arguments], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


@functools.cache
def driver_gpus() -> tuple[str, ...]:
    """The GPUs the NVIDIA driver lists (``nvidia-smi -L``), whether or not TensorFlow can use them."""
    return tuple(line for line in _nvidia_smi("-L").splitlines() if line.startswith("GPU "))


@functools.cache
def missing_gpu_notice() -> str:
    """A sentence for the user when the driver lists a GPU that TensorFlow does not see; "" otherwise."""
    if not driver_gpus() or visible_gpus():
        return ""
    return (f"The NVIDIA driver lists {driver_gpus()[0].split(' (UUID')[0]}, but TensorFlow sees no GPU, "
            f"so the engine runs on the CPU: {GPU_FIX}.")
