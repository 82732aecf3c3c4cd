"""Runs too costly for the engine thread every session shares: the page says what one would cost and waits for a
press (a link alone never starts one), then it runs in the background lane (`transformer.live.heavy`) while a line
says where it is. A finished run's result is kept for the process (the last few), so the page draws it on every
rerun without running it again; a run past the hard limits is refused with its figures."""

from __future__ import annotations

import collections
import threading
import time

import streamlit as st

from transformer.service import LaneFull, call_key, check_cost, heavy_lane, in_the_lane, lane_loads
from ui import state
from ui.runtime import client_address, session_alive, session_id
from ui.text import as_text

KEPT_RESULTS = 4  # finished heavy results kept by the process, the newest
POLL_SECONDS = 0.5
_RESULTS: collections.OrderedDict = collections.OrderedDict()  # run key -> result
_RESULTS_LOCK = threading.Lock()


def heavy_result(call: str, cost, *args, pressed: bool = False, memory: int = 0, **kwargs):
    """The result of ``call(*args, **kwargs)`` in the background lane, once this session pressed for it (or
    ``pressed``: the page's own button asked already); the page stops with a message until then, and on failure.
    ``memory``: the bytes the run may add to the lane's address space (0: no bound; `NeedsLane.memory`)."""
    key = call_key(call, args, kwargs)
    with _RESULTS_LOCK:
        if key in _RESULTS:
            _RESULTS.move_to_end(key)
            return _RESULTS[key]
    lane = heavy_lane()
    _stop_on_error(check_cost, cost)
    loads = _stop_on_error(lane_loads, args, kwargs)
    cost = in_the_lane(cost, loads, lane.holds)  # the lane's child is a process of its own: it loads what it lacks
    if not (pressed or key in state.get(state.HEAVY_PRESSED, set())):
        _ask(cost, key)
    state.setdefault(state.HEAVY_PRESSED, set()).add(key)
    lane.owner_alive = session_alive
    run = _stop_on_error(lane.submit, session_id(), call, *args, flops=cost.flops, client=client_address(),
                         memory=memory, loads=loads, **kwargs)
    _follow(lane, run, cost)
    if run.status != "done":
        st.error(as_text(run.error or "The background run was cancelled."), icon=":material/warning:")
        st.stop()
    with _RESULTS_LOCK:
        _RESULTS[key] = run.result
        while len(_RESULTS) > KEPT_RESULTS:
            _RESULTS.popitem(last=False)
    return run.result


def _ask(cost, key) -> None:
    """The run's cost (in this machine's engine seconds, which decided it is long) and the button that starts it
    (its widget key the call's own: a page whose map and opened cell are both long asks twice in one run); the page
    stops until it is pressed."""
    slot = st.empty()
    with slot.container():
        st.warning(f"A long run: {cost.what} needs {cost.text()}. Runs like this one share the server with "
                   "everyone on it, so they run in the background lane, one at a time, after other sessions' moves.",
                   icon=":material/hourglass_top:")
        pressed = st.button("Run it", key=f"heavy_run_{hash(key) & 0xFFFFFFFF:08x}", type="primary",
                            icon=":material/play_arrow:")
    if not pressed:
        st.stop()
    slot.empty()


def _follow(lane, run, cost) -> None:
    """Say where ``run`` is until it ends (its place in the queue, or its time so far against the estimate)."""
    line = st.empty()
    estimate = cost.duration()
    while not run.finished:
        ahead = lane.place(run)
        if ahead:
            text = f"Waiting for the background lane: {ahead} long run{'s' * (ahead != 1)} ahead of this one."
        else:
            elapsed = time.monotonic() - (run.started or time.monotonic())
            text = f"Running in the background lane: {elapsed:,.0f} s so far, {estimate} in all."
        line.info(text, icon=":material/hourglass_top:")  # a rerun or a stop of this session ends the wait here
        time.sleep(POLL_SECONDS)
    line.empty()


def _stop_on_error(compute, *args, **kwargs):
    try:
        return compute(*args, **kwargs)
    except (ValueError, LaneFull) as error:
        st.error(as_text(error), icon=":material/warning:")
    st.stop()
