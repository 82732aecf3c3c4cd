"""Every use of Streamlit's private internals, server and browser side, in one place.

| patch | what it touches | why (measured) | if Streamlit changes it | guarded by |
| --- | --- | --- | --- | --- |
| `keep_tensorflow_warm` | ``script_runner._clean_problem_modules`` | it calls ``keras.backend.clear_session()`` after every rerun, which empties TensorFlow's kernel cache: ~230 ms on every slider move | Keras sessions are cleared per rerun again (a warning in the log); moves get slow | tests/app/test_app.py::test_streamlit_no_longer_clears_the_keras_session_after_each_rerun |
| `skip_the_direct_execution_check` | ``delta_generator._use_warning_has_been_displayed`` | its ``inspect.stack()`` took 0.7-0.9 s of a cold start, before Plotly.js could load | the check runs again: a slower cold start, no error | tests/unit/test_streamlit_patches.py::test_the_direct_execution_check_is_answered_before_the_first_element |
| `serve_app_static_uncompressed` | ``starlette_gzip_middleware._should_bypass_gzip`` | gzip of Plotly.js's 4.6 MB cost 0.16 s of CPU per request, 0.7-1.2 s during a cold start | Plotly.js is compressed again: a slower first chart | tests/unit/test_streamlit_patches.py::test_app_static_files_skip_gzip_and_everything_else_keeps_it |
| `widget_module_urls` | the names of Streamlit's built code chunks (``static/static/js/Slider.<hash>.js``) | the sidebar's widget code was fetched only after the TensorFlow import on a cold start | the early loader preloads nothing: a slower first sidebar | tests/unit/test_chart.py::test_the_preloaded_widget_modules_are_the_ones_streamlit_imports_lazily |
| ``frontend/stale_fade.css`` + ``fadeSlowRuns`` | the stale elements' CSS (``.stElementContainer[data-stale]``) | a pending fade gave ~35 elements a compositing layer on every move of the Masks page | short reruns fade again (no error) | tests/browser/test_browser.py::test_a_slow_rerun_still_fades_the_stale_elements |
| ``frontend/streamlit_patches.js`` ``replaceQueryChanges`` | ``history.pushState``, which Streamlit calls for each new address | every slider move was a history entry; Back stepped through them one by one | Back steps through moves again | tests/browser/test_browser.py::test_slider_moves_replace_the_link_and_back_goes_to_the_previous_page |
| ``frontend/streamlit_patches.js`` ``sameSessionLinks`` | Streamlit's Markdown links (``target=_blank``) and its sidebar's page links (``[data-testid=stSidebarNav] a``) | a term's Glossary link opened a new tab and a new session each time (74 s for a lesson's first page under load) | a link opens a new tab again | tests/browser/test_browser.py::test_a_terms_glossary_link_opens_in_this_tab_and_session_at_its_entry |
| ``runner.postScriptGC = false`` (.streamlit/config.toml) | a hidden config option | Streamlit's ``gc.collect(2)`` after every rerun held the GIL ~100 ms with TensorFlow loaded | full collections after each rerun again | tests/app/test_reliability.py::test_security_and_runner_settings_are_in_effect |

Each function is idempotent and does nothing (or logs once) when Streamlit no longer has what it patches.
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path

import streamlit as st

_LOGGER = logging.getLogger(__name__)

# Streamlit's frontend loads each widget's code the first time one is drawn. The sidebar's widgets (and
# the pages' toggles and download buttons) are drawn only after the TensorFlow import on a cold start.
PRELOADED_WIDGETS = ("Selectbox", "Slider", "NumberInput", "TextInput", "TextArea", "Radio", "Checkbox",
                     "DownloadButton")
STREAMLIT_JS_DIR = Path(st.__file__).parent / "static" / "static" / "js"


def keep_tensorflow_warm() -> bool:
    """Stop Streamlit from calling ``keras.backend.clear_session()`` after every rerun (this app builds
    each model once and caches it). Returns True when the hook was found and replaced."""
    try:
        from streamlit.runtime.scriptrunner import script_runner  # noqa: PLC0415
    except ImportError:  # pragma: no cover - a Streamlit without this module
        return False
    if not hasattr(script_runner, "_clean_problem_modules"):
        _LOGGER.warning("Streamlit no longer has _clean_problem_modules; Keras sessions are cleared per rerun.")
        return False
    script_runner._clean_problem_modules = _keep_models
    return True


def _keep_models() -> None:
    """Replacement for Streamlit's per-rerun cleanup: nothing to clean, models are cached."""


def skip_the_direct_execution_check() -> None:
    """Answer Streamlit's once-per-process "run with `streamlit run`, not `python`" check before it costs:
    this server always runs the app with ``streamlit run``."""
    from streamlit import delta_generator  # noqa: PLC0415

    if hasattr(delta_generator, "_use_warning_has_been_displayed"):
        delta_generator._use_warning_has_been_displayed = True


def serve_app_static_uncompressed() -> None:
    """Serve ``/app/static/`` (Plotly.js) uncompressed, as Streamlit serves its own ``/static/`` bundles
    (Streamlit's reasons, in its ``_should_bypass_gzip``, hold for this one too)."""
    try:
        from streamlit.web.server.starlette import starlette_gzip_middleware as gzip  # noqa: PLC0415
    except ImportError:  # pragma: no cover - a Streamlit without this server
        return
    streamlit_bypass = getattr(gzip, "_should_bypass_gzip", None)
    if streamlit_bypass is None or getattr(streamlit_bypass, "serves_app_static", False):
        return

    def bypass(path: str, base_url: str = "") -> bool:
        return streamlit_bypass(path, base_url) or gzip._strip_base_url(path, base_url).startswith("/app/static/")

    bypass.serves_app_static = True
    gzip._should_bypass_gzip = bypass


@functools.cache
def widget_module_urls(prefix: str, js_dir: Path = STREAMLIT_JS_DIR) -> tuple[str, ...]:
    """URLs (under ``prefix``, the served ``/static/js/``) of the installed Streamlit's code chunks for
    :data:`PRELOADED_WIDGETS` (``Slider.<hash>.js``)."""
    files = sorted(os.listdir(js_dir))  # one directory read
    return tuple(prefix + name for widget in PRELOADED_WIDGETS for name in files
                 if name.startswith(f"{widget}.") and name.endswith(".js") and name.count(".") == 2)
