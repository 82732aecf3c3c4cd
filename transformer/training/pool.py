"""Training off the serving path: a few worker processes (`transformer.training.worker`), a fair bounded queue.

One running or waiting job per owner (a session) and ``per_client`` per client (an address: sessions cost nothing to
open); jobs start in the order they came; beyond ``queue_limit`` waiting jobs a new one is refused with a message. A
job whose session has been gone for `GONE_GRACE_SECONDS` (``owner_alive``, the app's) leaves the queue, or stops if
it is training. A worker that dies fails its job with a message and is replaced. The settings come from the
environment (`PoolSettings.from_env`).
"""

from __future__ import annotations

import collections
import contextlib
import heapq
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path

from transformer.training import worker
from transformer.training.saved_model import TrainSpec

ROOT = Path(__file__).resolve().parents[2]  # where ``python -m transformer.training.worker`` finds the package

START_FAILURES_ALLOWED = 3  # workers in a row that die before they are ready: then waiting jobs fail instead
DEFAULT_SECONDS_PER_STEP = 0.03  # an estimate's rate before any job of the server has run (d_model 32, 2 cores)
WORKER_START_SECONDS = 8.0  # a new worker's TensorFlow import, added to an estimate while it starts
JOB_OVERHEAD_SECONDS = 5.0  # a job's tracing of its step and its accuracy measured at the end (d_model 32)
GONE_GRACE_SECONDS = 30.0  # a session gone this long loses its job (a phone's locked screen reconnects sooner)


