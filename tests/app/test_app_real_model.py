"""SmolLM2-135M in the pages (issue 89): the Weights list and the link offer it, the sidebar shows its own sizes
locked, and Attention, Heads, Decode and Positional encoding draw what the engine computes on it."""

import numpy as np
import pytest
from app_support import decode, heatmaps, no_errors, open_page, specs, weight_panels

from transformer.live.sources import REAL_EXAMPLE, RealModel
from transformer.service import LiveConfig, run_live

pytestmark = pytest.mark.slow

OWN_SIZES = {"d_model": 576, "heads": 9, "kv_heads": 3, "d_ff": 1536, "layers": 30}


def _said(at) -> str:
    return " ".join(element.value for element in [*at.error, *at.warning, *at.info, *at.markdown, *at.caption])


def test_a_link_opens_smollm2_with_its_own_sizes_locked_and_its_example_lines():
    at = open_page("attention", {"weights": "smollm2", "layer": "12"})
    no_errors(at)
    assert at.session_state["weights"] == "smollm2" and at.session_state["arch"] == "decoder-only"
    assert at.session_state["tgt"] == REAL_EXAMPLE and at.session_state["seq_len"] == 16
    shown = {name: at.sidebar.select_slider(key=f"_shown_{name}_smollm2").value
             for name in ("d_model", "heads", "kv_heads", "d_ff")}
    shown["layers"] = at.sidebar.slider(key="_shown_layers_smollm2").value
    assert shown == OWN_SIZES
    assert all(at.sidebar.select_slider(key=f"_shown_{name}_smollm2").disabled for name in ("d_model", "heads"))
    assert "SmolLM2-135M" in at.sidebar.selectbox(key="weights").format_func("smollm2")
    assert any("Locked by the model:** SmolLM2-135M" in caption.value for caption in at.sidebar.caption)
    assert at.slider(key="layer").max == 29 and at.slider(key="layer").value == 12  # the link's layer, of 30
    assert any("real language model runs with its own masks: causal" in c.value for c in at.caption)  # not "trained"


def test_the_attention_page_draws_the_engines_weights_of_smollm2_over_its_own_pieces():
    at = open_page("attention", {"weights": "smollm2", "layer": "3", "tgt": "The capital of France is",
                                 "seq_len": "8"})
    no_errors(at)
    grid = specs(at)[0]
    drawn = weight_panels(grid)
    assert len(drawn) == 9  # its 9 query heads
    config = LiveConfig(weights="smollm2", architecture="decoder-only", norm="pre", positions="rope",
                        target_text="The capital of France is", seq_len=8)
    expected = run_live(config, stacks=("decoder",), lines=(0,)).attention["decoder"][3, 0]  # (H, N, N)
    for head, panel in enumerate(drawn):
        real = np.isfinite(panel)
        np.testing.assert_allclose(panel[real], expected[head][real], atol=1e-5)
    labels = " ".join(map(str, grid["layout"]["xaxis"]["tickvals"]))
    assert "1· capital" in labels and "Ġ" not in labels, labels  # a piece's leading space drawn as a space


def test_the_weights_list_offers_smollm2_and_choosing_it_brings_its_architecture_and_lines():
    at = open_page("attention")
    box = at.sidebar.selectbox(key="weights")
    assert "SmolLM2-135M (a real language model)" in box.options  # as the list writes it
    box.set_value("smollm2").run()
    no_errors(at)
    assert at.session_state["arch"] == "decoder-only" and at.session_state["positions"] == "rope"
    assert at.session_state["tgt"] == REAL_EXAMPLE and not at.session_state["ablate"]
    assert len(weight_panels(specs(at)[0])) == 9


def test_a_server_without_its_wheel_says_so_and_draws_random_weights(monkeypatch):
    monkeypatch.setattr(RealModel, "installed", classmethod(lambda cls: False))
    at = open_page("attention", {"weights": "smollm2"})
    no_errors(at)
    assert at.session_state["weights"] == "random"
    assert "'smollm2' is not available here" in _said(at) + " ".join(w.value for w in at.warning)
    assert "smollm2" not in at.sidebar.selectbox(key="weights").options


def test_the_heads_page_ranks_smollm2s_270_heads_on_its_lines():
    at = open_page("heads", {"weights": "smollm2"})
    no_errors(at)
    roles = specs(at)[0]
    names = [annotation["text"] for annotation in roles["layout"]["annotations"]][:5]
    maps = dict(zip(names, heatmaps(roles)))
    assert all(scores.shape == (30, 9) for scores in maps.values()) and "first token" in maps, names
    sink = np.nanmean(maps["first token"], axis=1)  # (30,) each layer's mean over its heads
    assert sink[3:].mean() > 0.5 > sink[:2].max(), np.round(sink, 2)  # the attention sink from layer 3 on
    assert "no task here whose loss and accuracy" in _said(at)


