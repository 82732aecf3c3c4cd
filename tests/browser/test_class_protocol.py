"""The load test's student (bench/student.py) against the browser tier's server: what `make load-test` measures is
what a browser gets. A student that presses Train follows its job as the browser does and explores the model; the
run that a fragment's `st.rerun()` starts when the job ends stays on the Train page (a student that named its page
without the page's script hash was sent to the app's first page, and the class-training table read 10 of 10 jobs
failed)."""

import asyncio
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import student  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_protocol_student_trains_follows_its_job_and_explores_the_model(server, monkeypatch):
    monkeypatch.setattr(student, "ANSWER_TIMEOUT", 60.0)  # a missing answer fails in a minute, not two

    async def train_and_explore():
        learner = student.Student(5, server, random.Random(5))
        await learner.connect()
        try:
            return learner, await learner.train_once(20, timeout=240)
        finally:
            await learner.close()

    learner, outcome = asyncio.run(train_and_explore())
    assert outcome == "done" and learner.errors == [] and learner.leaks == 0
    explored = learner.answers[-1][1]  # Explore's answer: the model's attention on the Attention page
    assert explored.finished and explored.charts >= 1 and "Focus a query" in explored.widgets
