"""Where a class lives: SQLite (WAL) in the data directory by default, PostgreSQL when ``ATTENTION_LAB_DATABASE_URL``
names one; one code path through SQLAlchemy's Core, every write in a transaction. Replicas on one machine share the
SQLite file; replicas on several share the PostgreSQL database.

Who may do what is checked here, on every call: only the teacher's key asks, reveals and ends, and reads the
answers before the reveal; a student's key answers (once per question: the latest counts) and reads its own answer,
and the class's tally and the model's answer only after the reveal. A wrong code or key raises `ClassError` (a
ValueError: its message is for the person); the database going away raises `StoreUnavailable` (the page says so
and offers to retry; nothing acknowledged is lost)."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, delete, event, func, insert, select, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.exc import InterfaceError as DriverInterfaceError
from sqlalchemy.pool import StaticPool

from classroom import codes, questions
from classroom.schema import answers, classes, create, students
from classroom.schema import questions as asked

DATABASE_URL_ENV = "ATTENTION_LAB_DATABASE_URL"
DATABASE_FILE = "classes.sqlite3"
LASTS_S = 7 * 24 * 3600  # a class lasts 7 days unless the teacher ends it first
MAX_VIEW_CHARS = 4000  # a question's link
MAX_PROMPT_CHARS = 300
MAX_JSON_CHARS = 200_000  # what a question shows, and its answer (an N × N mask at N = 256: ~330 KB as JSON)
ANSWER_INTERVAL_S = 1.0  # a student's answers are written at most this often (the page keeps the latest meanwhile)
CLASSES_PER_ADDRESS = 20  # live classes one address may have started (a school behind one address has several)
MAX_GIVEN_CHARS = 50_000  # one student's answer (every cell of a 64 × 64 grid: ~40 KB)


class ClassError(ValueError):
    """A code, key or request the class does not take; the message says which, for the person."""


class AnswerTooSoon(ClassError):
    """An answer within `ANSWER_INTERVAL_S` of the student's last: ``wait_s`` until one is written again."""

    def __init__(self, message: str, wait_s: float):
        super().__init__(message)
        self.wait_s = wait_s


class StoreUnavailable(RuntimeError):
    """The database did not answer; nothing was changed by the call that raised it."""


@dataclass(frozen=True)
class Started:
    code: str
    teacher_key: str


@dataclass(frozen=True)
class Question:
    """A question as a student may see it: ``answer`` is None until the reveal."""

    id: int
    number: int
    kind: str
    view: str
    prompt: str
    shown: dict
    revealed: bool
    answer: dict | None


@dataclass(frozen=True)
class Answered:
    """One student's answer as the teacher sees it (``nickname`` "" for one who gave none)."""

    nickname: str
    given: dict
    student: int = 0  # the student's number in this class's store (no key): tells unnamed students apart


def database_url(data_dir: Path | None) -> str:
    """``ATTENTION_LAB_DATABASE_URL`` when set, else the SQLite file in the data directory (in memory without one)."""
    chosen = os.environ.get(DATABASE_URL_ENV, "").strip()
    if chosen:
        return chosen
    return f"sqlite:///{data_dir / DATABASE_FILE}" if data_dir else "sqlite://"


def _sqlite_pragmas(connection, _record) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer: replicas share the file
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _limited(text: str, limit: int, what: str) -> str:
    if len(text) > limit:
        raise ClassError(f"{what} is at most {limit:,} characters. Received: {len(text):,} characters")
    return text


