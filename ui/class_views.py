"""The Class page's parts: starting and joining a class, the teacher's panel (the class's answers as they come, the
reveal, the history) and the tally both sides draw (each kind's figure: `TALLIES`); a student's panel is
`ui.class_student`'s, the sheets `ui.class_sheets`'. Both panels follow the store by a fragment that runs every
POLL_S: a poll never reruns the whole page, and a new question reaches every student within two polls."""

from __future__ import annotations

from datetime import timedelta

import segno
import streamlit as st

from classroom.questions import KINDS, answer_label, cell_slips, kind_of, tally
from classroom.store import ClassError, Question, StoreUnavailable
from ui import class_room, state
from ui.class_sheets import history_csv, students_csv
from ui.controls import Download, downloads, plot
from ui.pages import Page
from ui.runtime import client_address, page_address
from ui.text import as_text, percent
from viz.class_tally import cell_shares, key_strip, option_bars

POLL_S = 1.0
LASTS = {"1 hour": timedelta(hours=1), "1 day": timedelta(days=1), "7 days": timedelta(days=7)}


def unavailable(error: Exception) -> None:
    """The database did not answer: said, with a retry (nothing acknowledged is lost)."""
    st.error(str(error), icon=":material/cloud_off:")
    st.button("Try again", key="class_retry")


def start_or_join() -> None:
    """A session in no class: start one (the teacher) or join one (a student)."""
    teacher, student = st.columns(2)
    with teacher.container(border=True):
        st.markdown("**Teach:** start a class and read its code out.")
        lasts = st.segmented_control("The class lasts", list(LASTS), default="7 days", key="class_lasts",
                                     required=True)
        if st.button("Start a class", icon=":material/co_present:", type="primary"):
            try:
                started = class_room.store().start(lasts_s=LASTS[lasts].total_seconds(), owner=client_address())
                class_room.set_place(started.code, teacher_key=started.teacher_key)
                st.rerun()
            except StoreUnavailable as error:
                unavailable(error)
    with student.container(border=True):
        st.markdown("**Learn:** join with the code your teacher gives.")
        if join_form():
            st.rerun()


def join_form() -> bool:
    """The code and an optional nickname; True once joined (a wrong code, or too many tries: said here)."""
    with st.form("class_join"):
        code = st.text_input("Class code", value=class_room.place().code, max_chars=12, placeholder="K7RM4P")
        nickname = st.text_input("Nickname (optional, shown only to your teacher)", max_chars=24)
        if st.form_submit_button("Join", icon=":material/login:"):
            try:
                class_room.join(code, nickname)
                return True
            except (ClassError, StoreUnavailable) as error:
                st.error(as_text(str(error)))
    return False


def home_box() -> None:
    """Home's way into a class: the join form, or the way back to the Class page for a session in one."""
    where = class_room.place()
    if where.teacher or where.student:
        st.page_link(Page.CLASS_ROOM.file, label=f"Back to your class ({as_text(where.code)})",
                     icon=":material/groups:")
    elif join_form():
        st.switch_page(Page.CLASS_ROOM.file)


def teacher_header(code: str, teacher_key: str) -> None:
    """The class's code, large enough to read across a room, the whole join address and its QR code (to project),
    and the teacher's private link."""
    st.subheader(f"Class code: {as_text(code)}")
    address = class_room.class_link(code, page_address())
    words, picture = st.columns([3, 1], vertical_alignment="center")
    words.title(" ".join(code), anchor=False)  # letters spaced: read from the back of the room
    words.caption(f"Students open the Class page and type **{as_text(code)}**, or open this address (or scan the "
                  "code beside it):")
    words.code(address, language=None)
    picture.image(join_qr(address), caption="Scan to join", width=160)
    with st.expander("Your teacher link (private)", icon=":material/key:"):
        st.caption("Anyone with this link runs the class: keep it to yourself, and open it to come back (after a "
                   "restart, or on another device). It is never put in the address bar.")
        st.code(f"class_room?class={code}&teacher={teacher_key}", language=None)