def test_the_heads_page_finds_smollm2s_induction_heads_on_repeated_random_words():
    """Repeated random tokens, for a real model, are its own one-piece words: the induction map's strongest heads
    are the engine's (layers 17–18), as tests/unit/test_smollm2.py checks against NumPy."""
    at = open_page("heads", {"weights": "smollm2", "roles_lines": "repeated", "roles_count": "8"})
    no_errors(at)
    assert "head roles over 8 lines of 20 tokens" in " ".join(warning.value for warning in at.warning)
    at = next(button for button in at.button if button.label == "Run it").click().run(timeout=600)
    no_errors(at)
    roles = specs(at)[0]
    names = [annotation["text"] for annotation in roles["layout"]["annotations"]][:5]
    induction = dict(zip(names, heatmaps(roles)))["induction"]  # (30, 9)
    layer, _ = np.unravel_index(np.nanargmax(induction), induction.shape)
    assert layer in (17, 18) and np.nanmax(induction) > 0.7, np.round(induction, 2)
    assert "t1" not in _said(at)


def test_decode_continues_the_capital_of_france_with_paris_and_keeps_three_kv_heads():
    at = open_page("decode", {"weights": "smollm2"})
    no_errors(at)
    pressed = [button for button in at.button if button.label == "Run it"]
    if pressed:  # priced past the light budget: the background lane, after a press
        at = pressed[0].click().run(timeout=300)
    no_errors(at)
    said = _said(at)
    assert "A real language model continues a prompt" in said and "3 key/value heads serve its 9" in said
    bars = next(spec for spec in specs(at) if "next token" in spec["layout"]["title"]["text"])["data"][0]
    chances = dict(zip(bars["y"], decode(bars["x"])))  # the first step's most probable pieces
    assert max(chances, key=chances.get) == " Paris" and chances[" Paris"] > 0.5, chances


def test_the_positional_encoding_page_rotates_by_smollm2s_own_base():
    at = open_page("positional_encoding", {"weights": "smollm2"})
    no_errors(at)
    titles = [spec["layout"].get("title", {}).get("text", "") for spec in specs(at)]
    assert any("100000^(−2i/d_k)" in title for title in titles), titles
    assert "this model's own base" in _said(at)


@pytest.mark.parametrize("page", ["patching", "explanations", "masks", "shapes", "dot_product_lab", "query_key",
                                  "cost", "home"])
def test_every_other_page_opens_on_smollm2_without_a_traceback(page):
    at = open_page(page, {"weights": "smollm2"})
    no_errors(at)
    assert "read through its attention weights" not in " ".join(info.value for info in at.info)  # not "outside"


@pytest.mark.parametrize("view, cells", [("Checks", "norms"), ("Statistics", "weights"), ("Model view", "weights"),
                                         ("Head view", "weights"), ("Rollout", "weights"), ("Neuron view", "weights"),
                                         ("Score terms", "weights")])
def test_every_attention_view_draws_smollm2(view, cells):
    """Its value norms and score terms run through its RMSNorms and bias-free projections (`residual_parts`)."""
    at = open_page("attention", {"weights": "smollm2", "view": view, "cells": cells, "layer": "5"})
    pressed = [button for button in at.button if button.label == "Run it"]
    if pressed:
        at = pressed[0].click().run(timeout=300)
    no_errors(at)
    assert not at.error, [error.value for error in at.error]
    titles = [spec["layout"].get("title", {}).get("text", "") for spec in specs(at)]
    assert titles[0].startswith("9 heads (d_k = 64)") and (len(titles) >= 2 or view in ("Checks", "Statistics"))
    assert ("value-weighted norms" in titles[0]) == (cells == "norms")


