"""Background training jobs for the Train page: one thread per job, at most two at once per server."""

from __future__ import annotations

import threading
import uuid

from transformer.live.device import resolve_device
from transformer.training import pretrained
from transformer.training.saved_model import TrainSpec
from transformer.training.train import train
from ui.text import count

_slots = threading.BoundedSemaphore(2)
TIMELINE_POINTS = 30  # snapshots of the probe batch a run records (transformer.training.timeline)


class TrainJob:
    """Trains in a daemon thread; the page reads ``status``, ``history`` and ``result``."""

    def __init__(self, spec: TrainSpec, device: str = "auto"):
        spec.validate()
        self.spec = spec
        self.device = resolve_device(device)  # the session's device: the model is trained and kept there
        self.key = uuid.uuid4().hex[:10]
        self.history: list = []
        self.timeline: list = []  # transformer.training.timeline.Snapshot, about TIMELINE_POINTS of them
        self.status = "waiting"  # waiting → training → done | failed | stopped
        self.error = ""
        self.result = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"train-{self.key}", daemon=True)

    def start(self) -> TrainJob:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    @property
    def step(self) -> int:
        return self.history[-1][0] if self.history else 0

    @property
    def finished(self) -> bool:
        return self.status in ("done", "failed", "stopped")

    def _run(self) -> None:
        with _slots:
            self.status = "training"
            try:
                self.result = train(self.spec, on_progress=lambda *row: self.history.append(row),
                                    should_stop=self._stop.is_set, log_every=max(1, self.spec.steps // 50),
                                    device=self.device, timeline_every=max(1, self.spec.steps // TIMELINE_POINTS),
                                    on_snapshot=self.timeline.append)
                self.status = "stopped" if self._stop.is_set() else "done"
            except Exception as error:  # reported on the page; the app keeps running
                self.status, self.error = "failed", f"{type(error).__name__}: {error}"

    def register(self) -> str:
        """Make the trained model selectable as weights; returns its name."""
        return pretrained.register(self.result, self.key, self.label())

    def label(self) -> str:
        s = self.spec
        return (f"{s.task}, d_model {s.d_model}, {count(s.num_heads, 'head')}, {count(s.num_layers, 'layer')}, "
                f"{count(self.step, 'step')}")
