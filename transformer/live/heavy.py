"""The background lane: runs too costly for the engine thread every session shares (`transformer.live.run_cost`) run
here, one at a time, in a child process of low priority (``ATTENTION_LAB_HEAVY_NICE``, 19 by default), so another
session's move never waits behind them: the child computes when the server's own threads leave a core free.

A run belongs to an owner (a session) and a client (the address it comes from). An owner has one run at most: a new
one replaces its last; a client has one running and one waiting at most (`CLIENT_LIMIT`): five tabs of one person
hold no more of the lane than two. A run whose owner has gone (`HeavyLane.owner_alive`) or that is cancelled leaves
the queue, or, running, ends with its process (killed at once; the next run starts a fresh one). The child lowers its
priority before it imports anything (`CHILD`); a run given a ``memory`` bound runs under an address-space limit of
that much more than the child holds (`RLIMIT_AS`), so a wrong estimate ends that run, never the server.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NICE_ENV = "ATTENTION_LAB_HEAVY_NICE"
QUEUE_LIMIT = 4  # runs waiting at most (a new one past this is refused with a message)
CLIENT_LIMIT = 2  # runs of one client in the lane at once: one running, one waiting
MEMORY_HEADROOM = 1 << 30  # bytes beyond a bounded run's estimate that its address space may grow by
# The child: its priority lowered first, then the engine imported (TensorFlow's import alone is 30 s of a core)
CHILD = ("import os, sys; os.nice(int(sys.argv[2])); import runpy; "
         "runpy.run_module('transformer.live.heavy', run_name='__main__', alter_sys=True)")
IDLE_SECONDS = 300.0  # a child with no run for this long ends (its memory goes back); the next run starts another
CALLS: dict[str, str] = {}  # what the lane runs: a door's name -> the function the child calls (`allow`)


def allow(name: str, target: str) -> None:
    """Let the lane run the door's call ``name``: ``target``, ``"module:function"`` of the engine's own."""
    if not target.startswith("transformer."):
        raise ValueError(f"The background lane runs the engine's own functions. Received: {target!r}")
    CALLS[name] = target


@dataclass(eq=False)
class HeavyRun:
    """One run. ``status``: waiting → running → done | failed | cancelled; ``result`` once done, ``error`` (a
    message) once failed; ``flops`` its estimate (the lane's rate is measured from it)."""

    owner: str
    call: str
    args: tuple
    kwargs: dict
    flops: float = 0.0
    client: str = ""
    memory: int = 0  # a bound on the bytes the run may add to the child's address space (0: none)
    loads: frozenset = frozenset()  # what the child loads for it where it does not hold it yet (`HeavyLane.holds`)
    key: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    status: str = "waiting"
    result: object = None
    error: str = ""
    started: float | None = None
    ended: float | None = None

    @property
    def finished(self) -> bool:
        return self.status in ("done", "failed", "cancelled")

    def same(self, call: str, args: tuple, kwargs: dict) -> bool:
        return (self.call, self.args, self.kwargs) == (call, args, kwargs)


class LaneFull(ValueError):
    """A run refused: `QUEUE_LIMIT` runs wait already, or its client has `CLIENT_LIMIT` in the lane."""


class HeavyLane:
    """The child process and the queue in front of it. ``submit`` a call; its `HeavyRun` fills in; ``cancel`` ends
    it. ``owner_alive(owner) -> bool`` (the app's: is that session still connected) is asked twice a second."""

    def __init__(self, niceness: int | None = None):
        self.niceness = niceness if niceness is not None else int(os.environ.get(NICE_ENV, "19"))
        self.owner_alive = lambda owner: True
        self.gflops: float | None = None  # measured on this server: flops / seconds of the last finished run
        self.restarts = 0  # children ended to cancel a run
        self._held: set = set()  # what the child holds: the ``loads`` of its runs that finished
        self._lock = threading.Lock()
        self._waiting: list[HeavyRun] = []
        self._running: HeavyRun | None = None
        self._child: subprocess.Popen | None = None
        self._connection: Connection | None = None
        self._idle_since = time.monotonic()
        self._thread = threading.Thread(target=self._dispatch, name="heavy-lane", daemon=True)
        self._thread.start()

    def submit(self, owner: str, call: str, *args, flops: float = 0.0, client: str = "", memory: int = 0,
               loads: frozenset = frozenset(), **kwargs) -> HeavyRun:
        """``call`` (a `CALLS` name) of ``args`` for ``owner`` of ``client``: the owner's run of the same call if it
        has one, else a new one in place of the owner's last; `LaneFull` past `QUEUE_LIMIT` waiting or past
        `CLIENT_LIMIT` runs of ``client``. ``memory``: the run's address-space bound beyond the child's (0: none);
        ``loads``: what the child loads for it and then holds (a long-loading model's name and device)."""
        if call not in CALLS:
            raise ValueError(f"The background lane runs {sorted(CALLS)}. Received: {call!r}")
        with self._lock:
            queued = [run for run in [self._running, *self._waiting] if run is not None]
            mine = [run for run in queued if run.owner == owner]
            for run in mine:
                if run.same(call, args, kwargs):
                    return run
            theirs = [run for run in queued if client and run.client == client and run.owner != owner]
            if len(theirs) >= CLIENT_LIMIT:
                raise LaneFull(f"{len(theirs)} long runs from your address are in the background lane already (one "
                               "running, one waiting is the most): wait for one to finish, or close the tab that "
                               "asked for it.")
            for run in mine:
                self._cancel(run)
            if len(self._waiting) >= QUEUE_LIMIT:
                raise LaneFull(f"{len(self._waiting)} long runs are waiting for the background lane, the most this "
                               "server queues: try again in a minute.")
            run = HeavyRun(owner, call, args, kwargs, flops, client, memory, frozenset(loads))
            self._waiting.append(run)
            self._start_next()
        return run

    def holds(self, load) -> bool:
        """Whether the child holds ``load`` (one of a finished run's ``loads``): a child ended (idle, cancelled,
        dead) holds nothing, and the next run's child loads it again."""
        with self._lock:
            return load in self._held

    def cancel(self, run: HeavyRun) -> None:
        """End ``run``: waiting, it leaves the queue; running, its process is killed."""
        with self._lock:
            self._cancel(run)

    def place(self, run: HeavyRun) -> int:
        """How many runs are ahead of ``run`` (0: it is running or finished)."""
        with self._lock:
            if run not in self._waiting:
                return 0
            return self._waiting.index(run) + (self._running is not None)

    def child_pid(self) -> int | None:
        with self._lock:
            return None if self._child is None else self._child.pid

    def close(self) -> None:
        with self._lock:
            for run in list(self._waiting):
                self._cancel(run)
            if self._running is not None:
                self._cancel(self._running)
            self._end_child()

    # -- under the lock ------------------------------------------------------------------------------------------

    def _cancel(self, run: HeavyRun) -> None:
        if run.finished:
            return
        if run in self._waiting:
            self._waiting.remove(run)
        if run is self._running:
            self._end_child()
            self.restarts += 1
            self._running = None
        run.status, run.ended = "cancelled", time.monotonic()
        self._start_next()

    def _start_next(self) -> None:
        if self._running is not None or not self._waiting:
            return
        run = self._waiting.pop(0)
        if self._child is None or self._child.poll() is not None:
            self._start_child()
        run.status, run.started = "running", time.monotonic()
        self._running = run
        try:
            self._connection.send((run.key, CALLS[run.call], run.args, run.kwargs, run.memory))
        except OSError:  # the child died meanwhile: the dispatcher fails the run
            pass

    def _start_child(self) -> None:
        ours, theirs = socket.socketpair()
        path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
        self._child = subprocess.Popen([sys.executable, "-c", CHILD, str(theirs.fileno()), str(self.niceness)],
                                       pass_fds=[theirs.fileno()], cwd=ROOT,
                                       env=dict(os.environ, PYTHONPATH=path), stdin=subprocess.DEVNULL)
        theirs.close()
        self._connection = Connection(ours.detach())

    def _end_child(self) -> None:
        if self._child is not None:
            with contextlib.suppress(ProcessLookupError):
                self._child.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._child.wait(5)
        if self._connection is not None:
            self._connection.close()
        self._child, self._connection, self._held = None, None, set()

    # -- the dispatcher thread -----------------------------------------------------------------------------------

    def _dispatch(self) -> None:
        while True:
            with self._lock:
                connection = self._connection
            if connection is not None:
                try:
                    ready = wait([connection], timeout=0.5)
                except OSError:
                    ready = []
                if ready:
                    self._read(connection)
            else:
                time.sleep(0.5)
            self._reap()

    def _read(self, connection: Connection) -> None:
        try:
            message = connection.recv()
        except (EOFError, OSError):  # the child died (killed to cancel, or out of memory)
            with self._lock:
                if connection is self._connection:
                    self._died()
            return
        with self._lock:
            run = self._running
            if run is None or message[0] != run.key:
                return
            kind, payload = message[1], message[2]
            run.ended = time.monotonic()
            if kind == "done":
                run.status, run.result = "done", payload
                self._held |= run.loads
                if run.flops and run.ended > run.started:
                    self.gflops = run.flops / (run.ended - run.started) / 1e9
            else:
                run.status, run.error = "failed", payload
            self._running, self._idle_since = None, time.monotonic()
            self._start_next()

    def _died(self) -> None:
        code = self._child.poll() if self._child is not None else None
        self._end_child()
        run, self._running = self._running, None
        if run is not None and not run.finished:
            why = "it was killed, perhaps for lack of memory" if code is not None and code < 0 else f"exit code {code}"
            run.status, run.error, run.ended = "failed", f"The background run stopped ({why}).", time.monotonic()
        self._start_next()

    def _reap(self) -> None:
        """Cancel the runs whose owner has gone; end a child idle for `IDLE_SECONDS`."""
        with self._lock:
            runs = [run for run in [self._running, *self._waiting] if run is not None]
        gone = [run for run in runs if not _alive(self.owner_alive, run.owner)]
        with self._lock:
            for run in gone:
                self._cancel(run)
            if self._running is None and self._child is not None and \
                    time.monotonic() - self._idle_since > IDLE_SECONDS:
                self._end_child()


def _alive(check, owner: str) -> bool:
    try:
        return bool(check(owner))
    except Exception:  # a check that fails keeps the run: cancelling on a broken check would lose work
        return True


_LANE: HeavyLane | None = None
_LANE_LOCK = threading.Lock()


def heavy_lane() -> HeavyLane:
    """The server's one background lane (started on first use)."""
    global _LANE
    with _LANE_LOCK:
        if _LANE is None:
            _LANE = HeavyLane()
        return _LANE


def _address_space() -> int:
    """The bytes this process's address space holds now (its VmSize)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


@contextlib.contextmanager
def _bounded(memory: int):
    """Within it, the address space may grow by ``memory`` and `MEMORY_HEADROOM` at most (0: no bound): an
    allocation past it fails, and the run with it."""
    import resource  # noqa: PLC0415  (POSIX only, as the lane is)

    if not memory:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _address_space() + memory + MEMORY_HEADROOM
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _serve(fd: int, niceness: int) -> None:
    """The child: take ``(key, target, args, kwargs, memory)``, answer ``(key, "done", result)`` or ``(key,
    "failed", message)``, until the parent closes its end. Its priority is lowered already (`CHILD`)."""
    if os.nice(0) < niceness:  # started otherwise than by `CHILD`
        os.nice(niceness - os.nice(0))
    connection = Connection(fd)
    while True:  # a call's module imports the package, and with it the engine's set-up (its CPU allocator, devices)
        try:
            key, target, args, kwargs, memory = connection.recv()
        except (EOFError, OSError):
            return
        module, name = target.split(":")
        try:
            with _bounded(memory):
                result = getattr(importlib.import_module(module), name)(*args, **kwargs)
            connection.send((key, "done", result))
        except MemoryError:
            connection.send((key, "failed", "The background run needed more memory than its estimate allows, and "
                                            "was stopped: fewer lines or a shorter length fit."))
        except ValueError as error:
            connection.send((key, "failed", str(error)))
        except Exception as error:  # the engine failed on valid-looking input: say so
            connection.send((key, "failed", f"The computation failed ({type(error).__name__}): {str(error)[:500]}"))


if __name__ == "__main__":
    _serve(int(sys.argv[1]), int(sys.argv[2]))
