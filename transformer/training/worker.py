"""A training worker: a process of its own that trains one `TrainSpec` (or an image task's `VisionSpec`) at a time
and sends back what the Train page shows, so that training never shares the serving process's interpreter or cores
at the same priority.

    python -m transformer.training.worker FD NICENESS MEGABYTES   (started by `transformer.training.pool`)

A fresh interpreter (not multiprocessing's spawn, which would run the server's ``__main__``, the Streamlit script,
again). Messages, pickled, on the socket ``FD`` the server passes, server → worker: ``("train", key, spec, device
choice)``. Worker → server: ``("ready", pid)`` once TensorFlow is imported, then per job ``("started", key)``,
``("progress", key, (step, loss, accuracy))``, ``("snapshot", key, timeline.Snapshot)`` and last ``("done", key,
Trained)`` or ``("failed", key, message)``. SIGUSR1 stops the job in hand (the flag is cleared as each job starts).
TensorFlow keeps ~10–120 MB of each job's graphs for good, so a worker whose resident memory has passed MEGABYTES
after a job says ``("retiring", pid)`` and ends; the pool starts a fresh one.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection

import numpy as np

TIMELINE_POINTS = 30  # snapshots of the probe batch a run records (transformer.training.timeline)
PROGRESS_POINTS = 50  # (step, loss, accuracy) rows a run sends


@dataclass
class Trained:
    """What comes back from a finished (or stopped) run: the weights as arrays (Keras's order), the accuracy
    after training, the seconds it took, the steps it ran and its (step, loss, accuracy) rows."""

    weights: list
    accuracy: float
    seconds: float
    steps: int
    history: list


def run_job(spec, device: str, send, should_stop) -> Trained:
    """Train ``spec`` on ``device`` (a choice: "auto", "cpu", "gpu" or a TensorFlow device name), calling
    ``send(kind, payload)`` with each progress row and timeline snapshot; ``should_stop()`` ends it early."""
    from transformer.runtime.device import resolve_device  # noqa: PLC0415  (TensorFlow: imported in the worker)
    from transformer.training.train import train  # noqa: PLC0415
    from transformer.training.vision import train_vision  # noqa: PLC0415

    if spec.reads_images:  # an image task: no timeline (its heads have no token roles to score)
        result = train_vision(spec, on_progress=lambda *row: send("progress", row), should_stop=should_stop,
                              log_every=max(1, spec.steps // PROGRESS_POINTS), device=resolve_device(device))
        steps = result.history[-1][0] if result.history else 0
        return Trained([np.asarray(array) for array in result.model.get_weights()], result.accuracy,
                       result.seconds, steps, result.history)
    result = train(spec, on_progress=lambda *row: send("progress", row), should_stop=should_stop,
                   log_every=max(1, spec.steps // PROGRESS_POINTS), device=resolve_device(device),
                   timeline_every=max(1, spec.steps // TIMELINE_POINTS),
                   on_snapshot=lambda shot: send("snapshot", shot))
    steps = result.history[-1][0] if result.history else 0
    return Trained([np.asarray(array) for array in result.model.get_weights()], result.accuracy, result.seconds,
                   steps, result.history)


def rebuild_trained(spec, trained: Trained, device: str):
    """The trained model in this process, on ``device``: ``(model, vocabulary)``."""
    import tensorflow as tf  # noqa: PLC0415

    from transformer.tasks import get_task  # noqa: PLC0415
    from transformer.training.saved_model import build_model  # noqa: PLC0415

    vocab = get_task(spec.task).vocabulary()
    with tf.device(device):
        model = build_model(spec, len(vocab))
        model.set_weights(trained.weights)
    return model, vocab


def serve(connection, stop: threading.Event, megabytes: float = float("inf")) -> None:
    """The worker's loop: import TensorFlow, then train each job it is sent until the server goes or its memory
    passes ``megabytes``."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import transformer.training.train  # noqa: F401, PLC0415  (the import is the slow part: before "ready")
    import transformer.training.vision  # noqa: F401, PLC0415

    connection.send(("ready", os.getpid()))
    while True:
        try:
            _, key, spec, device = connection.recv()
        except (EOFError, OSError):  # the server has gone
            return
        stop.clear()
        connection.send(("started", key))
        try:
            outcome = ("done", key, run_job(spec, device, _sender(connection, key), stop.is_set))
        except (BrokenPipeError, ConnectionResetError):  # the server has gone
            return
        except Exception as error:  # reported on the page; the worker goes on to the next job
            outcome = ("failed", key, f"{type(error).__name__}: {error}")
        _forget()
        retiring = resident_mb() > megabytes
        if retiring:  # first: the server hands this worker no other job
            connection.send(("retiring", os.getpid()))
        connection.send(outcome)
        if retiring:
            return


def resident_mb() -> float:
    """This process's resident memory (Linux's /proc; 0 where there is none)."""
    try:
        with open("/proc/self/status") as status:
            line = next(line for line in status if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0.0
    return int(line.split()[1]) / 1024


def _forget() -> None:
    """Free what the job left that Python can: its model, optimizer and traced step (a Keras model is a web of
    reference cycles)."""
    import gc  # noqa: PLC0415

    import keras  # noqa: PLC0415

    keras.backend.clear_session()
    gc.collect()


def _sender(connection, key: str):
    return lambda kind, payload: connection.send((kind, key, payload))


def main(argv: list[str]) -> None:
    descriptor, niceness, megabytes = int(argv[0]), int(argv[1]), float(argv[2])
    stop = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: stop.set())  # first: the server may stop a job as soon as it starts
    os.nice(niceness)
    serve(Connection(descriptor), stop, megabytes)


if __name__ == "__main__":  # run as the package's module, so that what it pickles names it (not __main__)
    from transformer.training import worker

    worker.main(sys.argv[1:])
