"""The class store (classroom/store.py) against SQLite and against PostgreSQL (a server of the tests' own on
loopback: tests/support/postgres_support.py; skipped with a message where PostgreSQL is not installed, required in
CI): a class from start to end, who may do what (a forged teacher key included), answers checked and bounded, a
restart and the database going away mid-class."""

import json
import threading

import pytest
from postgres_support import postgres_server
from sqlalchemy import create_engine, text

from classroom import codes
from classroom import store as store_module
from classroom.store import ClassError, ClassStore, StoreUnavailable, database_url

SHOWN = {"options": ["<s>", "the", "cat", "sat"]}
ANSWER = {"weights": [0.1, 0.2, 0.6, 0.1], "key": 2}


@pytest.fixture(scope="module")
def postgres_url():
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path, postgres_url):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    if postgres_url is None:
        pytest.skip("PostgreSQL is not installed here (Debian's postgresql); CI runs these against it")
    return postgres_url


def a_class(store: ClassStore):
    started = store.start()
    store.ask(started.code, started.teacher_key, "where", "attention?seq_len=4", "Where will 'sat' look?", SHOWN,
              ANSWER)
    return started


def test_a_class_from_start_to_end(url, monkeypatch):
    monkeypatch.setattr(store_module, "ANSWER_INTERVAL_S", 0.0)  # answers as fast as a test gives them
    store = ClassStore(url)
    started = store.start()
    assert len(started.code) == 6 and set(started.code) <= set(codes.CODE_ALPHABET)
    assert not set("0O1IL") & set(codes.CODE_ALPHABET) and len(started.teacher_key) >= 32
    ada, bob = store.join(started.code, "Ada"), store.join(started.code.lower(), "  Bob\n\u202e ")
    assert store.current(started.code) is None
    number = store.ask(started.code, started.teacher_key, "where", "attention?seq_len=4", "Where?", SHOWN, ANSWER)
    current = store.current(started.code)
    assert (number, current.number, current.kind, current.revealed, current.answer) == (1, 1, "where", False, None)
    store.answer(started.code, ada, 1, {"key": 1})
    store.answer(started.code, ada, 1, {"key": 2})  # the latest counts (the interval between: test_one_student)
    store.answer(started.code, bob, 1, {"key": 2})
    assert store.counts(started.code) == (2, 2)
    assert [(a.nickname, a.given) for a in store.answers(started.code, started.teacher_key, 1)] == \
        [("Ada", {"key": 2}), ("Bob", {"key": 2})]  # the nickname's control characters gone, spaces collapsed
    assert store.my_answer(started.code, ada, 1) == {"key": 2}
    assert store.question(started.code, started.teacher_key, 1).answer == ANSWER  # the teacher's, before the reveal
    store.reveal(started.code, started.teacher_key)
    assert store.current(started.code).answer == ANSWER
    assert store.revealed_answers(started.code, bob, 1) == [{"key": 2}, {"key": 2}]
    assert store.revealed_names(started.code, bob, 1) == []  # names only where the teacher shows them
    store.show_names(started.code, started.teacher_key, True)
    assert [a.nickname for a in store.revealed_names(started.code, bob, 1)] == ["Ada", "Bob"]
    with pytest.raises(ClassError, match="revealed"):
        store.answer(started.code, bob, 1, {"key": 0})
    store.ask(started.code, started.teacher_key, "cells", "masks?seq_len=2", "Which cells?",
              {"queries": ["a", "b"], "keys": ["a", "b"]}, {"mask": [[True, False], [True, True]]})
    with pytest.raises(ClassError, match="not the class's question now"):
        store.answer(started.code, ada, 1, {"key": 1})
    assert store.answer(started.code, ada, 2, {"cells": [[1, 0], [0, 0], [1, 0]]}) == {"cells": [(0, 0), (1, 0)]}
    history = store.history(started.code, started.teacher_key)
    assert [(q.number, q.kind, len(given)) for q, given in history] == [(1, "where", 2), (2, "cells", 1)]
    store.end(started.code, started.teacher_key)
    with pytest.raises(ClassError, match=f"No class has the code {started.code}"):
        store.current(started.code)


def test_only_the_teacher_asks_reveals_reads_and_ends_and_a_student_only_answers_for_itself(url):
    store = ClassStore(url)
    started, other = a_class(store), a_class(store)
    ada = store.join(started.code, "Ada")
    forged = codes.new_key()
    for call in (lambda key: store.reveal(started.code, key), lambda key: store.answers(started.code, key, 1),
                 lambda key: store.end(started.code, key), lambda key: store.history(started.code, key),
                 lambda key: store.question(started.code, key, 1),
                 lambda key: store.ask(started.code, key, "where", "x", "x", SHOWN, ANSWER)):
        for key in (forged, "", other.teacher_key, ada):  # a forged key, none, another class's, a student's
            with pytest.raises(ClassError, match="Only the class's teacher"):
                call(key)
    with pytest.raises(ClassError, match="after the reveal"):
        store.revealed_answers(started.code, ada, 1)
    stranger = store.join(other.code)
    for key in (forged, stranger):  # a key that is no student's, another class's student
        with pytest.raises(ClassError, match="not in this class"):
            store.answer(started.code, key, 1, {"key": 1})
    assert store.counts(started.code) == (1, 0) and store.is_teacher(started.code, started.teacher_key)
    assert not store.is_teacher(started.code, forged)


