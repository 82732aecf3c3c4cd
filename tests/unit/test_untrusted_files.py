"""A `.keras` file is untrusted: what it may cost is checked before it is spent. Small crafted files, each read in
a child process that reports how far its memory grew: a config declaring gigabytes of weights it does not carry
(issue 77, item 1), a zip bomb (item 2); a refused upload is not kept, on disk or in memory (items 2 and 7)."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import keras
import pytest
from child_env import child_env
from hub_support import functional_model

from transformer.external import UPLOAD_LIMIT_ENV, load_keras_file
from transformer.external.registry import ExternalRegistry

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # a child process imports TensorFlow


def _rewritten(source: Path, target: Path, edit) -> Path:
    """``source``'s archive with its config.json passed through ``edit(dict) -> dict``; every other member kept."""
    with zipfile.ZipFile(source) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    members["config.json"] = json.dumps(edit(json.loads(members["config.json"]))).encode()
    with zipfile.ZipFile(target, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return target


def _replace(node, key: str, old, new):
    """``node`` (a JSON tree) with every ``key: old`` made ``key: new``."""
    if isinstance(node, dict):
        return {k: (new if k == key and v == old else _replace(v, key, old, new)) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace(item, key, old, new) for item in node]
    return node


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    """The files of the probe: a huge Embedding and a huge MultiHeadAttention declared in a few KB, a zip bomb."""
    folder = tmp_path_factory.mktemp("crafted")
    small = folder / "small.keras"
    functional_model().save(small)
    ids = keras.Input((None,), dtype="int32")
    lookup = folder / "lookup.keras"
    keras.Model(ids, keras.layers.Embedding(20, 4)(ids)).save(lookup)
    embedding = _rewritten(lookup, folder / "embedding.keras",  # Embedding(524288, 1024): 2 GiB, in a few KB
                           lambda c: _replace(_replace(c, "input_dim", 20, 524288), "output_dim", 4, 1024))
    attention = _rewritten(small, folder / "attention.keras",
                           lambda c: _replace(_replace(c, "num_heads", 2, 16), "key_dim", 8, 1024))
    bomb = folder / "bomb.keras"
    with zipfile.ZipFile(small) as archive, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as out:
        for info in archive.infolist():
            data = archive.read(info)
            if info.filename == "config.json":
                data = data[:-1] + b" " * (64 * 2**20) + data[-1:]  # 64 MiB of spaces: ~64 KB compressed
            out.writestr(info.filename, data)
    return {"small": small, "embedding": embedding, "attention": attention, "bomb": bomb}


READER = """
import json, resource, sys
from transformer.external import load_keras_file
import keras
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    load_keras_file(sys.argv[1]); message = "loaded"
except ValueError as error:
    message = str(error)
print(json.dumps({"message": message, "grew_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024}))
"""


def _read_in_child(path: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", READER, str(path)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env=child_env(ROOT))
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["embedding", "attention"])
def test_a_file_declaring_gigabytes_of_weights_is_refused_before_they_are_allocated(crafted, name):
    assert crafted[name].stat().st_size < 100_000  # at most the small model's 64 KB of weights
    read = _read_in_child(crafted[name])
    assert "declares" in read["message"] and "weights" in read["message"], read
    assert read["grew_mb"] < 300, read  # before the check: 2 GB and more, kept after the message


def test_a_zip_bomb_is_refused_before_it_is_inflated(crafted):
    assert crafted["bomb"].stat().st_size < 2 * 2**20
    read = _read_in_child(crafted["bomb"])
    assert "inflates" in read["message"], read
    assert read["grew_mb"] < 40, read  # 64 MiB of config read into memory, and more parsed, before


def test_archive_members_past_the_upload_limit_are_refused(crafted, monkeypatch):
    monkeypatch.setenv(UPLOAD_LIMIT_ENV, "1")  # the bomb's 0.1 MB file passes; its 64 MB inflated do not
    with pytest.raises(ValueError, match=r"inflates to 64\.\d MB; the limit is 1\.0 MB"):
        load_keras_file(crafted["bomb"])


def test_a_genuine_file_still_loads_and_its_declared_weights_are_what_it_carries(crafted):
    model = load_keras_file(crafted["small"])
    assert isinstance(model, keras.Model) and model.count_params() == functional_model().count_params()


def test_a_refused_upload_is_kept_neither_on_disk_nor_in_memory(crafted, tmp_path):
    registry = ExternalRegistry(budget_bytes=2**30, upload_dir=tmp_path / "uploads")
    for name in ("embedding", "bomb"):
        with pytest.raises(ValueError):
            registry.add_upload(crafted[name].read_bytes(), f"{name}.keras")
    ids = keras.Input((None,), dtype="int32")  # Keras reads it; the lab does not (no attention layer)
    plain = tmp_path / "plain.keras"
    keras.Model(ids, keras.layers.Dense(3)(keras.layers.Embedding(5, 4)(ids))).save(plain)
    with pytest.raises(ValueError, match="no attention layer"):
        registry.add_upload(plain.read_bytes(), "plain.keras")
    assert not list((tmp_path / "uploads").glob("*")) and registry.bytes() == 0


def test_counting_declared_weights_leaves_nothing_for_keras_to_allocate(crafted):
    from keras.src.backend.common import global_state  # the private list `variables_never_allocated` restores

    from transformer.external.untrusted import declared_weight_bytes
    with zipfile.ZipFile(crafted["embedding"]) as archive:
        assert declared_weight_bytes(archive.read("config.json").decode()) == 524288 * 1024 * 4
    assert not global_state.get_global_attribute("uninitialized_variables", [])
    with keras.StatelessScope():  # a later top-level scope initialises what is left on the list: nothing
        pass
    with zipfile.ZipFile(crafted["small"]) as archive:
        assert declared_weight_bytes(archive.read("config.json").decode()) == 4 * functional_model().count_params()


def test_uploads_share_the_data_budget_oldest_out_first(crafted, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(tmp_path / "data"))
    size_mb = crafted["small"].stat().st_size / 1e6
    monkeypatch.setenv("ATTENTION_LAB_DATA_MB", str(size_mb * 1.5))  # room for one upload
    registry = ExternalRegistry(budget_bytes=2**30, upload_dir=tmp_path / "data" / "uploads")
    first = registry.add_upload(crafted["small"].read_bytes(), "first.keras")
    other = _rewritten(crafted["small"], tmp_path / "other.keras", lambda c: {**c, "name": "other"})
    second = registry.add_upload(other.read_bytes(), "second.keras")
    kept = sorted(path.name for path in (tmp_path / "data" / "uploads").iterdir())
    assert kept == [f"{second.split(':')[1]}.keras"], kept  # the older one went; the newest stays whatever its size
    registry._models.clear()  # as after a restart
    with pytest.raises(ValueError, match="not on this server"):
        registry.get(first)
