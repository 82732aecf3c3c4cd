"""Plotly figures drawn by a small custom component that updates each chart in place.

One Plotly node per chart key, updated with ``Plotly.react`` (``st.plotly_chart`` throws a
changed chart away and draws it twice: docs/performance.md); a chart out of view is drawn when
it comes into view; the chart follows its column's width and the page's light or dark theme.
The component's browser code is in ``ui/frontend/``; a view's own browser code sits beside its figure builder in
``viz/`` (``viz/head_view.py`` and ``viz/head_view.js``, as BertViz pairs a view's ``.py`` and ``.js``).

Plotly.js is the installed ``plotly`` package's own copy, served from ``static/``
(``server.enableStaticServing``): nothing is fetched from the internet. The figure travels
as Plotly's own JSON and is parsed with ``JSON.parse``: user text is never evaluated or
inserted as HTML.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import threading
from collections import OrderedDict
from pathlib import Path

import plotly
import plotly.io as pio
import streamlit as st

from ui import chart_protocol as protocol
from ui.streamlit_patches import widget_module_urls
from viz.sizes import NARROW_PX, TICK_PX  # not viz.style, viz.panels: ~0.1 s of imports

ROOT = Path(__file__).resolve().parents[1]
STATIC_DIR = ROOT / "static"
PLOTLY_JS = "plotly.min.js"
CHART_CLASS = "al-chart"
COMPONENT_NAME = "attention_lab_plotly"

FRONTEND_DIR = Path(__file__).resolve().parent / "frontend"
# Marks <html> while a rerun has lasted 0.5 s: only then are stale elements faded (ui/streamlit_patches.py).
STALE_FADE_ATTRIBUTE = "data-al-slow-run"


VIEW_SCRIPTS = sorted((ROOT / "viz").glob("*.js"))  # each view's browser code, beside its figure builder


def constants() -> dict:
    """What the browser code reads of the server's: the sizes, names and message names (`ui.chart_protocol`), as
    one object, ``AL``, at the head of each component's code."""
    return {"TICK_PX": TICK_PX, "NARROW_PX": NARROW_PX, "CHART_CLASS": CHART_CLASS,
            "STALE_FADE_ATTRIBUTE": STALE_FADE_ATTRIBUTE, "BULK": protocol.BULK, **protocol.NAMES}


def frontend(*names: str | Path) -> str:
    """The JavaScript files ``names`` (of ``ui/frontend/``, or paths) joined, after the constants' object ``AL``."""
    head = f"const AL = Object.freeze({json.dumps(constants())});  // ui/chart.py constants()\n"
    return head + "\n".join((FRONTEND_DIR / name).read_text() for name in names)


def stylesheet(name: str) -> str:
    """The CSS file ``name`` of ``ui/frontend/``, the stale-fade attribute's name filled in (a selector cannot read
    a variable)."""
    return (FRONTEND_DIR / name).read_text().replace("__STALE_FADE_ATTRIBUTE__", STALE_FADE_ATTRIBUTE)


# Each component's browser code: these files (of ui/frontend/, or paths) joined in this order after `AL`, and checked
# as one program by TypeScript's checker (`make lint`: ui/frontend/tsconfig.<name>.json lists the same files)
BUNDLES = {
    "chart": ("load_plotly.js", "after_paint.js", *VIEW_SCRIPTS, "chart_messages.js", "group_layers.js",
              "legend_groups.js", "stepped_charts.js", "drawing_copies.js", "chart.js"),
    "early": ("load_plotly.js", "streamlit_patches.js", "early_loader.js"),
    "stepper": ("after_paint.js", "stepper.js"),
}
_JS = frontend(*BUNDLES["chart"])
STALE_FADE_CSS = stylesheet("stale_fade.css")
_EARLY_LOADER_JS = frontend(*BUNDLES["early"])

_component = st.components.v2.component(COMPONENT_NAME, js=_JS, css=stylesheet("chart.css"), isolate_styles=False)

