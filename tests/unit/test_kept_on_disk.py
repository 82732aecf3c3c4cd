"""Nothing a class made is lost: models trained here are kept in the data directory, read again after a restart
(a fresh process), checked against their hashes, set aside when damaged, bounded on disk."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from transformer.training import kept_on_disk, pretrained
from transformer.training.saved_model import TrainSpec, save
from transformer.training.train import train

ROOT = Path(__file__).resolve().parents[2]
SPEC = dict(task="reverse", d_model=16, num_heads=2, d_ff=32, num_layers=1, steps=5, batch=8, max_len=4)


def _in_a_fresh_process(code: str, data_dir: Path, **env) -> subprocess.CompletedProcess:
    """``code`` run by a new interpreter (a restarted server) with the data directory ``data_dir``."""
    environment = dict(os.environ, ATTENTION_LAB_DATA_DIR=str(data_dir), TF_CPP_MIN_LOG_LEVEL="3", **env)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True,
                          timeout=300)


TRAIN_AND_KEEP = ("from transformer.training import pretrained\nfrom transformer.training.train import train\n"
                  "from transformer.training.saved_model import TrainSpec, save\n"
                  f"result = train(TrainSpec(**{SPEC!r}), log_every=5)\n"
                  "print(pretrained.register(result, 'abc123', 'reverse, d_model 16'))\n")
OPEN = ("from transformer.training import pretrained\n"
        "model = pretrained.load_pretrained('session:abc123', '/CPU:0')\n"
        "print(model.task, model.spec.d_model, pretrained.kept_label('session:abc123'))\n")


@pytest.mark.slow
def test_a_model_trained_before_a_restart_opens_after_it_and_a_damaged_one_is_named_and_set_aside(tmp_path):
    trained = _in_a_fresh_process(TRAIN_AND_KEEP, tmp_path)
    assert trained.returncode == 0 and trained.stdout.strip() == "session:abc123", trained.stderr[-2000:]
    folder = tmp_path / "models" / "abc123"
    assert sorted(path.name for path in folder.iterdir()) == ["kept.json", "model.json", "weights.weights.h5"]
    assert not [path for path in folder.parent.iterdir() if path.name.startswith(".staging")]  # renamed whole
    reopened = _in_a_fresh_process(OPEN, tmp_path)  # the server restarted
    assert reopened.returncode == 0, reopened.stderr[-2000:]
    assert reopened.stdout.split()[:2] == ["reverse", "16"] and "reverse, d_model 16" in reopened.stdout
    weights = folder / "weights.weights.h5"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])  # truncated on disk
    damaged = _in_a_fresh_process(OPEN, tmp_path)
    assert damaged.returncode != 0 and "ValueError: The model reverse, d_model 16 (abc123) kept on this server is " \
        "damaged: weights.weights.h5 changed on disk since it was saved" in damaged.stderr
    aside = [path for path in (tmp_path / "models" / ".set-aside").iterdir() if path.is_dir()]
    assert not folder.exists() and len(aside) == 1  # kept, aside
    gone = _in_a_fresh_process(OPEN, tmp_path)  # restarted again: its link still says why, never where
    assert "ValueError: The model reverse, d_model 16 (abc123) kept on this server is damaged" in gone.stderr
    assert str(tmp_path) not in gone.stderr.split("ValueError:")[-1]


def test_a_link_names_no_folder_outside_the_models_and_off_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(tmp_path))
    (tmp_path / "secret").mkdir()
    for key in ("../secret", "..", "a/b", "", "x" * 65):
        assert not kept_on_disk.kept(key)
        with pytest.raises(ValueError, match="No model trained on this server"):
            pretrained.check_name(f"session:{key}")
    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", "off")
    assert kept_on_disk.data_dir() is None and kept_on_disk.keep(print, "abc", "x", {}) is None


@pytest.mark.slow
def test_a_model_dropped_from_memory_is_read_again_from_disk_and_the_disk_budget_keeps_the_newest(tmp_path,
                                                                                                monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ATTENTION_LAB_MODELS_KEPT", "1")  # one model in memory
    result = train(TrainSpec(**SPEC), log_every=5)
    first, second = (pretrained.register(result, key, key) for key in ("disk1", "disk2"))
    assert pretrained.dropped(first) is None and pretrained.kept_label(first) == "disk1"  # dropped from memory only
    assert pretrained.load_pretrained(first, "/CPU:0").task == "reverse"  # read again from disk
    size_mb = sum(path.stat().st_size for path in (tmp_path / "models" / "disk1").iterdir()) / 1e6
    monkeypatch.setenv("ATTENTION_LAB_DATA_MB", str(size_mb * 1.5))  # room for one
    pretrained.register(result, "disk3", "disk3")
    assert sorted(path.name for path in (tmp_path / "models").iterdir() if not path.name.startswith(".")) == \
        ["disk3"]
    assert pretrained.spec_of(second) is None and pretrained.dropped(second)[0] == "disk2"  # gone from both: named


@pytest.mark.slow
def test_the_disk_keeps_a_count_too_and_a_removed_models_link_can_train_it_again(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ATTENTION_LAB_DATA_MODELS", "2")
    result = train(TrainSpec(**SPEC), log_every=5)
    for key in ("cnt1", "cnt2", "cnt3"):
        kept_on_disk.keep(lambda folder: save(result, folder), key, f"label {key}", {"spec": SPEC})
        os.utime(tmp_path / "models" / key, (0, {"cnt1": 1, "cnt2": 2, "cnt3": 3}[key]))  # opened in this order
    assert sorted(path.name for path in (tmp_path / "models").iterdir() if not path.name.startswith(".")) == \
        ["cnt2", "cnt3"]
    label, spec = pretrained.dropped("session:cnt1")  # after a restart too: the note is on disk
    assert label == "label cnt1" and spec == TrainSpec(**SPEC)
    assert pretrained.dropped("session:cnt2") is None


def test_two_replicas_keeping_models_at_the_same_moment_both_keep_theirs_and_one_name_stays_whole(
        tmp_path, monkeypatch):
    import threading

    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(tmp_path))
    start = threading.Barrier(4)

    def write(text):
        def files(folder):
            folder.mkdir(parents=True)
            start.wait()  # all four write at once
            (folder / "model.json").write_text(json.dumps({"from": text}))
        return files

    jobs = [("a0000001", "replica A"), ("b0000001", "replica B"), ("same0001", "A's"), ("same0001", "B's")]
    threads = [threading.Thread(target=kept_on_disk.keep, args=(write(text), key, text, {})) for key, text in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    models = tmp_path / "models"
    assert sorted(path.name for path in models.iterdir() if not path.name.startswith(".")) == \
        ["a0000001", "b0000001", "same0001"]
    assert not [path for path in models.iterdir() if path.name.startswith(".staging")]
    kept = json.loads((models / "same0001" / "kept.json").read_text())
    written = json.loads((models / "same0001" / "model.json").read_text())["from"]
    assert kept["label"] == written and kept_on_disk.verified("same0001")[1] == written  # one whole, not a mix


@pytest.mark.slow
def test_a_heads_ablation_measured_before_a_restart_is_read_from_the_data_directory(tmp_path):
    # the child says whether it measured: `measure` draws its examples only when it computes the numbers (a restart
    # that read them back took less time, which a busy host can hide: a test compares no times)
    code = ("from transformer.live import importance\n"
            "drawn = []\n"
            "draw = importance._examples\n"
            "importance._examples = lambda *arguments: drawn.append(arguments) or draw(*arguments)\n"
            "found = importance.measure_ablation('reverse', (('cross', 0, 1),), count=50)\n"
            "print(found, 'measured' if drawn else 'read')\n")
    first = _in_a_fresh_process(code, tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    found, how = first.stdout.rsplit(" ", 1)
    assert how == "measured\n"
    [kept] = list((tmp_path / "results" / "measures").iterdir())
    again = _in_a_fresh_process(code, tmp_path)  # restarted: the same numbers, read, not measured
    assert again.stdout.rsplit(" ", 1) == [found, "read\n"]
    kept.write_text(kept.read_text().replace('"value": [', '"value": [9, '))  # altered on disk
    altered = _in_a_fresh_process(code, tmp_path)
    assert altered.stdout.rsplit(" ", 1) == [found, "measured\n"]  # measured again, not believed
    assert kept.with_suffix(".set-aside").exists()


def _described(folder: Path) -> None:
    """A kept model's files as `save` writes them, small: its model.json (what a link reads) and its weights."""
    folder.mkdir(parents=True)
    (folder / "model.json").write_text(json.dumps({"spec": SPEC, "exact_accuracy": 0.5}))
    (folder / "weights.weights.h5").write_bytes(os.urandom(2048))


