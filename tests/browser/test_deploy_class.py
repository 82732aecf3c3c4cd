"""A class across two replicas behind nginx (deploy/), sharing one data directory (its SQLite class store): the
teacher asks from the Attention page, students on both replicas answer and every answer counts; then the replica
some students were on stops, they reconnect through nginx to the other with their place in the class (their key is
in their link), the teacher opens the teacher link again and asks from the Masks page, and the question reaches every
student and their answers count, the first question's kept. (This is also the lone server's restart: the students'
pages reconnect by themselves, with no reload and no second join, to a server process that did not see them join.)"""

import shutil
import tempfile
from pathlib import Path

import browser_support
import pytest
from browser_support import ask_the_class, free_port, streamlit_server, wait_idle
from chart_support import click_chart
from deploy_support import MAX_SESSIONS, nginx, nginx_browser, routes, write

from classroom.store import DATABASE_FILE, ClassStore

pytestmark = [pytest.mark.browser, pytest.mark.slow]
STUDENTS = 3  # at least; more (up to MAX_SESSIONS) until both replicas have one


@pytest.fixture()
def browser():
    with nginx_browser() as browser:
        yield browser


def start_class(browser, proxy: str) -> tuple:
    """The teacher's tab, the class's code and the teacher's key."""
    teacher = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
    teacher.goto(f"{proxy}/class_room")
    wait_idle(teacher)
    code, key = browser_support.start_class(teacher)
    return teacher, code, key


def ask(teacher, proxy: str, view: str, number: int) -> None:
    """The teacher opens ``view`` by the teacher link and asks the class."""
    teacher.goto(f"{proxy}/{view}")
    wait_idle(teacher)
    ask_the_class(teacher, number)


def replica_of(pages, nginx_dir: Path) -> list[str]:
    """The replica each page's session opened on (its route cookie, in nginx's access log)."""
    seen = routes(nginx_dir)
    return [seen[next(c["value"] for c in page.context.cookies() if c["name"] == "al_route")][0] for page in pages]


def test_a_class_on_two_replicas_answers_and_outlives_the_replica_its_students_were_on(browser):
    shared, nginx_dir = Path(tempfile.mkdtemp(prefix="al-class-")), Path(tempfile.mkdtemp(prefix="al-nginx-"))
    env = {"ATTENTION_LAB_DATA_DIR": str(shared)}
    try:
        with (streamlit_server(with_process=True, env=env) as (first_url, first),
              streamlit_server(env=env) as second_url):
            replicas = [first_url.split("//")[1], second_url.split("//")[1]]
            port = free_port()
            with nginx(write(f"127.0.0.1:{port}", replicas, nginx_dir), nginx_dir, port):
                proxy = f"http://127.0.0.1:{port}"
                store = ClassStore(f"sqlite:///{shared / DATABASE_FILE}")
                teacher, code, key = start_class(browser, proxy)
                ask(teacher, proxy, f"attention?class={code}&teacher={key}&seq_len=5&focus=3", 1)
                students = []
                while len(students) < STUDENTS or (len(students) < MAX_SESSIONS and
                                                   len(set(replica_of(students, nginx_dir))) < 2):
                    student = browser.new_context(viewport={"width": 1300, "height": 1000}).new_page()
                    student.goto(f"{proxy}/class_room?class={code}")
                    wait_idle(student)
                    student.get_by_role("button", name="Join").click()
                    student.get_by_text("Click the key you think it looks at most").wait_for(timeout=60_000)
                    click_chart(student, 0, len(students) % 5, 0)
                    student.get_by_text("Your answer: key").wait_for(timeout=30_000)
                    students.append(student)
                assert set(replica_of(students, nginx_dir)) == set(replicas)  # students on both
                assert store.counts(code) == (len(students), len(students))

                first.terminate()  # the first replica stops: its students reconnect to the second
                first.wait(30)
                ask(teacher, proxy, f"masks?class={code}&teacher={key}&seq_len=5", 2)
                for index, student in enumerate(students):
                    student.get_by_text("Which cells may attend?").first.wait_for(timeout=120_000)
                    student.get_by_text("Send my cells (0 marked)").wait_for(timeout=60_000)
                    click_chart(student, 0, 0, index % 5)  # marked in the browser, then sent once
                    student.get_by_text("Send my cells (1 marked)").click()
                    student.get_by_text("1 cell sent as may attend").wait_for(timeout=30_000)
                    assert "student=" in student.url
                assert store.counts(code) == (len(students), len(students))  # nobody joined twice; all answered
                assert len(store.answers(code, key, 1)) == len(students)  # kept after their replica stopped
                for page in (teacher, *students):
                    page.context.close()
    finally:
        shutil.rmtree(shared, ignore_errors=True)
        shutil.rmtree(nginx_dir, ignore_errors=True)
