"""Load test of a class: 1, 8, 16, 30 and 60 students on one server, each speaking Streamlit's protocol.

    python bench/class_load.py [--students 1 8 16 30 60] [--seconds 120] [--write]

One `make run` server (serve.py) on loopback, warmed up by 4 unmeasured students for 30 s. Each
student (bench/student.py) opens the app, then moves
a control every 2–5 s: new pad symbols on the page it is on, sometimes a new architecture (the layers),
another page, or a shared link. The students are asyncio tasks of this one process, run at nice 10:
without browsers, the clients cost the machine next to nothing, so the figures are the server's. For
each number of students: the answer's p50 / p90 (rerun request → script finished, every move after
the first page), errors, leaks (another student's tokens in a chart), the server's CPU seconds per
move, and its resident memory at the end. --write puts the table into BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support"), str(ROOT / "bench")]

from browser_support import streamlit_server  # noqa: E402
from report import percentile, process_cpu_seconds, process_rss_mb, steal_note, stolen_seconds, write_section  # noqa: E402,I001
from student import Student  # noqa: E402

STUDENTS = (1, 8, 16, 30, 60)
TARGET_AT = 30  # p90 ≤ 2× one student's, no error, no leak


async def _class(url: str, students: int, seconds: float, first_number: int) -> list[Student]:
    """``students`` sessions at once, each starting within the first 5 s (a class does not click at once)."""
    crowd = [Student(first_number + index, url, random.Random(first_number + index)) for index in range(students)]

    async def start(student):
        await asyncio.sleep(student.rng.uniform(0, 5))
        await student.session(seconds)
    await asyncio.gather(*(start(student) for student in crowd))
    return crowd


def measure(url: str, pid: int, students: int, seconds: float, first_number: int) -> dict:
    cpu, stolen, started = process_cpu_seconds(pid), stolen_seconds(), time.monotonic()
    crowd = asyncio.run(_class(url, students, seconds, first_number))
    moves = [answer for student in crowd for kind, answer in student.answers if kind != "open"]
    times = [answer.seconds for answer in moves]
    return dict(students=students, moves=len(moves), p50=percentile(times, 50) if times else float("nan"),
                p90=percentile(times, 90) if times else float("nan"),
                errors=sum(len(student.errors) for student in crowd),
                first_errors=[error for student in crowd for error in student.errors][:3],
                leaks=sum(student.leaks for student in crowd),
                cpu_per_move=(process_cpu_seconds(pid) - cpu) / max(1, len(moves)), rss=process_rss_mb(pid),
                stolen=stolen_seconds() - stolen, elapsed=time.monotonic() - started)


def table_rows(runs: list[dict]) -> list[str]:
    one = runs[0]
    rows = ["| students | moves | answer p50 / p90 ms | p90 ÷ one student's | errors | leaks | server CPU per move | "
            "server RSS |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for run in runs:
        rows.append(f"| {run['students']} | {run['moves']} | {run['p50'] * 1e3:.0f} / {run['p90'] * 1e3:.0f} | "
                    f"{run['p90'] / one['p90']:.2f}× | {run['errors']} | {run['leaks']} | "
                    f"{run['cpu_per_move'] * 1e3:.0f} ms | {run['rss']:,.0f} MB |")
    return rows


def verdict(runs: list[dict]) -> str:
    """The target at 30 students, and what gives first beyond."""
    one = runs[0]
    lines = []
    for run in runs:
        ratio = run["p90"] / one["p90"]
        if run["students"] == TARGET_AT:
            met = ratio <= 2 and run["errors"] == 0 and run["leaks"] == 0
            lines.append(f"At {TARGET_AT} students: p90 {ratio:.2f}× one student's, {run['errors']} errors, "
                         f"{run['leaks']} leaks — target (≤ 2×, 0, 0) {'met' if met else 'NOT met'}.")
        elif run["students"] > TARGET_AT:
            broke = ("errors first" if run["errors"] else f"latency first (p90 {ratio:.1f}× one student's)"
                     if ratio > 2 else "nothing yet")
            lines.append(f"At {run['students']} students: {broke}; p90 {run['p90'] * 1e3:.0f} ms, "
                         f"{run['errors']} errors, {run['leaks']} leaks, RSS {run['rss']:,.0f} MB.")
    return " ".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, nargs="+", default=list(STUDENTS))
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--warm-up", type=float, default=30.0, help="seconds of 4 unmeasured students first")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    os.nice(10)  # the students' process yields to the server's
    runs = []
    with streamlit_server(with_process=True) as (url, process):
        # Unmeasured: every page, model and traced graph the students will meet is made once first.
        measure(url, process.pid, 4, args.warm_up, first_number=1)
        for index, students in enumerate(args.students):
            run = measure(url, process.pid, students, args.seconds, first_number=1000 * (index + 1))
            runs.append(run)
            print(f"{students:>3} students: {run['moves']} moves, p50/p90 {run['p50'] * 1e3:.0f}/"
                  f"{run['p90'] * 1e3:.0f} ms, errors {run['errors']} {run['first_errors']}, leaks {run['leaks']}, "
                  f"CPU/move {run['cpu_per_move'] * 1e3:.0f} ms, RSS {run['rss']:,.0f} MB", flush=True)
    rows = table_rows(runs)
    print("\n".join(rows))
    note = verdict(runs)
    print(note)
    steal = steal_note(sum(run["stolen"] for run in runs), sum(run["elapsed"] for run in runs))
    if args.write:
        write_section("Serving a class", f"`make load-test`: students speaking Streamlit's protocol (no browser), "
                      f"{args.seconds:.0f} s each, one server on this machine's {os.cpu_count()} cores; a move every "
                      f"2–5 s. {note} {steal}", rows)


if __name__ == "__main__":
    main()