@pytest.mark.parametrize("name, damage", [("kept.json", "{}"), ("kept.json", "[1, 2]"), ("kept.json", "{garbage"),
                                          ("kept.json", '{"label": 3, "note": [], "sha256": "x"}'),
                                          ("model.json", "{}"), ("model.json", "{garbage")])
def test_damaged_metadata_is_set_aside_and_its_link_says_damaged_after_a_restart_too(tmp_path, monkeypatch, name,
                                                                                    damage):
    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(tmp_path))
    kept_on_disk.keep(_described, "dmg0001", "reverse, d_model 16", {"spec": SPEC})
    (tmp_path / "models" / "dmg0001" / name).write_text(damage)
    link = "session:dmg0001"
    for read in (pretrained.kept_label, pretrained.task_of, pretrained.spec_of, pretrained.accuracy_of,
                 pretrained.dropped, pretrained.timeline_of):  # what reading a link asks: none raises but ValueError
        try:
            assert read(link) in (None, [])
        except ValueError as error:
            assert "damaged" in str(error) and str(tmp_path) not in str(error)
    assert not (tmp_path / "models" / "dmg0001").exists()  # set aside, not left to break the next open
    for why in (pretrained.missing_reason(link), _refusal(link)):  # what the link says, now and after a restart
        assert "damaged" in why and "restarted" not in why and str(tmp_path) not in why, why


