"""The Class page's student side: the question now, answered until the reveal (each kind with its own widget:
`VIEWS`), then the model's answer beside the student's, with the class's tally. The panel follows the store by a
fragment that runs every `ui.class_views.POLL_S`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from classroom.questions import KINDS, answer_label, chosen_grid, kind_of, label_of, mark
from classroom.store import AnswerTooSoon, ClassError, Question, StoreUnavailable
from ui import class_room, state
from ui.class_views import POLL_S, or_unavailable, tally_figure, unavailable
from ui.controls import plot
from ui.text import as_text, count, percent, piece_text
from viz.class_tally import cell_picker, cells_marked, key_picker


def _answer(code: str, student_key: str, number: int, given: dict) -> None:
    """Send ``given``; within a second of the last, keep it as pending (the next poll sends it: the latest counts)."""
    state.put(state.ANSWER_PENDING, {"number": number, "given": given})
    _send_pending(code, student_key)


def _send_pending(code: str, student_key: str) -> None:
    pending = state.get(state.ANSWER_PENDING)
    if not pending:
        return
    try:
        class_room.store().answer(code, student_key, pending["number"], pending["given"])
    except AnswerTooSoon:
        return  # kept: the next poll (a second) sends it
    except (ClassError, StoreUnavailable) as error:
        st.error(as_text(str(error)))
    state.put(state.ANSWER_PENDING, None)


def _mine(store, code: str, key: str, number: int) -> dict | None:
    """The student's answer to ``number``: the one waiting to be sent, else the one kept."""
    pending = state.get(state.ANSWER_PENDING)
    if pending and pending["number"] == number:
        return pending["given"]
    return store.my_answer(code, key, number)


def answer_where(code: str, key: str, question: Question, mine: dict | None) -> None:
    shown = question.shown
    plot(key_picker(shown["options"], shown["query"], None if mine is None else mine["key"]), key="class_where",
         on_click=lambda clicked: _answer(code, key, question.number, {"key": int(clicked["key"])}))
    if mine:
        st.caption(f"Your answer: key {as_text(label_of('where', shown, mine).removeprefix('key '))}. Click another "
                   "to change it until the reveal.")


def answer_cells(code: str, key: str, question: Question, mine: dict | None) -> None:
    """The grid, marked in the browser and sent once by its own button (viz/class_tally.js)."""
    shown = question.shown
    chosen = chosen_grid(shown, mine or {"cells": []})
    plot(cell_picker(shown["queries"], shown["keys"], chosen), key="class_cells",
         on_cells=lambda cells: _answer(code, key, question.number, {"cells": cells}))
    sent = f"{count(int(chosen.sum()), 'cell')} sent as may attend" if mine else "Nothing sent yet"
    st.caption(f"{sent}. Mark cells in the grid (a click, or drag over a row or a block) and press **Send my "
               "cells**; send again to change them until the reveal.")


def answer_pick(code: str, key: str, question: Question, mine: dict | None) -> None:
    name = kind_of(question.kind).index_name
    options = question.shown["options"]
    picked = st.radio("Your answer", range(len(options)), format_func=lambda index: as_text(str(options[index])),
                      index=None if mine is None else mine[name], key=f"class_pick_{question.number}")
    if picked is not None and (mine is None or picked != mine[name]):
        _answer(code, key, question.number, {name: int(picked)})


def answer_token(code: str, key: str, question: Question, mine: dict | None) -> None:
    options = question.shown["options"]
    picked = st.radio("The next token", options, format_func=piece_text, key=f"class_token_{question.number}",
                      index=None if mine is None else options.index(mine["token"]))
    if picked is not None and (mine is None or picked != mine["token"]):
        _answer(code, key, question.number, {"token": picked})


def _cells_marked(question: Question, mine: dict) -> None:
    """After the reveal, the student's own cells against the mask."""
    plot(cells_marked(question.shown["queries"], question.shown["keys"], chosen_grid(question.shown, mine),
                      question.answer["mask"]), key="class_marked")


@dataclass(frozen=True)
class KindView:
    """How a student answers a kind of question (`classroom.questions.QuestionKind`): its widget, and after the
    reveal the student's own answer drawn (None: the words say it)."""

    answer: Callable
    own_answer: Callable | None = None


_PICK = KindView(answer_pick)
VIEWS = {"where": KindView(answer_where), "cells": KindView(answer_cells, _cells_marked),
         "next": KindView(answer_token), "head": _PICK, "method": _PICK, "choice": _PICK}


def revealed(code: str, key: str, question: Question, mine: dict | None) -> None:
    """The model's answer in words, beside the student's with the mark, and the class's tally (no names)."""
    st.markdown(f"The model's answer: **{as_text(answer_label(question.kind, question.shown, question.answer))}**.")
    if mine is None:
        st.caption("You did not answer this one.")
    else:
        marked = mark(question.kind, question.shown, question.answer, mine)
        said = f"weight {marked.score:.2f}" if kind_of(question.kind).score_is_weight else percent(marked.score)
        st.markdown(f"**{'Right' if marked.correct else 'Not quite'}**: your answer "
                    f"{as_text(label_of(question.kind, question.shown, mine))}, {said}.")
    own_answer = VIEWS[question.kind].own_answer
    if own_answer is not None and mine is not None:
        own_answer(question, mine)
    givens = class_room.store().revealed_answers(code, key, question.number)
    plot(tally_figure(question, givens, mine), key=f"class_tally_{question.kind}")
    named = class_room.store().revealed_names(code, key, question.number)
    if named:
        st.dataframe([{"who": entry.nickname or "—", "answer": label_of(question.kind, question.shown, entry.given)}
                      for entry in named], hide_index=True)


@st.fragment(run_every=POLL_S)
def student_panel(code: str, key: str) -> None:
    """The class's question now: answered here until the reveal, then the model's answer beside the student's.
    The database gone: a message and a retry (the next poll tries again; an answer it acknowledged is kept)."""
    or_unavailable(_student_panel, code, key)


def _student_panel(code: str, key: str) -> None:
    store = class_room.store()
    try:
        _send_pending(code, key)
        question = store.current(code)
        mine = None if question is None else _mine(store, code, key, question.number)
    except StoreUnavailable as error:
        unavailable(error)
        return
    except ClassError as error:
        st.warning(as_text(str(error)))
        if st.button("Leave", key="class_leave"):
            class_room.leave()
            st.rerun()
        return
    if question is None:
        st.info("You are in. The question comes here when your teacher asks it.", icon=":material/hourglass_top:")
        return
    st.markdown(f"**Question {question.number}** · {KINDS[question.kind]}  \n{as_text(question.prompt)}")
    if question.revealed:
        revealed(code, key, question, mine)
    else:
        VIEWS[question.kind].answer(code, key, question, mine)
