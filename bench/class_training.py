"""Load test of a class that trains: 30 students on one server, first none training, then 10 of them pressing Train.

    python bench/class_training.py [--students 30] [--trainers 10] [--seconds 120] [--steps 600] [--write]

One `make run` server (serve.py) on loopback, warmed up by 4 unmeasured students for 30 s. Both runs have
``students`` students speaking Streamlit's protocol (bench/student.py), moving a control every 2–5 s. In the
second, ``trainers`` of them instead open the Train page one after another over a minute, press Train once
(``steps`` steps, the form's other defaults), follow the job as a browser does (the page's fragments rerun every 1
and 2 s) until it ends, then explore the model; the others move until every trainer is done (and at least
``seconds``). For the others (the same students in both runs): answer p50 / p90, errors; for the trainers:
how each job ended and how long it took from the press; for the server: CPU per move, resident memory (the
serving process, and with its training workers) at the end and at its highest (sampled every 2 s). --write puts
the table into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support"), str(ROOT / "bench")]

from browser_support import streamlit_server  # noqa: E402
from class_load import measure as warm_up  # noqa: E402
from report import (  # noqa: E402
    descendants,
    percentile,
    process_cpu_seconds,
    process_rss_mb,
    steal_note,
    stolen_seconds,
    write_section,
)
from student import Student  # noqa: E402

TARGET_RATIO = 2.0  # the others' p90 while some train, against theirs while none does
TRAIN_SPREAD_S = 60.0  # the trainers press Train over this minute


def memory(pid: int) -> tuple[float, float]:
    """(serving process MB, with its training workers MB), resident."""
    server = process_rss_mb(pid)
    workers = 0.0
    for child in descendants(pid):
        try:
            workers += process_rss_mb(child)
        except (OSError, AttributeError):  # ended while read
            pass
    return server, server + workers


async def _watch_memory(pid: int, peaks: dict, done: asyncio.Event) -> None:
    while not done.is_set():
        server, total = memory(pid)
        peaks["server"], peaks["total"] = max(peaks.get("server", 0), server), max(peaks.get("total", 0), total)
        await asyncio.sleep(2.0)


async def _trainer(student: Student, slot: float, steps: int, outcomes: list) -> None:
    await student.connect()
    try:
        student.answers.append(("open", await student.open_page("masks", student.link())))
        await asyncio.sleep(slot)
        pressed = time.monotonic()
        outcome = await student.train_once(steps)
        outcomes.append((outcome, time.monotonic() - pressed))
    except Exception as error:  # noqa: BLE001  (reported in the table)
        outcomes.append((f"error: {type(error).__name__}: {error}", float("nan")))
    finally:
        await student.close()


async def _class(url: str, pid: int, students: int, trainers: int, training: bool, seconds: float, steps: int,
                 first: int):
    """``students`` at once; the first ``trainers`` of them press Train (``training``) or move like the others
    (not ``training``: the same class, no one training). The others' answers are the ones measured."""
    crowd = [Student(first + index, url, random.Random(first + index)) for index in range(students)]
    learners, others = crowd[:trainers], crowd[trainers:]
    outcomes, peaks, done = [], {}, asyncio.Event()

    async def move(student):
        await asyncio.sleep(student.rng.uniform(0, 5))
        await student.session(seconds, until=done if training else None)

    async def learn():
        spread = TRAIN_SPREAD_S / max(1, trainers)
        await asyncio.gather(*(_trainer(s, 5 + index * spread, steps, outcomes) for index, s in enumerate(learners)))
        done.set()

    watcher = asyncio.create_task(_watch_memory(pid, peaks, done))
    if not training:
        asyncio.get_running_loop().call_later(seconds, done.set)
    await asyncio.gather(learn() if training else asyncio.gather(*(move(s) for s in learners)),
                         *(move(student) for student in others))
    done.set()
    await watcher
    return others, outcomes, peaks


def run(url: str, pid: int, students: int, trainers: int, training: bool, seconds: float, steps: int,
        first: int) -> dict:
    cpu, stolen, started = process_cpu_seconds(pid), stolen_seconds(), time.monotonic()
    others, outcomes, peaks = asyncio.run(_class(url, pid, students, trainers, training, seconds, steps, first))
    times = [answer.seconds for student in others for kind, answer in student.answers if kind != "open"]
    server, total = memory(pid)
    return dict(trainers=trainers if training else 0, moves=len(times), p50=percentile(times, 50),
                p90=percentile(times, 90), errors=sum(len(student.errors) for student in others),
                first_errors=[error for student in others for error in student.errors][:3],
                leaks=sum(student.leaks for student in others), outcomes=outcomes,
                cpu_per_move=(process_cpu_seconds(pid) - cpu) / max(1, len(times)), server=server, total=total,
                peak_server=peaks.get("server", server), peak_total=peaks.get("total", total),
                stolen=stolen_seconds() - stolen, elapsed=time.monotonic() - started)


