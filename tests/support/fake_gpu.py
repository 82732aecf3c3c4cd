"""A GPU that TensorFlow believes in, for tests on machines without one (run in a fresh process).

`install()` fakes device discovery before the engine is imported: one physical GPU named
"NVIDIA Fake A100", memory growth and TensorFloat-32 recorded in ``EVENTS`` with whether the
runtime had started, and memory info. TensorFlow's soft placement then runs ``/GPU:0`` work on
the CPU. `record_scopes()` wraps ``tf.device`` and a few ops to record, for every op, the
innermost ``tf.device`` scope it ran under (``OPS``).
"""

from __future__ import annotations

import tensorflow as tf
from tensorflow.python.eager import context

NAME = "NVIDIA Fake A100"
EVENTS: list = []  # ("growth" | "tf32", runtime started?, value)
OPS: list = []  # (op name, innermost tf.device scope or None)
_SCOPES: list = []


def install() -> None:
    fake = tf.config.PhysicalDevice(name="/physical_device:GPU:0", device_type="GPU")
    real_list = tf.config.list_physical_devices

    def started() -> bool:
        return context.context()._context_handle is not None

    tf.config.list_physical_devices = lambda kind=None: [fake] if kind == "GPU" else real_list(kind)
    tf.config.experimental.set_memory_growth = lambda device, on: EVENTS.append(("growth", started(), on))
    tf.config.experimental.enable_tensor_float_32_execution = lambda on: EVENTS.append(("tf32", started(), on))
    tf.config.experimental.get_device_details = lambda device: {"device_name": NAME}
    tf.config.experimental.get_memory_info = lambda device: {"current": 300 * 2**20, "peak": 400 * 2**20}


class _Scope:
    def __init__(self, name):
        self.name, self._inner = name, _real_device(name)

    def __enter__(self):
        _SCOPES.append(self.name)
        return self._inner.__enter__()

    def __exit__(self, *exc):
        _SCOPES.pop()
        return self._inner.__exit__(*exc)


_real_device = tf.device


def record_scopes(op_names=("matmul", "sin", "logical_and")) -> None:
    tf.device = _Scope
    for name in op_names:
        real = getattr(tf, name)

        def recorded(*args, _real=real, _name=name, **kwargs):
            OPS.append((_name, _SCOPES[-1] if _SCOPES else None))
            return _real(*args, **kwargs)

        setattr(tf, name, recorded)
