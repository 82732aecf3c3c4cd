"""A class in the lab, as the pages see it: this session's place in a class (kept in the session; a student's key
also in the link, so a reload or a restarted server keeps it), the store every replica shares, the questions the
Attention and Masks views make (their answers computed here, on the server, from the view's own run: never sent
from a page), and the sidebar's **Ask the class**."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit, urlunsplit

import numpy as np
import streamlit as st

from classroom.codes import check_code
from classroom.questions import KINDS
from classroom.store import ClassError, ClassStore, StoreUnavailable, database_url, store_for
from transformer.service import data_dir
from ui import data, model_config, state
from ui.lessons import LESSONS, open_view
from ui.runtime import client_address
from ui.state import F
from ui.text import as_text
from ui.weights import use_weights

JOIN_LIMIT, JOIN_WINDOW_S = 5, 60.0  # join attempts a session may make in a minute
ADDRESS_JOIN_LIMIT = 60  # … and an address, whatever its sessions (a class behind one school address joins at once)
_JOINS: dict[str, list[float]] = {}  # address -> its recent attempts (this server process's)
_JOINS_LOCK = threading.Lock()
MAX_WHERE_KEYS = 64  # a key strip a student can click
MAX_GRID = 16  # an N × N grid a student can click, at most
PAGE_KINDS = {"attention": "where", "masks": "cells", "heads": "head", "decode": "next", "explanations": "method"}
MAX_HEAD_OPTIONS = 6  # heads a student picks among (the strongest of the role; every head when there are fewer)
MAX_TOKEN_OPTIONS = 6  # next tokens a student picks among: the model's most probable, in alphabetical order
DECISIVE_MARGIN = 0.05  # the model's answer leads the next option by less than this: the class would be guessing
TRAINED_OFFER = "dates"  # the trained model offered when random weights give no decisive answer (its heads differ)


@dataclass(frozen=True)
class Place:
    """This session's class: its code, and the teacher's or a student's key ("" for none)."""

    code: str = ""
    teacher_key: str = ""
    student_key: str = ""

    @property
    def teacher(self) -> bool:
        return bool(self.code and self.teacher_key)

    @property
    def student(self) -> bool:
        return bool(self.code and self.student_key and not self.teacher_key)


def store() -> ClassStore:
    return store_for(database_url(data_dir()))


def place() -> Place:
    link = state.get(state.CLASS_LINK) or {}
    return Place(link.get("class", ""), link.get("teacher", ""), link.get("student", ""))


def checked_place() -> Place:
    """This session's place, a teacher's key checked against the class (a link's key that does not match is
    dropped, with a message): one read of the store."""
    where = place()
    if where.teacher:
        try:
            if not store().is_teacher(where.code, where.teacher_key):
                st.error("That teacher link does not match the class: it was left out. Start a class, or open the "
                         "teacher link you were given.", icon=":material/key_off:")
                set_place(where.code)
                return place()
        except StoreUnavailable as error:
            st.error(str(error), icon=":material/cloud_off:")
    return where


def set_place(code: str, teacher_key: str = "", student_key: str = "") -> None:
    link = {"class": code} | ({"teacher": teacher_key} if teacher_key else {}) | \
        ({"student": student_key} if student_key else {})
    state.put(state.CLASS_LINK, link)


def leave() -> None:
    state.put(state.CLASS_LINK, {})


def join_allowed(address: str, now: float | None = None) -> None:
    """Count an attempt to join from ``address``; ClassError past `ADDRESS_JOIN_LIMIT` in `JOIN_WINDOW_S` (fresh
    sessions from one address share the count)."""
    now = time.time() if now is None else now
    with _JOINS_LOCK:
        recent = [at for at in _JOINS.get(address, []) if now - at < JOIN_WINDOW_S]
        if len(recent) >= ADDRESS_JOIN_LIMIT:
            raise ClassError(f"Too many tries to join: wait {JOIN_WINDOW_S - (now - recent[0]):.0f} s and try again.")
        _JOINS[address] = recent + [now]
        for other in [other for other, times in _JOINS.items() if not times or now - times[-1] > JOIN_WINDOW_S]:
            del _JOINS[other]


