"""Every Python example in README.md and docs/ runs as written. The files and presets an example names are made
here first, tiny and random (nothing downloads): keras-hub's preset names are served from the presets folder a
class's offline server uses (``ATTENTION_LAB_PRESETS_DIR``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hub_support import bert_preset, functional_model, gpt2_preset

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_examples() -> list:
    return [pytest.param(match.group(1), id=f"{path.name}:{path.read_text()[: match.start()].count(chr(10)) + 1}")
            for path in DOCUMENTS for match in BLOCK.finditer(path.read_text())]


@pytest.fixture
def example_world(tmp_path, monkeypatch):
    """A working folder holding what the examples name, and the names they use for objects in memory."""
    presets = tmp_path / "presets"
    bert_preset(presets / "bert_tiny_en_uncased")
    gpt2_preset(presets / "gpt2_base_en", letters=True)
    monkeypatch.setenv("ATTENTION_LAB_PRESETS_DIR", str(presets))
    work = tmp_path / "work"
    bert_preset(work / "path/to/a/preset/folder")
    model = functional_model()
    model.save(work / "my_model.keras")
    monkeypatch.chdir(work)
    return {"my_keras_model": model}


def test_the_documents_have_python_examples():
    assert len(python_examples()) >= 4


@pytest.mark.slow
@pytest.mark.parametrize("code", python_examples())
def test_each_python_example_runs_as_written(code, example_world):
    exec(compile(code, "<example>", "exec"), dict(example_world))