def join_qr(address: str) -> str:
    """``address`` as a QR code, an SVG (segno, drawn here): black on a white quiet zone, which a phone reads on a
    dark theme too."""
    return segno.make(address, error="m").svg_inline(scale=5, border=3, dark="#000", light="#fff")


def tally_figure(question: Question, givens: list[dict], chosen: dict | None = None):
    """The class's answers to ``question`` as a picture; after the reveal the model's answer beside them."""
    answer = question.answer if question.revealed else None
    counted = tally(question.kind, question.shown, givens, answer)
    return TALLIES[question.kind](question, counted, answer, chosen)


def _where_tally(question: Question, counted, answer: dict | None, chosen: dict | None):
    shown = question.shown
    return key_strip(shown["options"], counted.counts, counted.answered, shown["query"],
                     None if answer is None else answer["weights"], None if chosen is None else chosen["key"])


def _cells_tally(question: Question, counted, answer: dict | None, chosen: dict | None):
    shown = question.shown
    return cell_shares(shown["queries"], shown["keys"], counted.counts, counted.answered,
                       None if answer is None else answer["mask"],
                       None if answer is None else cell_slips(counted.counts, counted.answered, answer["mask"]))


def _token_tally(question: Question, counted, answer: dict | None, chosen: dict | None):
    options = question.shown["options"]
    return option_bars(options, [counted.counts.get(token, 0) for token in options],
                       None if answer is None else options.index(answer["token"]),
                       None if chosen is None else options.index(chosen["token"]))


def _pick_tally(question: Question, counted, answer: dict | None, chosen: dict | None):
    name = kind_of(question.kind).index_name
    return option_bars(question.shown["options"], counted.counts, None if answer is None else answer[name],
                       None if chosen is None else chosen[name])


TALLIES = {"where": _where_tally, "cells": _cells_tally, "next": _token_tally, "head": _pick_tally,
           "method": _pick_tally, "choice": _pick_tally}  # a kind's tally figure (question, counted, answer, chosen)


@st.fragment(run_every=POLL_S)
def teacher_panel(code: str, teacher_key: str) -> None:
    """The question now, how many answered, their spread; Reveal; after it the accuracy and the commonest slip.
    The database gone: a message and a retry (the next poll tries again)."""
    or_unavailable(_teacher_panel, code, teacher_key)


def or_unavailable(draw, *args) -> None:
    """``draw(*args)``; the database gone meanwhile: said, with a retry."""
    try:
        draw(*args)
    except StoreUnavailable as error:
        unavailable(error)


def _teacher_panel(code: str, teacher_key: str) -> None:
    store = class_room.store()
    try:
        question, (joined, answered) = store.current(code), store.counts(code)
        if question is None:
            st.info(f"{joined} joined. Ask the first question: press **Ask the class** in the sidebar on the Attention "
                    "or Masks page, or write one below.", icon=":material/quiz:")
            return
        givens = [entry.given for entry in store.answers(code, teacher_key, question.number)]
        if question.revealed:  # the model's answer, as kept (the teacher's own view of it)
            question = store.question(code, teacher_key, question.number)
    except StoreUnavailable as error:
        unavailable(error)
        return
    st.markdown(f"**Question {question.number}** · {KINDS[question.kind]}  \n{as_text(question.prompt)}")
    st.metric("Answered", f"{answered} of {joined}")
    plot(tally_figure(question, givens), key=f"class_tally_{question.kind}")
    if not question.revealed:
        if st.button("Reveal", icon=":material/visibility:", type="primary", key="class_reveal"):
            _reveal(code, teacher_key)
            st.rerun()  # the whole page: the history below fills its "right" cell at once
        return
    counted = tally(question.kind, question.shown, givens, question.answer)
    st.markdown(f"The model's answer: **{as_text(answer_label(question.kind, question.shown, question.answer))}**.")
    if counted.accuracy is None:
        st.caption("Revealed. Nobody answered.")
    else:
        wrong = f"; the commonest wrong answer: {as_text(counted.common_wrong[0])} ({counted.common_wrong[1]})" \
            if counted.common_wrong else ""
        st.markdown(f"Revealed: **{percent(counted.accuracy)} right**{wrong}.")
    st.toggle("Show the students who answered what", value=store.names_shown(code), key=state.CLASS_SHOW_NAMES,
              on_change=_show_names, args=(code, teacher_key),
              help="Off: a student sees the class's tally only. On: after a reveal, every student sees each "
                   "nickname with its answer.")


