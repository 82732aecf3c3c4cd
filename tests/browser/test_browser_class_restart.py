"""A class outlives its server's restart: a teacher and two students, a question answered; the server stops and
starts again on the same port and data directory; the students' pages reconnect by themselves, still in the class
(their key is in their link), the teacher comes back by the teacher link and asks from the Masks page, and the
question reaches both students and their answers count."""

import re
import shutil
import tempfile
from pathlib import Path

import pytest
from browser_support import free_port, headless_chromium, require_chromium, streamlit_server, wait_idle
from chart_support import click_chart

from classroom.store import DATABASE_FILE, ClassStore

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture()
def browser():
    require_chromium()
    with headless_chromium() as browser:
        yield browser


def test_a_class_outlives_its_servers_restart(browser):
    data = Path(tempfile.mkdtemp(prefix="al-class-restart-"))
    env, port = {"ATTENTION_LAB_DATA_DIR": str(data)}, free_port()
    store = ClassStore(f"sqlite:///{data / DATABASE_FILE}")
    started = store.start()
    pages = []
    try:
        with streamlit_server(env=env, port=port) as url:
            teacher = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
            teacher.goto(f"{url}/attention?class={started.code}&teacher={started.teacher_key}&seq_len=5&focus=3")
            wait_idle(teacher)
            teacher.get_by_test_id("stSidebar").get_by_role("button", name="Ask the class").click()
            teacher.get_by_text("Question 1 asked").wait_for(timeout=60_000)
            for index in range(2):
                student = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
                student.goto(f"{url}/class_room?class={started.code}")
                wait_idle(student)
                student.get_by_role("button", name="Join").click()
                student.get_by_text("Click the key you think it looks at most").wait_for(timeout=60_000)
                click_chart(student, 0, index + 1, 0)
                student.get_by_text("Your answer: key").wait_for(timeout=30_000)
                pages.append(student)
            assert store.counts(started.code) == (2, 2)
        with streamlit_server(env=env, port=port) as url:  # the same server, started again
            teacher.goto(f"{url}/masks?class={started.code}&teacher={started.teacher_key}&seq_len=5")
            wait_idle(teacher)
            teacher.get_by_test_id("stSidebar").get_by_role("button", name="Ask the class").click()
            teacher.get_by_text("Question 2 asked").wait_for(timeout=60_000)
            for index, student in enumerate(pages):  # reconnected by themselves: no reload, no second join
                student.get_by_text("Click each cell where the query may attend").wait_for(timeout=120_000)
                click_chart(student, 0, index, 4)
                student.get_by_text(re.compile("1 cells marked")).wait_for(timeout=30_000)
            assert store.counts(started.code) == (2, 2)
            assert len(store.answers(started.code, started.teacher_key, 1)) == 2  # kept across the restart
    finally:
        for page in pages:
            page.context.close()
        shutil.rmtree(data, ignore_errors=True)
