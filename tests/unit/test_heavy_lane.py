"""A run's cost is estimated before it starts, past the hard limits it is refused, and a costly one runs in the
background lane, a child process, so that it never holds the engine thread light moves use (issue 77, item 3)."""

import os
import time

import numpy as np
import pytest

from transformer import LiveConfig, run_live
from transformer.live.heavy import QUEUE_LIMIT, HeavyLane, LaneFull
from transformer.live.run import run_cost
from transformer.live.run_cost import MAX_GFLOP_ENV, MAX_MB_ENV, forward_flops


def _matmul_flops(config: LiveConfig, n: int) -> float:
    """An encoder-only model's forward pass counted matmul by matmul from its shapes: 2·m·k·n each."""
    d, h, d_ff, kv = config.d_model, config.num_heads, config.d_ff, config.kv_heads
    d_k = d // h
    shapes = []
    for _ in range(config.num_layers):
        shapes += [(n, d, d), (n, d, kv * d_k), (n, d, kv * d_k)]  # Q, K, V projections
        shapes += [(n, d_k, n)] * h + [(n, n, d_k)] * h  # each head's Q·Kᵀ and weights · V
        shapes += [(n, d, d), (n, d, d_ff), (n, d_ff, d)]  # the output projection, the feed-forward
    shapes.append((n, d, 1000))  # the output layer over the vocabulary
    softmax = config.num_layers * 10 * h * n * n  # each head's masks and softmax, counted as 10 a cell
    return float(sum(2 * m * k * c for m, k, c in shapes)) + softmax


@pytest.mark.parametrize("kv_heads", [None, 2, 1])
def test_the_estimate_is_the_forward_passes_matmuls_counted_one_by_one_and_its_softmax(kv_heads):
    config = LiveConfig(d_model=32, num_heads=4, d_ff=48, num_layers=2, num_kv_heads=kv_heads,
                        architecture="encoder-only", seq_len=9)
    assert forward_flops(config, 9, 9) == pytest.approx(_matmul_flops(config, 9), rel=1e-12)
    lines = run_cost(config).what
    assert run_cost(config).flops == pytest.approx(3 * _matmul_flops(config, 9)) and "3 lines of 9 tokens" in lines


def test_a_run_past_the_hard_limits_is_refused_with_its_figures_before_anything_runs(monkeypatch):
    monkeypatch.setenv(MAX_GFLOP_ENV, "0.001")
    with pytest.raises(ValueError, match=r"too large for a shared server: 3 lines of 7 tokens .* GFLOP"):
        run_live(LiveConfig())
    assert run_live(LiveConfig(), stacks=()).attention == {}  # drawing masks runs no model: nothing to refuse
    monkeypatch.delenv(MAX_GFLOP_ENV)
    monkeypatch.setenv(MAX_MB_ENV, "0.001")
    with pytest.raises(ValueError, match=r"ATTENTION_LAB_RUN_MAX_MB"):
        run_live(LiveConfig())
    monkeypatch.setenv(MAX_MB_ENV, "lots")
    with pytest.raises(ValueError, match="ATTENTION_LAB_RUN_MAX_MB must be a positive number. Received"):
        run_cost(LiveConfig()).heavy or run_live(LiveConfig())


LONG = LiveConfig(d_model=128, num_heads=8, d_ff=256, num_layers=2, seq_len=1024,
                  source_text="\n".join(" ".join(str(1 + (i * k) % 900) for i in range(1024)) for k in (1, 7)),
                  target_text="1 2 3")


def _wait(run, seconds=240):
    end = time.monotonic() + seconds
    while not run.finished and time.monotonic() < end:
        time.sleep(0.1)
    return run


@pytest.mark.slow
def test_a_heavy_run_never_holds_the_light_lane_and_gives_what_the_engine_gives():
    lane = HeavyLane()
    try:
        heavy = lane.submit("student-a", "run_live", LONG, flops=run_cost(LONG).flops)
        assert heavy.status == "running" and lane.child_pid() is not None
        light = run_live(LiveConfig(seq_len=6))  # the engine thread, while the child works
        assert light.attention and not heavy.finished  # a lane that ran it here would have finished it first
        _wait(heavy)
        assert heavy.status == "done", heavy.error
        here = run_live(LONG)
        for stack, weights in here.attention.items():
            np.testing.assert_allclose(heavy.result.attention[stack], weights, atol=1e-5)
        assert heavy.result.attention_factor == here.attention_factor > 1  # block-wise, pooled, in both
        assert lane.gflops and lane.gflops > 0  # measured on this machine from the run
    finally:
        lane.close()


@pytest.mark.slow
def test_a_run_whose_session_has_gone_is_cancelled_and_its_process_ended():
    lane = HeavyLane()
    gone = set()
    lane.owner_alive = lambda owner: owner not in gone
    try:
        first = lane.submit("student-a", "run_live", LONG)
        waiting = lane.submit("student-b", "run_live", LONG)
        assert lane.place(waiting) == 1
        pid = lane.child_pid()
        gone.update({"student-a", "student-b"})  # both closed their tabs
        _wait(first, 10)
        _wait(waiting, 10)
        assert (first.status, waiting.status) == ("cancelled", "cancelled")
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # ended at once, not at its next block
        again = lane.submit("student-c", "run_live", LiveConfig(seq_len=5))
        assert _wait(again).status == "done"  # a fresh child for the next run
    finally:
        lane.close()