def _reveal(code: str, teacher_key: str) -> None:
    try:
        class_room.store().reveal(code, teacher_key)
    except (ClassError, StoreUnavailable) as error:
        st.toast(as_text(str(error)), icon=":material/error:")


def _show_names(code: str, teacher_key: str) -> None:
    try:
        class_room.store().show_names(code, teacher_key, bool(state.widget_value(state.CLASS_SHOW_NAMES)))
    except (ClassError, StoreUnavailable) as error:
        st.toast(as_text(str(error)), icon=":material/error:")


def ask_choice(code: str, teacher_key: str) -> None:
    """A multiple-choice question the teacher writes (the one kind whose answer the teacher types)."""
    with st.expander("Write a multiple-choice question", icon=":material/edit_note:"), st.form("class_choice"):
        prompt = st.text_input("Question", max_chars=300)
        options = st.text_area("Options, one a line (2 to 6)", max_chars=600)
        right = st.number_input("The right option's number", 1, 6, 1)
        if st.form_submit_button("Ask it"):
            lines = [" ".join(line.split())[:80] for line in options.splitlines() if line.strip()]
            if not prompt.strip() or not 2 <= len(lines) <= 6 or right > len(lines):
                st.error("A question, 2 to 6 options and the right one's number among them.")
                return
            try:
                class_room.store().ask(code, teacher_key, "choice", "class_room", prompt, {"options": lines},
                                       {"option": int(right) - 1})
            except (ClassError, StoreUnavailable) as error:
                st.error(as_text(str(error)))


def lessons(code: str, teacher_key: str) -> None:
    """Home's lessons as the class's questions: each opens its view and asks what that view asks."""
    with st.expander("Run Home's lessons as questions", icon=":material/school:"):
        st.caption("Each button opens the lesson's view and asks the class about it; come back here for the answers.")
        for number, lesson in enumerate(class_room.lesson_questions(), start=1):
            st.button(f"{number}. {lesson.title}", key=f"class_lesson_{number}", on_click=class_room.open_lesson,
                      args=(lesson,), help=lesson.says)


def history(code: str, teacher_key: str) -> None:
    """Every question asked, its tally and accuracy, and a CSV of them; ending the class."""
    try:
        rows = class_room.store().history(code, teacher_key)
    except StoreUnavailable as error:
        unavailable(error)
        return
    if rows:
        st.subheader("The class so far")
        table = []
        for question, answered in rows:
            counted = tally(question.kind, question.shown, [a.given for a in answered], question.answer)
            table.append({"question": question.number, "kind": KINDS[question.kind], "answered": counted.answered,
                          "right": "" if counted.accuracy is None or not question.revealed
                          else percent(counted.accuracy)})
        st.dataframe(table, hide_index=True)
        names = class_room.store().names_shown(code)
        downloads(Download("Download the history (CSV)", lambda: history_csv(rows), f"class-{code}.csv", "text/csv"),
                  Download("Download every student's answers (CSV)", lambda: students_csv(rows, names),
                           f"class-{code}-students.csv", "text/csv"))
    if st.toggle("End this class (deletes its answers)", key="class_end_confirm"):
        if st.button("End the class now", type="primary"):
            try:
                class_room.store().end(code, teacher_key)
            except StoreUnavailable as error:
                unavailable(error)
                return
            class_room.leave()
            st.rerun()
