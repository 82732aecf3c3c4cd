"""The lines a page measures heads over: the sidebar's, repeated random tokens, or a trained model's task examples
(the Heads and Query–key pages share the control and its URL fields, ``roles_lines`` and ``roles_count``)."""

from __future__ import annotations

from transformer.service import LINE_SOURCES, example_lines, repeated_lines, spec_of, task_of
from ui import choices, state
from ui.controls import PERSIST
from ui.state import F

SEGMENT = 10  # a repeated line: a random segment of 10 tokens written twice
LINE_LABELS = {"lines": "The sidebar's lines", "repeated": "Repeated random tokens", "examples": "The task's examples"}


def line_controls(source_column, count_column, trained: bool) -> tuple[str, dict]:
    """The Lines radio and How many lines slider; returns the source chosen and the `LiveConfig` overrides that put
    its lines in the source (and target) text ({} for the sidebar's lines)."""
    sources = [source for source in LINE_SOURCES if (source == "examples") == trained or source == "lines"]
    if state.get(F.roles_lines) not in sources:
        state.put(F.roles_lines, sources[0])
    lines_from = source_column.radio("Lines", sources, key=F.roles_lines, format_func=LINE_LABELS.get, **PERSIST,
                                     help="One sentence says little: what a head does shows on many lines. Repeated "
                                     "random tokens (a segment written twice) are where induction heads show: for a "
                                     "real language model, words it reads as one piece each.")
    count = count_column.select_slider("How many lines", choices.ROLE_LINE_COUNTS, key=F.roles_count,
                                       disabled=lines_from == "lines", **PERSIST)
    weights = state.read(F.weights)
    if lines_from == "repeated":
        text = repeated_lines(count, SEGMENT, state.read(F.seed), weights)
        return lines_from, dict(source_text=text, target_text=text, seq_len=2 * SEGMENT)
    if lines_from == "examples":
        return lines_from, dict(source_text=example_lines(task_of(weights), count), seq_len=max(
            state.read(F.seq_len), spec_of(weights).max_len))
    return lines_from, {}


def sidebar_values(overrides: dict) -> dict:
    """The sidebar's values that show ``overrides``' lines on another page (source, target, length)."""
    names = {"source_text": "src", "target_text": "tgt", "seq_len": "seq_len"}
    return {names[key]: value for key, value in overrides.items()}
