"""A real `streamlit run` on a free loopback port, and Debian's Chromium driven by Playwright."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from child_env import child_env

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("ATTENTION_LAB_CHROMIUM", "/usr/bin/chromium")
OUTPUT = ROOT / "test-output" / "screenshots"
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]


def browser_required() -> bool:
    return bool(os.environ.get("ATTENTION_LAB_REQUIRE_BROWSER") or os.environ.get("CI"))


def chromium_missing() -> str | None:
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        return f"{CHROMIUM} is not installed (apt-get install -y chromium)"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(base_url: str, process, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with {process.returncode}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"{base_url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        time.sleep(0.25)
    raise TimeoutError(f"{base_url}/_stcore/health did not answer within {timeout} s")


@contextlib.contextmanager
def streamlit_server(script: str = "app.py", with_process: bool = False, env: dict | None = None,
                     port: int | None = None):
    port = port or free_port()  # a given port: a server started again where its browsers reconnect
    (ROOT / "test-output").mkdir(exist_ok=True)
    log = open(ROOT / "test-output" / f"streamlit-{port}.log", "w")
    env = {**child_env(ROOT, TF_CPP_MIN_LOG_LEVEL="3"), **(env or {})}
    # The app starts as `make run` starts it (serve.py); other scripts (the benchmark's floor) with streamlit run.
    command = ["serve.py"] if script == "app.py" else ["-m", "streamlit", "run", script]
    process = subprocess.Popen(
        [sys.executable, *command, "--server.headless", "true", "--server.address", "127.0.0.1",
         "--server.port", str(port)],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base_url, process)
        yield (base_url, process) if with_process else base_url
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=15)
        if process.poll() is None:
            process.kill()
        log.close()


def wait_idle(page, timeout: float = 90_000) -> None:
    """Until the script has run and stopped (Streamlit's own e2e tests wait for this)."""
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=timeout)
    page.wait_for_timeout(300)
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=timeout)


def require_chromium(other_problem: str | None = None, tests: str = "browser tests", fix: str = "") -> None:
    """Skip the test without Chromium (or with ``other_problem``), or fail it where the browser tests are
    required."""
    import pytest  # noqa: PLC0415

    problem = chromium_missing() or other_problem
    if problem:
        if browser_required():
            pytest.fail(f"{tests} are required here but {problem}{fix}")
        pytest.skip(problem)


@contextlib.contextmanager
def app_server_for_browsers(env: dict | None = None):
    """The app's server for a module of browser tests (``env``: more environment for it); the module is skipped
    without Chromium, or fails where the browser tests are required."""
    require_chromium()
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with streamlit_server(env=env) as base_url:
        yield base_url


def new_tab(browser, width: int = 1400, height: int = 1000):
    """A new tab of ``width`` × ``height`` px in the browser's one shared context, a profile on disk
    (`headless_chromium`): Chromium's HTTP and code caches stay warm between tests, its storage is cleared by
    `close_tab`. A test that needs cookies or storage of its own makes a context of its own."""
    context = getattr(browser, "shared_context", None)
    if context is None:
        open_shared = getattr(browser, "open_shared_context", browser.new_context)
        context = browser.shared_context = open_shared()
    tab = context.new_page()
    tab.set_viewport_size({"width": width, "height": height})
    return tab


def close_tab(tab) -> None:
    """Close a tab of `new_tab`, leaving no storage or cookie to the next test (the theme is kept in localStorage)."""
    with contextlib.suppress(Exception):  # a page that has crashed or navigated away from the app
        tab.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
    tab.close()
    tab.context.clear_cookies()


_PLAYWRIGHT = []  # the test process's one Playwright, once started


def playwright():
    """The test process's one Playwright, started when first asked for and stopped when the process ends: its sync
    API runs one at a time in a process, and the browser of a run of modules (tests/browser/conftest.py) outlives a
    module's."""
    if not _PLAYWRIGHT:
        from playwright.sync_api import sync_playwright  # noqa: PLC0415

        _PLAYWRIGHT.append(sync_playwright().start())
        atexit.register(_PLAYWRIGHT[0].stop)
    return _PLAYWRIGHT[0]


@contextlib.contextmanager
def headless_chromium():
    """Debian's Chromium, headless, through Playwright. Its shared context (`new_tab`) is a profile in a temporary
    folder, opened when first asked for: a context of ``browser.new_context()`` is off the record, where Chromium
    keeps no compiled code, so every tab compiled Plotly.js again (~2 s here; ~0.2 s from the profile's code cache
    from its third tab: a page's visit 3.5 -> 2.4 s, docs/performance.md)."""
    chromium = playwright().chromium
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        browser = chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        browser.open_shared_context = lambda: chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            shared = getattr(browser, "shared_context", None)
            if shared is not None:
                with contextlib.suppress(Exception):
                    shared.close()
            browser.close()


def ask_the_class(teacher, number: int) -> None:
    """The teacher's **Ask the class** pressed in the sidebar, and **Ask anyway** where the answer was held back as not
    decisive (random weights); returns once "Question ``number`` asked" shows."""
    sidebar = teacher.get_by_test_id("stSidebar")
    sidebar.get_by_role("button", name="Ask the class").click()
    asked, anyway = teacher.get_by_text(f"Question {number} asked"), sidebar.get_by_role("button", name="Ask anyway")
    asked.or_(anyway).first.wait_for(timeout=60_000)
    if anyway.count():
        anyway.click()
    asked.wait_for(timeout=60_000)


def start_class(teacher, before_key=None) -> tuple[str, str]:
    """On a Class page open in ``teacher``'s tab: press Start a class; ``(code, teacher key)`` as the page shows them
    (``before_key(code)``: what to check on the page before the teacher link is opened)."""
    import re  # noqa: PLC0415

    teacher.get_by_role("button", name="Start a class").click()
    heading = teacher.get_by_text(re.compile(r"Class code: [A-Z0-9]{6}"))
    heading.wait_for(timeout=60_000)
    code = heading.inner_text().split(": ")[1].strip()
    if before_key is not None:
        before_key(code)
    teacher.get_by_text("Your teacher link (private)").click()
    key = re.search(r"teacher=([\w-]+)", teacher.get_by_text(re.compile("teacher=")).inner_text()).group(1)
    return code, key
