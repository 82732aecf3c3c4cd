"""A model from outside in the app (AppTest): a preset named in the link opens on every page (the pages that draw
the lab's own model say why not), its views, the sidebar's preset field, and bad names in a link."""

import numpy as np
import pytest
from app_support import heatmaps, no_errors, open_page, specs, weight_panels
from chart_support import step_caption
from hub_support import bert_preset, gpt2_preset

from transformer.external.registry import EXTERNAL, PRESETS_DIR_ENV

pytestmark = pytest.mark.app
pytest.importorskip("keras_hub")
VIEWS = ["Checks", "Statistics", "Model view", "Head view", "Rollout", "Neuron view", "Score terms"]


@pytest.fixture(autouse=True)
def presets(tmp_path_factory, monkeypatch):
    folder = tmp_path_factory.getbasetemp() / "presets"
    if not (folder / "tiny_gpt2").exists():
        gpt2_preset(folder / "tiny_gpt2")
        bert_preset(folder / "tiny_bert")
    monkeypatch.setenv(PRESETS_DIR_ENV, str(folder))
    yield folder


@pytest.mark.parametrize("view", VIEWS)
def test_a_causal_model_from_outside_is_drawn_on_the_attention_page_in_every_view(view):
    at = open_page("attention", {"weights": "hub:tiny_gpt2", "view": view, "src": "a b c a b"})
    no_errors(at)
    assert not at.error, [e.value for e in at.error]
    panels = weight_panels(specs(at)[0])
    assert len(panels) == 2 and panels[0].shape[0] == 16  # two heads, at the sidebar's length
    first = np.nan_to_num(panels[0])
    assert np.abs(np.triu(first[:5, :5], 1)).max() == 0  # causal
    model = EXTERNAL.get("hub:tiny_gpt2")
    np.testing.assert_allclose(first[:5, :5], model.attention("a b c a b")[1][0, 0], atol=1e-6)  # layer 0, head 0
    assert at.session_state["arch"] == "decoder-only" and at.session_state["stack"] == "decoder"


def test_a_bidirectional_model_from_outside_opens_on_its_encoder():
    at = open_page("attention", {"weights": "hub:tiny_bert", "src": "the cat sat on the mat"})
    no_errors(at)
    assert at.session_state["stack"] == "encoder" and at.session_state["arch"] == "encoder-only"
    assert any("Your model" in caption.value for caption in at.sidebar.caption)


@pytest.mark.parametrize("page, weights, says", [
    ("masks", "hub:tiny_gpt2", "uses its own masks"), ("positional_encoding", "hub:tiny_gpt2", "positions of"),
    ("dot_product_lab", "hub:tiny_gpt2", "step by step"), ("shapes", "hub:tiny_gpt2", "reads the tensors"),
    ("decode", "hub:tiny_bert", "does not write text")])
def test_pages_that_draw_the_lab_s_own_model_say_why_not(page, weights, says):
    at = open_page(page, {"weights": weights})
    no_errors(at)
    assert any(says in info.value for info in at.info), [info.value for info in at.info]


def test_the_heads_page_scores_a_model_from_outside():
    at = open_page("heads", {"weights": "hub:tiny_gpt2", "src": "a b c a b c\nb c a b c a"})
    no_errors(at)
    assert len(heatmaps(specs(at)[0])) == 5 and any("not here yet" in m.value for m in at.markdown)


def test_the_sidebar_opens_a_preset_by_name_and_the_link_names_it():
    at = open_page("attention")
    at.sidebar.text_input(key="_preset_name").input("tiny_bert").run()
    at = at.sidebar.button(key="_open_preset").click().run()
    no_errors(at)
    assert at.session_state["weights"] == "hub:tiny_bert" and at.query_params["weights"] == "hub:tiny_bert"
    assert at.session_state["arch"] == "encoder-only" and specs(at)


@pytest.mark.parametrize("query, says", [
    ({"weights": "hub:no_such_preset_here"}, "could not be opened"),
    ({"weights": "hub:../../etc"}, "Ignored the link's weights"),
    ({"weights": "upload:" + "0" * 64}, "not on this server"),
])
def test_a_link_to_a_model_that_cannot_be_opened_says_so_and_the_app_goes_on(query, says, monkeypatch):
    monkeypatch.setenv("KAGGLE_USERNAME", "")  # a preset keras-hub cannot find: no download happens offline
    at = open_page("attention", query)
    no_errors(at)
    assert any(says in warning.value for warning in at.warning), [w.value for w in at.warning]
    assert at.session_state["weights"] == "random" and specs(at)


