"""A class through a server restart, measured in Chromium (issue 87, item 10): how long the students' pages take to
come back, and how long the teacher's "Question asked" takes after the store holds the question.

    python bench/class_restart.py [--students 3] [--rounds 3] [--write]

One `make run` server (serve.py) on loopback with a data directory of its own. A teacher starts a class and three
students join in browser contexts of their own. Each round the server stops (SIGTERM) and starts again on the same
port; the moment it answers /_stcore/health, a question is written to the store (as another replica would), and each
student's page is timed until it shows that question: the page's own reconnection (Streamlit's client pings the
server every ≤ 4 s), a new session, the page's run and the panel's poll. Then the teacher presses Ask the class on
the Masks page and two times are taken: the store holding the question (polled every 50 ms) and "Question N asked"
on the teacher's screen.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support"), str(ROOT / "bench")]

from browser_support import free_port, headless_chromium, start_class, wait_healthy, wait_idle  # noqa: E402
from child_env import child_env  # noqa: E402
from report import percentile, row, write_section  # noqa: E402

from classroom.store import DATABASE_FILE, ClassStore  # noqa: E402


def start_server(port: int, data: Path, log: Path) -> subprocess.Popen:
    env = {**child_env(ROOT, TF_CPP_MIN_LOG_LEVEL="3"), "ATTENTION_LAB_DATA_DIR": str(data)}
    process = subprocess.Popen([sys.executable, "serve.py", "--server.headless", "true", "--server.address",
                                "127.0.0.1", "--server.port", str(port)], cwd=ROOT, env=env,
                               stdout=log.open("a"), stderr=subprocess.STDOUT)
    return process


def stop_server(process: subprocess.Popen) -> None:
    process.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=15)
    if process.poll() is None:
        process.kill()


def tab(browser, url: str):
    page = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
    page.goto(url)
    wait_idle(page)
    return page


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    data, port = Path(tempfile.mkdtemp(prefix="al-restart-")), free_port()
    base, log = f"http://127.0.0.1:{port}", ROOT / "test-output" / f"class-restart-{port}.log"
    log.parent.mkdir(exist_ok=True)
    store = ClassStore(f"sqlite:///{data / DATABASE_FILE}")
    server = start_server(port, data, log)
    back, asked_store, asked_shown, starts = [], [], [], []
    try:
        wait_healthy(base, server)
        with headless_chromium() as browser:
            teacher = tab(browser, f"{base}/class_room")
            code, key = start_class(teacher)
            students = []
            for _ in range(args.students):
                student = tab(browser, f"{base}/class_room?class={code}")
                student.get_by_role("button", name="Join").click()
                student.get_by_text("The question comes here").first.wait_for(timeout=60_000)
                students.append(student)
            number = 0
            for _ in range(args.rounds):
                stop_server(server)
                began = time.perf_counter()
                server = start_server(port, data, log)
                wait_healthy(base, server, timeout=180)
                healthy = time.perf_counter()
                starts.append(healthy - began)
                number += 1
                prompt = f"Restart check {number}: which is right?"
                store.ask(code, key, "choice", "class_room", prompt, {"options": ["yes", "no"]}, {"option": 0})
                for student in students:  # in turn: each page's time from the server's answering
                    student.get_by_text(prompt).wait_for(timeout=180_000)
                    back.append(time.perf_counter() - healthy)
                teacher.goto(f"{base}/masks?class={code}&teacher={key}&seq_len=5")
                wait_idle(teacher)
                number += 1
                teacher.get_by_test_id("stSidebar").get_by_role("button", name="Ask the class").click()
                pressed = time.perf_counter()
                while len(store.history(code, key)) < number:
                    time.sleep(0.05)
                asked_store.append(time.perf_counter() - pressed)
                teacher.get_by_text(f"Question {number} asked").wait_for(timeout=120_000)
                asked_shown.append(time.perf_counter() - pressed)
                teacher.goto(f"{base}/class_room?class={code}&teacher={key}")
                wait_idle(teacher)
    finally:
        stop_server(server)
        shutil.rmtree(data, ignore_errors=True)
    rows = [("the server's start, to /_stcore/health", starts, ""),
            ("a student's page back, from the server answering", back, "≤ 10 s"),
            ("Ask the class: the store holds it, from the press", asked_store, ""),
            ("Ask the class: 'Question asked' on screen, from the press", asked_shown, "≤ 2 s after the store")]
    table = ["| measure | median s | max s | target |", "| --- | --- | --- | --- |"]
    for measure, values, target in rows:
        row("restart", measure, f"{percentile(values, 50):.1f} / {max(values):.1f} s", target)
        table.append(f"| {measure} | {percentile(values, 50):.1f} | {max(values):.1f} | {target} |")
    if args.write:
        write_section("A class through a server restart", f"`python bench/class_restart.py`: {args.students} "
                      f"students and a teacher in Chromium, {args.rounds} restarts of one server on a quiet host "
                      "(nothing else running). A student's page comes back by itself (its key is in its address); "
                      "the question is written to the store the moment the server answers.", table)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    main()
