"""The Train page on the server's training pool: the queue's place, a refusal, Stop while waiting, a link to a
model the server dropped and its "Train it again"."""

import dataclasses
import json
import time

import numpy as np
import pytest
from app_support import no_errors, open_page, specs

from transformer.training import kept_limits, pretrained
from transformer.training.pool import PoolSettings, TrainingPool
from transformer.training.saved_model import TrainSpec
from transformer.training.train import train
from ui import training

pytestmark = [pytest.mark.app, pytest.mark.slow]


@pytest.fixture()
def small_pool(monkeypatch):
    """One worker, one job waiting at most, for this test alone."""
    made = TrainingPool(PoolSettings(workers=1, queue_limit=1))
    monkeypatch.setattr(training, "_pool", made)
    yield made
    made.close()


def press_train(steps: int):
    at = open_page("train")
    at.number_input(key="train_steps_copy").set_value(steps)
    at.select_slider(key="train_d_model_copy").set_value(16)
    at.button[0].click().run()
    no_errors(at)
    return at


def wait_until_finished(at, seconds: float = 120) -> None:
    """Until the session's job has ended (or ``seconds`` passed)."""
    deadline = time.monotonic() + seconds
    while not at.session_state[training.JOB].finished and time.monotonic() < deadline:
        time.sleep(0.5)


def progress_text(at) -> str:
    return at.get("progress")[0].proto.text


def test_a_second_session_sees_its_place_a_third_is_refused_and_stop_works_while_waiting(small_pool):
    first = press_train(6000)
    second = press_train(100)
    assert progress_text(second).startswith("waiting: 1st in the queue, starts in about")
    third = press_train(100)
    assert any("jobs are waiting to train, the most this server queues: try again in about" in w.value
               for w in third.warning)
    assert training.JOB not in third.session_state
    again = [b for b in second.button if b.label == "Train"][0]
    again.click().run()  # the same session again: one job each
    assert any("still training (or waiting to) in this session" in w.value for w in second.warning)
    [b for b in second.button if b.label == "Stop"][0].click().run()
    no_errors(second)
    assert second.session_state[training.JOB].status == "stopped"
    assert any("Stopped before it started" in i.value for i in second.info)
    [b for b in first.button if b.label == "Stop"][0].click().run()
    wait_until_finished(first)
    first.run()
    no_errors(first)
    assert first.session_state[training.JOB].status == "stopped"
    assert any("Exact-sequence accuracy" in s.value for s in first.success)  # it keeps what it learned


class _EndsWhileDrawn:
    """A finished job that reads as running to the page's first two looks (whether it runs, whether the fragment's
    timer should rerun the page) and as finished after them: it ended while the page drew."""

    def __init__(self, job):
        self._job, self._looks = job, 0

    @property
    def finished(self) -> bool:
        self._looks += 1
        return self._looks > 2 and self._job.finished

    def __getattr__(self, name):
        return getattr(self._job, name)


def test_a_job_that_ends_while_its_page_draws_shows_explore_only_once_no_timer_reruns_the_page(small_pool):
    """A timed rerun carries the browser's widget values as they were: one that lands with Explore's click put the
    weights back to random (a deploy test's link once had no trained model in it). So a run that redraws on a
    timer never draws Explore; the next run, with no timer, does."""
    at = press_train(10)
    wait_until_finished(at)
    explore = "Explore this model's attention"
    at.session_state[training.JOB] = _EndsWhileDrawn(at.session_state[training.JOB])
    at.run()
    no_errors(at)
    assert explore not in [button.label for button in at.button]
    at.session_state[training.JOB] = at.session_state[training.JOB]._job
    at.run()
    assert explore in [button.label for button in at.button]