EARLY_LOADER_NAME = "attention_lab_plotly_early"
_early_loader = st.components.v2.component(EARLY_LOADER_NAME, js=_EARLY_LOADER_JS, css=STALE_FADE_CSS,
                                            isolate_styles=False)


def load_plotly_early() -> None:
    """Have the browser start loading Plotly.js and the widgets' code now (an invisible element, the same
    on every run)."""
    message: protocol.EarlyLoaderMessage = {"kind": "early", "plotly_url": plotly_url(),
                                            "widget_modules": list(widget_module_urls(served_path("/static/js/")))}
    _early_loader(key="plotly_early", data=json.dumps(message).encode())


@functools.cache
def publish_plotly_js(static_dir: Path = STATIC_DIR) -> Path:
    """Copy the installed plotly package's own plotly.min.js to ``static/`` when missing or different.

    Once per process (app.py calls it on every rerun). Written to a temporary name and
    renamed, so a browser never loads half a file.
    """
    source = Path(plotly.__file__).parent / "package_data" / PLOTLY_JS
    target = static_dir / PLOTLY_JS
    if not target.exists() or target.read_bytes() != source.read_bytes():
        static_dir.mkdir(exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.part")
        shutil.copyfile(source, partial)
        os.replace(partial, target)
    return target


def served_path(path: str) -> str:
    """``path`` (from ``/``) as this server serves it, under ``server.baseUrlPath`` when one is set."""
    base = st.get_option("server.baseUrlPath").strip("/")
    return f"/{base}{path}" if base else path


def plotly_url() -> str:
    return served_path(f"/app/static/{PLOTLY_JS}")


# Resizing is the component's ResizeObserver. The camera saves a PNG at 3× the chart's pixels (a 1000 px wide chart
# makes a 3000 px image: sharp on a slide); ui/frontend/chart.js adds a button that saves an SVG.
CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 3, "filename": "attention-lab"}}


def chart_payload(fig, hidden=None, column: int = 0) -> bytes:
    """What one chart sends: a JSON document {"kind", "config", "plotly_url", "column", "figure"} as UTF-8 bytes,
    with {"hidden": the legend groups hidden} after its kind when ``hidden`` is given. ``column``: the column's width
    its browser told (0: none); a new one changes the text, so the browser hears back even where the figure is the
    same.

    The figure is Plotly's own JSON (NumPy arrays as base64 typed arrays), spliced in
    as it is rather than parsed and dumped again.
    """
    message = {"kind": "chart"} if hidden is None else {"kind": "chart", "hidden": list(hidden)}
    message.update(config=CONFIG, plotly_url=plotly_url(), column=column)  # a protocol.ChartMessage but its figure
    return f'{json.dumps(message)[:-1]}, "{protocol.BULK["chart"]}": {pio.to_json(fig, validate=False)}}}'.encode()


def stepped_payload(frames: list[str], group: str, index: int, column: int = 0) -> bytes:
    """What a chart of a step group sends: {"kind", "index", "group", "config", "plotly_url", "column", "frames"},
    ``frames`` each step's figure as Plotly's JSON text, ``index`` the step the server shows, ``column`` as
    `chart_payload`'s."""
    head = json.dumps({"kind": "stepped", "index": index, "group": group, "config": CONFIG,
                       "plotly_url": plotly_url(), "column": column})[:-1]
    return f'{head}, "{protocol.BULK["stepped"]}": [{", ".join(frames)}]}}'.encode()  # a protocol.SteppedChartMessage


class FrameCache:
    """Each step's figure as Plotly's JSON text, kept by what it was built from (least recently used out first,
    within ``budget_bytes``): a step move reruns the page, which sends every step's figure again, built once."""

    def __init__(self, budget_bytes: int):
        self.budget_bytes = budget_bytes
        self._texts: OrderedDict[tuple, str] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def text(self, identity: tuple, build) -> str:
        """The JSON text of ``build()``'s figure for ``identity`` (hashable: everything the figure depends on)."""
        with self._lock:
            if identity in self._texts:
                self._texts.move_to_end(identity)
                return self._texts[identity]
        text = pio.to_json(build(), validate=False)
        with self._lock:
            if identity not in self._texts:
                self._texts[identity] = text
                self._bytes += len(text)
            while self._bytes > self.budget_bytes and len(self._texts) > 1:
                self._bytes -= len(self._texts.popitem(last=False)[1])
        return text