def test_the_real_model_lessons_show_a_sink_and_a_previous_token_head():
    """Home's two lessons on SmolLM2 draw what they say: layer 18's heads give the first piece most of each row;
    layer 16's head 0 gives each piece's predecessor most of its row."""
    from ui.lessons import LESSONS

    sink, previous = (next(lesson for lesson in LESSONS if lesson.title == title)
                      for title in ("An attention sink in a real model", "A real previous-token head"))
    at = open_page(sink.page, sink.params)
    no_errors(at)
    heads = np.stack(weight_panels(specs(at)[0]))  # (9, N, N) the first line's
    rows = ~np.isnan(heads[0]).all(axis=1)
    assert np.nanmean(heads[:, rows, 0][:, 1:]) > 0.8  # every query after the first: its weight on position 0
    at = open_page(previous.page, previous.params)
    no_errors(at)
    head0 = weight_panels(specs(at)[0])[0]  # (N, N)
    before = np.diagonal(head0, offset=-1)[1:]  # each query's weight on the piece before it, from query 2 (NaN: pads)
    assert np.nanmean(before) > 0.5 and np.isfinite(before).sum() >= 5, np.round(before, 2)


@pytest.mark.parametrize("ablation", ["zero", "mean"])
def test_heads_ablated_in_the_sidebar_change_smollm2s_later_layers_as_the_engine_does(ablation):
    """Its two strongest previous-token heads (layer 16 head 0, layer 11 head 1) ablated: layer 20's weights are
    the engine's own run with them ablated, and differ from the whole model's."""
    line = {"tgt": "The capital of France is Paris.", "seq_len": "8", "layer": "20"}
    at = open_page("attention", {"weights": "smollm2", "ablate": "d11.1 d16.0", "ablation": ablation, **line})
    no_errors(at)
    assert at.sidebar.multiselect(key="ablate").value == ["d11.1", "d16.0"]
    drawn = np.stack(weight_panels(specs(at)[0]))  # (9, N, N)
    config = LiveConfig(weights="smollm2", architecture="decoder-only", norm="pre", positions="rope",
                        target_text=line["tgt"], seq_len=8)
    whole = run_live(config, stacks=("decoder",), lines=(0,)).attention["decoder"][20, 0]
    heads = (("decoder", 11, 1), ("decoder", 16, 0))
    ablated = run_live(LiveConfig(**{**config.__dict__, "ablate": heads, "ablation": ablation}),
                       stacks=("decoder",), lines=(0,)).attention["decoder"][20, 0]
    real = np.isfinite(drawn)
    np.testing.assert_allclose(drawn[real], ablated[real], atol=1e-5)
    assert np.abs(drawn[real] - whole[real]).max() > 1e-3


def test_until_it_is_loaded_a_page_says_what_loading_costs_and_loads_it_on_a_press(monkeypatch):
    """Its file is read and built once on a server, after a press that says the time and memory (8.5 s, 775 MB):
    no page's move holds the engine thread for it unannounced."""
    from transformer.live.model_cache import ModelCache

    monkeypatch.setattr(ModelCache, "holds", lambda self, key: False)  # as on a server that has not loaded it
    at = open_page("attention", {"weights": "smollm2"}, load_models=False)
    no_errors(at)
    said = " ".join(info.value for info in at.info)
    assert "loading SmolLM2-135M (a real language model) from its file, once on this server, about 9 s and 775 MB" \
        in said and not specs(at), said
    monkeypatch.undo()
    at = next(button for button in at.button if button.key == "load_model").click().run(timeout=300)
    no_errors(at)
    assert len(weight_panels(specs(at)[0])) == 9


def test_the_patching_page_maps_smollm2s_heads_on_typed_lines_after_a_press():
    """Typed lines and answers on a real model (IOI's by default): the heads map runs in the background lane after
    a press, and its clean − corrupted gap is the engine's own two runs' (`real_pair_inputs`, `ends`)."""
    from transformer.analysis.patching import ends
    from transformer.live.heavy import heavy_lane
    from transformer.live.loading import load_model
    from transformer.live.model_cache import MODELS
    from transformer.live.real_patching import RealPair, real_pair_inputs
    from transformer.live.sources import source_of
    from transformer.runtime.device import resolve_device

    lines = {"pt_clean": "When Mary and John went, John saw", "pt_corrupt": "When Mary and John went, Mary saw"}
    at = open_page("patching", {"weights": "smollm2", **lines})
    no_errors(at)
    asked = " ".join(warning.value for warning in at.warning)
    assert "270 patched runs of smollm2 over 8 pieces" in asked
    lane_loads_it = not heavy_lane().holds(("smollm2", resolve_device("auto")))  # the lane's child: its own process
    assert ("after loading SmolLM2-135M (a real language model) from its file, in the background lane's own process"
            in asked) == lane_loads_it, asked
    assert not specs(at)  # nothing runs before the press
    at = next(button for button in at.button if button.label == "Run it").click().run(timeout=600)
    no_errors(at)
    (found,) = specs(at)
    assert heatmaps(found)[0].shape == (30, 9)
    load_model("smollm2", "auto")
    source, device = source_of("smollm2"), resolve_device("auto")
    model = MODELS.entry(source.model_key(None, device), load=source.loader(device)).model
    clean, corrupt = ends(model, *real_pair_inputs("smollm2", RealPair(*lines.values(), " Mary", " John")))
    assert f"clean − corrupted {clean:.3f} − {corrupt:.3f}" in found["layout"]["title"]["text"]