def test_a_model_unloaded_to_make_room_is_loaded_again_and_said(monkeypatch):
    EXTERNAL._models.pop("hub:tiny_bert", None)  # unloaded, as the budget does
    EXTERNAL.evicted.add("hub:tiny_bert")
    at = open_page("attention", {"weights": "hub:tiny_bert", "src": "the cat sat"})
    no_errors(at)
    assert any("was unloaded to make room" in warning.value for warning in at.warning)
    assert "hub:tiny_bert" not in EXTERNAL.evicted and specs(at)


def test_the_decode_page_continues_a_prompt_with_a_causal_model_from_outside():
    at = open_page("decode", {"weights": "hub:tiny_gpt2", "dec_src": "a b c", "dec_step": "2"})
    no_errors(at)
    assert not at.error, [e.value for e in at.error]
    assert "Step 2" in step_caption(at) and "continuation:" in step_caption(at)
    step = heatmaps(specs(at)[1])[0]  # the newest position's self-attention: (L·H rows, prefix)
    assert step.shape[-1] == 5 and np.allclose(np.nansum(step, -1), 1.0, atol=1e-5)  # prompt 3 + 2 chosen
    assert any("no key/value cache" in caption.value for caption in at.main.caption)


def test_an_uploaded_model_with_padding_and_a_causal_layer_passes_its_checks_and_says_so(tmp_path):
    """#52.3: a 2-layer, 4-head upload at N = 16, its second layer causal (use_causal_mask=True)."""
    import keras  # noqa: PLC0415

    keras.utils.set_random_seed(3)
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(20, 16)(ids)
    x = keras.layers.MultiHeadAttention(num_heads=4, key_dim=4, name="open")(x, x)
    x = keras.layers.MultiHeadAttention(num_heads=4, key_dim=4, name="causal")(x, x, use_causal_mask=True)
    path = tmp_path / "mixed.keras"
    keras.Model(ids, keras.layers.Dense(20)(x)).save(path)
    key = EXTERNAL.add_upload(path.read_bytes(), "mixed.keras")
    at = open_page("attention", {"weights": key, "src": "3 1 4 1 5\n2 7", "seq_len": "16", "layer": "1"})
    no_errors(at)
    checks = " ".join(m.value for m in at.markdown if "rows sum to 1" in m.value)
    assert checks and "cancel" not in checks, checks  # no check failed
    assert any("layer 1 causal" in caption.value for caption in at.sidebar.caption)
    causal_layer = np.asarray(weight_panels(specs(at)[0])[0], float)  # layer 1, head 0: masked cells are NaN
    assert np.isnan(np.triu(causal_layer[:5, :5], 1)[np.triu_indices(5, 1)]).all()


def test_a_fixed_length_upload_opens_at_its_length_and_a_short_line_is_told_in_words(tmp_path):
    """Issue 87, item 15: an upload declared for 8 ids failed with Keras's "expected shape=(None, 8), found
    shape=(1, 3)"; it opens on lines of 8 ids at N = 8, and a line of 3 gets a sentence."""
    from hub_support import functional_model

    from transformer.external.registry import describe
    from ui.external_model import starting_lines

    path = tmp_path / "eight.keras"
    functional_model(length=8).save(path)
    key = EXTERNAL.add_upload(path.read_bytes(), "eight.keras")
    lines, length = starting_lines(describe(key))
    assert length == 8 and all(len(line.split()) == 8 for line in lines.splitlines())
    at = open_page("attention", {"weights": key, "src": lines, "seq_len": "8"})
    no_errors(at)
    assert weight_panels(specs(at)[0])[0].shape[-1] == 8
    assert any("lines of exactly 8" in caption.value for caption in at.sidebar.caption)
    short = open_page("attention", {"weights": key, "src": "3 1 4", "seq_len": "8"})
    assert not short.exception
    said = " ".join(element.value for element in [*short.error, *short.warning, *short.info])
    assert "exactly 8 tokens" in said and "expected shape" not in said, said