def _refusal(name: str) -> str:
    with pytest.raises(ValueError) as refused:
        pretrained.check_name(name)
    return str(refused.value)


def test_a_model_the_disk_budget_removed_is_explained_by_the_disk_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ATTENTION_LAB_DATA_MODELS", "1")
    for key in ("old00001", "new00001"):
        kept_on_disk.keep(_described, key, f"label {key}", {"spec": SPEC})
        os.utime(tmp_path / "models" / key, (0, {"old00001": 1, "new00001": 2}[key]))
    why = pretrained.missing_reason("session:old00001")
    assert "label old00001" in why and "1 model" in why and "on disk" in why and "in memory" not in why, why
    assert "restarted" in pretrained.missing_reason("session:never001")


def test_the_disk_budget_neither_counts_nor_deletes_the_models_set_aside(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ATTENTION_LAB_DATA_MODELS", "2")
    kept_on_disk.keep(_described, "bad00001", "bad", {"spec": SPEC})
    (tmp_path / "models" / "bad00001" / "weights.weights.h5").write_bytes(b"changed")
    with pytest.raises(ValueError, match="damaged"):
        kept_on_disk.verified("bad00001")
    aside = [path for path in (tmp_path / "models").rglob("bad00001*") if path.is_dir()]
    assert len(aside) == 1
    for path in aside[0].parent, aside[0]:
        os.utime(path, (0, 0))  # the oldest folder of all
    for key in ("ok000001", "ok000002"):
        kept_on_disk.keep(_described, key, key, {"spec": SPEC})
    assert aside[0].exists()  # "never deleted"
    assert kept_on_disk.kept("ok000001") and kept_on_disk.kept("ok000002")  # two slots, both the models'


REPLICA = """
import json, os, random, sys, time
from pathlib import Path
from transformer.training import kept_on_disk
me, seconds = sys.argv[1], float(sys.argv[2])
def files(folder):
    folder.mkdir(parents=True)
    (folder / "model.json").write_text(json.dumps({"spec": {"task": "reverse"}}))
    (folder / "weights.weights.h5").write_bytes(os.urandom(4096))
errors, made, read, gone = [], 0, 0, 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    try:
        kept_on_disk.keep(files, f"{me}{made:05d}", f"{me} {made}", {"spec": {"task": "reverse"}})
        made += 1
        folders = sorted((Path(os.environ["ATTENTION_LAB_DATA_DIR"]) / "models").glob("r*"))
        for folder in random.sample(folders, min(3, len(folders))):
            try:
                kept_on_disk.verified(folder.name)
                read += 1
            except ValueError as error:
                if "damaged" in str(error):
                    raise
                gone += 1
    except Exception as error:
        errors.append(f"{type(error).__name__}: {error}")
print(json.dumps({"errors": errors[:5], "count": len(errors), "made": made, "read": read, "gone": gone}))
"""


@pytest.mark.slow
def test_replicas_sharing_the_data_directory_at_a_full_budget_never_fail_and_set_no_healthy_model_aside(tmp_path):
    environment = dict(os.environ, ATTENTION_LAB_DATA_DIR=str(tmp_path), ATTENTION_LAB_DATA_MODELS="5",
                       TF_CPP_MIN_LOG_LEVEL="3")
    replicas = [subprocess.Popen([sys.executable, "-c", REPLICA, f"r{index}", "12"], cwd=ROOT, env=environment,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for index in range(3)]
    reports = [json.loads(replica.communicate(timeout=300)[0].strip().splitlines()[-1]) for replica in replicas]
    assert all(report["count"] == 0 for report in reports), reports
    assert sum(report["made"] for report in reports) > 30 and sum(report["read"] for report in reports) > 30, reports
    models = tmp_path / "models"
    assert not [path for path in models.rglob("*") if "set-aside" in str(path.relative_to(models))], reports
    assert len([path for path in models.iterdir() if kept_on_disk.KEY.fullmatch(path.name)]) <= 5
