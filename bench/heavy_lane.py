"""One session's largest allowed run against the class's moves: does a costly link hold everyone else?

    python bench/heavy_lane.py [--students 4] [--seconds 60] [--write]

One `make run` server (serve.py) on loopback with its default budgets. First ``--students`` students speaking
Streamlit's protocol (bench/student.py) move for ``--seconds`` alone: their answer's p90 is the idle figure. Then
one more session opens the longest run the server allows, the Cost page's Measure at d_model 1024, 64 heads, up to
N = 4,096 (~3,300 GFLOP: 216 s on the engine thread of a 2-core host before it had a background lane, the class
waiting 214.5 s), presses Measure, and the same students move for ``--seconds`` while it computes in the background
lane. (The Attention page's largest link, two 4,096-token lines at that size, takes ~20 s of the lane's CPU: too
short a window.) Target: their
p90 within 2× the idle one. The background process's CPU in that window shows the run was computing; the heavy
session then closes, and the run's process must end (cancelled, not finished). --write puts the rows in
BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support"), str(ROOT / "bench")]

from browser_support import streamlit_server  # noqa: E402
from report import percentile, process_cpu_seconds, row, write_section  # noqa: E402
from student import Student  # noqa: E402

LONGEST = dict(d_model=1024, heads=64, cost_max=4096)
TARGET = 2.0


def lane_processes(server_pid: int) -> list[int]:
    """The background lane's processes among the server's children."""
    found = []
    for folder in Path("/proc").iterdir():
        try:
            status = (folder / "status").read_text()
            command = (folder / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, NotADirectoryError):
            continue
        parent = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:")), 0)
        if parent == server_pid and "transformer.live.heavy" in command:
            found.append(int(folder.name))
    return found


async def _class(url: str, students: int, seconds: float, first: int) -> list[float]:
    crowd = [Student(first + index, url, random.Random(first + index)) for index in range(students)]
    await asyncio.gather(*(student.session(seconds) for student in crowd))
    errors = [error for student in crowd for error in student.errors]
    if errors:
        raise RuntimeError(f"{len(errors)} errors in the class: {errors[:3]}")
    return [answer.seconds for student in crowd for kind, answer in student.answers if kind != "open"]


async def _computing(child: int, seconds: float) -> float:
    """Until ``child`` stops computing (under 0.2 s of CPU in a second) or ``seconds`` pass: how long it computed."""
    started, last = time.monotonic(), process_cpu_seconds(child)
    while time.monotonic() - started < seconds:
        await asyncio.sleep(1.0)
        try:
            now = process_cpu_seconds(child)
        except OSError:  # ended
            break
        if now - last < 0.2:
            break
        last = now
    return time.monotonic() - started


async def _with_the_largest_run(url: str, pid: int, students: int, seconds: float) -> dict:
    heavy = Student(9000, url)
    await heavy.connect()
    asked = await heavy.open_page("cost", urlencode(LONGEST))
    if "Measure" not in heavy.widgets:
        raise RuntimeError(f"The Cost page drew no Measure button: {asked.texts[:3]}")
    pressed = asyncio.create_task(heavy.submit("Measure"))
    for _ in range(240):  # the lane's process starts, imports TensorFlow and builds the model
        await asyncio.sleep(0.5)
        children = lane_processes(pid)
        if children and process_cpu_seconds(children[0]) > 15:
            break
    child = lane_processes(pid)[0]
    cpu = process_cpu_seconds(child)
    crowd = [Student(2000 + index, url, random.Random(2000 + index)) for index in range(students)]
    moving = [asyncio.create_task(student.session(seconds)) for student in crowd]
    window = await _computing(child, seconds)
    computing = process_cpu_seconds(child) - cpu
    still = not pressed.done() and window >= seconds - 1  # the run went on past the window
    for task in moving:
        task.cancel()
    await asyncio.gather(*moving, return_exceptions=True)
    pressed.cancel()
    await heavy.close()
    for _ in range(40):
        await asyncio.sleep(0.25)
        if child not in lane_processes(pid):
            break
    times = [answer.seconds for student in crowd for kind, answer in student.answers if kind != "open"]
    return dict(times=times, computing=computing, window=window, still=still,
                ended=child not in lane_processes(pid))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    os.nice(10)  # the students' process yields to the server's
    with streamlit_server(with_process=True) as (url, process):
        asyncio.run(_class(url, args.students, 20, 1))  # unmeasured: pages, models and graphs made once
        idle = asyncio.run(_class(url, args.students, args.seconds, 1000))
        busy = asyncio.run(_with_the_largest_run(url, process.pid, args.students, args.seconds))
    idle_p90, busy_p90 = percentile(idle, 90), percentile(busy["times"], 90)
    ratio = busy_p90 / idle_p90
    section = "Heavy lane"
    row(section, f"{args.students} students alone: p50 / p90 ({len(idle)} moves)",
        f"{percentile(idle, 50) * 1e3:.0f} / {idle_p90 * 1e3:.0f} ms")
    row(section, f"while the longest allowed run computes: p50 / p90 ({len(busy['times'])} moves)",
        f"{percentile(busy['times'], 50) * 1e3:.0f} / {busy_p90 * 1e3:.0f} ms")
    verdict = "met" if ratio <= TARGET else "NOT met"
    row(section, "p90 against the class alone", f"{ratio:.2f}×", f"≤ {TARGET:.0f}× ({verdict})")
    row(section, "the background run's CPU while the class moved", f"{busy['computing']:.0f} s in "
        f"{busy['window']:.0f} s", "it computed throughout")
    if busy["still"]:
        row(section, "its process once its session closed mid-run", "ended" if busy["ended"] else "STILL RUNNING",
            "ended")
    else:
        row(section, "its session closed", "after the run finished", "(cancelled runs: test_browser_heavy.py)")
    if args.write:
        from report import ROWS  # noqa: PLC0415

        table = ["| measure | figure | target |", "| --- | --- | --- |"] + [
            f"| {measure} | {value} | {target} |" for sect, measure, value, target in ROWS if sect == section]
        write_section("One session's largest run beside a class", f"`make load-test` (`bench/heavy_lane.py`): "
                      f"{args.students} students speaking Streamlit's protocol, moving every 2–5 s for "
                      f"{args.seconds:.0f} s alone, then for {args.seconds:.0f} s while another session's longest "
                      "allowed run (the Cost page's Measure at d_model 1024, 64 heads, up to N = 4,096: 216 s on the "
                      "shared engine thread before) computes in the background lane; then that session closes "
                      "mid-run.", table)


if __name__ == "__main__":
    main()
