"""The sweep's lanes name controls that exist: a renamed slider or option fails here, not 20 minutes into
`make bench`; and its page-shape reference runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qsl

import pytest
from app_support import no_errors, open_page
from chart_support import chart_payloads, figure_specs, stepped_payloads, steppers
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import sweep  # noqa: E402

pytestmark = pytest.mark.app


def _controls(at) -> dict:
    """{label: the options it offers, as shown (None for a slider)} of every control on the page."""
    found = {}
    for kind in ("radio", "segmented_control", "selectbox"):
        for widget in getattr(at, kind):
            found[widget.label] = list(widget.options)
    for kind in ("slider", "select_slider"):
        for widget in getattr(at, kind):
            found.setdefault(widget.label, None)
    for control in steppers(at):  # ui/stepper.py's range, labelled as a slider is
        found.setdefault(control["label"], None)
    return found


PAGES = {}
for lane in sweep.lanes():
    if lane.server == "app":
        PAGES.setdefault(lane.path, []).append(lane)


@pytest.mark.parametrize("path", sorted(PAGES))
def test_every_lane_names_a_control_of_its_page(path, tmp_path, monkeypatch):
    if any(lane.trained_here for lane in PAGES[path]):  # the sweep's model, kept as the sweep keeps it
        from transformer.training import pretrained

        for registry in ("_session", "_labels", "_dropped"):  # this process's kept models: none, then only it
            monkeypatch.setattr(pretrained, registry, type(getattr(pretrained, registry))())
        monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(tmp_path))
        assert sweep.keep_model() == sweep.TIMELINE_MODEL
    name, _, query = path.partition("?")
    at = open_page(name or "home", dict(parse_qsl(query)))
    no_errors(at)
    controls = _controls(at)
    for lane in PAGES[path]:
        if lane.legend_group:  # a legend entry of a chart whose groups the page keeps (ui/chart.py's hidden)
            kept = [payload for payload in map(json.loads, chart_payloads(at)) if "hidden" in payload]
            assert any(trace.get("legendgroup") == lane.legend_group and trace.get("showlegend", True)
                       for payload in kept for trace in payload["figure"]["data"]), lane
            continue
        if lane.point:  # a click on a chart: that chart takes clicks
            assert figure_specs(at)[lane.point[0]]["layout"]["meta"]["click"], (lane.page, lane.label)
            continue
        if lane.focus_cell:  # a click on a grid whose focus the browser draws (viz/panels.js)
            assert figure_specs(at)[lane.focus_cell[0]]["layout"]["meta"]["focus"]["side"] == "query", lane
            continue
        assert lane.label in controls, (lane.page, lane.label, sorted(controls))
        if lane.step_group:  # a step control of that group, and charts it redraws
            assert lane.step_group in {control["group"] for control in steppers(at)}, lane
            assert lane.step_group in {payload["group"] for payload in stepped_payloads(at)}, lane
        for option in lane.options:
            assert option in (controls[lane.label] or []), (lane.page, lane.label, option, controls[lane.label])


def test_the_page_shape_reference_runs_and_its_slider_redraws_its_chart():
    at = AppTest.from_file(str(ROOT / "bench" / "skeleton_app.py"), default_timeout=60).run()
    no_errors(at)
    assert [s.label for s in at.slider if s.label == "Sequence length"]
    at.slider(key="seq_len").set_value(9).run()
    no_errors(at)
    assert at.query_params["seq_len"] == "9"


ENGINE_FREE_RUN = """
import sys
from streamlit.testing.v1 import AppTest
for script, params in (("bench/trivial_app.py", {"chart": "component"}), ("bench/skeleton_app.py", {})):
    at = AppTest.from_file(script, default_timeout=60)
    at.query_params.update(params)
    at.run()
    assert not at.exception, at.exception
    next(slider for slider in at.slider if slider.label == "Sequence length").set_value(9).run()
    assert not at.exception, at.exception
print(sorted(name for name in ("tensorflow", "keras", "transformer") if name in sys.modules))
"""


def test_the_floor_and_the_page_shape_reference_import_no_engine():
    """Both references measure the framework, not TensorFlow: with it loaded (and not frozen as app.py freezes it),
    Python's full collections cost each of their moves ~190 ms (docs/performance.md, 29 November)."""
    run = subprocess.run([sys.executable, "-c", ENGINE_FREE_RUN], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "[]"


def test_every_page_of_the_app_is_in_the_sweep():
    from ui.pages import PAGES as APP_PAGES

    swept = {lane.path.partition("?")[0] or "home" for lane in sweep.lanes() if lane.server == "app"}
    assert swept | set(sweep.UNSWEPT) == {name for name, *_ in APP_PAGES} and not swept & set(sweep.UNSWEPT)
    for name in sweep.UNSWEPT:  # a page left out has nothing to move: it draws no control
        source = (ROOT / "app_pages" / f"{name}.py").read_text()
        assert not re.search(r"st\.(slider|select|radio|number_input|text_input|text_area|toggle|checkbox|button)",
                             source), name
