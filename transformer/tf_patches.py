"""Every use of TensorFlow's private internals in the engine, in one place.

| patch | what it touches | why (measured) | if TensorFlow changes it | guarded by |
| --- | --- | --- | --- | --- |
| `quiet_retracing_warning` | ``tf.function``'s ``_omit_frequent_tracing_warning`` | six architectures traced once each read as "retracing" in the server's log (the warning keys on the shared traced code) | the warning comes back in the log; nothing else | tests/test_live.py::test_model_functions_that_each_trace_once_raise_no_retracing_warning |
| `clear_kernel_cache` | ``tensorflow.python.eager.context.context().clear_kernel_cache()`` | every architecture a user tried kept ~7 MB of kernels for good (BENCHMARKS.md, churn test) | the server's memory grows with each architecture tried | tests/test_live.py::test_tensorflow_still_has_the_private_calls_the_engine_uses |

Nothing else in ``transformer/`` reaches below TensorFlow's public API.
"""

from __future__ import annotations


def quiet_retracing_warning(function) -> None:
    """Keep TensorFlow's "N of the last N calls triggered retracing" warning off one ``tf.function``: each
    `ModelFunction` traces once and counts its traces itself."""
    function._omit_frequent_tracing_warning = True


def clear_kernel_cache() -> None:
    """Drop the kernels TensorFlow made for every op and traced graph run so far (no public API does)."""
    from tensorflow.python.eager import context  # noqa: PLC0415  (private; imported only when used)

    context.context().clear_kernel_cache()
