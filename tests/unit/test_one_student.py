"""What one student (or one script) could do to the class and to what others read, from the second hostile-input
probe (issue 86, items 4 and 5): each test failed before its fix."""

import csv
import io
import re
import time

import pytest

from classroom import codes
from classroom.store import ANSWER_INTERVAL_S, CLASSES_PER_ADDRESS, ClassError, ClassStore
from ui.text import as_text

# GitHub-flavoured Markdown's autolink literals as the browser's Markdown finds them: after escapes are resolved, on
# the text itself (mdast-util-gfm-autolink-literal's patterns), so a backslash cannot stop them
URL_LITERAL = re.compile(r"(https?://|www(?=\.))([-.\w]+)([^ \t\r\n]*)", re.IGNORECASE)
EMAIL_LITERAL = re.compile(r"(?:^|(?<=[\s\W]))([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)")


def shown(markdown: str) -> str:
    """What a reader sees of ``markdown``'s text: its backslash escapes resolved, as CommonMark does."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown).replace("  \n", "\n")


@pytest.mark.parametrize("text", ["x@evil.example", "https://example.invalid/x", "see www.example.invalid now",
                                  "Received: d_model='https://example.invalid/x'", "mailto me: a.b+c@d.example"])
def test_a_bare_address_or_email_from_outside_is_shown_inert(text):
    seen = shown(as_text(text))
    assert not URL_LITERAL.search(seen) and not EMAIL_LITERAL.search(seen), seen
    assert seen.replace("\u2060", "") == text  # the same characters to the eye: only an invisible joiner between


@pytest.mark.parametrize("text", ["\u202eevil\u202c", "a\u2066b\u2069c", "left\u200fright\u061c"])
def test_bidi_controls_are_stripped_from_every_typed_text_the_class_shows(text, tmp_path):
    assert not any(mark in codes.clean_text(text) for mark in codes.BIDI_CONTROLS)
    store = ClassStore(f"sqlite:///{tmp_path / 'class.db'}")
    started = store.start()
    store.ask(started.code, started.teacher_key, "choice", "attention", f"Which? {text}",
              {"options": [text, "plain"]}, {"option": 1})
    question = store.current(started.code)
    assert not any(mark in question.prompt + "".join(question.shown["options"]) for mark in codes.BIDI_CONTROLS)


def test_a_students_answers_are_rate_limited_and_the_latest_kept_still_counts(tmp_path):
    store = ClassStore(f"sqlite:///{tmp_path / 'class.db'}")
    now = time.time()
    started = store.start(now=now)
    store.ask(started.code, started.teacher_key, "choice", "attention", "Which?", {"options": ["a", "b", "c"]},
              {"option": 1}, now=now)
    key = store.join(started.code, "ada", now=now)
    store.answer(started.code, key, 1, {"option": 0}, now=now)
    with pytest.raises(ClassError, match="a moment"):
        store.answer(started.code, key, 1, {"option": 2}, now=now + ANSWER_INTERVAL_S / 2)
    assert store.my_answer(started.code, key, 1) == {"option": 0}  # the one kept still counts
    store.answer(started.code, key, 1, {"option": 1}, now=now + ANSWER_INTERVAL_S)
    assert store.my_answer(started.code, key, 1) == {"option": 1}


def test_live_classes_per_address_are_capped(tmp_path):
    store = ClassStore(f"sqlite:///{tmp_path / 'class.db'}")
    for _ in range(CLASSES_PER_ADDRESS):
        store.start(now=1000.0, owner="10.0.0.9")
    with pytest.raises(ClassError, match="classes started from your address"):
        store.start(now=1000.0, owner="10.0.0.9")
    store.start(now=1000.0, owner="10.0.0.10")  # another address still starts one
    store.start(now=1000.0 + 8 * 24 * 3600, owner="10.0.0.9")  # and this one, once its classes have ended


def test_joins_are_limited_per_address_not_per_session():
    from ui.class_room import ADDRESS_JOIN_LIMIT, join_allowed

    for session in range(ADDRESS_JOIN_LIMIT):  # each try from a fresh session, all from one address
        join_allowed("10.0.0.7", now=100.0 + session / 10)
    with pytest.raises(ClassError, match="Too many tries to join"):
        join_allowed("10.0.0.7", now=100.0 + ADDRESS_JOIN_LIMIT / 10)
    join_allowed("10.0.0.8", now=100.0 + ADDRESS_JOIN_LIMIT / 10)
    join_allowed("10.0.0.7", now=100.0 + 61 + ADDRESS_JOIN_LIMIT / 10)  # a minute later


@pytest.mark.parametrize("cell", ['=HYPERLINK("http://e.x","c")', "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx"])
def test_the_history_csv_neutralises_formulas(cell):
    from classroom.store import Question
    from ui.class_sheets import history_csv

    question = Question(id=1, number=1, kind="choice", view="attention", prompt=cell, shown={"options": [cell, "b"]},
                        revealed=True, answer={"choice": 1})
    rows = list(csv.reader(io.StringIO(history_csv([(question, [])]).decode())))
    prompt = rows[1][2]
    assert prompt.startswith("'") and prompt[1:] == cell


def test_a_forwarded_address_is_trusted_only_behind_the_projects_proxy(monkeypatch):
    from ui import runtime

    """Forged X-Forwarded-For from this machine counted as new clients: without our proxy the header is never read."""
    assert runtime.client_from(None, "203.0.113.5", behind_proxy=False) == "local"
    assert runtime.client_from("198.51.100.2", "203.0.113.5", behind_proxy=False) == "198.51.100.2"
    assert runtime.client_from(None, "203.0.113.5, 10.0.0.1", behind_proxy=True) == "10.0.0.1"  # the proxy's entry
    assert runtime.client_from("172.18.0.5", "203.0.113.5", behind_proxy=True) == "203.0.113.5"  # the proxy's own
    assert runtime.client_from("172.18.0.5", "", behind_proxy=True) == "172.18.0.5"


def test_lines_cut_to_the_length_are_said_in_one_notice_a_side():
    """Six "line … was cut to 5" notices stood above the heads on a projected screen (issue 87, item 12)."""
    from transformer import LiveConfig, read_lines

    long = "\n".join(" ".join("abcdefgh"[: 6 + line % 3]) for line in range(6))
    said = read_lines(LiveConfig(seq_len=5, source_text=long, target_text=long)).notices
    cut = [notice for notice in said if "cut to 5" in notice]
    assert cut == ["Source lines 1, 2, 3, 4, 5, 6 have 6–8 tokens; each was cut to 5.",
                   "Target lines 1, 2, 3, 4, 5, 6 have 6–8 tokens; each was cut to 5."], said
    one = read_lines(LiveConfig(seq_len=5, source_text="a b c d e f", target_text="a b")).notices
    assert "Source line 1 has 6 tokens; it was cut to 5." in one


def test_a_model_from_outside_with_more_heads_than_the_lab_draws_is_refused_when_read():
    """A 342 KB upload of one MultiHeadAttention of 4,096 heads (key_dim 1) grew the server ~N² (+584 MB at N = 128,
    its maps coming back from the lane to be drawn): refused when read, before any run (issue 86)."""
    import keras

    from transformer.core.shape import MAX_HEADS
    from transformer.external import load

    inputs = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(16, 8)(inputs)
    x = keras.layers.MultiHeadAttention(num_heads=MAX_HEADS + 1, key_dim=1)(x, x)
    with pytest.raises(ValueError, match=f"{MAX_HEADS + 1} heads a layer.*at most {MAX_HEADS}"):
        load(keras.Model(inputs, x), name="wide")
    x = keras.layers.MultiHeadAttention(num_heads=4, key_dim=2)(keras.layers.Embedding(16, 8)(inputs),
                                                                 keras.layers.Embedding(16, 8)(inputs))
    assert load(keras.Model(inputs, x), name="narrow").num_heads == 4


def test_every_students_answers_download_named_only_as_the_teacher_shows_names():
    """The CSV had per-question totals only (issue 87, item 8): a sheet of every student's answer and mark, each
    named by nickname only when the teacher shows names, else "student 1", "student 2"."""
    from classroom.store import Answered, Question
    from ui.class_sheets import students_csv

    question = Question(id=1, number=1, kind="choice", view="class_room", prompt="Which?",
                        shown={"options": ["a", "b"]}, revealed=True, answer={"option": 1})
    rows = [(question, [Answered("ada", {"option": 1}, 7), Answered("", {"option": 0}, 9)])]
    hidden = list(csv.reader(io.StringIO(students_csv(rows, names_shown=False).decode())))
    assert hidden == [["question", "student", "answer", "right", "score"], ["1", "student 1", "b", "yes", "1.000"],
                      ["1", "student 2", "a", "no", "0.000"]]
    shown = list(csv.reader(io.StringIO(students_csv(rows, names_shown=True).decode())))
    assert [row[1] for row in shown[1:]] == ["ada", "student 2"]
