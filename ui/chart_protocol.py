"""The messages of the app's two browser components, declared once: what the page sends (a JSON document, its keys
in this order: the browser reads the first key of a chart's text to tell the kinds apart) and what the browser sends
back (state and trigger values, by name). `ui.chart.constants` hands the names to the browser code."""

from __future__ import annotations

from typing import TypedDict


class ChartMessage(TypedDict, total=False):
    """A chart (`ui.chart.chart`)."""

    hidden: list[str]  # first, when the page keeps the chart's legend groups: those hidden (the head view's heads)
    config: dict  # Plotly's config (ui.chart.CONFIG)
    plotly_url: str  # where the browser loads Plotly.js from
    column: int  # the column's width the browser last told (COLUMN_PX; 0: none), so that a report always has an answer
    figure: dict  # Plotly's JSON of the figure, spliced in as text; last


class SteppedChartMessage(TypedDict):
    """A chart of a step group (`ui.chart.stepped_chart`)."""

    index: int  # first: the step the server shows
    group: str  # the step group (its control's)
    config: dict
    plotly_url: str
    column: int  # as ChartMessage's
    frames: list[dict]  # every step's figure, Plotly's JSON; last


class StepperMessage(TypedDict):
    """A step control (`ui.stepper.stepper`)."""

    group: str
    label: str  # the range's accessible name, and the word before a step's name
    index: int  # the step the server shows
    names: list[str]  # each step's name
    captions: list[list[list[str]]]  # each step's caption: [[text, style], …], style "", "b", "code" or "b code"


# What the browser sends back.
COLUMN_PX = "column_px"  # a chart's state: its column's width (px) in steps of 10 on a phone, else 0
CLICK = "click"  # a chart's trigger: {"query", "key"} a heatmap cell, {"query"} or {"key"} a head-view token,
# {"query", "line"} a query of the query–key space; "at": the time (ms), so that the same click twice is two
LEGEND = "legend"  # a chart's trigger: {"hidden": the legend groups now hidden, "at"}
STEP = "step"  # a step control's trigger: {"index": the step moved to, "at"}

# The names as the browser code reads them: AL.COLUMN_PX, AL.CLICK, … (ui.chart.constants)
NAMES = {"COLUMN_PX": COLUMN_PX, "CLICK": CLICK, "LEGEND": LEGEND, "STEP": STEP}