def join(code: str, nickname: str) -> None:
    """Join ``code`` as a student (ClassError with the reason; at most `JOIN_LIMIT` attempts a minute a session,
    `ADDRESS_JOIN_LIMIT` an address)."""
    now = time.time()
    recent = [at for at in state.get(state.JOIN_ATTEMPTS, []) if now - at < JOIN_WINDOW_S]
    if len(recent) >= JOIN_LIMIT:
        raise ClassError(f"Too many tries to join: wait {JOIN_WINDOW_S - (now - recent[0]):.0f} s and try again.")
    state.put(state.JOIN_ATTEMPTS, recent + [now])
    join_allowed(client_address(), now)
    key = store().join(code, nickname)
    set_place(check_code(code), student_key=key)


def view_link(page: str) -> str:
    """The page and every control, as the link holds it: what a question shows."""
    params, _ = state.url_params(state.current_values())
    return f"{page}?{urlencode(params)}" if params else page


@dataclass(frozen=True)
class Asked:
    """A question as the store keeps it, and how decisive its answer is: ``margin``, how far the model's answer
    leads the next option (a weight or a probability; None: not measured), ``lead`` says both in words."""

    kind: str
    prompt: str
    shown: dict
    answer: dict
    margin: float | None = None
    lead: str = ""


class Undecided(ClassError):
    """The model's answer is not decisive (`DECISIVE_MARGIN`): asked only when the teacher says so."""


def undecided(asked: Asked) -> str | None:
    """Why ``asked`` would leave the class guessing, in words; None when its answer is decisive."""
    if asked.margin is None or asked.margin >= DECISIVE_MARGIN:
        return None
    return (f"The answer is not decisive: {asked.lead}, less than {DECISIVE_MARGIN:.2f} apart. The class would be "
            "guessing.")


def where_question() -> Asked:
    """*Where will this query look?* from the Attention page's view: its stack, line, layer and head, the focused
    query (else the line's last real one); the answer its weights over the keys, from the view's own run."""
    config = model_config.live_config(padding_masks=state.value(F.pad_mask), look_ahead_mask=state.value(F.future_mask))
    stack = state.value(F.stack) if state.value(F.stack) in config.stacks else config.stacks[0]
    result = data.run_live(config, stacks=(stack,), notices=False)
    line = min(state.value(F.element), len(result.source_tokens) - 1)
    layer, head = min(state.value(F.layer), result.layers - 1), min(state.value(F.head), result.heads - 1)
    queries, keys = result.tokens_of(stack, line)
    if len(keys) > MAX_WHERE_KEYS or result.attention_factor > 1:
        raise ClassError(f"A class picks among at most {MAX_WHERE_KEYS} keys: set the sequence length to "
                         f"{MAX_WHERE_KEYS} or less to ask this. Received: {len(keys)} keys")
    real = np.flatnonzero(result.real_queries(stack, line))
    focus = state.value(F.focus)
    query = focus if 0 <= focus < len(queries) and not state.value(F.focus_key) else int(real[-1] if real.size else 0)
    weights = result.attention[stack][layer, list(result.lines).index(line), head, query]  # (N_k,)
    label = f"{query}·{queries[query]}"
    prompt = (f"Where will query {label} look? {stack.capitalize()} attention, layer {layer}, head {head} "
              f"(L{layer} H{head}), sequence {line}.")  # counted from 0, as every page counts them
    shown = {"options": list(keys), "query": label, "stack": stack, "layer": layer, "head": head, "line": line}
    first, second = np.argsort(-weights, kind="stable")[:2] if len(weights) > 1 else (0, 0)
    lead = (f"key {first}·{keys[first]} has {weights[first]:.2f} of the weight and key {second}·{keys[second]} "
            f"{weights[second]:.2f}")
    return Asked("where", prompt, shown, {"weights": np.round(weights, 4).tolist(), "key": int(np.argmax(weights))},
                 float(weights[first] - weights[second]) if len(weights) > 1 else None, lead)


def cells_question() -> Asked:
    """*Which cells may attend?* from the Masks page's view: the decoder's self-attention mask of sequence 0 (the
    encoder's in an encoder-only model), as the model ran it (family, switches, padding)."""
    config = model_config.live_config()
    result = data.run_live(config, notices=False)
    stack = "decoder" if "decoder" in config.stacks else "encoder"
    queries, keys = result.tokens_of(stack, 0)
    if max(len(queries), len(keys)) > MAX_GRID:
        raise ClassError(f"A class's grid is at most {MAX_GRID} × {MAX_GRID}: set the sequence length to {MAX_GRID} "
                         f"or less to ask this. Received: {len(queries)} × {len(keys)}")
    mask = np.asarray(result.applied_masks[stack][0], bool)  # (N_q, N_k), True = may attend
    prompt = (f"Which cells may attend? {stack.capitalize()} self-attention of sequence 0, mask family "
              f"{config.mask_family}.")
    return Asked("cells", prompt, {"queries": list(queries), "keys": list(keys), "stack": stack},
                 {"mask": mask.tolist()})


