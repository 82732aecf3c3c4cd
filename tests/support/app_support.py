"""AppTest helpers: open a page of the app (with URL parameters), read its figures back, check for errors."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
from chart_support import figure_specs
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def open_page(page, query=None, load_models: bool = True):
    """``page`` opened with ``query``'s link values; ``load_models``: a model whose loading is long (a real
    language model) loaded as a person presses **Load it** (`ui.data._loaded_first`), where this process lacks it."""
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.switch_page(f"app_pages/{page}.py")
    at = at.run()
    load = [button for button in at.button if button.key == "load_model"]
    return load[0].click().run(timeout=300) if load_models and load else at


def specs(at) -> list[dict]:
    return figure_specs(at)


def decode(z):
    """A Plotly typed array ({"dtype", "bdata", "shape"}) or a list, as NumPy."""
    if isinstance(z, dict):
        array = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
        shape = [int(n) for n in str(z.get("shape", len(array))).split(",")]
        return array.reshape(shape)
    return np.asarray(z, dtype=float)


def heatmaps(spec) -> list[np.ndarray]:
    return [decode(trace["z"]) for trace in spec["data"] if trace["type"] == "heatmap"]


def weight_panels(spec, include_mean=False) -> list[np.ndarray]:
    """The weight layer of each head panel (the masked-cells layers, one per row of panels, have no coloraxis).

    The head grid ends with a "mean of heads" panel, left out unless ``include_mean``.
    """
    return [decode(t["z"]) for t in spec["data"] if t["type"] == "heatmap" and "coloraxis" in t
            and (include_mean or t.get("name") != "mean of heads")]


def no_errors(at):
    assert not at.exception, [e.value for e in at.exception]


def ask_the_class(at, anyway: bool = True):
    """A teacher's **Ask the class** pressed; ``anyway``: a question held back as not decisive (random weights'
    near-uniform rows, ui.class_room.Undecided) asked all the same, as a test about something else needs."""
    at = next(b for b in at.sidebar.button if b.label == "Ask the class").click().run()
    held = [b for b in at.sidebar.button if b.label == "Ask anyway"]
    return held[0].click().run() if anyway and held else at