def test_a_link_to_a_dropped_model_says_so_and_queues_it_again(small_pool, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_MODELS_KEPT", "1")
    spec = TrainSpec(task="copy", d_model=16, num_heads=2, d_ff=32, num_layers=1, steps=3, batch=8, max_len=5,
                     seed=7)
    result = train(spec, log_every=3)
    dropped = pretrained.register(result, "dropme0001", "copy, d_model 16, 2 heads, 1 layer, 3 steps")
    pretrained.register(result, "keepme0001", "a newer one")
    at = open_page("attention", {"weights": dropped})
    no_errors(at)
    assert any("(copy, d_model 16, 2 heads, 1 layer, 3 steps) was dropped to make room" in w.value
               for w in at.warning)
    assert at.session_state["weights"] == "random"
    [b for b in at.button if b.label == "Train it again"][0].click().run()
    no_errors(at)
    job = at.session_state[training.JOB]
    assert job.spec == spec and job.status in ("waiting", "starting", "training")  # the same settings and seed
    small_pool.stop(job)
    unknown = open_page("attention", {"weights": "session:zz99"})  # never known here
    assert any("No model trained on this server is called" in w.value for w in unknown.warning)


def test_bad_training_settings_are_named_on_every_page_and_the_app_keeps_running(monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_MODELS_KEPT", "lots")
    monkeypatch.setenv("ATTENTION_LAB_MODELS_MB", "-5")
    monkeypatch.setenv("ATTENTION_LAB_TRAIN_QUEUE", "twenty")
    assert kept_limits.kept_limits() == (kept_limits.SESSION_MODELS_KEPT, kept_limits.SESSION_MODELS_MB)
    for page in ("home", "masks"):
        at = open_page(page)
        no_errors(at)
        warnings = " ".join(w.value for w in at.warning)
        assert "ATTENTION_LAB_MODELS_KEPT='lots'" in warnings and f"using {kept_limits.SESSION_MODELS_KEPT}" in warnings
        assert "ATTENTION_LAB_MODELS_MB='-5'" in warnings
        assert "ATTENTION_LAB_TRAIN_QUEUE='twenty'" in warnings and "takes no job" in warnings
    monkeypatch.delenv("ATTENTION_LAB_MODELS_KEPT")
    monkeypatch.delenv("ATTENTION_LAB_MODELS_MB")
    monkeypatch.delenv("ATTENTION_LAB_TRAIN_QUEUE")
    assert not any("ATTENTION_LAB_" in w.value for w in open_page("home").warning)


def test_a_link_to_a_model_trained_before_a_restart_opens_it_from_the_data_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(tmp_path))
    spec = TrainSpec(task="copy", d_model=16, num_heads=2, d_ff=32, num_layers=1, steps=3, batch=8, max_len=5)
    name = pretrained.register(train(spec, log_every=3), "restart0001", "copy, before lunch")
    with pretrained._lock:  # the server restarts: what it held in memory is gone
        del pretrained._session[name]
        pretrained._labels.pop(name)
    at = open_page("attention", {"weights": name, "src": "a b c", "seq_len": "5"})
    no_errors(at)
    assert not at.warning and at.session_state["weights"] == name
    assert "Trained here: copy #1" in at.sidebar.selectbox[0].options
    assert specs(at) and name in pretrained._session  # drawn, from the weights read again


def test_a_model_opened_by_its_link_after_a_restart_shows_its_attention_over_training(monkeypatch, tmp_path):
    """#55: the timeline a model was trained with is kept beside its weights; the Train page draws it for a model
    trained here and opened by its link, after the server's memory is gone."""
    from transformer.training.timeline import load_timeline

    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(tmp_path))
    spec = TrainSpec(task="copy", d_model=16, num_heads=2, d_ff=32, num_layers=1, steps=6, batch=8, max_len=5)
    result = train(spec, log_every=3, timeline_every=3)
    name = pretrained.register(result, "timeline001", "copy, with its timeline")
    with pretrained._lock:  # restarted
        del pretrained._session[name]
        pretrained._labels.pop(name)
    kept = load_timeline(tmp_path / "models" / "timeline001")
    assert [shot.step for shot in kept] == [shot.step for shot in result.timeline] == [0, 3, 6]
    for shot, again in zip(result.timeline, kept):
        np.testing.assert_equal((shot.loss, shot.accuracy, shot.measure), (again.loss, again.accuracy, again.measure))
        np.testing.assert_array_equal(shot.patterns["cross"], again.patterns["cross"])
        np.testing.assert_array_equal(shot.scores["cross"]["alignment"], again.scores["cross"]["alignment"])
    at = open_page("train", {"weights": name})
    no_errors(at)
    assert any("Attention over training of copy, with its timeline" in h.value for h in at.subheader)
    timeline, grid = specs(at)[-2:]
    assert "step 6" in grid["layout"]["title"]["text"]


@pytest.mark.parametrize("name, damage", [("kept.json", "{}"), ("kept.json", "[1, 2]"), ("model.json", "{}"),
                                          ("model.json", "not json")])
