"""The Train page's jobs: queued on the server's training pool (worker processes, `transformer.training.pool`),
one per session; a finished job's model rebuilt here, on the session's device, when it is explored."""

from __future__ import annotations

import threading
import uuid
import weakref
from collections.abc import Callable

import streamlit as st

from transformer.service import (
    Job,
    PoolSettings,
    TrainingPool,
    TrainResult,
    TrainSpec,
    VisionSpec,
    describe_wait,
    duration_words,
    kept_label,
    limit_problems,
    rebuild_trained,
    register_vision,
    resolve_device,
    session_name,
)
from transformer.service import (
    register as register_model,
)
from ui import state
from ui.runtime import client_address, session_alive, session_id
from ui.state import F
from ui.text import count

_pool: TrainingPool | None = None
_pool_lock = threading.Lock()
OWNER = state.TRAIN_OWNER
JOB = state.TRAIN_JOB
_results: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a finished job -> its rebuilt TrainResult


def pool() -> TrainingPool:
    """The server's one training pool, made on the first job (settings: `PoolSettings.from_env`)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = TrainingPool()
        return _pool


def settings_problems() -> list[str]:
    """What is wrong with this server's training settings (ATTENTION_LAB_TRAIN_*, ATTENTION_LAB_MODELS_*), each
    naming the value: every page says so, so that whoever runs the server sees it."""
    problems = limit_problems()
    try:
        PoolSettings.from_env()
    except ValueError as error:
        problems.append(f"{error}. The Train page takes no job until it is fixed.")
    return problems


def submit(spec: TrainSpec | VisionSpec) -> Job:
    """Queue ``spec`` for this session on its device choice; it becomes the session's job. ValueError (the
    message to show) when the spec is bad, the session has a job already or the queue is full."""
    owner = state.setdefault(OWNER, uuid.uuid4().hex)
    running = pool()
    running.owner_alive = session_alive
    job = running.submit(spec, owner, state.value(F.device), client=client_address(), session=session_id())
    state.put(JOB, job)
    return job


def stop(job: Job) -> None:
    pool().stop(job)


def while_running(draw: Callable[[Job | None, bool], None], job: Job | None, seconds: float) -> None:
    """``draw(job, timed)`` in a fragment redrawn every ``seconds`` while ``job`` runs (``timed`` True); when it ends,
    the page once more and then no timed redraw: a timed rerun carries the browser's widget values as they were, and
    one that lands with a button's callback undoes what the callback set (Explore's weights went back to random).
    So a timed draw must not draw the end's buttons, even for a job that ended while it drew: the next tick reruns
    the page."""
    running = job is not None and not job.finished

    @st.fragment(run_every=seconds if running else None)
    def view() -> None:
        if running and job.finished:
            st.rerun()
        draw(job, running)

    view()


def status_line(job: Job) -> str:
    """What the progress bar says: the place in the queue while waiting, the step while training."""
    if job.stop_requested and not job.finished:  # acknowledged at once: the worker ends it at its next step
        return f"stopping at step {job.step} of {job.spec.steps}: it keeps what it learned"
    if job.status == "waiting":
        place = pool().place(job)
        return f"waiting: {describe_wait(*place)}" if place else "waiting"
    if job.status == "starting":
        return "starting: the training process is getting ready"
    left = pool().time_left(job) if job.status == "training" else None
    return f"{job.status}: step {job.step} of {job.spec.steps}" + (
        f", {duration_words(left)} left (from its own steps so far)" if left is not None and job.step > 0 else "")


def estimate_line(spec) -> str:
    """How long ``spec`` would train here, from this server's last run of its sizes; else why no figure yet."""
    seconds = None if _pool is None else _pool.estimate(spec)  # no pool yet: no run yet (none is made to ask)
    if seconds is None:
        return ("This server has not trained a model of these sizes yet: the time left shows beside the steps once "
                "it starts, from its own speed.")
    return f"{duration_words(seconds).capitalize()} here, as this server's last run of these sizes took."


def result(job: Job) -> TrainResult:
    """The finished job's model, rebuilt from its weights on this session's device (once per job)."""
    with _pool_lock:
        if job not in _results:
            device = resolve_device(job.device)
            model, vocab = rebuild_trained(job.spec, job.trained, device)  # the thread that owns
            # TensorFlow (transformer.runtime.engine_thread), as every other model the pages use
            _results[job] = TrainResult(job.spec, model, vocab, job.trained.history, job.timeline,
                                        job.trained.accuracy, job.trained.seconds, device)
        return _results[job]


def is_image_job(job: Job) -> bool:
    """A Vision Transformer's training job: its spec reads images (`ModelShape.reads_images`)."""
    return job.spec.reads_images


def register(job: Job) -> str:
    """Make the trained model selectable (every session of the server): as weights, or an image job's on the Images
    page; returns its name."""
    if is_image_job(job):
        return register_vision(job.spec, job.trained, job.key, label(job), resolve_device(job.device))
    name = session_name(job.key)
    if kept_label(name) is not None:  # registered by an earlier click
        return name
    return register_model(result(job), job.key, label(job))


def label(job: Job) -> str:
    s = job.spec
    return (f"{s.task}, d_model {s.d_model}, {count(s.num_heads, 'head')}, {count(s.num_layers, 'layer')}, "
            f"{count(job.trained.steps if job.trained else job.step, 'step')}")
