"""The messages of the app's browser components, declared once: what the page sends (a JSON document whose first
key, ``kind``, says what it is; a chart's figures, megabytes, under its last key, `BULK`: the browser parses the
keys before it alone) and what the browser sends back (state and trigger values, by name). `ui.chart.constants`
hands the names to the browser code; `ui.browser_types` writes these declarations as the browser code's types."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict


class ChartMessage(TypedDict):
    """A chart (`ui.chart.chart`)."""

    kind: Literal["chart"]
    hidden: NotRequired[list[str]]  # when the page keeps the chart's legend groups: those hidden (the head view's)
    config: dict  # Plotly's config (ui.chart.CONFIG)
    plotly_url: str  # where the browser loads Plotly.js from
    column: int  # the column's width the browser last told (COLUMN_PX; 0: none), so that a report always has an answer
    figure: dict  # Plotly's JSON of the figure, spliced in as text; last


class SteppedChartMessage(TypedDict):
    """A chart of a step group (`ui.chart.stepped_chart`)."""

    kind: Literal["stepped"]
    index: int  # the step the server shows
    group: str  # the step group (its control's)
    config: dict
    plotly_url: str
    column: int  # as ChartMessage's
    frames: list[dict]  # every step's figure, Plotly's JSON; last


class StepperMessage(TypedDict):
    """A step control (`ui.stepper.stepper`)."""

    kind: Literal["stepper"]
    group: str
    label: str  # the range's accessible name, and the word before a step's name
    index: int  # the step the server shows
    names: list[str]  # each step's name
    captions: list[list[list[str]]]  # each step's caption: [[text, style], …], style "", "b", "code" or "b code"


class EarlyLoaderMessage(TypedDict):
    """The early loader (`ui.chart.load_plotly_early`): what the browser fetches while the server imports."""

    kind: Literal["early"]
    plotly_url: str
    widget_modules: list[str]  # Streamlit's own code for the sidebar's widgets


# A message's last key, by kind: its figures, parsed only when drawn (the keys before it are its head)
BULK = {"chart": "figure", "stepped": "frames"}

# What the browser sends back.
COLUMN_PX = "column_px"  # a chart's state: its column's width (px) in steps of 10 on a phone, else 0
CLICK = "click"  # a chart's trigger: a `Click`
LEGEND = "legend"  # a chart's trigger: a `Legend`
CELLS = "cells"  # a chart's trigger: `Cells`, a grid marked in the browser (viz/class_tally.js)
STEP = "step"  # a step control's trigger: a `Step`


class Click(TypedDict):
    """A heatmap cell (query and key), a head-view token (query or key), a query of the query–key space (query and
    line); ``at``: the time (ms), so that the same click twice is two."""

    query: NotRequired[int]
    key: NotRequired[int]
    line: NotRequired[int]
    at: int


class Legend(TypedDict):
    hidden: list[str]  # the legend groups now hidden
    at: int


class Cells(TypedDict):
    """Every cell of a grid the student marked, ``[query, key]``, sent at once."""

    cells: list[list[int]]
    at: int


class Step(TypedDict):
    index: int  # the step moved to
    at: int


# The names as the browser code reads them: AL.COLUMN_PX, AL.CLICK, … (ui.chart.constants)
NAMES = {"COLUMN_PX": COLUMN_PX, "CLICK": CLICK, "LEGEND": LEGEND, "CELLS": CELLS, "STEP": STEP}
MESSAGES = (ChartMessage, SteppedChartMessage, StepperMessage, EarlyLoaderMessage)  # the page's, to the browser
REPLIES = (Click, Legend, Cells, Step)  # the browser's, to the page
