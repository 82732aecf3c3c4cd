"""ui.chart: what a chart sends, and the Plotly.js it is drawn with."""

import json
from pathlib import Path

import numpy as np
import plotly
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from ui import chart, streamlit_patches

pytestmark = pytest.mark.app


def test_the_payload_carries_plotlys_own_json_of_the_figure_and_the_config():
    figure = go.Figure(go.Heatmap(z=np.eye(3, dtype=np.float32), x=["<b>a</b>", "b", "b"]))
    sent = json.loads(chart.chart_payload(figure))
    assert sent["figure"] == json.loads(pio.to_json(figure, validate=False))
    assert sent["config"]["displaylogo"] is False and sent["config"]["toImageButtonOptions"]["scale"] == 3
    assert sent["plotly_url"] == "/app/static/plotly.min.js"
    assert sent["figure"]["data"][0]["x"] == ["<b>a</b>", "b", "b"]  # user text travels as JSON text
    assert sent["column"] == 0  # no width told; a width told is sent back, so the text changes with it
    assert json.loads(chart.chart_payload(figure, column=350))["column"] == 350


def test_a_stepped_payload_carries_every_steps_figure_and_the_step_first():
    figures = [go.Figure(go.Bar(y=[step, 1])) for step in range(3)]
    text = chart.stepped_payload([pio.to_json(figure, validate=False) for figure in figures], "dec", 2).decode()
    assert text.startswith('{"kind": "stepped", "index": 2, "group": "dec"')  # read by name: chart_messages.js
    sent = json.loads(text)
    assert sent["frames"] == [json.loads(pio.to_json(figure, validate=False)) for figure in figures]
    assert sent["config"] == chart.CONFIG and sent["plotly_url"] == "/app/static/plotly.min.js"
    assert sent["column"] == 0 and json.loads(chart.stepped_payload([], "dec", 0, 350))["column"] == 350


