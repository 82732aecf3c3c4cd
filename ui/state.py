"""The app's state: its fields (one per control, declared in `ui.fields`), kept in ``st.session_state`` and mirrored
in the URL.

Every field has a default and a parser; a URL value that does not parse falls
back to the default with a visible notice. Only values that differ from the
defaults are written to the URL, so a copied link stays short. What a session keeps besides its
fields is declared in `SESSION_KEYS`; pages and the rest of `ui/` read and write both through the
accessors here (`get`, `read`, `put`, `update`, …), never through ``st.session_state`` itself.
"""

from __future__ import annotations

import streamlit as st

from transformer.service import RANDOM, head_counts, kv_head_counts, source_of
from ui.choices import nearest_heads
from ui.fields import FIELDS, MAX_TEXT_CHARS, SHAPE, F, Field  # noqa: F401  (the fields, as the pages name them)
from ui.text import as_text

URL_TEXT_LIMIT = 4_000  # longer texts are left out of the link (with a notice)
NOTICES = "_notices"
DUMPERS = {bool: lambda value: "1" if value else "0", list: lambda value: " ".join(map(str, value))}


def dump(value) -> str:
    return DUMPERS.get(type(value), str)(value)


def default_of(key: str, weights: str):
    """The value a link leaves out for ``key``: the lines and length the model starts from (its source's
    `default_lines`: a trained model's task example, a model from outside's sentences); a trained model's
    architecture, norm and positions are its own."""
    own = trained_options(weights) if key in ("arch", "norm", "positions") else {}
    if key in own:
        return own[key]
    if key not in ("src", "tgt", "seq_len"):
        return FIELDS[key].default
    source = source_of(weights)
    lines, length = source.default_lines(FIELDS[F.seq_len].default)  # the model's own, where they differ
    if key == "seq_len":
        return length
    own_box = "tgt" if source.reads_side == "target" else "src"
    return FIELDS[key].default if lines is None or key != own_box else lines


def parse_url(query: dict) -> tuple[dict, list[str]]:
    """Values for every field from URL parameters, and a notice for each one ignored."""
    values, notices = {}, []
    if "dec_model" in query and "weights" not in query:  # a link from when Decode had a model picker of its own
        query = {**query, "weights": query["dec_model"]}
    for key, field in FIELDS.items():  # weights first: the source's default depends on it
        default = default_of(key, values.get("weights", RANDOM))
        values[key] = default
        if key not in query:
            continue
        raw = query[key]
        try:
            values[key] = field.parse(raw)
        except (ValueError, TypeError) as error:
            notices.append(f"Ignored the link's {key}={raw[:40]!r} ({error}); {field.using(default, dump(default))}.")
    values, changes = normalise(values)
    for key, was, now in changes:
        notices.append(f"The link's heads={was} does not divide d_model={values['d_model']}; using {now}."
                       if key == "heads" else
                       f"The link's kv_heads={was} does not divide heads={values['heads']}; using {values['heads']} "
                       "(one per head).")
    return values, notices


def normalise(values: dict) -> tuple[dict, list[tuple[str, int, int]]]:
    """``values`` with the heads a divisor of d_model (the nearest) and the key/value heads a divisor of the heads
    (else one per head: 0) — the rules of `ModelShape.check_shape`, asked of the engine (`head_counts`,
    `kv_head_counts`) — and each change as ``(field, was, now)``. The link (`parse_url`) and the sidebar's moves
    (`ui.sidebar`) both call it."""
    values, changes = dict(values), []
    if values["heads"] not in head_counts(values["d_model"]):
        changes.append(("heads", values["heads"], nearest_heads(values["d_model"], values["heads"])))
        values["heads"] = changes[-1][2]
    if values["kv_heads"] and values["kv_heads"] not in kv_head_counts(values["heads"]):
        changes.append(("kv_heads", values["kv_heads"], 0))
        values["kv_heads"] = 0
    return values, changes


def url_params(values: dict) -> tuple[dict, list[str]]:
    """The non-default values as URL parameters; texts too long for a link are left out."""
    params, left_out = {}, []
    for key, field in FIELDS.items():
        value = values.get(key, field.default)
        if value == default_of(key, values.get("weights", RANDOM)):
            continue
        text = dump(value)
        if len(text) > URL_TEXT_LIMIT:
            left_out.append(key)
            continue
        params[key] = text
    return params, left_out