class ClassStore:
    """The classes of one database (``url``: SQLAlchemy's URL). Thread-safe: each call takes its own connection."""

    def __init__(self, url: str):
        self.url = url
        options = {"pool_pre_ping": True}
        if url.startswith("sqlite"):
            options = {"connect_args": {"check_same_thread": False, "timeout": 5}}
        # In memory (no data directory): one connection, or each would see a database of its own; its transactions
        # then take turns (`_serial`), or two threads' would interleave on it and one's writes be lost.
        self._serial = threading.RLock() if url == "sqlite://" else contextlib.nullcontext()
        if url == "sqlite://":
            options["poolclass"] = StaticPool
        self.engine = create_engine(url, **options)
        if url.startswith("sqlite"):
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._ready = False
        self._ready_lock = threading.Lock()

    def _begin(self):
        """A transaction, the tables made first (once); StoreUnavailable when the database does not answer."""
        try:
            if not self._ready:
                with self._ready_lock, self.engine.begin() as connection:
                    create(connection)
                    self._ready = True
            return self.engine.begin()
        except (OperationalError, DriverInterfaceError) as error:
            raise StoreUnavailable(_why(error)) from error

    def _run(self, work):
        """``work(connection)`` in one transaction; a database that went away mid-call raises StoreUnavailable."""
        try:
            with self._serial, self._begin() as connection:
                return work(connection)
        except (OperationalError, DriverInterfaceError) as error:
            raise StoreUnavailable(_why(error)) from error

    # The teacher's calls

    def start(self, lasts_s: float = LASTS_S, now: float | None = None, owner: str = "") -> Started:
        """A new class: its join code and the teacher's key (shown once; only its digest is kept). ``owner``: the
        address starting it, which may have `CLASSES_PER_ADDRESS` live classes at most (ClassError past it)."""
        now = time.time() if now is None else now
        if not 60 <= lasts_s <= 30 * 24 * 3600:
            raise ClassError(f"A class lasts from a minute to 30 days. Received: lasts_s={lasts_s}")
        self.purge(now)
        owner_digest = codes.digest(owner) if owner else None
        if owner_digest is not None:
            live = self._run(lambda connection: connection.execute(select(func.count()).select_from(classes).where(
                classes.c.owner_digest == owner_digest)).scalar_one())
            if live >= CLASSES_PER_ADDRESS:
                raise ClassError(f"{live} classes started from your address are still open, the most one address may "
                                 "have: end one (its history page) or wait until one ends.")
        key = codes.new_key()
        for _ in range(20):  # a code already taken: another (31^6 codes)
            code = codes.new_code()
            try:
                row = dict(code=code, teacher_digest=codes.digest(key), created_at=now, expires_at=now + lasts_s,
                           show_names=0, owner_digest=owner_digest)
                self._run(lambda connection, row=row: connection.execute(insert(classes).values(**row)))
                return Started(code, key)
            except IntegrityError:
                continue
        raise StoreUnavailable("No free class code was found; try again.")

    def ask(self, code: str, teacher_key: str, kind: str, view: str, prompt: str, shown: dict, answer: dict,
            now: float | None = None) -> int:
        """A new question, now the class's current one (open): its number."""
        questions.check_kind(kind)
        view = _limited(view, MAX_VIEW_CHARS, "A question's link")
        prompt = _limited(" ".join(codes.clean_text(prompt).split()), MAX_PROMPT_CHARS, "A question")
        shown = codes.cleaned(shown)  # a teacher's options, shown to every student: no reordering controls
        shown_text = _limited(json.dumps(shown), MAX_JSON_CHARS, "What a question shows")
        answer_text = _limited(json.dumps(answer), MAX_JSON_CHARS, "A question's answer")

        def work(connection):
            class_id = self._teacher(connection, code, teacher_key)
            number = connection.execute(select(func.coalesce(func.max(asked.c.number), 0)).where(
                asked.c.class_id == class_id)).scalar_one() + 1
            connection.execute(insert(asked).values(
                class_id=class_id, number=number, kind=kind, view=view, prompt=prompt, shown=shown_text,
                answer=answer_text, revealed=0, asked_at=time.time() if now is None else now))
            return number
        return self._run(work)

    def reveal(self, code: str, teacher_key: str) -> None:
        """The current question revealed: students see the model's answer, their mark and the class's tally."""
        def work(connection):
            class_id = self._teacher(connection, code, teacher_key)
            current = self._current_id(connection, class_id)
            if current is None:
                raise ClassError("There is no question to reveal yet: ask one first.")
            connection.execute(update(asked).where(asked.c.id == current).values(revealed=1))
        self._run(work)

    def show_names(self, code: str, teacher_key: str, shown: bool) -> None:
        """Whether the teacher's tally, after a reveal, names who answered what (off by default)."""
        self._run(lambda c: c.execute(update(classes).where(
            classes.c.id == self._teacher(c, code, teacher_key)).values(show_names=int(bool(shown)))))

    def answers(self, code: str, teacher_key: str, number: int) -> list[Answered]:
        """Every student's latest answer to question ``number`` (the teacher's tally, before or after the reveal)."""
        return self._run(lambda c: _answered(c, self._question_id(c, self._teacher(c, code, teacher_key), number)))

    def question(self, code: str, teacher_key: str, number: int) -> Question:
        """Question ``number`` with the model's answer, revealed or not (the teacher's own view of it)."""
        def work(connection):
            class_id = self._teacher(connection, code, teacher_key)
            question_id = self._question_id(connection, class_id, number)
            return _question(connection.execute(select(asked).where(asked.c.id == question_id)).one(), True)
        return self._run(work)

    def history(self, code: str, teacher_key: str) -> list[tuple[Question, list[Answered]]]:
        """Every question asked, in order, each with its answers: one transaction."""
        def work(connection):
            class_id = self._teacher(connection, code, teacher_key)
            rows = connection.execute(select(asked).where(asked.c.class_id == class_id).order_by(asked.c.number))
            return [(_question(row, with_answer=True), _answered(connection, row.id)) for row in rows.all()]
        return self._run(work)

    def end(self, code: str, teacher_key: str) -> None:
        """The class deleted, with its students, questions and answers."""
        self._run(lambda c: c.execute(delete(classes).where(classes.c.id == self._teacher(c, code, teacher_key))))

    def is_teacher(self, code: str, teacher_key: str) -> bool:
        try:
            self._run(lambda c: self._teacher(c, code, teacher_key))
            return True
        except ClassError:
            return False

    # A student's calls

    def join(self, code: str, nickname: str = "", now: float | None = None) -> str:
        """A student in the class: its key (kept by the student's session)."""
        key, name = codes.new_key(), codes.clean_nickname(nickname)

        now = time.time() if now is None else now

        def work(connection):
            class_id = self._class_id(connection, code, now)
            connection.execute(insert(students).values(class_id=class_id, digest=codes.digest(key), nickname=name,
                                                       joined_at=now))
        self._run(work)
        return key

    def answer(self, code: str, student_key: str, number: int, given: dict, now: float | None = None) -> dict:
        """The student's answer to question ``number`` (while it is open): the answer as kept. A second answer
        replaces the first."""
        at = time.time() if now is None else now

        def work(connection):
            class_id = self._class_id(connection, code, at)
            student_id = self._student(connection, class_id, student_key)
            row = connection.execute(select(asked).where(asked.c.class_id == class_id,
                                                         asked.c.number == number)).first()
            if row is None or row.id != self._current_id(connection, class_id):
                raise ClassError(f"Question {number} is not the class's question now.")
            if row.revealed:
                raise ClassError(f"Question {number} was revealed: its answers are closed.")
            kept = questions.check_given(row.kind, json.loads(row.shown), given)
            text = _limited(json.dumps(kept), MAX_GIVEN_CHARS, "An answer")
            last = connection.execute(select(func.max(answers.c.at)).where(
                answers.c.student_id == student_id)).scalar_one_or_none()
            if last is not None and at - last < ANSWER_INTERVAL_S:
                raise AnswerTooSoon(f"You answered a moment ago; this answer is sent in "
                                    f"{ANSWER_INTERVAL_S - (at - last):.1f} s.", ANSWER_INTERVAL_S - (at - last))
            done = connection.execute(update(answers).where(answers.c.question_id == row.id,
                                                            answers.c.student_id == student_id)
                                      .values(given=text, at=at))
            if done.rowcount == 0:
                connection.execute(insert(answers).values(question_id=row.id, student_id=student_id, given=text,
                                                          at=at))
            return kept
        return self._run(work)

    def my_answer(self, code: str, student_key: str, number: int) -> dict | None:
        def work(connection):
            class_id = self._class_id(connection, code)
            student_id = self._student(connection, class_id, student_key)
            return connection.execute(select(answers.c.given).where(
                answers.c.question_id == self._question_id(connection, class_id, number),
                answers.c.student_id == student_id)).scalar_one_or_none()
        given = self._run(work)
        return None if given is None else json.loads(given)

    def revealed_answers(self, code: str, student_key: str, number: int) -> list[dict]:
        """The class's answers to a revealed question, without names (a student's view of the tally)."""
        def work(connection):
            class_id = self._class_id(connection, code)
            self._student(connection, class_id, student_key)
            question_id = self._question_id(connection, class_id, number)
            if not connection.execute(select(asked.c.revealed).where(asked.c.id == question_id)).scalar_one():
                raise ClassError("The class's answers are shown after the reveal.")
            return [json.loads(given) for given in connection.execute(
                select(answers.c.given).where(answers.c.question_id == question_id)).scalars()]
        return self._run(work)

    def revealed_names(self, code: str, student_key: str, number: int) -> list[Answered]:
        """Who answered what to a revealed question, for a student, where the teacher shows names (else [])."""
        def work(connection):
            class_id = self._class_id(connection, code)
            self._student(connection, class_id, student_key)
            shown = connection.execute(select(classes.c.show_names).where(classes.c.id == class_id)).scalar_one()
            question_id = self._question_id(connection, class_id, number)
            revealed = connection.execute(select(asked.c.revealed).where(asked.c.id == question_id)).scalar_one()
            return _answered(connection, question_id) if shown and revealed else []
        return self._run(work)

    def names_shown(self, code: str) -> bool:
        return bool(self._run(lambda c: c.execute(select(classes.c.show_names).where(
            classes.c.id == self._class_id(c, code))).scalar_one()))

    # Anyone with the code

    def current(self, code: str) -> Question | None:
        """The class's question now (its answer only once revealed); None before the first."""
        def work(connection):
            class_id = self._class_id(connection, code)
            current = self._current_id(connection, class_id)
            if current is None:
                return None
            return _question(connection.execute(select(asked).where(asked.c.id == current)).one(), False)
        return self._run(work)

    def counts(self, code: str) -> tuple[int, int]:
        """``(students joined, answers to the current question)``."""
        def work(connection):
            class_id = self._class_id(connection, code)
            joined = connection.execute(select(func.count()).where(students.c.class_id == class_id)).scalar_one()
            current = self._current_id(connection, class_id)
            answered = 0 if current is None else connection.execute(
                select(func.count()).where(answers.c.question_id == current)).scalar_one()
            return joined, answered
        return self._run(work)

    def purge(self, now: float | None = None) -> int:
        """Delete the classes past their time: how many."""
        now = time.time() if now is None else now
        return self._run(lambda c: c.execute(delete(classes).where(classes.c.expires_at < now)).rowcount)

    # Checks

    def _class_id(self, connection, code: str, now: float | None = None) -> int:
        """The open class of ``code`` (at ``now``: the caller's clock, else this one's); ClassError else."""
        try:
            code = codes.check_code(code)
        except ValueError as error:
            raise ClassError(str(error)) from None
        row = connection.execute(select(classes.c.id, classes.c.expires_at).where(classes.c.code == code)).first()
        if row is None or row.expires_at < (time.time() if now is None else now):
            raise ClassError(f"No class has the code {code}: check it with your teacher (it ends when the teacher "
                             "ends it, or after its time).")
        return row.id

    def _teacher(self, connection, code: str, teacher_key: str) -> int:
        class_id = self._class_id(connection, code)
        kept = connection.execute(select(classes.c.teacher_digest).where(classes.c.id == class_id)).scalar_one()
        if not codes.same_key(teacher_key, kept):
            raise ClassError("Only the class's teacher may do that (the teacher's key did not match).")
        return class_id

    def _student(self, connection, class_id: int, student_key: str) -> int:
        found = connection.execute(select(students.c.id).where(students.c.digest == codes.digest(student_key or ""),
                                                               students.c.class_id == class_id)).scalar_one_or_none()
        if found is None:
            raise ClassError("You are not in this class yet: join it with its code.")
        return found

    def _current_id(self, connection, class_id: int) -> int | None:
        return connection.execute(select(asked.c.id).where(asked.c.class_id == class_id)
                                  .order_by(asked.c.number.desc()).limit(1)).scalar_one_or_none()

    def _question_id(self, connection, class_id: int, number: int) -> int:
        found = connection.execute(select(asked.c.id).where(asked.c.class_id == class_id,
                                                            asked.c.number == number)).scalar_one_or_none()
        if found is None:
            raise ClassError(f"The class has no question {number}.")
        return found


def _answered(connection, question_id: int) -> list[Answered]:
    """Every student's latest answer to one question, oldest first, with the nickname."""
    rows = connection.execute(select(students.c.nickname, answers.c.given, students.c.id).join(
        students, students.c.id == answers.c.student_id).where(answers.c.question_id == question_id)
        .order_by(answers.c.at))
    return [Answered(nickname, json.loads(given), student) for nickname, given, student in rows]


def _question(row, with_answer: bool) -> Question:
    shown_answer = with_answer or bool(row.revealed)
    return Question(row.id, row.number, row.kind, row.view, row.prompt, json.loads(row.shown), bool(row.revealed),
                    json.loads(row.answer) if shown_answer else None)


def _why(error: Exception) -> str:
    return ("The class's database did not answer (" + type(getattr(error, "orig", error)).__name__ + "); nothing "
            "was changed. Try again in a moment.")


_stores: dict[str, ClassStore] = {}
_stores_lock = threading.Lock()


def store_for(url: str) -> ClassStore:
    """One store per database URL in this process (its connection pool shared by every session)."""
    with _stores_lock:
        if url not in _stores:
            _stores[url] = ClassStore(url)
        return _stores[url]
