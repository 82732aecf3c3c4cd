"""The Streamlit patches (ui/streamlit_patches.py), checked against the installed Streamlit."""

from ui import streamlit_patches


def test_the_direct_execution_check_is_answered_before_the_first_element(monkeypatch):
    """Streamlit's first element of a process walks the call stack (every loaded module's file) to ask
    whether it runs in a REPL; serve.py answers that check up front."""
    from streamlit import delta_generator, env_util

    stack_walks = []
    monkeypatch.setattr(env_util, "is_repl", lambda: stack_walks.append("walked") or False)
    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", False)
    delta_generator._maybe_print_use_warning()
    assert stack_walks == ["walked"]  # this Streamlit still makes the check on the first element

    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", False)
    streamlit_patches.skip_the_direct_execution_check()
    delta_generator._maybe_print_use_warning()
    assert stack_walks == ["walked"]  # not again


def test_app_static_files_skip_gzip_and_everything_else_keeps_it(monkeypatch):
    from streamlit.web.server.starlette import starlette_gzip_middleware as gzip

    monkeypatch.setattr(gzip, "_should_bypass_gzip", gzip._should_bypass_gzip)  # undone after the test
    assert not gzip._should_bypass_gzip("/app/static/plotly.min.js")  # Streamlit alone compresses it
    streamlit_patches.serve_app_static_uncompressed()
    streamlit_patches.serve_app_static_uncompressed()  # idempotent: wraps once
    assert gzip._should_bypass_gzip("/app/static/plotly.min.js")
    assert gzip._should_bypass_gzip("/lab/app/static/plotly.min.js", "/lab/")  # under server.baseUrlPath
    assert gzip._should_bypass_gzip("/static/js/index.js")  # Streamlit's own rule still applies
    assert not gzip._should_bypass_gzip("/_stcore/host-config")
    assert not gzip._should_bypass_gzip("/media/some.csv")
    assert not gzip._should_bypass_gzip("/appstatic/plotly.min.js")
