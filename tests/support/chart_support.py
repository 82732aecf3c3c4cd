"""Reading the app's charts back: from AppTest's element tree, and the selector for a drawn chart."""

from __future__ import annotations

import json

from ui.chart import CHART_CLASS, COMPONENT_NAME
from ui.stepper import STEPPER_NAME

# One of this app's charts in the browser, once Plotly has drawn it.
PLOT = f".{CHART_CLASS}.js-plotly-plot"
FIRST_PLOT = f"document.querySelector('{PLOT}')"


def chart_elements(at) -> list:
    """Every chart of an AppTest run, in page order (``ui.chart`` components)."""
    return [element for element in at.get("bidi_component") if element.proto.component_name == COMPONENT_NAME]


def chart_payloads(at) -> list[bytes]:
    """The bytes each chart sends to the browser."""
    return [element.proto.bytes for element in chart_elements(at)]


def figure_specs(at) -> list[dict]:
    """Each chart's Plotly figure as a dict ({"data": [...], "layout": {...}}); a step group's chart
    (ui.chart.stepped_chart): the figure of the step the server shows."""
    return [shown_figure(json.loads(payload)) for payload in chart_payloads(at)]


def shown_figure(payload: dict) -> dict:
    return payload["frames"][payload["index"]] if "frames" in payload else payload["figure"]


def stepped_payloads(at) -> list[dict]:
    """The step groups' charts' payloads ({"index", "group", "frames", …}), in page order."""
    return [payload for payload in map(json.loads, chart_payloads(at)) if "frames" in payload]


def step_caption(at) -> str:
    """The first step control's caption at the step it shows, as text (ui/stepper.py)."""
    control = steppers(at)[0]
    return "".join(text for text, _ in control["captions"][control["index"]])


def steppers(at) -> list[dict]:
    """Each step control's payload ({"group", "label", "index", "names", "captions"}), in page order."""
    return [json.loads(element.proto.bytes) for element in at.get("bidi_component")
            if element.proto.component_name == STEPPER_NAME]


CHART_POINT = f"""([index, x, y, axis]) => {{
    const plot = document.querySelectorAll('{PLOT}')[index], layout = plot._fullLayout;
    const xa = layout['xaxis' + axis], ya = layout['yaxis' + axis], box = plot.getBoundingClientRect();
    return [box.left + xa._offset + xa.l2p(x), box.top + ya._offset + ya.l2p(y)];
}}"""


def click_chart(page, index: int, x: float, y: float, axis: str = "") -> None:
    """Click chart ``index`` of the page at data coordinates ``(x, y)`` of its axes ``x{axis}``/``y{axis}``."""
    left, top = page.evaluate(CHART_POINT, [index, x, y, axis])
    page.mouse.click(left, top)
