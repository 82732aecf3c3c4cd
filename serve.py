"""`make run`: Streamlit's own `streamlit run app.py [options]`, with the engine imported meanwhile.

TensorFlow and Keras take ~5 s to import on 2 CPU cores; ``ui.preload`` imports them while the
server starts, so the first page waits only for what is left of that (see ``ui/preload.py``).
Two Streamlit patches keep a cold start's first chart early: the direct-execution check is
answered before the import starts, and Plotly.js is served without gzip (ui/streamlit_patches.py).
"""

import math
import os
import sys
from pathlib import Path

APP = Path(__file__).resolve().parent / "app.py"


def main(options: list[str]) -> None:
    from streamlit.web import cli  # noqa: PLC0415  (first: the preload thread never imports Streamlit's modules)

    from ui import preload, streamlit_patches  # noqa: PLC0415

    streamlit_patches.skip_the_direct_execution_check()
    preload.start()
    streamlit_patches.serve_app_static_uncompressed()
    cli.main(args=["run", str(APP), *upload_limit_options(), *options], prog_name="streamlit")


def upload_limit_options() -> list[str]:
    """Streamlit's own upload limit (MB, a whole number) at ATTENTION_LAB_UPLOAD_MB when it is set (the engine
    checks the exact limit again: transformer.external.upload_limit_bytes)."""
    raw = os.environ.get("ATTENTION_LAB_UPLOAD_MB")
    try:
        return ["--server.maxUploadSize", str(max(1, math.ceil(float(raw))))] if raw else []
    except ValueError:
        return []


if __name__ == "__main__":
    main(sys.argv[1:])