# What a session keeps besides its fields: each key declared once, with what it holds.
LOADED = "_loaded"
OPEN_PAGE = "_open_page"
MY_MODELS = "_my_models"
MY_IMAGES = "_my_images"
LAST_WEIGHTS = "_last_weights"
STATUS_SLOT, LAST_STATUS, STATUS_PARTS = "_status_slot", "_last_status", "_status_parts"
TIMELINE_JOB, TIMELINE_LATEST = "_tl_job", "_tl_latest"
PRESET_NAME, UPLOAD = "_preset_name", "_upload"
EXTERNAL_ARCHITECTURES = "_external_architectures"
RETRAIN = "_retrain"
TRAIN_OWNER, TRAIN_JOB = "_train_owner", "_train_job"
EXTERNAL_MODELS = "_external_models"
TRAIN_TASK = "train_task"
HEAVY_PRESSED = "_heavy_pressed"
LINKED = "_linked"
NOTICE_SLOT = "_notice_slot"
NEXT_RUN = "_next_run"
CLASS_LINK = "_class_link"
CLASS_PARAMS = ("class", "student", "teacher")  # a class's link parameters (ui.class_room): not fields
KEPT_CLASS_PARAMS = ("class",)  # those every page's address keeps (a teacher's key never: screens are projected)
CLASS_PAGE = "class_room"  # its own address also keeps a student's key (a reload there keeps the student)
CLASS_PAGE_PARAMS = ("class", "student")  # never on another page: links copied from them are shared
CLASS_PARAM_CHARS = 64
JOIN_ATTEMPTS = "_join_attempts"
ANSWER_PENDING = "_answer_pending"
TEACHER_CHECKED = "_teacher_checked"
CLASS_OFFER = "_class_offer"
CLASS_PENDING = "_class_pending"
CLASS_UNDECIDED = "_class_undecided"
CLASS_SHOW_NAMES = "class_show_names"
SESSION_KEYS = {
    TRAIN_TASK: "the Train page's task (a widget; the Induction page opens it on induction)",
    LOADED: "True once the URL has been read into the fields",
    NOTICES: "[message]: notices shown at the top of the next page drawn",
    OPEN_PAGE: "the page a button's callback asked for (`open_page`), opened once the script can switch",
    MY_MODELS: "{weights: label} of the models this session trained",
    MY_IMAGES: "{img_model: label} of the image models this session trained or opened by a link",
    LAST_WEIGHTS: "the model the previous run drew",
    STATUS_SLOT: "the sidebar's status line, filled once the page has run",
    LAST_STATUS: "that line's text",
    STATUS_PARTS: "{part: text} of that line",
    TIMELINE_JOB: "the training run the timeline last drew",
    TIMELINE_LATEST: "the last step the timeline drew",
    PRESET_NAME: "the keras-hub preset name typed (a widget)",
    UPLOAD: "the uploaded .keras file (a widget)",
    EXTERNAL_ARCHITECTURES: "{weights: architecture} of the models from outside seen",
    RETRAIN: "the spec of a dropped model a link named, offered to train again",
    TRAIN_OWNER: "this session's name in the training pool's queue",
    TRAIN_JOB: "this session's training job",
    EXTERNAL_MODELS: "{weights key: label} of the models from outside this session opened",
    HEAVY_PRESSED: "{run key}: the costly runs this session pressed Run it for (ui.heavy_runs)",
    LINKED: "{field}: the fields the session's first link gave (the others took their defaults), until its first run "
            "ends",
    NOTICE_SLOT: "the container at the top of this run's page that the link's notices go in",
    NEXT_RUN: "{field: value} to set at the start of the next run, before any widget is drawn (`put_next_run`)",
    CLASS_LINK: "{class, student | teacher}: this session's class, as its link gave it or the Class page set it",
    JOIN_ATTEMPTS: "[time]: this session's recent attempts to join a class (ui.class_room limits them)",
    TEACHER_CHECKED: "(code, teacher key, known): whether the class knows this session's teacher key (asked once)",
    ANSWER_PENDING: "{number, given}: a student's latest answer not yet written (the store takes one a second)",
    CLASS_OFFER: "(page, question): what a teacher's last view would ask the class (ui.class_room.offer)",
    CLASS_PENDING: "the page whose view a teacher's lesson opened, to ask the class once it has drawn",
    CLASS_UNDECIDED: "(page, why[, confirmed]): a question held back, its answer not decisive (ui.class_room)",
    CLASS_SHOW_NAMES: "the teacher's Show the students who answered what (a widget)",
}
OPTIONS_PREFIX = "_options_of_"  # + a field: the option labels its widget was last drawn with (controls.options_follow)


def _declared(key: str) -> str:
    """``key``, if it is a field or declared in `SESSION_KEYS`; KeyError naming it otherwise."""
    if key in FIELDS or key in SESSION_KEYS or key.startswith(OPTIONS_PREFIX):
        return key
    raise KeyError(f"{key!r} is neither a field nor a session key declared in ui/state.py")


def get(key: str, default=None):
    """The session's value of ``key``, or ``default`` when it has none."""
    return st.session_state.get(_declared(key), default)


def value(key: str):
    """The session's value of the field ``key``, or its declared default (`FIELDS`) when it has none."""
    return st.session_state.get(_declared(key), FIELDS[key].default)


def read(key: str):
    """The session's value of ``key``; KeyError when it has none."""
    return st.session_state[_declared(key)]


def has(key: str) -> bool:
    return _declared(key) in st.session_state


def put(key: str, value) -> None:
    st.session_state[_declared(key)] = value


def update(values: dict | None = None, **more) -> None:
    """Set several keys at once (as ``dict.update``)."""
    values = {**(values or {}), **more}
    st.session_state.update({_declared(key): value for key, value in values.items()})


