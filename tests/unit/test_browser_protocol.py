"""The browser protocol declared once (issue 79, step 5): every message says its kind first and keeps its declared
keys in order, its bulk last; the browser code's declarations are what `ui.browser_types` writes from
`ui.chart_protocol`; a chart's (and a step control's) state is one object, declared once; TypeScript's checker
passes each component's code as the browser runs it, and fails on a planted mistake."""

import json
import re
import shutil
import subprocess
import typing
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from ui import browser_types, chart
from ui import chart_protocol as protocol

ROOT = Path(__file__).resolve().parents[2]
TSC = ROOT / "node_modules" / ".bin" / "tsc"
BROWSER_FILES = [*chart.FRONTEND_DIR.glob("*.js"), *(ROOT / "viz").glob("*.js")]


def declared_keys(message) -> list[str]:
    return list(typing.get_type_hints(message))


def test_each_message_says_its_kind_first_and_keeps_its_declared_keys_in_order_its_bulk_last():
    figure = go.Figure(go.Heatmap(z=np.eye(2, dtype=np.float32)))
    plain, kept = chart.chart_payload(figure), chart.chart_payload(figure, hidden=["head 1"])
    stepped = chart.stepped_payload([pio.to_json(figure, validate=False)] * 2, "dec", 1)
    for text, message in ((plain, protocol.ChartMessage), (kept, protocol.ChartMessage),
                          (stepped, protocol.SteppedChartMessage)):
        sent = json.loads(text)
        kind = typing.get_args(typing.get_type_hints(message)["kind"])[0]
        assert list(sent) == [key for key in declared_keys(message) if key in sent] and list(sent)[0] == "kind"
        assert sent["kind"] == kind and list(sent)[-1] == protocol.BULK[kind]
    assert json.loads(kept)["hidden"] == ["head 1"] and "hidden" not in json.loads(plain)


def test_the_browser_codes_declarations_are_what_the_protocol_writes():
    written = browser_types.written()
    assert {path.name: path.read_text() for path in written} == {path.name: text for path, text in written.items()}
    assert set(chart.BUNDLES) == {path.name.split(".")[1] for path in written if path.suffix == ".json"}
    text = written[browser_types.DECLARATIONS]
    for message in (*protocol.MESSAGES, *protocol.REPLIES):
        assert f"interface {message.__name__} {{" in text
    assert '  kind: "chart";' in text and "  hidden?: string[];" in text and "frames: Record<string, any>[];" in text

    class Planted(typing.TypedDict):  # a field added to a message changes what the browser's checker holds it to
        kind: typing.Literal["chart"]
        colour: str

    assert "  colour: string;" in browser_types.interface(Planted)


STATE_PROPERTY = re.compile(r"\b\w+\.al[A-Z]\w*")  # the old way: a chart's state spread over its node's properties


def state_properties(source: str) -> list[str]:
    return [found for found in STATE_PROPERTY.findall(source) if not found.endswith(("alSteps", "alMark"))]


def interface_fields(name: str) -> set[str]:
    text = (chart.FRONTEND_DIR / "browser.d.ts").read_text()
    body = text[text.index(f"interface {name} {{"):]
    body = body[: body.index("\n}")]
    return set(re.findall(r"^  (\w+)\??:", body, re.MULTILINE))


def literal_keys(source: str, start: str) -> set[str]:
    """The top-level keys of the object literal that opens at the end of ``start`` in ``source``."""
    at, depth, top = source.index(start) + len(start), 1, []
    for character in source[at:]:
        depth += {"{": 1, "}": -1}.get(character, 0)
        if depth == 0:
            break
        top.append(character if depth == 1 else " ")
    entries = "".join(top).split(",")
    return {entry.split(":")[0].strip() for entry in entries if entry.strip()}


def test_a_charts_state_is_one_object_declared_once():
    found = {path.name: state_properties(path.read_text()) for path in BROWSER_FILES}
    assert {name: props for name, props in found.items() if props} == {}
    assert state_properties("node.alText = text;\nwindow.alSteps = {};") == ["node.alText"]  # a planted one
    chart_js = (chart.FRONTEND_DIR / "chart.js").read_text()
    assert literal_keys(chart_js, "function newChartState(node) {\n  return {") == interface_fields("ChartState")
    stepper_js = (chart.FRONTEND_DIR / "stepper.js").read_text()
    assert literal_keys(stepper_js, "node.al = {") == interface_fields("StepperState")


def run_checker(config: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(TSC), "-p", str(config)], capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not TSC.exists(), reason="TypeScript's checker is not installed: `make test` installs it (npm ci)")
def test_the_checker_passes_each_components_code_and_fails_on_a_planted_mistake(tmp_path):
    for name in chart.BUNDLES:
        checked = run_checker(chart.FRONTEND_DIR / f"tsconfig.{name}.json")
        assert checked.returncode == 0, checked.stdout
    planted = tmp_path / "chart.js"
    source = (chart.FRONTEND_DIR / "chart.js").read_text()
    planted.write_text(source.replace("node.al.text = text;", "node.al.txet = text;", 1)
                       + "\nfunction untyped(node) { return node; }\n")
    config = json.loads((chart.FRONTEND_DIR / "tsconfig.chart.json").read_text())
    files = [str((chart.FRONTEND_DIR / name).resolve()) for name in config["files"]]
    files[files.index(str(chart.FRONTEND_DIR / "chart.js"))] = str(planted)
    shutil.copy(chart.FRONTEND_DIR / "tsconfig.base.json", tmp_path / "tsconfig.base.json")
    (tmp_path / "tsconfig.json").write_text(json.dumps({"extends": "./tsconfig.base.json", "files": files}))
    checked = run_checker(tmp_path / "tsconfig.json")
    assert checked.returncode != 0
    assert "'txet' does not exist on type 'ChartState'" in checked.stdout and "error TS7006" in checked.stdout