def test_the_patching_page_maps_paths_into_a_head_of_smollm2_from_its_link():
    """A path map from the link (IOI's lines, into L5 H3's value input: 5 layers' senders, 54 runs): the pickers
    show the receiver it ran with, the map has a column a sender and all of them together, and that column is the
    engine's own patched run of every sender at once."""
    from transformer.analysis.patch_maps import senders
    from transformer.analysis.patching import PathSite, ends, normalised, patched_values
    from transformer.live.model_cache import MODELS
    from transformer.live.real_patching import IOI, real_pair_inputs
    from transformer.live.sources import source_of
    from transformer.runtime.device import resolve_device

    at = open_page("patching", {"weights": "smollm2", "pt_map": "path", "pt_rlayer": "5", "pt_rhead": "3",
                                "pt_rside": "v"})
    no_errors(at)
    assert (at.selectbox(key="pt_rlayer").value, at.selectbox(key="pt_rhead").value, at.radio(key="pt_rside").value) \
        == (5, 3, "v")
    assert "54 patched runs of smollm2 over 14 pieces" in " ".join(warning.value for warning in at.warning)
    at = next(button for button in at.button if button.label == "Run it").click().run(timeout=600)
    no_errors(at)
    (found,) = specs(at)
    (values,) = heatmaps(found)[0]  # one row: the receiver
    assert len(values) == 54 and "path into L5 H3 V" in found["layout"]["title"]["text"]
    source, device = source_of("smollm2"), resolve_device("auto")
    model = MODELS.entry(source.model_key(None, device), load=source.loader(device)).model
    clean, corrupt, metric = real_pair_inputs("smollm2", IOI)
    receiver = ("decoder", 5, 3, "v")
    everyone = PathSite(senders(model, clean, receiver), (receiver,))
    expected = normalised(patched_values(model, clean, corrupt, [(everyone,)], metric),
                          *ends(model, clean, corrupt, metric))[0]
    assert abs(values[-1] - expected) < 1e-4, (values[-1], expected)


def test_a_cell_of_smollm2s_heads_map_opens_its_three_runs_from_the_link():
    """IOI's heads map with L23 H3's cell opened (as a click sets it): the map runs once after a press, then the
    cell's three runs draw layer 23's head 3, the patched run restoring what the map's cell says (0.58), and each
    run's next piece is said (" Mary" clean, " John" corrupted)."""
    at = open_page("patching", {"weights": "smollm2", "pt_row": "23", "pt_col": "3"})
    no_errors(at)
    at = next(button for button in at.button if button.label == "Run it").click().run(timeout=600)
    no_errors(at)
    if any(button.label == "Run it" for button in at.button):  # the cell's own runs, priced past the light budget
        at = next(button for button in at.button if button.label == "Run it").click().run(timeout=600)
        no_errors(at)
    found, runs = specs(at)
    assert heatmaps(found)[0][23, 3] == pytest.approx(0.584, abs=0.01)
    titles = [annotation["text"] for annotation in runs["layout"]["annotations"]]
    assert titles[:3] == ["clean<br>restored +100%", "patched<br>restored +58%", "corrupted<br>restored +0%"], titles
    assert at.selectbox(key="pt_head_pick").value == 3
    said = _said(at)
    assert "clean: after the last piece the model writes ' Mary'" in said
    assert "corrupted: after the last piece the model writes ' John'" in said


def test_the_attention_page_continues_a_line_of_smollm2_on_decode():
    """A language model's Attention page offers what it writes next: the button opens Decode on the line as the
    model read it (its pieces joined: IOI's line cut at 10 pieces), greedy, from step 0."""
    at = open_page("attention", {"weights": "smollm2", "element": "1", "seq_len": "10"})
    no_errors(at)
    button = next(button for button in at.button if button.key == "continue_on_decode")
    assert button.label == "What does it write after line 2? Continue it on Decode"
    at = button.click().run()
    no_errors(at)
    assert at.session_state["dec_src"] == "When Mary and John went to the store, John"
    assert (at.session_state["dec_step"], at.session_state["dec_mode"]) == (0, "greedy")