@pytest.mark.slow
def test_an_owner_has_one_run_and_the_queue_is_bounded():
    lane = HeavyLane()
    try:
        first = lane.submit("student-a", "run_live", LONG)
        assert lane.submit("student-a", "run_live", LONG) is first  # the same run: a rerun of the page follows it
        second = lane.submit("student-a", "run_live", LiveConfig(seq_len=5))
        assert first.status == "cancelled" and second.status == "running"  # the student moved on
        others = [lane.submit(f"student-{index}", "run_live", LONG) for index in range(QUEUE_LIMIT)]
        with pytest.raises(LaneFull, match=f"{QUEUE_LIMIT} long runs are waiting"):
            lane.submit("student-late", "run_live", LONG)
        assert all(run.status == "waiting" for run in others)
        with pytest.raises(ValueError, match="The background lane runs"):
            lane.submit("student-a", "eval", "1 + 1")
    finally:
        lane.close()


def test_one_client_holds_one_running_and_one_waiting_run_at_most():
    """Five tabs of one person (five sessions, one address) hold two places in the lane; another address still gets
    in (issue 86, item 3)."""
    from transformer.live.heavy import CLIENT_LIMIT, allow

    allow("sleep_test", "transformer.live.heavy:_address_space")
    lane = HeavyLane()
    lane._start_child = lambda: None  # nothing runs: the queue alone is under test
    lane._connection = type("Quiet", (), {"send": lambda self, message: None, "close": lambda self: None})()
    try:
        runs = [lane.submit(f"tab-{tab}", "sleep_test", tab, client="10.0.0.7") for tab in range(CLIENT_LIMIT)]
        assert [run.status for run in runs] == ["running", "waiting"]
        with pytest.raises(LaneFull, match="from your address"):
            lane.submit("tab-9", "sleep_test", 9, client="10.0.0.7")
        assert lane.submit("another", "sleep_test", 1, client="10.0.0.8").status == "waiting"
        assert lane.submit("tab-0", "sleep_test", 0, client="10.0.0.7") is runs[0]  # its own run, not a new one
    finally:
        lane._connection = None
        lane.close()


@pytest.mark.slow
def test_the_child_lowers_its_priority_before_it_imports_the_engine():
    """The child's TensorFlow import is 30 s of a core: it runs at the lane's niceness from its first instruction."""
    lane = HeavyLane(niceness=15)
    try:
        lane._start_child()
        pid = lane._child.pid
        deadline = time.monotonic() + 5
        niceness = None
        while time.monotonic() < deadline:  # read as soon as the process shows, long before its imports end
            try:
                niceness = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[16])
            except (FileNotFoundError, IndexError):
                time.sleep(0.01)
                continue
            if niceness:
                break
            time.sleep(0.01)
        modules = open(f"/proc/{pid}/maps").read()
        assert niceness == 15, niceness
        assert "libtensorflow" not in modules or niceness == 15
    finally:
        lane.close()


def test_an_outside_models_run_is_bounded_in_its_address_space():
    """A run given a memory bound fails with a message when it allocates past it; the child (and server) live on."""
    from transformer.live.heavy import MEMORY_HEADROOM, _bounded

    with pytest.raises(MemoryError), _bounded(1 << 20):
        bytearray(MEMORY_HEADROOM + (64 << 20))
    assert len(bytearray(MEMORY_HEADROOM + (64 << 20))) > MEMORY_HEADROOM  # the bound is lifted after the run


@pytest.mark.slow
def test_the_lanes_child_holds_what_its_finished_runs_loaded_until_it_ends():
    """The child is a process of its own: a model the server holds it loads again, once, and loses when it ends."""
    lane = HeavyLane()
    load = ("smollm2", "cpu")
    try:
        assert not lane.holds(load)
        done = _wait(lane.submit("student-a", "run_live", LiveConfig(seq_len=5), loads=frozenset({load})))
        assert done.status == "done" and lane.holds(load)
        cancelled = lane.submit("student-b", "run_live", LONG)
        lane.cancel(cancelled)  # its process is killed, and what it held with it
        assert cancelled.status == "cancelled" and not lane.holds(load)
    finally:
        lane.close()


def test_a_lane_runs_price_has_the_childs_load_of_a_real_model_it_does_not_hold():
    from transformer.live.priced_calls import lane_loads
    from transformer.live.prices import in_the_lane
    from transformer.live.sources import source_of
    from transformer.runtime.device import resolve_device

    real = LiveConfig(weights="smollm2", architecture="decoder-only", device="cpu")
    loads = lane_loads((real,), {"other": LiveConfig()})
    assert loads == {("smollm2", resolve_device("cpu"))} and lane_loads((LiveConfig(),), {}) == frozenset()
    run = run_cost(LiveConfig())
    first = in_the_lane(run, loads, holds=lambda load: False)
    assert first.seconds() == pytest.approx(run.seconds() + source_of("smollm2").load_seconds, abs=0.05)
    assert first.bytes == source_of("smollm2").load_bytes > run.bytes
    assert "after loading SmolLM2-135M" in first.what and "background lane's own process" in first.what
    assert in_the_lane(run, loads, holds=lambda load: True) == run  # a child that loaded it before runs at once
