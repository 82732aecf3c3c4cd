"""TensorFlow, Keras and Plotly imported in a background thread while the server starts (`make run`).

Importing them takes ~5 s on 2 CPU cores, and Streamlit runs ``app.py`` (which imports them)
only when the first browser connects. ``serve.py`` calls :func:`start` once Streamlit itself is
imported. ``app.py`` does only TensorFlow-free work before it calls :func:`wait`, so only one
thread ever imports these modules (two threads importing modules that import each other can
deadlock). Without :func:`start` (AppTest, ``streamlit run app.py``) :func:`wait` returns at once. On a GPU the same
thread then runs the default model once (`transformer.service.warm_up_device`), after :func:`wait` returns.

TensorFlow's C++ start-up lines (oneDNN, cpu_feature_guard, cuInit, …) stay out of the console
unless ``TF_CPP_MIN_LOG_LEVEL`` is set; one line then says which device the engine uses.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
import threading

_done = threading.Event()
_started = threading.Event()

# What TensorFlow's native code prints while it starts, on a machine with or without a GPU.
START_UP_NOISE = (
    "All log messages before absl::InitializeLog", "cudart_stub.cc", "cuda_platform.cc", "failed call to cuInit",
    "cpu_feature_guard.cc", "oneDNN custom operations", "This TensorFlow binary is optimized",
    "rebuild TensorFlow with the appropriate compiler flags", "Unable to register cu", "computation_placer.cc",
    "TF-TRT Warning", "cuda_executor.cc", "cuda_dnn.cc", "cuda_blas.cc", "cuda_fft.cc",
)


@contextlib.contextmanager
def quiet_native_start():
    """Within the block, what the process writes to stderr (file descriptor 2, where TensorFlow's C++
    logs before its logger is set up) is held back, then passed on without the start-up noise.

    Does nothing when the user set ``TF_CPP_MIN_LOG_LEVEL``: then TensorFlow logs as it was asked to.
    """
    if "TF_CPP_MIN_LOG_LEVEL" in os.environ:
        yield
        return
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "1"  # no INFO lines once TensorFlow's logger is up
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            kept = [line for line in held.read().decode(errors="replace").splitlines(keepends=True)
                    if not any(noise in line for noise in START_UP_NOISE)]
            sys.stderr.write("".join(kept))
            sys.stderr.flush()


def _import_engine() -> None:
    try:
        with quiet_native_start():
            import plotly.graph_objects  # noqa: F401  (the pages' other heavy import)

            from transformer import service  # TensorFlow, Keras and the engine

            label = service.device_label(service.resolve_device("auto"))  # lists the GPUs: cuInit speaks here
        print(f"Attention Lab: the engine runs on {label} (TensorFlow {service.TF_VERSION}).", flush=True)
        if service.missing_gpu_notice():  # once, in the server's log; every page shows it too (app.py)
            print(f"Attention Lab: {service.missing_gpu_notice()}", flush=True)
    finally:  # on an import error the app's own import raises it, with the usual message
        _done.set()
    _warm_up()


THREAD = "preload-engine"


class _NoPageHere(logging.Filter):
    """Drops Streamlit's "missing ScriptRunContext" warning for this thread alone: its calls of the pages' cached
    functions (`_warm_up`) run with no page on purpose, and `make run` prints no warning at start."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.threadName == THREAD and "missing ScriptRunContext" in record.getMessage())


def _warm_up() -> None:
    """Compute what a page's first visit would otherwise wait for: Home's run (the dates model reading today's date),
    the engine's speed that prices every request (`transformer.live.calibration`), then the Dot-product lab's
    experiment; on a GPU, launch the default model's kernels once now (4–5 s on an H200)
    rather than at the first request."""
    from transformer import service
    from ui import data

    try:
        data.warm_home()  # first: a server's first visit is usually Home's
        rate = service.calibrate()  # the engine seconds every request's price is read in (about 1 s)
        print(f"Attention Lab: the engine computes {rate.gflops:,.0f} GFLOP/s, {rate.call_seconds * 1000:,.0f} ms a "
              "model call, on this machine.", flush=True)
        data.scaling_experiment()
        device = service.warm_up_device()
    except service.EngineStopped:  # the server is stopping (Ctrl-C, a replica's restart): nothing to warm up for
        return
    except Exception as error:  # noqa: BLE001  (a failed warm-up costs only time: the first request retries)
        print(f"Attention Lab: warming up failed ({error}); the first request pays for it.", flush=True)
        return
    if device:
        print(f"Attention Lab: the GPU's kernels are warm ({service.device_label(device)}).", flush=True)


def start() -> None:
    """Begin the imports in a daemon thread (once)."""
    if not _started.is_set():
        _started.set()
        logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(_NoPageHere())
        threading.Thread(target=_import_engine, name=THREAD, daemon=True).start()


def wait(timeout: float = 300.0) -> bool:
    """Until the background imports have finished, if they were started; True when none is pending."""
    return _done.wait(timeout) if _started.is_set() else True