def pop(key: str, default=None):
    return st.session_state.pop(_declared(key), default)


def setdefault(key: str, value):
    return st.session_state.setdefault(_declared(key), value)


def drop(key: str) -> None:
    del st.session_state[_declared(key)]


def widget_value(key: str, default=None):
    """What a chart component with widget key ``key`` last sent (its keys are its charts' names)."""
    return st.session_state.get(key, default)


def open_page(page: str, **settings) -> None:
    """From a button's callback: set ``settings`` and ask for ``page``; the page's script opens it
    (`follow_open_page`), since a callback may not switch pages."""
    update(settings)
    put(OPEN_PAGE, page)


def put_next_run(**settings) -> None:
    """Set ``settings`` at the start of the next run (a widget's value may not change once it is drawn)."""
    put(NEXT_RUN, {**get(NEXT_RUN, {}), **settings})


def apply_next_run() -> None:
    """The settings `put_next_run` left, set now (the entry file calls it before drawing anything)."""
    update(pop(NEXT_RUN, {}))


def follow_open_page() -> None:
    """Open the page a callback asked for (`open_page`), if any."""
    if get(OPEN_PAGE):
        st.switch_page(pop(OPEN_PAGE))


def load_url_once() -> None:
    """On a session's first run: fill ``st.session_state`` from the URL (or the defaults)."""
    if has(LOADED):
        return
    query = st.query_params.to_dict()
    values, notices = parse_url(query)
    update(values)
    put(NOTICES, notices)
    put(LINKED, set(query) & set(FIELDS))
    put(CLASS_LINK, {name: str(query[name])[:CLASS_PARAM_CHARS] for name in CLASS_PARAMS if name in query})
    put(LOADED, True)


def fall_back_to_random() -> None:
    """Random weights in place of a model the link named and this server does not have, with the defaults a visit
    without that link gets for every field the link left out (a trained model's defaults followed it: its example
    lines, its length, its architecture); the link's own fields stay."""
    put("weights", RANDOM)
    linked = get(LINKED, set())
    for key in FIELDS:
        if key != "weights" and key not in linked:
            put(key, default_of(key, RANDOM))


def current_values() -> dict:
    return {key: value(key) for key in FIELDS}


def write_url(page: str = "") -> list[str]:
    """Mirror the state in the URL of ``page`` (its url path; the Class page's keeps a student's key, no other's
    does); returns the fields too long to put in it."""
    params, left_out = url_params(current_values())
    kept = CLASS_PAGE_PARAMS if page == CLASS_PAGE else KEPT_CLASS_PARAMS
    params.update({name: text for name, text in get(CLASS_LINK, {}).items() if name in kept})
    if params != st.query_params.to_dict():
        st.query_params.from_dict(params)
    return left_out


def correct(key: str, value, why: str) -> None:
    """Put ``value`` in ``key``: the correction of a value that does not fit the view (``why``, in words). A value
    the link gave gets the link's notice, as a value that did not parse does (`parse_url`)."""
    was = get(key, FIELDS[key].default)
    put(key, value)
    linked = get(LINKED, set())
    if was != value and key in linked:
        linked.discard(key)
        message = f"Ignored the link's {key}={dump(was)[:40]!r} ({why}); {FIELDS[key].using(value, dump(value))}."
        slot = get(NOTICE_SLOT)
        if slot is None:
            notify(message)
        else:
            slot.warning(as_text(message), icon=":material/warning:")


def notify(message: str) -> None:
    """Queue a notice shown at the top of the next page drawn."""
    setdefault(NOTICES, []).append(message)


def pad_symbols(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# The URL's names of a model's shape and `ModelShape`'s own (transformer.core.shape), in one table.
SHAPE_FIELDS = {"d_model": "d_model", "heads": "num_heads", "d_ff": "d_ff", "layers": "num_layers",
                "positions": "positions", "kv_heads": "num_kv_heads", "norm": "norm", "arch": "architecture"}


def shape_options(values: dict) -> dict:
    """`ModelShape`'s keyword arguments from the fields ``values`` (kv_heads 0 = one per head: None)."""
    options = {name: values[field] for field, name in SHAPE_FIELDS.items()}
    return {**options, "num_kv_heads": options["num_kv_heads"] or None}


def shape_fields(shape) -> dict:
    """The fields of a `ModelShape` (a trained model's `TrainSpec`), under their URL names (None key/value heads:
    0)."""
    fields = {field: getattr(shape, name) for field, name in SHAPE_FIELDS.items()}
    return {**fields, "kv_heads": fields["kv_heads"] or 0}


def trained_options(weights: str) -> dict:
    """The options a trained model fixes, under their field names (``arch``, ``norm``, ``positions``); {} for
    random weights, a model from outside or an unknown name. Read from its spec: nothing loads."""
    spec = source_of(weights).own_shape()
    return {} if spec is None else {key: shape_fields(spec)[key] for key in ("arch", "norm", "positions")}