def head_asked(roles, where: str) -> Asked | None:
    """*Which head does this?* from the Heads page's scores: the role whose strongest head stands furthest above its
    chance level; the options that head and the role's next strongest (in layer, head order); None without scores."""
    gaps = {role: roles.strongest(role, 1)[0][2] - roles.chance.get(role, 0.0) for role in roles.scores
            if role != "pattern" and roles.strongest(role, 1) and np.isfinite(roles.chance.get(role, 0.0))}
    if not gaps:
        return None
    role = max(gaps, key=gaps.get)
    best = roles.strongest(role, MAX_HEAD_OPTIONS)
    options = sorted((layer, head) for layer, head, _ in best)
    labels = [f"L{layer} H{head}" for layer, head in options]  # as the Heads page names them
    title = role.replace("_", "-")
    prompt = f"Which head is the {title} head? {roles.stack.capitalize()} attention over {where}."
    return Asked("head", prompt, {"options": labels, "role": role},
                 {"head": options.index(best[0][:2]), "score": round(best[0][2], 4)})


def next_asked(run, step: int) -> Asked:
    """*What will the model write next?* at the Decode page's step: the model's own choice among its most probable
    tokens (shown in alphabetical order)."""
    chosen = run.steps[step]
    ranked = chosen.top(run.vocabulary, MAX_TOKEN_OPTIONS)  # (token, probability), most probable first
    top = [token for token, _ in ranked]
    options = sorted(set(top) | {chosen.chosen})
    prompt = f"The model has read “{' '.join(chosen.prefix)}”. What will it write next?"
    probability = dict(ranked).get(chosen.chosen, 0.0)
    rival = next(((token, p) for token, p in ranked if token != chosen.chosen), None)
    margin = None if rival is None else probability - rival[1]
    lead = "" if rival is None else (f"the model writes “{chosen.chosen}” with probability {probability:.2f} and "
                                     f"“{rival[0]}” has {rival[1]:.2f}")
    return Asked("next", prompt, {"options": options, "prefix": list(chosen.prefix)}, {"token": chosen.chosen},
                 margin, lead)


def method_asked(methods, top1, task: str) -> Asked:
    """*Which explanation is right?* from the Explanations page's table: the method whose top source token is most
    often the aligned one."""
    prompt = (f"On the {task} model, which explanation most often points at the source token the output really comes "
              "from?")
    return Asked("method", prompt, {"options": list(methods)}, {"method": int(np.argmax(top1)),
                                                                "top1": [round(float(v), 4) for v in top1]})


def offer(page: str, asked: Asked | None) -> None:
    """The question ``page``'s view would ask now, from the run it drew (a teacher's session only): **Ask the class**
    on the next run asks it."""
    if place().teacher:
        state.put(state.CLASS_OFFER, None if asked is None else (page, asked))


def offered(page: str) -> Asked:
    found = state.get(state.CLASS_OFFER)
    if not found or found[0] != page:
        raise ClassError("This view has no question to ask yet: let it draw first (on the Explanations page, score "
                         "the methods; on the Heads page, a model whose heads have roles).")
    return found[1]


BUILDERS = {"where": where_question, "cells": cells_question}  # the others: the page's own offer (`offer`)


def ask(page: str, anyway: bool = False) -> int:
    """Ask the class the question of ``page``'s view now: its number; `Undecided` when its answer is not decisive,
    unless ``anyway``."""
    kind = PAGE_KINDS[page]
    asked = BUILDERS[kind]() if kind in BUILDERS else offered(page)
    reason = undecided(asked)
    if reason and not anyway:
        raise Undecided(reason)
    where = place()
    return store().ask(where.code, where.teacher_key, asked.kind, view_link(page), asked.prompt, asked.shown,
                       asked.answer)


def lesson_questions():
    """The Home lessons a class can be asked, in order: those whose page asks (`PAGE_KINDS`)."""
    return [lesson for lesson in LESSONS if lesson.page in PAGE_KINDS]


