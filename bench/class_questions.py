"""Load test of a class answering questions: one teacher and 1, 30, then 60 students, through Streamlit's protocol
(bench/student.py, no browser), with the class store in SQLite and in PostgreSQL.

    python bench/class_questions.py [--students 1 30 60] [--questions 10] [--write]

Each student joins on the Class page (code and nickname, the Join button) and then does what its browser does: its
panel's fragment reruns every second (the poll), and when a question shows it answers within 10 s (a random delay;
the radio's change reruns the fragment). The teacher asks each of the questions by the store (a multiple-choice
question, as the Class page's form asks it), follows the tally by its own panel's poll, and reveals after 12 s.
Figures per run: answers recorded (the store's count against the answers the students' pages acknowledged), the
answer's round trip p90 (a student's move) against one student's alone, the time from an acknowledged answer to the
teacher's tally counting it (p90), the time a new question takes to reach a student (p90), and the server's CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support"), str(ROOT / "bench")]

from browser_support import streamlit_server  # noqa: E402
from postgres_support import postgres_server  # noqa: E402
from report import percentile, process_cpu_seconds, steal_note, stolen_seconds, write_section  # noqa: E402,I001
from student import Student  # noqa: E402

from classroom.store import DATABASE_FILE, ClassStore  # noqa: E402

OPTIONS = ["alpha", "beta", "gamma", "delta"]
ANSWER_WITHIN_S, REVEAL_AFTER_S, POLL_S = 10.0, 12.0, 1.0
NICKNAME = "Nickname (optional, shown only to your teacher)"


class Pupil(Student):
    """A student in a class: joins, polls its panel, answers each question once."""

    def __init__(self, number: int, url: str, code: str):
        super().__init__(number, url, random.Random(number))
        self.code, self.fragment, self.seen, self.moves, self.acks, self.reached = code, "", 0, [], [], []

    async def join(self) -> None:
        await self.connect()
        opened = await self.open_page("class_room", f"class={self.code}")
        joined = await self.submit("Join", **{"Class code": self.code, NICKNAME: f"s{self.number}"})
        self.fragment = next(iter({**opened.auto_reruns, **joined.auto_reruns}), "")

    async def follow(self, asked: dict, stop: asyncio.Event) -> None:
        """Poll every POLL_S; answer each new question after a random pause within ANSWER_WITHIN_S."""
        while not stop.is_set():
            await asyncio.sleep(POLL_S)
            answer = await self.rerun_fragment(self.fragment)
            if "Your answer" in answer.widgets and asked and max(asked) > self.seen:
                self.seen = max(asked)
                self.reached.append(time.monotonic() - asked[self.seen])
                await asyncio.sleep(self.rng.uniform(0, ANSWER_WITHIN_S - 2))
                started = time.monotonic()
                moved = await self.move("Your answer", self.rng.choice(OPTIONS), self.fragment)
                self.moves.append(time.monotonic() - started)
                if moved.finished and not moved.exceptions:
                    self.acks.append((self.seen, time.monotonic()))


class Teacher(Student):
    """The teacher's Class page: its tally's poll, each count with the time it was seen."""

    def __init__(self, url: str, code: str, key: str):
        super().__init__(0, url)
        self.code, self.key, self.counts = code, key, []

    async def follow(self, stop: asyncio.Event) -> None:
        await self.connect()
        opened = await self.open_page("class_room", f"class={self.code}&teacher={self.key}")
        fragment = next(iter(opened.auto_reruns), "")
        while not stop.is_set():
            await asyncio.sleep(POLL_S)
            answer = await self.rerun_fragment(fragment)
            for text in answer.texts:
                found = re.match(r"Answered: (\d+) of (\d+)", text)
                if found:
                    self.counts.append((time.monotonic(), int(found.group(1))))


def _tally_delays(acks: list, counts: list, asked_at: dict) -> list[float]:
    """For each acknowledged answer to question q (the k-th), the time until the teacher's tally first showed k."""
    delays = []
    for number in asked_at:
        ends = [t for (q, t) in acks if q == number]
        ends.sort()
        window = [(t, c) for t, c in counts if t >= asked_at[number] and
                  (number + 1 not in asked_at or t < asked_at[number + 1])]
        for k, acked in enumerate(ends, 1):
            seen = [t for t, count in window if count >= k and t >= acked]
            if seen:
                delays.append(seen[0] - acked)
    return delays