@dataclass(frozen=True)
class PoolSettings:
    """``workers`` processes at most, started as jobs need them; ``queue_limit`` jobs waiting at most; the workers'
    ``niceness`` (added to the server's); ``worker_mb``: a worker past this resident memory after a job is
    replaced by a fresh one; ``per_client``: jobs waiting or training from one client address at most."""

    workers: int = 1
    queue_limit: int = 20
    niceness: int = 10
    worker_mb: int = 1200
    per_client: int = 5

    @classmethod
    def from_env(cls) -> PoolSettings:
        """ATTENTION_LAB_TRAIN_WORKERS (default one per two cores), ATTENTION_LAB_TRAIN_QUEUE (20),
        ATTENTION_LAB_TRAIN_NICE (10), ATTENTION_LAB_TRAIN_WORKER_MB (1200), ATTENTION_LAB_TRAIN_PER_CLIENT (5);
        ValueError naming a value that is not a whole number in range."""
        return cls(_whole("ATTENTION_LAB_TRAIN_WORKERS", max(1, (os.cpu_count() or 2) // 2), 1),
                   _whole("ATTENTION_LAB_TRAIN_QUEUE", 20, 0), _whole("ATTENTION_LAB_TRAIN_NICE", 10, 0),
                   _whole("ATTENTION_LAB_TRAIN_WORKER_MB", 1200, 200), _whole("ATTENTION_LAB_TRAIN_PER_CLIENT", 5, 1))


def _whole(name: str, default: int, least: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if not raw.strip().isdigit() or int(raw) < least:
        raise ValueError(f"{name} must be a whole number of at least {least}. Received: {name}={raw!r}")
    return int(raw)


@dataclass(eq=False)
class Job:
    """One training run. ``status``: waiting → starting → training → done | stopped | failed. ``history``: (step,
    loss, accuracy) rows; ``timeline``: `timeline.Snapshot`s; ``trained``: a `worker.Trained` once done or
    stopped."""

    spec: TrainSpec  # or an image task's `transformer.training.vision.VisionSpec`
    owner: str
    device: str  # the session's choice ("auto", "cpu", "gpu"): the worker resolves it
    client: str = ""  # the address it came from ("": not known): at most `PoolSettings.per_client` jobs each
    session: str = ""  # the Streamlit session that asked (``owner_alive`` is asked of it)
    gone_since: float | None = None  # time.monotonic() when its session was first seen gone
    key: str = field(default_factory=lambda: uuid.uuid4().hex[:10])
    status: str = "waiting"
    error: str = ""
    history: list = field(default_factory=list)
    timeline: list = field(default_factory=list)
    trained: worker.Trained | None = None
    started: float | None = None  # time.monotonic() when the worker began it
    first_row: tuple | None = None  # (time.monotonic(), step) of its first progress row: the rate is measured from
    # there (the first steps trace the step function)
    stop_requested: bool = False

    @property
    def step(self) -> int:
        return self.history[-1][0] if self.history else 0

    @property
    def finished(self) -> bool:
        return self.status in ("done", "failed", "stopped")


@dataclass(eq=False)
class _Worker:
    process: subprocess.Popen
    connection: Connection
    job: Job | None = None
    ready: bool = False
    retiring: bool = False  # it said it ends, its memory past worker_mb

    def stop_job(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGUSR1)


class QueueFull(ValueError):
    """A job refused: the queue holds its limit."""


class TrainingPool:
    """Worker processes and the queue in front of them. ``submit`` a `Job`; its fields fill in as the worker
    reports; ``stop`` ends it, waiting or training. A dispatcher thread reads the workers' reports."""

    def __init__(self, settings: PoolSettings | None = None):
        self.settings = settings or PoolSettings.from_env()
        self._lock = threading.Lock()
        self._workers: list[_Worker] = []
        self._waiting: collections.deque[Job] = collections.deque()
        self._active: dict[str, Job] = {}  # owner -> its waiting or running job
        self._rates: dict[tuple, float] = {}  # a model size -> seconds per step, measured
        self.replaced = 0  # workers that died and were replaced
        self.retired = 0  # workers that ended past their memory and were replaced
        self._start_failures = 0  # workers in a row that died before they were ready
        self._closed = False
        self.owner_alive = lambda session: True  # the app's: whether that session is still connected
        self.left = 0  # jobs that left the queue, or stopped, because their session had gone
        self._thread = threading.Thread(target=self._dispatch, name="training-pool", daemon=True)
        self._thread.start()

    def submit(self, spec: TrainSpec, owner: str, device: str = "auto", client: str = "", session: str = "") -> Job:
        """Queue ``spec`` for ``owner`` (from ``client``'s address, in Streamlit's ``session``); ValueError when the
        owner has a job waiting or running, `QueueFull` when ``queue_limit`` jobs wait already or the client has
        ``per_client`` jobs, ValueError from ``spec.validate()``."""
        spec.validate()
        with self._lock:
            if owner in self._active:
                raise ValueError("A model is still training (or waiting to) in this session: stop it or wait for "
                                 "it first.")
            theirs = sum(job.client == client for job in self._active.values()) if client else 0
            if theirs >= self.settings.per_client:
                raise QueueFull(f"{theirs} jobs from this address are waiting or training, the most one address "
                                "may have on this server (ATTENTION_LAB_TRAIN_PER_CLIENT): wait for one to end.")
            if len(self._waiting) >= self.settings.queue_limit and not self._idle_capacity():
                wait_s = self._start_after(list(self._waiting)) if self._workers else 0.0
                raise QueueFull(f"{len(self._waiting)} jobs are waiting to train, the most this server queues: try "
                                f"again in {duration_words(wait_s)}.")
            job = Job(spec, owner, device, client=client, session=session)
            self._active[owner] = job
            self._waiting.append(job)
            self._assign()
        return job

    def stop(self, job: Job) -> None:
        """End ``job``: a waiting one leaves the queue at once; a running one stops at its next step and keeps
        what it learned."""
        with self._lock:
            job.stop_requested = True
            if job in self._waiting:
                self._waiting.remove(job)
                self._finish(job, "stopped")
                return
            for runner in self._workers:
                if runner.job is job and job.status == "training":
                    runner.stop_job()

    def estimate(self, spec: TrainSpec) -> float | None:
        """Seconds ``spec`` trains once started, from this server's last job of its size (its steps timed); None
        before one has run (a guess from elsewhere promised "about a minute" where a busy host took ten)."""
        with self._lock:
            measured = self._rates.get(_size(spec))
        return None if measured is None else JOB_OVERHEAD_SECONDS + spec.steps * measured

    def time_left(self, job: Job) -> float | None:
        """Seconds until ``job`` ends, from its own steps so far; None unless it is training."""
        with self._lock:
            runner = next((runner for runner in self._workers if runner.job is job), None)
            return None if runner is None or job.status != "training" else self._remaining(runner, time.monotonic())

    def place(self, job: Job) -> tuple[int, float] | None:
        """``(place in the queue from 1, seconds until it starts, estimated)`` of a waiting job; None otherwise."""
        with self._lock:
            if job not in self._waiting:
                return None
            ahead = list(self._waiting)[: self._waiting.index(job)]
            return len(ahead) + 1, self._start_after(ahead)

    def worker_pids(self) -> list[int]:
        with self._lock:
            return [runner.process.pid for runner in self._workers]

    def close(self) -> None:
        """Stop the dispatcher and end the workers (their jobs fail)."""
        with self._lock:
            self._closed = True
            runners, self._workers = self._workers, []
        for runner in runners:
            runner.process.terminate()
            runner.process.wait(5)
            runner.connection.close()
        self._thread.join(5)

    # -- under the lock ------------------------------------------------------------------------------------------

    def _serving(self) -> list[_Worker]:
        """The workers that take jobs (not those ending past their memory)."""
        return [runner for runner in self._workers if not runner.retiring]

    def _idle_capacity(self) -> bool:
        serving = self._serving()
        return any(runner.job is None for runner in serving) or len(serving) < self.settings.workers

    def _assign(self) -> None:
        """Hand waiting jobs to idle workers, starting workers up to the pool's size."""
        while self._waiting and not self._closed:
            serving = self._serving()
            runner = next((runner for runner in serving if runner.job is None), None)
            if runner is None and len(serving) < self.settings.workers:
                runner = self._start_worker()
            if runner is None:
                return
            job = self._waiting.popleft()
            runner.job, job.status = job, "starting"
            with contextlib.suppress(OSError):  # a worker that has just died: the dispatcher fails the job
                runner.connection.send(("train", job.key, job.spec, job.device))

    def _start_worker(self) -> _Worker:
        ours, theirs = socket.socketpair()
        path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
        arguments = [str(theirs.fileno()), str(self.settings.niceness), str(self.settings.worker_mb)]
        process = subprocess.Popen([sys.executable, "-m", "transformer.training.worker", *arguments],
                                   pass_fds=[theirs.fileno()], cwd=ROOT, env=dict(os.environ, PYTHONPATH=path),
                                   stdin=subprocess.DEVNULL)
        theirs.close()
        runner = _Worker(process, Connection(ours.detach()))
        self._workers.append(runner)
        return runner

    def _finish(self, job: Job, status: str, error: str = "") -> None:
        job.status, job.error = status, error
        if self._active.get(job.owner) is job:
            del self._active[job.owner]

    def _start_after(self, ahead: list[Job]) -> float:
        """Seconds until a job behind ``ahead`` starts: each worker's remaining time, then the jobs ahead handed to
        whichever frees first."""
        now = time.monotonic()
        free = [self._remaining(runner, now) for runner in self._serving()]
        free += [WORKER_START_SECONDS] * (self.settings.workers - len(free))
        heapq.heapify(free)
        for job in ahead:
            heapq.heappush(free, heapq.heappop(free) + self._duration(job.spec))
        return free[0]

    def _duration(self, spec: TrainSpec) -> float:
        return JOB_OVERHEAD_SECONDS + spec.steps * self._rate(spec)

    def _remaining(self, runner: _Worker, now: float) -> float:
        job = runner.job
        if job is None:
            return 0.0 if runner.ready else WORKER_START_SECONDS
        if job.first_row is None or job.step <= job.first_row[1]:
            return self._duration(job.spec) if job.first_row is None else job.spec.steps * self._rate(job.spec)
        rate = (now - job.first_row[0]) / (job.step - job.first_row[1])
        return (job.spec.steps - job.step) * rate + JOB_OVERHEAD_SECONDS / 2

    def _rate(self, spec: TrainSpec) -> float:
        measured = self._rates.get(_size(spec))
        if measured is None and self._rates:
            return sum(self._rates.values()) / len(self._rates)
        return measured or DEFAULT_SECONDS_PER_STEP

    # -- the dispatcher thread -----------------------------------------------------------------------------------

    def _dispatch(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                runners = {runner.connection: runner for runner in self._workers}
            try:
                ready = wait(list(runners), timeout=0.25)  # a worker that dies closes its end: EOF
            except OSError:  # a worker's pipe closed meanwhile: look again
                continue
            for handle in ready:
                self._read(runners[handle])
            self._reap()

    def _reap(self) -> None:
        """A job whose session has been gone for `GONE_GRACE_SECONDS` leaves the queue, or stops training."""
        now = time.monotonic()
        with self._lock:
            jobs = [job for job in self._active.values() if job.session]
        for job in jobs:
            try:
                alive = bool(self.owner_alive(job.session))
            except Exception:  # a check that fails keeps the job
                alive = True
            if alive:
                job.gone_since = None
                continue
            job.gone_since = job.gone_since or now
            if now - job.gone_since >= GONE_GRACE_SECONDS and not job.finished and not job.stop_requested:
                self.left += 1
                self.stop(job)

    def _read(self, runner: _Worker) -> None:
        try:
            message = runner.connection.recv()
        except (EOFError, OSError):
            self._died(runner)
            return
        except Exception:  # a message that does not unpickle here: this worker cannot be trusted on
            runner.process.kill()
            self._died(runner)
            return
        with self._lock:
            self._handle(runner, message)

    def _handle(self, runner: _Worker, message: tuple) -> None:
        kind, job = message[0], runner.job
        if kind == "ready":
            runner.ready, self._start_failures = True, 0
            return
        if kind == "retiring":
            runner.retiring = True
            return
        if job is None or job.key != message[1]:
            return
        if kind == "started":
            job.status, job.started = "training", time.monotonic()
            if job.stop_requested:
                runner.stop_job()
        elif kind == "progress":
            job.history.append(message[2])
            job.first_row = job.first_row or (time.monotonic(), job.step)
        elif kind == "snapshot":
            job.timeline.append(message[2])
        elif kind in ("done", "failed"):
            if kind == "done":
                job.trained = message[2]
                self._rates[_size(job.spec)] = max(0.0, job.trained.seconds - JOB_OVERHEAD_SECONDS) / max(
                    1, job.trained.steps)
            self._finish(job, "failed" if kind == "failed" else "stopped" if job.stop_requested else "done",
                         message[2] if kind == "failed" else "")
            runner.job = None
            self._assign()

    def _died(self, runner: _Worker) -> None:
        """A worker that ended (killed, out of memory, or retiring): fail its job, start another in its place."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            runner.process.wait(5)
        with self._lock:
            if runner not in self._workers:
                return
            self._workers.remove(runner)
            runner.connection.close()
            if runner.retiring:
                self.retired += 1
            else:
                self.replaced += 1
            job, code = runner.job, runner.process.returncode
            if job is not None and not job.finished:
                why = "it was killed, perhaps for lack of memory" if code is not None and code < 0 else \
                    f"exit code {code}"
                self._finish(job, "failed", f"The training process stopped ({why}) at step {job.step}: press "
                                            "Train to try again.")
            self._start_failures = 0 if runner.ready else self._start_failures + 1
            if self._start_failures >= START_FAILURES_ALLOWED:
                self._fail_waiting(f"Training processes fail to start (the last: exit code {code}); the server's "
                                   "log says why.")
            elif not self._closed:
                if len(self._serving()) < self.settings.workers:  # a retiring worker's may have started already
                    self._start_worker()
                self._assign()

    def _fail_waiting(self, message: str) -> None:
        while self._waiting:
            self._finish(self._waiting.popleft(), "failed", message)


def _size(spec: TrainSpec) -> tuple:
    """What a step's time depends on (a `VisionSpec` has no lengths)."""
    return (spec.task, spec.d_model, spec.num_heads, spec.num_layers, spec.d_ff, spec.batch,
            getattr(spec, "max_len", None))


def duration_words(seconds: float) -> str:
    """``"about 40 s"``, ``"about 3 min"``."""
    if seconds < 90:
        return f"about {max(5, round(seconds / 5) * 5):.0f} s"
    return f"about {round(seconds / 60):.0f} min"


def describe_wait(place: int, seconds: float) -> str:
    """``"3rd in the queue, starts in about 40 s"``."""
    suffix = "th" if 10 <= place % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(place % 10, "th")
    return f"{place}{suffix} in the queue, starts in {duration_words(seconds)}"
