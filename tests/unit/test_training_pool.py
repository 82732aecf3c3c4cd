"""Training off the serving path: worker processes, a fair bounded queue, a worker that dies, the models kept."""

import os
import signal
import time

import numpy as np
import pytest

from transformer.training import pool as pool_module
from transformer.training import pretrained, worker
from transformer.training.pool import PoolSettings, QueueFull, TrainingPool, describe_wait
from transformer.training.saved_model import TrainSpec
from transformer.training.train import train

SMALL = dict(task="copy", d_model=16, num_heads=2, d_ff=32, num_layers=1, warmup=50, max_len=6, batch=16)


def small(steps: int, seed: int = 0) -> TrainSpec:
    return TrainSpec(**SMALL, steps=steps, seed=seed)


def until(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def training_pool():
    made = TrainingPool(PoolSettings(workers=1, queue_limit=1, niceness=7))
    yield made
    made.close()


def test_settings_come_from_the_environment_and_bad_values_are_named(monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_TRAIN_WORKERS", "3")
    monkeypatch.setenv("ATTENTION_LAB_TRAIN_QUEUE", "0")
    monkeypatch.delenv("ATTENTION_LAB_TRAIN_NICE", raising=False)
    assert PoolSettings.from_env() == PoolSettings(workers=3, queue_limit=0, niceness=10, worker_mb=1200)
    monkeypatch.setenv("ATTENTION_LAB_TRAIN_WORKERS", "0")
    with pytest.raises(ValueError, match="ATTENTION_LAB_TRAIN_WORKERS='0'"):
        PoolSettings.from_env()
    monkeypatch.setenv("ATTENTION_LAB_TRAIN_WORKERS", "two")
    with pytest.raises(ValueError, match="at least 1"):
        PoolSettings.from_env()
    monkeypatch.delenv("ATTENTION_LAB_TRAIN_WORKERS")
    assert PoolSettings.from_env().workers == max(1, os.cpu_count() // 2)


def test_a_wait_is_said_in_words():
    assert describe_wait(1, 3) == "1st in the queue, starts in about 5 s"
    assert describe_wait(2, 42) == "2nd in the queue, starts in about 40 s"
    assert describe_wait(13, 200) == "13th in the queue, starts in about 3 min"


def test_the_estimate_hands_the_jobs_ahead_to_whichever_worker_frees_first(monkeypatch):
    """Two workers, each 10 s from free; three jobs of 100 steps at 0.1 s a step (and the overhead) ahead."""
    made = TrainingPool.__new__(TrainingPool)  # the arithmetic alone: no dispatcher, no processes
    made.settings, made._rates, made._waiting = PoolSettings(workers=2), {}, []
    made._workers = []
    monkeypatch.setattr(pool_module, "DEFAULT_SECONDS_PER_STEP", 0.1)
    monkeypatch.setattr(pool_module, "WORKER_START_SECONDS", 10.0)
    ahead = [pool_module.Job(small(100), f"o{i}", "cpu") for i in range(3)]
    each = pool_module.JOB_OVERHEAD_SECONDS + 10.0
    assert made._start_after(ahead) == pytest.approx(10.0 + each)  # the third job ahead: the first worker to
    # free again
    assert made._start_after([]) == pytest.approx(10.0)


def test_how_long_a_run_takes_is_said_only_from_this_servers_own_runs():
    """Issue 87, item 18: the Train page promised "about a minute" for induction (616 s to step 1230 on a busy
    host). A run's length is estimated from this server's last run of its sizes, or not at all."""
    import threading

    made = TrainingPool.__new__(TrainingPool)
    made.settings, made._rates, made._waiting, made._workers = PoolSettings(workers=1), {}, [], []
    made._lock = threading.Lock()
    spec = small(1000)
    assert made.estimate(spec) is None  # no run of these sizes yet: no figure
    made._rates[pool_module._size(spec)] = 0.5  # its last run: 0.5 s a step
    assert made.estimate(spec) == pytest.approx(pool_module.JOB_OVERHEAD_SECONDS + 500)
    assert made.estimate(small(10)) == pytest.approx(pool_module.JOB_OVERHEAD_SECONDS + 5)
    assert made.time_left(pool_module.Job(spec, "o", "cpu")) is None  # not training


@pytest.mark.slow  # it trains: 11 s of `make test-fast`
def test_a_finished_runs_weights_rebuild_the_same_model():
    spec = small(5)
    result = train(spec, log_every=5)
    sent = []
    trained = worker.Trained([np.asarray(a) for a in result.model.get_weights()], result.accuracy, 1.0, 5,
                             result.history)
    model, vocab = worker.rebuild_trained(spec, trained, "/CPU:0")
    ids = np.array([[1, 5, 6, 7, 2]], np.int32)
    np.testing.assert_allclose(np.asarray(model(ids, ids)[0]), np.asarray(
        result.model(ids, ids)[0]), rtol=1e-6, atol=1e-6)
    assert vocab.tokens == result.vocab.tokens
    trained = worker.run_job(spec, "cpu", lambda kind, payload: sent.append(kind), lambda: False)
    assert trained.steps == 5 and len(trained.weights) == len(result.model.get_weights())
    assert {"progress", "snapshot"} <= set(sent)


@pytest.mark.slow
def test_jobs_queue_in_turn_one_per_session_stop_anywhere_and_a_killed_worker_is_replaced(training_pool):
    """One worker, one job waiting at most: the whole life of a class's jobs (each worker start costs seconds)."""
    first, second = training_pool.submit(small(5000), "ann"), training_pool.submit(small(40, seed=1), "bob")
    with pytest.raises(ValueError, match="still training"):
        training_pool.submit(small(40), "ann")  # one job per session
    with pytest.raises(QueueFull, match="1 jobs are waiting to train, the most this server queues"):
        training_pool.submit(small(40), "cy")  # the queue holds its limit
    place, seconds = training_pool.place(second)
    assert place == 1 and seconds > 0 and training_pool.place(first) is None
    training_pool.stop(second)  # while waiting: it leaves the queue at once
    assert second.status == "stopped" and second.trained is None and training_pool.place(second) is None
    third = training_pool.submit(small(40, seed=2), "cy")  # room again
    until(lambda: first.step >= 50)
    (pid,) = training_pool.worker_pids()
    assert pid != os.getpid() and os.getpriority(os.PRIO_PROCESS, pid) == os.getpriority(os.PRIO_PROCESS, 0) + 7
    os.kill(pid, signal.SIGKILL)
    until(lambda: first.finished)
    assert first.status == "failed"
    assert "The training process stopped (it was killed, perhaps for lack of memory) at step" in first.error
    until(lambda: third.finished)  # the new worker took the queue on
    assert third.status == "done" and third.trained.steps == 40 and third.history[-1][0] == 40, third.error
    assert len(third.timeline) >= 20 and third.trained.accuracy >= 0
    assert training_pool.replaced == 1 and training_pool.worker_pids() != [pid]
    running = training_pool.submit(small(5000), "ann")  # a finished job frees its session's turn
    until(lambda: running.step >= 50)
    training_pool.stop(running)  # while training: it ends at its next step and keeps what it learned
    until(lambda: running.finished)
    assert running.status == "stopped" and running.trained.steps < 5000 and running.trained.weights


@pytest.mark.slow
def test_a_worker_past_its_memory_is_replaced_between_jobs_and_no_job_is_lost():
    """TensorFlow keeps some of every job's graphs: a worker past ``worker_mb`` ends after its job and a fresh one
    takes the next (200 MB: every worker is past it after one job)."""
    lean = TrainingPool(PoolSettings(workers=1, queue_limit=5, worker_mb=200))
    try:
        jobs = [lean.submit(small(20, seed=index), f"s{index}") for index in range(2)]
        until(lambda: all(job.finished for job in jobs), timeout=180)
        assert [job.status for job in jobs] == ["done"] * 2, [job.error for job in jobs]
        assert lean.retired >= 1 and lean.replaced == 0
    finally:
        lean.close()


@pytest.fixture()
def kept(monkeypatch):
    """An empty registry of session models, limited to two."""
    monkeypatch.setattr(pretrained, "_session", type(pretrained._session)())
    monkeypatch.setattr(pretrained, "_labels", {})
    monkeypatch.setattr(pretrained, "_dropped", type(pretrained._dropped)())
    monkeypatch.setenv("ATTENTION_LAB_MODELS_KEPT", "2")
    return train(small(2), log_every=2)


@pytest.mark.slow
def test_kept_models_stay_under_a_count_least_recently_used_first_out(kept):
    a, b = pretrained.register(kept, "a1", "model a"), pretrained.register(kept, "b1", "model b")
    pretrained.load_pretrained(a)  # used: b is now the least recently used
    c = pretrained.register(kept, "c1", "model c")
    assert pretrained.kept_label(b) is None and pretrained.kept_label(a) == "model a" and pretrained.kept_label(c)
    label, spec = pretrained.dropped(b)
    assert label == "model b" and spec == kept.spec
    with pytest.raises(ValueError, match=r"This link's model \(model b\) was dropped to make room"):
        pretrained.load_pretrained(b)
    with pytest.raises(ValueError, match="No model trained on this server is called 'session:zz'"):
        pretrained.check_name("session:zz")


@pytest.mark.slow
def test_kept_models_stay_under_a_memory_budget(kept, monkeypatch):
    one = pretrained.weight_bytes(kept.model)
    monkeypatch.setenv("ATTENTION_LAB_MODELS_KEPT", "50")
    monkeypatch.setenv("ATTENTION_LAB_MODELS_MB", str(2.5 * one / 1e6))
    names = [pretrained.register(kept, f"m{i}") for i in range(4)]
    assert [pretrained.kept_label(name) is not None for name in names] == [False, False, True, True]


@pytest.mark.slow
def test_a_name_kept_already_is_never_replaced(kept):
    pretrained.register(kept, "a1", "theirs")
    with pytest.raises(ValueError, match="kept already"):
        pretrained.register(kept, "a1", "mine")
    assert pretrained.kept_label("session:a1") == "theirs"


@pytest.mark.slow
def test_one_address_holds_at_most_its_share_of_the_queue_however_many_sessions_it_opens(monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_TRAIN_PER_CLIENT", "2")
    assert PoolSettings.from_env().per_client == 2
    made = TrainingPool(PoolSettings(workers=1, queue_limit=20, per_client=2))
    try:
        jobs = [made.submit(small(5000, seed), f"bare-{seed}", client="203.0.113.7") for seed in range(2)]
        with pytest.raises(QueueFull, match="2 jobs from this address are waiting or training"):
            made.submit(small(100), "bare-2", client="203.0.113.7")  # twenty bare sockets get no more than two
        other = made.submit(small(100), "student", client="198.51.100.4")  # the class's own still queue
        assert other.status == "waiting"
        made.stop(jobs[0])
        until(lambda: jobs[0].finished)
        made.submit(small(100), "bare-3", client="203.0.113.7")  # a place freed: one more
    finally:
        made.close()


@pytest.mark.slow
def test_a_job_whose_session_has_gone_leaves_the_queue_or_stops(monkeypatch):
    monkeypatch.setattr(pool_module, "GONE_GRACE_SECONDS", 1.0)
    made = TrainingPool(PoolSettings(workers=1, queue_limit=5))
    gone = set()
    made.owner_alive = lambda session: session not in gone
    try:
        training = made.submit(small(20000), "a", session="tab-a")
        waiting = made.submit(small(100), "b", session="tab-b")
        kept = made.submit(small(100), "c", session="tab-c")
        until(lambda: training.status == "training")
        gone.add("tab-b")
        time.sleep(0.5)
        gone.discard("tab-b")  # back within the grace (a phone's screen unlocked): it keeps its place
        time.sleep(1.5)
        assert waiting.status == "waiting" and made.place(waiting)[0] == 1
        gone.update({"tab-a", "tab-b"})  # closed for good
        until(lambda: waiting.finished and training.finished, timeout=60)
        assert waiting.status == "stopped" and training.status == "stopped" and made.left == 2
        until(lambda: kept.status in ("starting", "training", "done"))  # the class's next job starts at once
        assert made.place(kept) is None
    finally:
        made.close()