async def _class(url: str, store: ClassStore, students: int, questions: int) -> dict:
    started = store.start()
    pupils = [Pupil(2000 + index, url, started.code) for index in range(students)]
    await asyncio.gather(*(pupil.join() for pupil in pupils))
    teacher, stop, asked = Teacher(url, started.code, started.teacher_key), asyncio.Event(), {}
    following = [asyncio.create_task(teacher.follow(stop))] + [asyncio.create_task(p.follow(asked, stop))
                                                                for p in pupils]
    await asyncio.sleep(2)
    for number in range(1, questions + 1):
        store.ask(started.code, started.teacher_key, "choice", "class_room", f"Question {number}",
                  {"options": OPTIONS}, {"option": number % len(OPTIONS)})
        asked[number] = time.monotonic()
        await asyncio.sleep(REVEAL_AFTER_S)
        store.reveal(started.code, started.teacher_key)
        await asyncio.sleep(2)
    stop.set()
    await asyncio.gather(*following, return_exceptions=True)
    for person in (teacher, *pupils):
        with contextlib.suppress(Exception):
            await person.close()
    kept = sum(len(store.answers(started.code, started.teacher_key, n)) for n in asked)
    acks = [ack for pupil in pupils for ack in pupil.acks]
    return dict(students=students, sent=len(acks), kept=kept, moves=[m for p in pupils for m in p.moves],
                tally=_tally_delays(acks, teacher.counts, asked), reached=[r for p in pupils for r in p.reached],
                errors=sum(len(p.errors) for p in (teacher, *pupils)),
                first_errors=[e for p in (teacher, *pupils) for e in p.errors][:3])