def test_each_steps_figure_is_built_once_and_the_least_recent_go_first_over_the_budget():
    built = []

    def build(step):
        built.append(step)
        return go.Figure(go.Bar(y=[step]))

    cache = chart.FrameCache(budget_bytes=10**9)
    first = [cache.text(("a", step), lambda step=step: build(step)) for step in range(3)]
    again = [cache.text(("a", step), lambda step=step: build(step)) for step in range(3)]
    assert first == again and built == [0, 1, 2]
    one = len(first[0])
    small = chart.FrameCache(budget_bytes=2 * one + one // 2)  # room for two
    for step in range(3):
        small.text(("a", step), lambda step=step: build(step))
    small.text(("a", 2), lambda: build(99))  # kept: not rebuilt
    small.text(("a", 0), lambda: build(0))  # the oldest went: rebuilt
    assert built[3:] == [0, 1, 2, 0]


def test_the_step_controls_script_draws_captions_as_text():
    from ui import stepper

    script = chart.frontend("stepper.js")
    assert "innerHTML" not in script and "createTextNode" in script and stepper.STEPPER_NAME


def test_plotly_js_is_the_installed_packages_copy_and_published_once(tmp_path):
    source = (chart.Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes()
    published = chart.publish_plotly_js(tmp_path)
    assert published.read_bytes() == source
    published.write_bytes(b"stale")
    assert chart.publish_plotly_js(tmp_path).read_bytes() == b"stale"  # once per process: cached
    chart.publish_plotly_js.cache_clear()
    assert chart.publish_plotly_js(tmp_path).read_bytes() == source  # a different file is replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plotly.min.js"]  # no partial file left


def test_the_component_script_never_inserts_figure_text_as_html():
    assert "innerHTML" not in chart._JS and "eval(" not in chart._JS and "new Function" not in chart._JS
    assert "JSON.parse" in chart._JS and "Plotly.react" in chart._JS


def test_each_views_browser_code_sits_beside_its_figure_builder_and_is_loaded():
    """BertViz's layout: a view's ``.py`` and ``.js`` side by side in ``viz/``; the component loads every one."""
    scripts = sorted(chart.ROOT.joinpath("viz").glob("*.js"))
    assert [path.name for path in scripts] == ["class_tally.js", "head_view.js", "panels.js"]
    for path in scripts:
        assert path.with_suffix(".py").exists()
        assert path.read_text().splitlines()[5] in chart._JS  # a line of its code, placeholders filled
    assert "function hoverLines" in chart._JS and not chart.FRONTEND_DIR.joinpath("head_view.js").exists()


def test_the_browser_code_reads_the_servers_constants_from_one_object_not_by_text_substitution():
    """Issue 79, step 5: the sizes and the message names arrive as one object, ``AL``, at the head of each
    component's code (from `ui.chart_protocol`, so that both sides spell a message's name once); no placeholder is
    left for text substitution in the JavaScript."""
    import json
    import re

    from ui import chart_protocol as protocol

    stepper_js = chart.frontend(*chart.BUNDLES["stepper"])
    for text in (chart._JS, chart._EARLY_LOADER_JS, stepper_js):
        head, _, code = text.partition("\n")
        assert head.startswith("const AL = Object.freeze(") and not re.search(r"__[A-Z_]+__", code)
        sent = json.loads(head.removeprefix("const AL = Object.freeze(").split(");")[0])
        assert {name: sent[name] for name in protocol.NAMES} == protocol.NAMES
        assert sent["CHART_CLASS"] == chart.CHART_CLASS
    assert not re.search(r"__[A-Z_]+__", chart.STALE_FADE_CSS) and chart.STALE_FADE_ATTRIBUTE in chart.STALE_FADE_CSS
    for name in protocol.NAMES:  # each name sent back is read from the object where it is used
        assert f"AL.{name}" in chart._JS + stepper_js
    assert "history.pushState" in chart._EARLY_LOADER_JS and "loadPlotly" in chart._EARLY_LOADER_JS


def test_the_preloaded_widget_modules_are_the_ones_streamlit_imports_lazily():
    """The early loader imports these URLs; they must be the very files Streamlit's own lazy imports
    name, or the browser would load a second copy (or a missing file) and gain nothing."""
    urls = streamlit_patches.widget_module_urls("/static/js/")
    assert len(urls) == len(streamlit_patches.PRELOADED_WIDGETS)  # one chunk per widget, none missing
    js_dir = streamlit_patches.STREAMLIT_JS_DIR
    index = "".join(path.read_text() for path in js_dir.glob("index.*.js"))  # the app's entry
    for widget, url in zip(streamlit_patches.PRELOADED_WIDGETS, urls):
        name = url.removeprefix("/static/js/")
        assert name.startswith(f"{widget}.") and (js_dir / name).is_file()
        assert f"import(`./{name}`)" in index, name


def test_served_urls_follow_the_base_url_path():
    from streamlit import config

    assert chart.plotly_url() == "/app/static/plotly.min.js"
    config.set_option("server.baseUrlPath", "/lab/")
    try:
        assert chart.plotly_url() == "/lab/app/static/plotly.min.js"
        assert chart.served_path("/static/js/") == "/lab/static/js/"
    finally:
        config.set_option("server.baseUrlPath", "")


def test_the_start_up_path_imports_neither_tensorflow_nor_the_figure_builders():
    """app.py imports ui.chart and sends the early loader before it waits for TensorFlow: anything ui.chart
    imports delays the browser's Plotly.js (the figure modules are ~0.1 s of imports)."""
    import subprocess
    import sys

    code = ("import sys, streamlit, ui.chart, ui.preload; "
            "print(sorted({'tensorflow', 'viz.style', 'viz.panels'} & set(sys.modules)))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=Path(__file__).resolve().parents[2]).stdout.strip()
    assert loaded == "[]"