def test_a_wrong_code_and_a_bad_answer_get_a_message(url):
    store = ClassStore(url)
    started = a_class(store)
    ada = store.join(started.code)
    for bad in ("ABC", "K7RM4O", "<script>", "x" * 5000):
        with pytest.raises(ClassError, match="6 letters and digits"):
            store.join(bad)
    missing = "".join(sorted(codes.CODE_ALPHABET)[:6])
    with pytest.raises(ClassError, match=f"No class has the code {missing}"):
        store.join(missing if missing != started.code else "ZZZZZZ")
    for bad in ({"key": 4}, {"key": -1}, {"key": "2"}, {"key": True}, {}, [], {"cells": [[0, 0]]}):
        with pytest.raises(ValueError):
            store.answer(started.code, ada, 1, bad)
    with pytest.raises(ClassError, match="at most 4,000 characters"):
        store.ask(started.code, started.teacher_key, "where", "x" * 4001, "Where?", SHOWN, ANSWER)
    with pytest.raises(ValueError, match="kind is one of"):
        store.ask(started.code, started.teacher_key, "guess", "x", "x", SHOWN, ANSWER)
    assert store.my_answer(started.code, ada, 1) is None


def test_a_class_outlives_a_restart_and_ends_after_its_time(url):
    started = a_class(ClassStore(url))
    again = ClassStore(url)  # a restarted server (a new engine on the same database)
    ada = again.join(started.code)
    again.answer(started.code, ada, 1, {"key": 3})
    assert ClassStore(url).my_answer(started.code, ada, 1) == {"key": 3}
    short = again.start(lasts_s=60, now=1000.0)
    assert again.purge(now=1061.0) >= 1
    with pytest.raises(ClassError, match="No class has the code"):
        again.current(short.code)
    assert again.current(started.code).number == 1


def test_thirty_students_answering_at_once_are_all_recorded(url):
    store = ClassStore(url)
    started = a_class(store)
    keys = [store.join(started.code, f"s{i}") for i in range(30)]
    threads = [threading.Thread(target=store.answer, args=(started.code, key, 1, {"key": i % 4}))
               for i, key in enumerate(keys)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.counts(started.code) == (30, 30)


def test_without_a_data_directory_a_class_lives_in_the_servers_memory():
    store = ClassStore(database_url(None))  # ATTENTION_LAB_DATA_DIR=off
    started = a_class(store)
    keys = []
    threads = [threading.Thread(target=lambda: keys.append(store.join(started.code))) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.counts(started.code) == (5, 0) and store.current(started.code).number == 1


def test_a_later_schema_is_refused_and_a_missing_database_says_so(tmp_path):
    later = f"sqlite:///{tmp_path / 'later.sqlite3'}"
    ClassStore(later).start()
    with create_engine(later).begin() as connection:
        connection.execute(text("UPDATE schema_version SET version = 99"))
    with pytest.raises(ValueError, match="schema 99"):
        ClassStore(later).start()
    gone = ClassStore(f"sqlite:///{tmp_path / 'no' / 'such' / 'folder.sqlite3'}")
    with pytest.raises(StoreUnavailable, match="did not answer"):
        gone.start()


def test_postgresql_going_away_mid_class_is_a_message_and_nothing_acknowledged_is_lost(postgres_url):
    if postgres_url is None:
        pytest.skip("PostgreSQL is not installed here (Debian's postgresql); CI runs this against it")
    with postgres_server() as url:  # a server of its own, stopped and started again here
        import postgres_support as support

        store = ClassStore(url)
        started = a_class(store)
        ada = store.join(started.code)
        store.answer(started.code, ada, 1, {"key": 2})
        data = support.running_data_dir(url)
        support.stop(data)
        with pytest.raises(StoreUnavailable, match="did not answer"):
            store.answer(started.code, ada, 1, {"key": 1})
        support.start(data, url)
        assert store.my_answer(started.code, ada, 1) == {"key": 2}  # the acknowledged answer, kept
        assert json.dumps(store.current(started.code).shown) == json.dumps(SHOWN)


def test_a_database_of_the_first_schema_is_brought_forward_with_its_classes(url):
    """Schema 2 adds the starting address's digest (a cap on classes per address): a server upgraded mid-term opens
    the version 1 database its classes are in, keeps them, and caps new ones."""
    from classroom.schema import metadata

    engine = create_engine(url)
    with engine.begin() as connection:  # the tables as version 1 made them: today's, less the new column
        metadata.drop_all(connection)
        metadata.create_all(connection)
        connection.execute(text("DROP INDEX ix_classes_owner_digest"))
        connection.execute(text("ALTER TABLE classes DROP COLUMN owner_digest"))
        connection.execute(text("INSERT INTO schema_version (version) VALUES (1)"))
        connection.execute(text("INSERT INTO classes (code, teacher_digest, created_at, expires_at, show_names) "
                                f"VALUES ('ABCDEF', '{codes.digest('k' * 32)}', 0, 1e12, 0)"))
    engine.dispose()
    store = ClassStore(url)
    assert store.is_teacher("ABCDEF", "k" * 32)  # the class of version 1 kept
    started = store.start(owner="10.0.0.9")
    assert store.is_teacher(started.code, started.teacher_key)
    with create_engine(url).connect() as connection:
        assert connection.execute(text("SELECT max(version) FROM schema_version")).scalar_one() == 2
    ClassStore(url)  # a second replica opening it: nothing to do, no error
