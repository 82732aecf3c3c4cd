"""`make run`: Streamlit's own `streamlit run app.py [options]`, with the engine imported meanwhile.

TensorFlow and Keras take ~5 s to import on 2 CPU cores; ``ui.preload`` imports them while the
server starts, so the first page waits only for what is left of that (see ``ui/preload.py``).
Two more things keep a cold start's first chart early: Streamlit's direct-execution check is
answered before the import starts, and Plotly.js is served without gzip (see each function).
"""

import sys
from pathlib import Path

APP = Path(__file__).resolve().parent / "app.py"


def main(options: list[str]) -> None:
    from streamlit.web import cli  # noqa: PLC0415  (first: the preload thread never imports Streamlit's modules)

    from ui import preload  # noqa: PLC0415

    skip_the_direct_execution_check()
    preload.start()
    serve_app_static_uncompressed()
    cli.main(args=["run", str(APP), *options], prog_name="streamlit")


def skip_the_direct_execution_check() -> None:
    """Streamlit's once-per-process check for "run with `python`, not `streamlit run`", made before it costs.

    The first element a process sends (the early Plotly.js loader) runs that check, and it calls
    ``inspect.stack()``, which resolves the file of every loaded module: 0.7-0.9 s on a cold start, while
    TensorFlow's import adds modules and holds the GIL, all of it before the browser may fetch Plotly.js.
    This server always runs the app with ``streamlit run``, so the check's answer is known: no warning.
    """
    from streamlit import delta_generator  # noqa: PLC0415

    if hasattr(delta_generator, "_use_warning_has_been_displayed"):
        delta_generator._use_warning_has_been_displayed = True


def serve_app_static_uncompressed() -> None:
    """Serve ``/app/static/`` (Plotly.js) as it is, as Streamlit serves its own ``/static/`` bundles.

    Streamlit's gzip middleware compresses every response outside ``/static/`` on every request:
    ~0.16 s of server CPU for Plotly.js's 4.6 MB on an idle server, 0.7-1.2 s during a cold start's
    TensorFlow import, all of it on the first chart's critical path. Streamlit's reasons for not
    compressing its own bundles (see its ``_should_bypass_gzip``) hold for this one too.
    If a later Streamlit has no such function, responses stay compressed (tests/test_serve.py fails).
    """
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


if __name__ == "__main__":
    main(sys.argv[1:])