def open_lesson(lesson) -> None:
    """From a button's callback: open ``lesson``'s view (its link's values) and ask the class once it has drawn."""
    state.put(state.CLASS_PENDING, lesson.page)
    open_view(lesson)


def ask_pending(page: str) -> None:
    """After ``page`` drew: the question a lesson opened it for (`open_lesson`), asked now."""
    if state.get(state.CLASS_PENDING) != page:
        return
    state.pop(state.CLASS_PENDING)
    ask_and_say(page)


def ask_and_say(page: str, anyway: bool = False) -> None:
    """Ask the class ``page``'s question; the sidebar says its number, or why it was not asked (an answer that is
    not decisive waits for **Ask anyway**: `undecided_box`)."""
    state.pop(state.CLASS_UNDECIDED, None)
    try:
        number = ask(page, anyway)
        st.sidebar.success(f"Question {number} asked: the Class page shows the answers as they come.")
    except Undecided as reason:
        state.put(state.CLASS_UNDECIDED, (page, str(reason)))
    except (ClassError, StoreUnavailable) as error:
        st.sidebar.error(as_text(str(error)))


def _open_trained() -> None:
    """A button's callback: the view's model becomes the trained one offered, the undecided question dropped."""
    state.pop(state.CLASS_UNDECIDED, None)
    use_weights(TRAINED_OFFER)


def _confirm(page: str, reason: str) -> None:
    """**Ask anyway**'s callback: the held question is asked on this run, before the box would be drawn again."""
    state.put(state.CLASS_UNDECIDED, (page, reason, True))


def undecided_box(page: str) -> None:
    """The question just held back (`Undecided`): why, a trained model to ask on instead (on random weights), and
    **Ask anyway**."""
    held = state.get(state.CLASS_UNDECIDED)
    if not held or held[0] != page:
        return
    if len(held) > 2:  # Ask anyway was pressed
        ask_and_say(page, anyway=True)
        return
    box = st.sidebar.container(border=True)
    box.warning(as_text(held[1]), icon=":material/casino:")  # it quotes the line's tokens: text, not Markdown
    if model_config.supports().shape:  # random weights: a trained model's heads answer decisively
        box.button(f"Open the trained {TRAINED_OFFER} model", on_click=_open_trained, icon=":material/school:",
                   help="Its heads learned a task: their rows have a clear top key. Ask the class again there.")
    else:
        box.caption("Another query, head or step may have a clearer answer.")
    box.button("Ask anyway", icon=":material/quiz:", on_click=_confirm, args=(page, held[1]))


def teacher_known(where: Place) -> bool:
    """Whether ``where``'s teacher key is its class's: asked of the store once a session and key (a forged link's
    key is not, and gets no Ask the class)."""
    checked = state.get(state.TEACHER_CHECKED)
    if checked is not None and checked[:2] == (where.code, where.teacher_key):
        return checked[2]
    try:
        known = store().is_teacher(where.code, where.teacher_key)
    except StoreUnavailable:
        return False  # asked again on the next run
    state.put(state.TEACHER_CHECKED, (where.code, where.teacher_key, known))
    return known


def ask_button(page: str) -> None:
    """The sidebar's **Ask the class** (a teacher whose key the class knows, on a page that asks)."""
    where = place()
    if not where.teacher or page not in PAGE_KINDS or not teacher_known(where):
        return
    if st.sidebar.button("Ask the class", icon=":material/quiz:", help=f"“{KINDS[PAGE_KINDS[page]]}” about this "
                         "view: every student answers on the Class page; the answer is this view's own run."):
        ask_and_say(page)
    undecided_box(page)


CLASS_PATH = "class_room"  # the Class page's path in the app


def class_link(code: str, page_address: str | None = None) -> str:
    """The address students open to join (on the Class page, the code filled in): whole, as the teacher's browser
    shows this app (``page_address``: the Class page's own, `ui.runtime.page_address`), so that it can be typed or
    scanned; the path alone where no browser said its address."""
    relative = f"{CLASS_PATH}?class={code}"
    if not page_address:
        return relative
    parts = urlsplit(page_address)
    folder = parts.path[: parts.path.rfind("/") + 1] or "/"  # the app's own path: this page's name dropped
    return urlunsplit((parts.scheme, parts.netloc, folder + CLASS_PATH, f"class={code}", ""))
