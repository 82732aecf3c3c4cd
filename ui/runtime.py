"""Process-wide adjustments to how Streamlit runs this app."""

from __future__ import annotations

import gc
import logging

_LOGGER = logging.getLogger(__name__)


def keep_tensorflow_warm() -> bool:
    """Stop Streamlit from calling ``keras.backend.clear_session()`` after every rerun.

    Streamlit does that so scripts that build a Keras model on every run do not
    leak; this app builds each model once and caches it. The call also empties
    TensorFlow's kernel cache, so the next forward pass re-optimises its whole
    graph: about 230 ms on every slider move (measured on 2 CPU cores, where the
    forward pass itself takes 2–5 ms at the default size). Returns True when the
    hook was found and replaced.
    """
    try:
        from streamlit.runtime.scriptrunner import script_runner
    except ImportError:  # pragma: no cover - a Streamlit without this module
        return False
    if not hasattr(script_runner, "_clean_problem_modules"):
        _LOGGER.warning("Streamlit no longer has _clean_problem_modules; Keras sessions are cleared per rerun.")
        return False
    script_runner._clean_problem_modules = _keep_models
    return True


def _keep_models() -> None:
    """Replacement for Streamlit's per-rerun cleanup: nothing to clean, models are cached."""


_FROZEN = False


def freeze_startup_objects() -> bool:
    """Move every object alive now out of the garbage collector's sight, once per process.

    With TensorFlow, Keras, Plotly and Streamlit loaded there are ~370,000 long-lived
    objects, and each full (generation 2) collection walks all of them: ~120 ms with the
    GIL held, so whichever session triggered it waited (the load test's tail latency).
    `gc.freeze` keeps them out of later collections; newer objects are collected as
    usual. Returns True on the call that froze.
    """
    global _FROZEN
    if _FROZEN:
        return False
    import plotly.graph_objects  # noqa: F401, PLC0415  (the pages' heaviest import, frozen with the rest)

    # No gc.collect() first: after these imports it finds nothing to free (0 objects) and takes ~0.2 s of a
    # cold start's first page.
    gc.freeze()
    _FROZEN = True
    return True