def test_a_link_to_a_model_with_damaged_metadata_says_damaged_and_the_page_runs(tmp_path, monkeypatch, name, damage):
    from transformer.training import kept_on_disk

    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(tmp_path))
    spec = TrainSpec(task="copy", d_model=16, num_heads=2, d_ff=32, num_layers=1, steps=3, batch=8, max_len=5)

    def files(folder):
        folder.mkdir(parents=True)
        (folder / "model.json").write_text(json.dumps({"spec": dataclasses.asdict(spec), "exact_accuracy": 0.1}))
        (folder / "weights.weights.h5").write_bytes(b"w" * 64)

    kept_on_disk.keep(files, "hurt000001", "copy, d_model 16", {"spec": dataclasses.asdict(spec)})
    (tmp_path / "models" / "hurt000001" / name).write_text(damage)
    for _ in range(2):  # the first open sets it aside; the second (as after a restart) still says why
        at = open_page("attention", {"weights": "session:hurt000001", "d_model": "32"})
        no_errors(at)
        said = " ".join(w.value for w in at.warning)
        assert "damaged" in said and str(tmp_path) not in said, said
        assert at.session_state["weights"] == "random" and at.session_state["d_model"] == 32


def test_a_link_to_an_unknown_trained_model_falls_back_to_the_defaults_and_keeps_its_own_fields():
    """Issue 78, item 9: the lines became the trained example's letters (run through random weights)."""
    from ui.state import FIELDS

    at = open_page("attention", {"weights": "session:deadbeef00", "d_model": "32", "heads": "2"})
    no_errors(at)
    assert any("No model trained on this server" in w.value for w in at.warning)
    assert at.session_state["weights"] == "random"
    assert at.session_state["src"] == FIELDS["src"].default and at.session_state["seq_len"] == FIELDS["seq_len"].default
    assert (at.session_state["d_model"], at.session_state["heads"]) == (32, 2)  # the link's own fields stay
    assert "src" not in at.query_params and at.query_params["d_model"] == "32"


def test_stop_is_acknowledged_at_once_and_a_step_without_a_loss_shows_no_nan(small_pool):
    """Issue 78, item 8: 2.5 s after Stop the page still read "training: step 0 of 1500" with Stop showing, and the
    timeline read "loss nan"."""
    from ui.training_timeline import snapshot_caption

    at = press_train(6000)
    [button for button in at.button if button.label == "Stop"][0].click().run()
    no_errors(at)
    assert progress_text(at).startswith("stopping at step"), progress_text(at)
    assert [button.disabled for button in at.button if button.label == "Stop"] in ([True], [])
    small_pool.stop(at.session_state[training.JOB])
    assert "nan" not in snapshot_caption(float("nan"), 0.03, "token accuracy")
    assert snapshot_caption(0.4123, 0.87, "token accuracy") == "loss 0.412 · token accuracy 0.87"


def test_a_finished_model_is_kept_and_named_in_the_link_before_explore(small_pool):
    """Issue 78, item 7: done at 96 %, the link still had no weights= and nothing was kept until Explore."""
    at = press_train(10)
    wait_until_finished(at)
    at.run()
    no_errors(at)
    name = pretrained.session_name(at.session_state[training.JOB].key)
    assert at.session_state["weights"] == name and at.query_params["weights"] == name  # the link names it
    assert pretrained.kept_label(name) is not None  # kept for every session (and on disk, with a data directory)
    assert at.sidebar.selectbox(key="weights").value == name  # the sidebar shows it
    assert "Explore this model's attention" in [button.label for button in at.button]


@pytest.mark.parametrize("task", ["induction", "reverse", "dates"])
def test_explore_after_training_opens_the_model_it_trained(small_pool, task):
    """Train → induction → Explore opened an error ("… is a decoder-only with pre-norm … Received:
    architecture='encoder-decoder'"): Explore now picks the model as the Weights list does, its own options with it
    (issue 87, item 13). One task of each kind: decoder-only, a symbol task, a character task."""
    at = open_page("train")
    at.selectbox(key="train_task").set_value(task).run()
    at.number_input(key=f"train_steps_{task}").set_value(10)
    next(button for button in at.button if button.label == "Train").click().run()
    no_errors(at)
    wait_until_finished(at, 300)
    at.run()
    next(button for button in at.button if button.label == "Explore this model's attention").click().run()
    no_errors(at)
    assert not at.error, [error.value for error in at.error]
    assert specs(at), "no attention drawn"
    assert at.query_params["weights"].startswith("session:")
