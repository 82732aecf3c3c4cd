"""The notebook face: `attention_lab.load(...).figure(kind, text)` gives the app's figures of a model from outside,
a standalone HTML page works offline, and examples/your_model.ipynb runs top to bottom (its cells executed in
order, on tiny presets built here: nothing downloads)."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from hub_support import bert_preset, gpt2_preset

from attention_lab import FIGURES, load

pytest.importorskip("keras_hub")
NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "your_model.ipynb"


@pytest.mark.parametrize("kind", [kind for kind in FIGURES if kind != "next_token"])
def test_every_figure_of_a_bert_preset_is_drawn_with_its_tokens(tmp_path, kind):
    model = load(bert_preset(tmp_path / "tiny_bert"))
    fig = model.figure(kind, "the cat sat on the mat")
    spec = fig.to_plotly_json()
    assert spec["data"], kind
    text = json.dumps(spec, default=str, ensure_ascii=False)
    assert ("0·the" in text and "4·the" in text) or kind in ("roles", "model_view"), kind  # positions apart


def test_the_heads_figure_holds_the_layers_weights_and_their_mean(tmp_path):
    model = load(bert_preset(tmp_path / "tiny_bert"))
    _, weights = model.attention("the cat sat on the mat")
    fig = model.figure("heads", "the cat sat on the mat", layer=0)
    shown = [np.asarray(trace.z, float) for trace in fig.data if trace.type == "heatmap" and trace.coloraxis]
    np.testing.assert_allclose(shown[0], weights[0, 0], atol=1e-6)
    np.testing.assert_allclose(shown[-1], weights[0].mean(0), atol=1e-6)


def test_a_standalone_page_carries_plotly_and_fetches_nothing(tmp_path):
    model = load(bert_preset(tmp_path / "tiny_bert"))
    page = tmp_path / "heads.html"
    model.figure("heads", "the cat sat").write_html(page)
    html = page.read_text()
    assert '<script src="http' not in html and "<script charset=\"utf-8\" src=" not in html  # nothing fetched
    assert len(html) > 1_000_000  # plotly.js inside


def test_a_causal_model_draws_its_next_tokens_and_bad_requests_get_messages(tmp_path):
    model = load(gpt2_preset(tmp_path / "tiny_gpt2"))
    fig = model.figure("next_token", "a b c", top=3)
    assert len(fig.data[0].x) == 3 and abs(sum(fig.data[0].x)) <= 1 + 1e-6
    with pytest.raises(ValueError, match="kind must be one of"):
        model.figure("sunburst", "a b")
    with pytest.raises(ValueError, match="layer must be from 0 to 1"):
        model.figure("heads", "a b", layer=5)


def test_the_example_notebook_runs_top_to_bottom(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_EXAMPLE_MODEL", str(gpt2_preset(tmp_path / "tiny_gpt2")))
    monkeypatch.setenv("ATTENTION_LAB_EXAMPLE_TEXT", "a b c a b c")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    for cell in json.loads(NOTEBOOK.read_text())["cells"]:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), str(NOTEBOOK), "exec"), namespace)  # noqa: S102
    assert os.path.getsize(tmp_path / "heads.html") > 1_000_000
    assert namespace["weights"].shape == (2, 2, 6, 6) and namespace["m"].external.causal
