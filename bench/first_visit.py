"""Where a first visit's time goes: `python serve.py` (what `make run` starts, the venv ready) to Home's first
words and first chart in a newly launched Chromium, on a quiet host and on a busy one (two other processes
spinning, one per core).

    python bench/first_visit.py [--runs N] [--write]

Each run records, from the server's start: the health check answering; the page's first heading on the screen
(something useful to read); Home's chart drawn; and the engine's own share of the page's run, read off the sidebar's
status line. --write adds the table to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support"), str(ROOT / "bench")]

from browser_support import CHROMIUM, CHROMIUM_ARGS, free_port  # noqa: E402
from chart_support import FIRST_PLOT  # noqa: E402

INTRO = ("From `python serve.py` (what `make run` starts, the venv ready) to Home in a Chromium already running; the "
         "median of {runs} visits a row (`python bench/first_visit.py`). *Engine imported*: the server's log line "
         "once TensorFlow is imported in the background; *first words*: the page's title on the screen; *model run*: "
         "the page's own engine run, from its status line.")
BUSY_SECONDS = 240  # a spinning process stops by itself after this, whatever happens to the benchmark
STATUS = "[data-testid='stSidebar'] [data-testid='stCaptionContainer']"


@contextlib.contextmanager
def busy_host(processes: int):
    """``processes`` Python loops spinning (each bounded by BUSY_SECONDS), stopped on leaving."""
    spin = f"import time\nend = time.time() + {BUSY_SECONDS}\nwhile time.time() < end: pass"
    spinning = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(processes)]
    try:
        yield
    finally:
        for process in spinning:
            process.kill()
            process.wait()


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as answer:
            return answer.status == 200
    except OSError:
        return False


def one_visit() -> dict[str, float]:
    """Seconds from the server's start to each milestone of Home's first visit (Chromium already running, as a
    visitor's browser is)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        port = free_port()
        started = time.perf_counter()
        server = subprocess.Popen([str(ROOT / ".venv" / "bin" / "python"), "serve.py", "--server.headless", "true",
                                   "--server.address", "127.0.0.1", "--server.port", str(port)], cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                  start_new_session=True)
        seconds: dict[str, float] = {}
        threading.Thread(target=_engine_line, args=(server, started, seconds), daemon=True).start()
        try:
            while not _healthy(port):
                time.sleep(0.05)
            seconds["health"] = time.perf_counter() - started
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_selector("h1", timeout=180_000)
            seconds["first words"] = time.perf_counter() - started
            page.wait_for_function(f"() => {FIRST_PLOT} && {FIRST_PLOT}._fullData", timeout=180_000)
            seconds["first chart"] = time.perf_counter() - started
            status = page.locator(STATUS).filter(has_text="model run").first
            status.wait_for(timeout=60_000)
            ran = re.search(r"model run ([\d.]+) ms", status.inner_text())
            seconds["engine"] = float(ran.group(1)) / 1000 if ran else float("nan")
        finally:
            os.killpg(server.pid, 15)
            server.wait()
            browser.close()
    return seconds


def _engine_line(server, started: float, seconds: dict) -> None:
    """When the server says which device the engine runs on: its background import of TensorFlow is over."""
    for line in server.stdout:
        if "the engine runs on" in line:
            seconds["engine imported"] = time.perf_counter() - started


def measure(runs: int) -> list[str]:
    lines = ["| host | server health | engine imported | first words (h1) | first chart | model run |",
             "| --- | --- | --- | --- | --- | --- |"]
    for host, processes in (("quiet", 0), ("busy: 2 spinning processes", 2)):
        with busy_host(processes):
            visits = [one_visit() for _ in range(runs)]
        cells = [f"{statistics.median(v[name] for v in visits):.1f} s" for name in
                 ("health", "engine imported", "first words", "first chart", "engine")]
        lines.append(f"| {host} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="visits per host (the median is shown)")
    parser.add_argument("--write", action="store_true", help="add the table to BENCHMARKS.md")
    args = parser.parse_args()
    lines = measure(args.runs)
    print("\n".join(lines))
    if args.write:
        from report import write_section
        write_section("First visit", INTRO.format(runs=args.runs), lines)


if __name__ == "__main__":
    main()