def outcome_words(outcomes: list) -> str:
    kinds = {}
    for outcome, _ in outcomes:
        kinds[outcome.split(":")[0]] = kinds.get(outcome.split(":")[0], 0) + 1
    return ", ".join(f"{number} {kind}" for kind, number in sorted(kinds.items())) or "—"


def table_rows(runs: list[dict], steps: int) -> list[str]:
    calm = runs[0]
    rows = ["| run | the others' moves | others' p50 / p90 ms | p90 ÷ no training | errors | leaks | jobs | "
            "press → end of job, median / longest | server CPU per move | RSS: server / with workers, end (peak) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for entry in runs:
        spans = sorted(span for outcome, span in entry["outcomes"] if outcome == "done")
        span = f"{percentile(spans, 50):.0f} / {spans[-1]:.0f} s" if spans else "—"
        name = "no one trains" if not entry["trainers"] else f"{entry['trainers']} train ({steps} steps each)"
        rows.append(f"| {name} | {entry['moves']} | {entry['p50'] * 1e3:.0f} / {entry['p90'] * 1e3:.0f} | "
                    f"{entry['p90'] / calm['p90']:.2f}× | {entry['errors']} | {entry['leaks']} | "
                    f"{outcome_words(entry['outcomes'])} | {span} | {entry['cpu_per_move'] * 1e3:.0f} ms | "
                    f"{entry['server']:,.0f} / {entry['total']:,.0f} MB ({entry['peak_server']:,.0f} / "
                    f"{entry['peak_total']:,.0f}) |")
    return rows


def verdict(runs: list[dict]) -> str:
    calm, busy = runs
    ratio = busy["p90"] / calm["p90"]
    ended = all(outcome == "done" or outcome.startswith("refused") for outcome, _ in busy["outcomes"])
    met = ratio <= TARGET_RATIO and busy["errors"] == 0 and ended
    return (f"While {busy['trainers']} train, the others' p90 is {ratio:.2f}× theirs with no one training, "
            f"{busy['errors']} errors, every job {'finished or refused with a message' if ended else 'NOT ended'} "
            f"— target (≤ {TARGET_RATIO:.0f}×, 0 errors, every job ended) {'met' if met else 'NOT met'}.")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--trainers", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--warm-up", type=float, default=30.0)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    os.nice(10)  # the students' process yields to the server's
    runs = []
    data = Path(tempfile.mkdtemp(prefix="attention-lab-data-"))  # the server's data directory, on: its own
    with streamlit_server(with_process=True, env={"ATTENTION_LAB_DATA_DIR": str(data)}) as (url, process):
        warm_up(url, process.pid, 4, args.warm_up, first_number=1)
        for index, training in enumerate((False, True)):
            entry = run(url, process.pid, args.students, args.trainers, training, args.seconds, args.steps,
                        1000 * (index + 1))
            runs.append(entry)
            print(f"{entry['trainers']} training: {entry['moves']} moves by the others, p50/p90 "
                  f"{entry['p50'] * 1e3:.0f}/{entry['p90'] * 1e3:.0f} ms, errors {entry['errors']} "
                  f"{entry['first_errors']}, jobs {entry['outcomes']}, RSS {entry['server']:,.0f}/"
                  f"{entry['total']:,.0f} MB", flush=True)
    rows = table_rows(runs, args.steps)
    print("\n".join(rows))
    note = verdict(runs)
    print(note)
    steal = steal_note(sum(entry["stolen"] for entry in runs), sum(entry["elapsed"] for entry in runs))
    on_disk = len([path for path in (data / "models").iterdir() if not path.name.startswith(".")]) \
        if (data / "models").exists() else 0
    print(f"models kept in the data directory: {on_disk}")
    shutil.rmtree(data, ignore_errors=True)
    if args.write:
        write_section("A class that trains", f"`make load-test` (second part): {args.students} students speaking "
                      f"Streamlit's protocol on one server on this machine's {os.cpu_count()} cores, a move every "
                      f"2–5 s; then the same with {args.trainers} of them pressing Train once each over a minute "
                      "(the jobs run in the server's training worker processes, one per two cores, at nice 10), "
                      f"with the data directory on: {on_disk} models the trainers explored were written to disk. "
                      f"{note} {steal}", rows)


if __name__ == "__main__":
    main()