FRAMES = FrameCache(64 * 2**20)


def stepped_chart(key: str, group: str, index: int, count: int, identity, figure_of, column: int = 0) -> None:
    """Draw step ``index`` of ``count`` figures, ``figure_of(step)`` each, under ``key``; the browser holds them all
    and redraws the step its group's control (`ui.stepper.stepper`) moves to without a rerun. ``identity``:
    everything the figures depend on but the step (hashable), so each is built once; or a function of the step
    that returns everything that step's figure depends on. ``column``: as `chart`'s."""
    identity_of = identity if callable(identity) else (lambda step: (*identity, step))
    frames = [FRAMES.text((key, *identity_of(step)), lambda step=step: figure_of(step)) for step in range(count)]
    _component(key=key, data=stepped_payload(frames, group, index, column),
               default={protocol.COLUMN_PX: 0}, **{f"on_{protocol.COLUMN_PX}_change": _width_reported})


def chart(fig, *, key: str, on_click=None, hidden=None, on_hide=None, column: int = 0, on_cells=None) -> None:
    """Draw ``fig`` (a ``go.Figure``) under ``key``; the same key updates the same chart in place.

    ``on_click``: called (before the rerun it starts) with ``{"query": i, "key": j}`` (a heatmap cell) or one of
    the two (a head-view token) when the viewer clicks a figure whose ``layout.meta.click`` is set.
    ``hidden``: the legend groups hidden, as the session holds them; the viewer hides and shows them in the browser
    (a legend click), and ``on_hide`` is called with the groups hidden after each click, to keep the session and the
    link current: the server's answer, the same groups, draws nothing again.
    ``on_cells``: called with the ``[query, key]`` cells a grid marked in the browser sends (`Cells`: a figure
    with ``layout.meta.mark_cells``, viz/class_tally.js), once a send.
    ``column``: the width its browser last told for this chart's column (`column_px`; 0: none), sent back so that
    a phone's first drawing waits for the figure laid out for it (ui/frontend/chart.js). The caller reads it: here
    it would load ui.state, and with it the engine, into the benchmark's engine-free pages.
    """
    callbacks = {f"on_{protocol.COLUMN_PX}_change": _width_reported}
    if on_click is not None:
        callbacks[f"on_{protocol.CLICK}_change"] = lambda: on_click(_clicked(key))
    if on_hide is not None:
        callbacks[f"on_{protocol.LEGEND}_change"] = lambda: on_hide(_legend_hidden(key))
    if on_cells is not None:
        callbacks[f"on_{protocol.CELLS}_change"] = lambda: on_cells(list((sent(key, protocol.CELLS) or {}).get(
            "cells", [])))
    _component(key=key, data=chart_payload(fig, hidden, column), default={protocol.COLUMN_PX: 0},
               **callbacks)


def _width_reported() -> None:
    """The page runs again (Streamlit does that for a state value) and reads the width with `column_px`."""


def column_px(key: str) -> int | None:
    """The width (px) of the column chart ``key`` was drawn in, as its browser reported it when narrower than
    NARROW_PX (a phone); None for a wider column, or before the chart was drawn."""
    reported = sent(key, protocol.COLUMN_PX)
    return int(reported) if reported else None


def _legend_hidden(key: str) -> list[str]:
    return [str(group) for group in (sent(key, protocol.LEGEND) or {}).get("hidden", [])]


def _clicked(key: str) -> dict:
    return dict(sent(key, protocol.CLICK) or {})


def sent(key: str, name: str):
    """What the browser code of component ``key`` last sent under ``name`` (ui/chart_protocol.py); None before."""
    from ui import state  # noqa: PLC0415  (here, not at the top: ui.state imports the engine, and app.py sends the
    # early loader from this module before TensorFlow is imported; by the time a component sends, it is)

    value = state.widget_value(key)
    if value is None:
        return None
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)
