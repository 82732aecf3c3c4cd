"""What you see is what runs: each page's controls show the values its one run used, and its numbers agree."""

from __future__ import annotations

import numpy as np
import pytest
from app_support import no_errors, open_page, specs, weight_panels

pytestmark = pytest.mark.app


def _texts(at) -> str:
    return " ".join(str(element.value) for kind in ("caption", "markdown", "info", "warning", "error")
                    for element in getattr(at, kind))


def test_decode_top_k_above_the_vocabulary_samples_and_says_it_keeps_every_token():
    at = open_page("decode", {"weights": "reverse", "dec_src": "a b c d", "dec_mode": "sampled", "dec_top_k": "20"})
    no_errors(at)
    assert not at.error, [e.value for e in at.error]
    assert "keeps every token" in _texts(at)


def test_the_neuron_view_with_alibi_adds_the_bias_as_its_own_term():
    at = open_page("attention", {"view": "Neuron view", "positions": "alibi", "focus": "3"})
    no_errors(at)
    assert "ALiBi's bias" in _texts(at)
    title = next(spec for spec in specs(at) if "softmax → weight" in str(spec["layout"].get("title")))
    assert "+ ALiBi bias" in str(title["layout"]["title"])


def test_a_trained_model_runs_with_its_own_masks_whatever_the_masks_page_chose():
    """#52.1: the mask family is a property of the random-weights model; a trained model's maps and predictions
    come from one run, with the masks it was trained with."""
    query = {"weights": "dates", "stack": "cross", "layer": "1"}
    own = open_page("attention", query)
    chosen = open_page("attention", {**query, "mask_family": "causal"})
    no_errors(chosen)
    for drawn, expected in zip(weight_panels(specs(chosen)[0]), weight_panels(specs(own)[0])):
        np.testing.assert_array_equal(drawn, expected)
    assert "masks it was trained with" in _texts(chosen)


def test_the_masks_page_shows_the_family_locked_for_a_trained_model():
    at = open_page("masks", {"weights": "dates", "mask_family": "causal"})
    no_errors(at)
    locked = [control for control in at.get("button_group") if control.disabled]
    assert locked, "the family control is not locked"
    assert "Locked by the sidebar's model" in _texts(at)


def test_a_trained_models_mask_switches_are_locked_on():
    at = open_page("attention", {"weights": "reverse", "stack": "decoder", "future_mask": "0"})
    no_errors(at)
    switches = {toggle.label: toggle for toggle in at.toggle}
    assert switches["Look-ahead mask"].disabled and switches["Look-ahead mask"].value
    assert switches["Padding mask"].disabled and switches["Padding mask"].value


def test_decode_says_when_the_masks_pages_family_is_not_applied():
    at = open_page("decode", {"arch": "decoder-only", "mask_family": "window"})
    no_errors(at)
    assert any("window family" in info.value for info in at.info)


def test_every_accuracy_names_its_unit_and_the_induction_link_keeps_the_token_count():
    """#52.7: the Induction page's headline counts next tokens; the Attention page it links to counted whole lines
    only ("0 of 1 right" beside 95 %)."""
    induction = open_page("induction")
    no_errors(induction)
    assert any("next tokens" in metric.label for metric in induction.metric)
    attention = induction.button(key="ind_attention").click().run()  # the page switches to Attention, that line
    no_errors(attention)
    label = attention.main.expander[0].label
    assert "next tokens right" in label and "line" in label, label
    reverse = open_page("attention", {"weights": "reverse"})
    assert "whole answer" in reverse.main.expander[0].label


def test_a_long_length_never_says_every_position_is_padding():
    at = open_page("masks", {"seq_len": "4096"})
    no_errors(at)
    said = _texts(at)
    assert "99.9% of every source line is padding" in said and "100% of every" not in said


def test_the_heads_page_says_why_a_role_is_empty_and_gives_chance_levels():
    at = open_page("heads")
    no_errors(at)
    said = _texts(at)
    assert "no token repeats" in said and "chance" in said
    at.button(key="roles_to_repeated").click().run()
    assert at.session_state["roles_lines"] == "repeated"
    assert "no token repeats" not in _texts(at)


def test_a_model_trained_here_has_a_short_name_and_the_train_form_says_whose_sizes_it_uses():
    """#52.16: "Trained here: reverse, d_model 3…" was cut in the Weights box; the Train page's sliders sat beside the
    sidebar's with nothing saying which one a training uses."""
    from ui.weights import session_model_label

    names = {"session:a": "reverse, d_model 32, 2 heads, 1 layer, 600 steps",
             "session:b": "reverse, d_model 64, 4 heads, 2 layers, 900 steps"}
    assert session_model_label("session:b", names) == "Trained here: reverse #2"
    assert len(session_model_label("session:a", names)) <= 26
    at = open_page("train")
    no_errors(at)
    assert "not the sidebar's" in _texts(at)


def test_a_predictions_table_puts_what_was_predicted_before_the_long_source():
    """#52.11: at 390 px the table hid its last columns, prediction and right among them."""
    at = open_page("attention", {"weights": "dates"})
    table = at.main.expander[0].dataframe[0].value
    assert list(table.columns)[:3] == ["line", "prediction", "expected"] and list(table.columns)[-1] == "source"
    assert table["prediction"].iloc[0].startswith("✓ ")


@pytest.mark.parametrize("page, query, keys", [
    ("attention", {"view": "Head view"}, ("focus", "element", "stack", "seq_len", "weights")),  # heads: a legend
    ("attention", {"view": "Neuron view"}, ("nv_other",)),
    ("attention", {"view": "Score terms"}, ("nv_other",)),
    ("decode", {"weights": "reverse", "dec_src": "a b c"}, ("dec_cache_layer",)),
])
def test_every_control_whose_options_follow_another_is_given_its_value_again(page, query, keys):
    """#52.2's audit: each select slider, select box, radio and pills whose options depend on another control goes
    through options_follow (the browser test shows what it mends, on the focus slider)."""
    at = open_page(page, query)
    no_errors(at)
    missing = [key for key in keys if f"_options_of_{key}" not in at.session_state]
    assert not missing, missing


def test_the_query_key_page_says_when_points_coincide_and_what_r_is():
    """#52.10 and #58.5: equal tokens at equal positions of equal lines coincide; r is per query."""
    at = open_page("query_key", {"src": "1 2 3\n1 2 3", "tgt": "1 2 3\n1 2 3", "seq_len": "3"})
    no_errors(at)
    title = str(specs(at)[-1]["layout"]["title"])
    assert "distinct" in title and "per query" in title
    assert "drawn once" in _texts(at)
