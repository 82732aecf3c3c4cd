"""How fast this machine's engine computes, measured once at start-up: the seconds a request's estimated FLOPs and
model calls will take (`transformer.live.run_cost.RunCost.seconds`).

Two figures, timed on the lab's own model (`transformer.live.calibration`): ``gflops``, the rate of a mid-sized
forward pass's arithmetic; ``call_seconds``, what one small model call costs beyond its arithmetic (dispatch,
Python, copies: what dominates a toy model's run). Until they are measured the defaults below (2 cores) stand in;
``ATTENTION_LAB_GFLOPS`` fixes the rate instead.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

RATE_ENV = "ATTENTION_LAB_GFLOPS"  # a fixed rate in GFLOP/s instead of the measured one
DEFAULT_GFLOPS = 16.0  # a whole model's forward pass on 2 cores: 876 GFLOP in 54 s (heads link, 86's probe)
DEFAULT_CALL_SECONDS = 0.004  # one small model call on 2 cores


@dataclass(frozen=True)
class EngineRate:
    """``gflops``: GFLOP a second of a model's arithmetic; ``call_seconds``: one model call's fixed cost;
    ``measured``: whether these were timed on this machine (else the defaults)."""

    gflops: float = DEFAULT_GFLOPS
    call_seconds: float = DEFAULT_CALL_SECONDS
    measured: bool = False

    def seconds(self, flops: float, calls: int) -> float:
        return flops / (self.gflops * 1e9) + calls * self.call_seconds


_RATE = EngineRate()
_LOCK = threading.Lock()


def positive_setting(name: str, default: float | None = None) -> float | None:
    """The positive number the environment variable ``name`` holds, ``default`` when it is unset; ValueError naming
    a value that is not one."""
    raw = os.environ.get(name, "")
    if raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError(f"{name} must be a positive number. Received: {name}={raw!r}")
    return value


def fixed_rate() -> float | None:
    """``ATTENTION_LAB_GFLOPS`` (GFLOP/s) as a positive number, None when unset."""
    return positive_setting(RATE_ENV)


def engine_rate() -> EngineRate:
    """The rate in force: measured (`keep`) or the defaults, with ``ATTENTION_LAB_GFLOPS`` over either."""
    rate, fixed = _RATE, fixed_rate()
    return rate if fixed is None else EngineRate(fixed, rate.call_seconds, rate.measured)


def keep(rate: EngineRate) -> None:
    """Hold ``rate`` (measured by `transformer.live.calibration`) for every later estimate of this process."""
    global _RATE
    with _LOCK:
        _RATE = rate


__all__ = ["DEFAULT_CALL_SECONDS", "DEFAULT_GFLOPS", "RATE_ENV", "EngineRate", "engine_rate", "fixed_rate",
           "keep", "positive_setting"]
