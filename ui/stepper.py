"""The step control of a group of charts: Back, Next and a range drawn in the browser, which redraws the group's
charts there (`ui.chart.stepped_chart`: every step's figure is sent with them) and then tells the server, whose run
keeps the link and the page's state current and sends the same charts (nothing is redrawn). Each step has a caption
(what happens at it), drawn with the control. The browser code is ``ui/frontend/stepper.js``."""

from __future__ import annotations

import json

import streamlit as st

from ui.chart import BUNDLES, frontend, sent, stylesheet
from ui.chart_protocol import STEP, StepperMessage

STEPPER_NAME = "attention_lab_stepper"
_component = st.components.v2.component(STEPPER_NAME, js=frontend(*BUNDLES["stepper"]),
                                        css=stylesheet("stepper.css"),
                                        isolate_styles=False)


def stepper(group: str, index: int, names: list[str], captions: list[list[tuple[str, str]]], *, on_step,
            label: str = "Step") -> None:
    """Draw ``group``'s control at step ``index`` (0-based) of ``len(names)``; ``names``: what each step is called
    beside ``label``; ``captions``: each step's caption as ``[(text, style), …]`` (style "", "b", "code" or "b code";
    the text is drawn as text). ``on_step(index)`` runs (before the rerun it starts) when the viewer moves to a step."""
    payload: StepperMessage = {"kind": "stepper", "group": group, "label": label, "index": int(index),
                               "names": list(names),
                               "captions": [[list(segment) for segment in segments] for segments in captions]}
    key = f"step_{group}"
    _component(key=key, data=json.dumps(payload).encode(), **{f"on_{STEP}_change": lambda: on_step(moved_to(key))})


def moved_to(key: str) -> int:
    """The step the viewer moved control ``key`` to (its trigger value)."""
    return int(sent(key, STEP)["index"])