async def _explorers(url: str, count: int, seconds: float, class_of: int, store: ClassStore) -> list[float]:
    """``count`` students exploring (bench/student.py's session: a move every 2–5 s) for ``seconds``, beside a class
    of ``class_of`` students answering questions the while (none: alone): their moves' times."""
    crowd = [Student(5000 + index, url, random.Random(5000 + index)) for index in range(count)]
    explored = asyncio.gather(*(student.session(seconds) for student in crowd))
    if class_of:
        await asyncio.gather(explored, _class(url, store, class_of, int(seconds // (REVEAL_AFTER_S + 2))))
    else:
        await explored
    return [answer.seconds for student in crowd for kind, answer in student.answers if kind != "open"]


def polling_beside_explorers(count: int, seconds: float) -> str:
    """The class's cost to the others: ``count`` exploring students' move p90 alone, then beside a class of
    ``count`` answering questions (its panels polling every second), on one server, SQLite."""
    with tempfile.TemporaryDirectory(prefix="al-class-beside-") as data, \
            streamlit_server(env={"ATTENTION_LAB_DATA_DIR": data}) as url:
        store = ClassStore(f"sqlite:///{data}/{DATABASE_FILE}")
        asyncio.run(_explorers(url, 4, 20, 0, store))  # unmeasured: the pages and models the explorers meet
        alone = percentile(asyncio.run(_explorers(url, count, seconds, 0, store)), 90)
        beside = percentile(asyncio.run(_explorers(url, count, seconds, count, store)), 90)
    return (f"{count} students exploring (a move every 2–5 s, as `bench/class_load.py`): move p90 {alone * 1e3:.0f} ms "
            f"alone, {beside * 1e3:.0f} ms beside a class of {count} answering questions, its panels polling every "
            f"second ({beside / alone:.2f}×; target ≤ 1.3×).")


def run(database: str, students: list[int], questions: int, env: dict, store_url: str) -> list[dict]:
    runs = []
    with streamlit_server(with_process=True, env=env) as (url, process):
        store = ClassStore(store_url)
        asyncio.run(_class(url, store, 2, 2))  # unmeasured: the page, the store's tables, the first connections
        for count in students:
            cpu, started = process_cpu_seconds(process.pid), time.monotonic()
            result = asyncio.run(_class(url, store, count, questions))
            result.update(database=database, cpu=(process_cpu_seconds(process.pid) - cpu) /
                          (time.monotonic() - started))
            runs.append(result)
            print(_row(result, runs[0]), result["first_errors"], flush=True)
    return runs


def _row(run: dict, alone: dict) -> str:
    p90 = percentile(run["moves"], 90) if run["moves"] else float("nan")
    alone90 = percentile(alone["moves"], 90) if alone["moves"] else float("nan")
    tally = percentile(run["tally"], 90) if run["tally"] else float("nan")
    reached = percentile(run["reached"], 90) if run["reached"] else float("nan")
    share = 100 * run["kept"] / run["sent"] if run["sent"] else float("nan")
    return (f"| {run['database']} | {run['students']} | {run['kept']} of {run['sent']} ({share:.0f} %) | "
            f"{p90 * 1e3:.0f} ms ({p90 / alone90:.2f}×) | {tally * 1e3:.0f} ms | {reached * 1e3:.0f} ms | "
            f"{run['cpu'] * 100:.0f} % | {run['errors']} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, nargs="+", default=[1, 30, 60])
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--stores", nargs="+", choices=("sqlite", "postgresql"), default=["sqlite", "postgresql"])
    parser.add_argument("--beside", type=int, default=30, help="explorers measured alone, then beside a class of as "
                        "many (0: not measured)")
    parser.add_argument("--beside-seconds", type=float, default=120.0)
    parser.add_argument("--beside-only", action="store_true", help="only the explorers, alone and beside a class")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    os.nice(10)  # the students' process yields to the server's
    if args.beside_only:
        print(polling_beside_explorers(args.beside, args.beside_seconds))
        return
    stolen, began = stolen_seconds(), time.monotonic()
    rows = ["| store | students | answers recorded | a student's answer p90 (× one alone) | answer → teacher's tally "
            "p90 | question → student p90 | server CPU | errors |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    with contextlib.ExitStack() as stack:
        data = stack.enter_context(tempfile.TemporaryDirectory(prefix="al-class-load-"))
        runs = [] if "sqlite" not in args.stores else run(
            "SQLite", args.students, args.questions, {"ATTENTION_LAB_DATA_DIR": data}, f"sqlite:///{data}/{DATABASE_FILE}")
        postgres = stack.enter_context(postgres_server()) if "postgresql" in args.stores else None
        if postgres:
            pg_data = stack.enter_context(tempfile.TemporaryDirectory(prefix="al-class-load-pg-"))
            runs += run("PostgreSQL", args.students, args.questions,
                        {"ATTENTION_LAB_DATA_DIR": pg_data, "ATTENTION_LAB_DATABASE_URL": postgres}, postgres)
    for database in ("SQLite", "PostgreSQL"):
        mine = [r for r in runs if r["database"] == database]
        rows += [_row(r, mine[0]) for r in mine]
    beside = polling_beside_explorers(args.beside, args.beside_seconds) if args.beside else ""
    print("\n".join(rows))
    print(beside)
    steal = steal_note(stolen_seconds() - stolen, time.monotonic() - began)
    print(steal)
    if args.write:
        write_section("A class answering questions", f"`make load-test`'s class part (`bench/class_questions.py`): "
                      f"one teacher and the students through Streamlit's protocol, {args.questions} multiple-choice "
                      f"questions, each answered within {ANSWER_WITHIN_S:.0f} s and revealed after "
                      f"{REVEAL_AFTER_S:.0f} s; every student's panel polls every {POLL_S:.0f} s, as its browser "
                      f"does; one server on {os.cpu_count()} cores. {beside} {steal}", rows)


if __name__ == "__main__":
    main()
