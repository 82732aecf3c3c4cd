"""The one long-lived thread that owns TensorFlow, and the tracer that uses its idle time.

Streamlit runs every session's reruns on threads of their own; the cached models are shared
by all of them, so every engine call runs here and sessions' computations never interleave
on a model. Once no request has come for `TRACE_AFTER_IDLE_SECONDS`, the thread traces the
cached models' new functions, one at a time.
"""

from __future__ import annotations

import concurrent.futures
import functools
import threading
import time

TRACE_AFTER_IDLE_SECONDS = 1.0  # the engine traces new functions after this long without a request

_ENGINE_THREAD = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine")


class EngineStopped(RuntimeError):
    """The process is exiting: the engine thread takes no new work (its executor's exit hook has run; the main
    thread may still be waiting there for a computation to end)."""


def on_engine(thread: threading.Thread | None = None) -> bool:
    """Whether ``thread`` (None: this one) is the engine thread."""
    return (thread or threading.current_thread()).name.startswith("engine")


def on_engine_thread(function):
    """Run ``function`` on the engine thread (at once when already there). The wrapper says so (``on_engine``: a
    test finds every such call of the door and asks for its price)."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if on_engine():
            return function(*args, **kwargs)
        _IDLE_TRACER.busy()
        try:
            return _submit(function, *args, **kwargs).result()
        finally:
            _IDLE_TRACER.busy()
    wrapper.on_engine = True
    return wrapper


def _submit(function, *args, **kwargs) -> concurrent.futures.Future:
    """``function`` queued on the engine thread; `EngineStopped` once the process is exiting."""
    try:
        return _ENGINE_THREAD.submit(function, *args, **kwargs)
    except RuntimeError as refused:  # "cannot schedule new futures after (interpreter) shutdown"
        raise EngineStopped(str(refused)) from refused


def when_idle(work) -> None:
    """Have the engine call ``work()`` once no request has come for a while, again while it returns a true value
    (the model cache registers tracing one pending function)."""
    _IDLE_TRACER.work = work


class _IdleTracer:
    """Runs its ``work`` (tracing the cached models' new functions) on the engine thread once no request came for
    a while, one piece at a time.

    A request that arrives during a trace waits for that one trace (at most ~0.6 s at the sizes
    the app allows on 2 cores), not for every pending one; one that arrives before runs eagerly.
    """

    def __init__(self):
        self._last_use = time.monotonic()
        self._timer = None
        self._lock = threading.Lock()
        self.work = lambda: 0  # nothing to do until the model cache registers its tracing (when_idle)

    def busy(self) -> None:
        with self._lock:
            self._last_use = time.monotonic()
            if self._timer is None:
                self._arm(TRACE_AFTER_IDLE_SECONDS)

    def _arm(self, seconds: float) -> None:
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            waited = time.monotonic() - self._last_use
            if waited < TRACE_AFTER_IDLE_SECONDS:  # a request came meanwhile: wait the rest
                self._arm(TRACE_AFTER_IDLE_SECONDS - waited)
                return
            self._timer = None
        try:
            _submit(self._trace_one)
        except EngineStopped:  # nothing left to trace for
            pass

    def _trace_one(self) -> None:
        """Trace one function; if it was one of several, look again right away (still idle?)."""
        if self.work():
            with self._lock:
                if self._timer is None:
                    self._arm(0.0)


_IDLE_TRACER = _IdleTracer()
