"""TensorFlow, Keras and Plotly imported in a background thread while the server starts (`make run`).

Importing them takes ~5 s on 2 CPU cores, and Streamlit runs ``app.py`` (which imports them)
only when the first browser connects. ``serve.py`` calls :func:`start` once Streamlit itself is
imported. ``app.py`` does only TensorFlow-free work before it calls :func:`wait` (its early
Plotly.js loader, from ``ui.chart``, whose imports Streamlit has already made), so only one thread
ever imports these modules (two threads importing modules that import each other can deadlock or
see a half-initialised module). Without :func:`start` (AppTest, ``streamlit run app.py``) :func:`wait`
returns at once. This module imports nothing heavy itself.
"""

from __future__ import annotations

import threading

_done = threading.Event()
_started = threading.Event()


def _import_engine() -> None:
    try:
        import plotly.graph_objects  # noqa: F401, PLC0415  (the pages' other heavy import)

        import transformer  # noqa: F401, PLC0415  (TensorFlow, Keras and the engine)
    finally:  # on an import error the app's own import raises it, with the usual message
        _done.set()


def start() -> None:
    """Begin the imports in a daemon thread (once)."""
    if not _started.is_set():
        _started.set()
        threading.Thread(target=_import_engine, name="preload-engine", daemon=True).start()


def wait(timeout: float = 300.0) -> bool:
    """Until the background imports have finished, if they were started; True when none is pending."""
    return _done.wait(timeout) if _started.is_set() else True
